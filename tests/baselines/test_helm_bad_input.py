"""Bad HELM input: every error names the file and the key, and nothing is half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

import medmon.baselines.importer
from medmon.baselines import (
    Baseline,
    BaselineInstance,
    CanaryRecord,
    HelmFormatError,
    LeaderboardEntry,
    MalformedJSON,
    NotHelmOutput,
    SourceError,
    SourceFileMissing,
    UnknownMetric,
    import_helm_path,
)
from medmon.db import session_scope
from tests.baselines.helm_runs import Inst, RunWriter, run_dir_of


def _nothing_written(engine: Engine) -> bool:
    with session_scope(engine) as s:
        return all(not s.exec(select(t)).all() for t in (Baseline, BaselineInstance, CanaryRecord, LeaderboardEntry))


@pytest.mark.parametrize("name", ["stats.json", "per_instance_stats.json"])
def test_missing_run_file_names_the_file(name: str, engine: Engine, writable_suite: Path) -> None:
    run = run_dir_of(writable_suite, "EXACT-MATCH-DEMO")
    (run / name).unlink()
    with pytest.raises(SourceFileMissing) as err, session_scope(engine) as s:
        import_helm_path(s, writable_suite)
    assert err.value.file == str(run / name) and err.value.key == name
    assert str(err.value).startswith(f"{run / name}: {name}: file missing")
    assert _nothing_written(engine)


def test_malformed_json_names_file_line_and_column(engine: Engine, writable_suite: Path) -> None:
    run = run_dir_of(writable_suite, "LLM-JURY-DEMO")
    broken = '[\n  {"name": {"name": "jury_score", "split": "test"},\n   "count": 1 "mean": 4.0}\n]'
    (run / "stats.json").write_text(broken)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(broken)
    with pytest.raises(MalformedJSON) as err, session_scope(engine) as s:
        import_helm_path(s, writable_suite)
    assert err.value.file == str(run / "stats.json")
    assert err.value.key == f"line {expected.value.lineno} col {expected.value.colno}" == "line 3 col 15"
    assert _nothing_written(engine)


def test_taxonomy_main_metric_not_written_is_an_unknown_metric(engine: Engine, write_run: RunWriter) -> None:
    run = write_run("medqa_run", [Inst("a", [1.0]), Inst("b", [0.0])], groups=["med_qa"], metric="quasi_exact_match")
    with pytest.raises(UnknownMetric) as err, session_scope(engine) as s:
        import_helm_path(s, run)
    assert err.value.file == str(run / "stats.json") and err.value.key == "exact_match (split test)"
    assert "HELM did not write the main metric of med_qa" in str(err.value) and "quasi_exact_match" in str(err.value)


def test_med_mcqa_is_read_on_its_valid_split(engine: Engine, write_run: RunWriter) -> None:
    on_test = write_run("mcqa_test", [Inst("a", [1.0])], groups=["med_mcqa"])
    with pytest.raises(UnknownMetric, match=r"exact_match \(split valid\)"), session_scope(engine) as s:
        import_helm_path(s, on_test)
    on_valid = write_run(
        "mcqa_valid",
        [Inst("a", [1.0], split="valid"), Inst("b", [0.0], split="valid")],
        groups=["med_mcqa"],
        split="valid",
    )
    with session_scope(engine) as s:
        report = import_helm_path(s, on_valid)
    assert [(b.benchmark, b.value, b.n) for b in report.baselines] == [("med_mcqa", 0.5, 2)]


def test_missing_model_key_names_run_spec_and_key(engine: Engine, write_run: RunWriter) -> None:
    run = write_run("nomodel", [Inst("a", [1.0])], groups=["med_qa"])
    spec = json.loads((run / "run_spec.json").read_text())
    del spec["adapter_spec"]["model"]
    (run / "run_spec.json").write_text(json.dumps(spec))
    with (
        pytest.raises(HelmFormatError, match=r"run_spec\.json: line \d+: adapter_spec\.model: key missing"),
        session_scope(engine) as s,
    ):
        import_helm_path(s, run)


def test_value_outside_the_scale_is_refused(engine: Engine, write_run: RunWriter) -> None:
    run = write_run("too_high", [Inst("a", [1.5])], groups=["med_qa"])
    with (
        pytest.raises(
            HelmFormatError,
            match=r"stats\.json: line \d+: exact_match\.mean: value 1\.5 outside the metric's 0-1 scale",
        ),
        session_scope(engine) as s,
    ):
        import_helm_path(s, run)


def test_paths_that_are_not_helm_output(engine: Engine, tmp_path: Path, suite_dir: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NotHelmOutput, match=r"no run_spec\.json here"), session_scope(engine) as s:
        import_helm_path(s, empty)
    with pytest.raises(SourceFileMissing, match="does not exist"), session_scope(engine) as s:
        import_helm_path(s, tmp_path / "nowhere")
    two = tmp_path / "bo" / "runs"
    for suite in ("v1", "v2"):
        shutil.copytree(run_dir_of(suite_dir, "shc_ptbm_med"), two / suite / "run1", copy_function=shutil.copyfile)
    with (
        pytest.raises(NotHelmOutput, match=r"suite: several suites; choose one with --suite: v1, v2"),
        session_scope(engine) as s,
    ):
        import_helm_path(s, tmp_path / "bo")
    with pytest.raises(NotHelmOutput, match=r"suite: no suite 'v3'; found: v1, v2"), session_scope(engine) as s:
        import_helm_path(s, tmp_path / "bo", suite="v3")
    with session_scope(engine) as s:
        assert import_helm_path(s, tmp_path / "bo", suite="v2").suite == "v2"


def test_one_bad_run_in_a_suite_writes_nothing(engine: Engine, writable_suite: Path) -> None:
    (run_dir_of(writable_suite, "shc_ptbm_med") / "per_instance_stats.json").write_text("[{")
    with pytest.raises(MalformedJSON), session_scope(engine) as s:
        import_helm_path(s, writable_suite)
    assert _nothing_written(engine)


def test_a_failure_while_writing_rolls_everything_back(
    engine: Engine, helm_output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing(*args: object, **kwargs: object) -> int:
        calls.append(args)
        if len(calls) == 2:
            raise SourceError("db", "canaries", "simulated failure after the first baseline was written")
        return 0

    monkeypatch.setattr(medmon.baselines.importer, "record_canaries", failing)
    with pytest.raises(SourceError, match="simulated failure"), session_scope(engine) as s:
        import_helm_path(s, helm_output)
    assert len(calls) == 2 and _nothing_written(engine)
