"""Re-importing HELM output: unchanged runs are recognised by their digests, not parsed again;
parsing runs with the garbage collector paused, and JSON that only Python's reader accepts."""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

import medmon.baselines.helm as helm
import medmon.baselines.importer as importer
from medmon.baselines import MalformedJSON, import_helm_path, latest_baseline, list_baselines
from medmon.db import session_scope
from tests.baselines.helm_runs import Inst, RunWriter, run_dir_of


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every run the importer parses (``read_run``), and whether the collector ran then."""
    seen: list[str] = []
    real = helm.read_run

    def spy(run_dir: Path, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(f"{run_dir.name} gc={'on' if gc.isenabled() else 'off'}")
        return real(run_dir, **kwargs)

    monkeypatch.setattr(importer, "read_run", spy)
    return seen


def _view(report: importer.ImportReport) -> list[tuple]:
    return sorted(
        (b.benchmark, b.model, b.metric, b.version, b.baseline_id, b.value, b.n, b.ci, b.canaries, b.replayable)
        for b in report.baselines
    )


def test_an_unchanged_suite_is_not_parsed_again(
    engine: Engine, helm_output: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session_scope(engine) as s:
        first = import_helm_path(s, helm_output)
    reads = _counting_reads(monkeypatch)
    with session_scope(engine) as s:
        again = import_helm_path(s, helm_output)
    # Only the run that never became a baseline (no usable main metric) is read again, to be skipped again.
    assert reads == ["simple1:model=simple_model1 gc=off"]
    assert (again.created, again.unchanged) == (0, 3)
    assert _view(again) == _view(first)
    assert [r.run_dir for r in again.skipped] == [r.run_dir for r in first.skipped]
    assert all("not read again" in b.notes[0] for b in again.baselines)


def test_a_changed_file_sends_the_import_down_the_full_path(
    engine: Engine, writable_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session_scope(engine) as s:
        import_helm_path(s, writable_suite)
    run = run_dir_of(writable_suite, "EXACT-MATCH-DEMO")
    stats = json.loads((run / "stats.json").read_text())
    stats.append({"name": {"name": "inference_runtime", "split": "test"}, "count": 1, "sum": 1.0, "mean": 1.0})
    (run / "stats.json").write_text(json.dumps(stats))  # same value, different bytes: a new version all the same
    reads = _counting_reads(monkeypatch)
    with session_scope(engine) as s:
        report = import_helm_path(s, writable_suite)
        assert [(b.benchmark, b.version) for b in report.baselines if b.created] == [("EXACT-MATCH-DEMO", 2)]
    assert len(reads) >= 4 and all(r.endswith("gc=off") for r in reads)


def test_a_new_run_of_a_stored_benchmark_is_combined_with_it(engine: Engine, write_run: RunWriter) -> None:
    write_run("clear_a", [Inst("i0", [1.0]), Inst("i1", [1.0])], groups=["clear"])
    with session_scope(engine) as s:
        (first,) = import_helm_path(s, write_run.root).baselines
    write_run("clear_b", [Inst("i0", [0.0]), Inst("i1", [0.0])], groups=["clear"])
    with session_scope(engine) as s:
        (second,) = import_helm_path(s, write_run.root).baselines
        assert (first.value, first.n, first.version) == (1.0, 2, 1)
        assert (second.created, second.value, second.n, second.version) == (True, 0.5, 4, 2)
        assert [b.version for b in list_baselines(s) if b.benchmark == "clear"] == [1, 2]
    with session_scope(engine) as s:  # and now both runs are held by version 2: nothing new
        (third,) = import_helm_path(s, write_run.root).baselines
        assert (third.created, third.baseline_id) == (False, second.baseline_id)


def test_runs_imported_apart_are_combined_when_imported_together(
    engine: Engine, write_run: RunWriter, tmp_path: Path
) -> None:
    a = write_run("clear_a", [Inst("i0", [1.0]), Inst("i1", [1.0])], groups=["clear"])
    b = write_run("clear_b", [Inst("i0", [0.0]), Inst("i1", [0.0])], groups=["clear"])
    for run in (a, b):  # each alone, as a run directory, into the same suite
        with session_scope(engine) as s:
            import_helm_path(s, run, suite="synthetic")
    with session_scope(engine) as s:
        (together,) = import_helm_path(s, write_run.root).baselines
        assert (together.created, together.value, together.n) == (True, 0.5, 4)


def test_the_collector_is_restored_after_a_failed_import(engine: Engine, writable_suite: Path) -> None:
    (run_dir_of(writable_suite, "EXACT-MATCH-DEMO") / "stats.json").write_text("[{")
    assert gc.isenabled()
    with session_scope(engine) as s, pytest.raises(MalformedJSON, match="stats.json"):
        import_helm_path(s, writable_suite)
    assert gc.isenabled()
    gc.disable()
    try:  # and a caller that had it off finds it off
        with session_scope(engine) as s, pytest.raises(MalformedJSON):
            import_helm_path(s, writable_suite)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_json_python_writes_but_strict_parsers_refuse_is_read(engine: Engine, write_run: RunWriter) -> None:
    run = write_run("clear_a", [Inst("i0", [1.0]), Inst("i1", [0.0])], groups=["clear"])
    stats = json.loads((run / "stats.json").read_text())
    stats.append(
        {
            "name": {"name": "training_co2_cost", "split": "test"},
            "count": 0,
            "sum": 0.0,
            "mean": math.nan,
            "max": math.inf,
        }
    )  # HELM writes NaN for a stat with no values
    (run / "stats.json").write_text(json.dumps(stats))
    assert "NaN" in (run / "stats.json").read_text()
    with session_scope(engine) as s:
        import_helm_path(s, write_run.root)
        baseline = latest_baseline(s, "clear")
        assert baseline is not None and (baseline.value, baseline.n) == (0.5, 2)
