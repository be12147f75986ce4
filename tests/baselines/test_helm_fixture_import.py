"""Importing the real crfm-helm fixture suite (``medhelm-offline-demo``)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from medmon.baselines import (
    Baseline,
    BaselineInstance,
    CanaryRecord,
    LeaderboardEntry,
    NoMainMetric,
    NotHelmOutput,
    canaries_for_baseline,
    import_helm_path,
    instance_scores,
    jury_detail,
    latest_baseline,
    leaderboard_entries,
    list_baselines,
)
from medmon.db import session_scope
from tests.baselines.helm_runs import SUITE, run_dir_of

Z = 1.959963984540054


def _stat(run: Path, name: str) -> dict[str, Any]:
    stats = json.loads((run / "stats.json").read_text())
    return next(s for s in stats if s["name"]["name"] == name and "perturbation" not in s["name"])


def _count(engine: Engine, table: type) -> int:
    with session_scope(engine) as s:
        return len(s.exec(select(table)).all())


@pytest.fixture
def imported(engine: Engine, helm_output: Path) -> dict[str, Baseline]:
    with session_scope(engine) as s:
        import_helm_path(s, helm_output)
        return {b.benchmark: b for b in list_baselines(s)}


def test_suite_import_reads_value_and_n_from_stats(imported: dict[str, Baseline], suite_dir: Path) -> None:
    assert set(imported) == {"EXACT-MATCH-DEMO", "LLM-JURY-DEMO", "shc_ptbm_med"}
    for benchmark, metric in [
        ("shc_ptbm_med", "exact_match"),
        ("EXACT-MATCH-DEMO", "exact_match"),
        ("LLM-JURY-DEMO", "jury_score"),
    ]:
        run = run_dir_of(suite_dir, benchmark)
        b = imported[benchmark]
        assert b.metric == metric
        assert b.value == _stat(run, metric)["mean"]
        assert b.n == _stat(run, "num_instances")["mean"]  # n from num_instances, not count
        assert b.model == "simple/model1" and b.suite == SUITE and b.source_kind == "helm" and b.version == 1
    assert (imported["shc_ptbm_med"].n, imported["EXACT-MATCH-DEMO"].n, imported["LLM-JURY-DEMO"].n) == (8, 6, 4)


def test_taxonomy_join_flags_configurable_benchmarks(imported: dict[str, Baseline]) -> None:
    ptbm = imported["shc_ptbm_med"]
    assert ptbm.in_taxonomy and ptbm.category == "Clinical Decision Support" and ptbm.subcategory
    for name in ("EXACT-MATCH-DEMO", "LLM-JURY-DEMO"):
        assert not imported[name].in_taxonomy
        assert imported[name].category == "Outside the MedHELM taxonomy"


def test_wilson_interval_for_exact_match(imported: dict[str, Baseline]) -> None:
    for name, n in [("shc_ptbm_med", 8), ("EXACT-MATCH-DEMO", 6)]:
        b = imported[name]
        assert b.value == 0.0 and b.ci_low == 0.0
        assert math.isclose(b.ci_high, Z * Z / (n + Z * Z), rel_tol=1e-9)  # Wilson upper bound at p = 0


def test_jury_run_is_on_the_1_to_5_scale(imported: dict[str, Baseline], engine: Engine) -> None:
    jury = imported["LLM-JURY-DEMO"]
    assert (jury.scale_min, jury.scale_max, jury.value, jury.normalized) == (1.0, 5.0, 4.0, 0.75)
    assert (jury.ci_low, jury.ci_high) == (4.0, 4.0)  # every instance scored 4: sd 0
    with session_scope(engine) as s:
        assert instance_scores(s, jury.id) == {f"id{i}": 4.0 for i in range(4)}
        detail = jury_detail(s, jury.id)
    assert detail["id0"] == {"simple/model1": {"accuracy": 4.0, "completeness": 3.0, "clarity": 5.0}}
    assert set(detail) == {"id0", "id1", "id2", "id3"}


def test_simple1_without_a_main_metric_is_skipped_with_the_file_named(engine: Engine, helm_output: Path) -> None:
    with session_scope(engine) as s:
        report = import_helm_path(s, helm_output)
    assert len(report.skipped) == 1
    assert "simple1" in report.skipped[0].run_dir
    assert "stats.json: metrics: no usable main metric" in report.skipped[0].reason


def test_simple1_alone_or_strict_is_an_error(engine: Engine, suite_dir: Path) -> None:
    simple1 = next(p.parent for p in suite_dir.glob("*/run_spec.json") if json.loads(p.read_text())["groups"] == [])
    with pytest.raises(NoMainMetric, match=r"stats\.json: metrics: no usable main metric"), session_scope(engine) as s:
        import_helm_path(s, simple1)
    with pytest.raises(NoMainMetric), session_scope(engine) as s:
        import_helm_path(s, suite_dir, strict=True)
    assert _count(engine, Baseline) == 0


def test_per_instance_scores_and_source_files(imported: dict[str, Baseline], engine: Engine, suite_dir: Path) -> None:
    b = imported["shc_ptbm_med"]
    run = run_dir_of(suite_dir, "shc_ptbm_med")
    with session_scope(engine) as s:
        assert instance_scores(s, b.id) == {f"id{i}": 0.0 for i in range(8)}
    expected = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run.glob("*.json")
        if p.name in {"run_spec.json", "scenario.json", "stats.json", "per_instance_stats.json", "scenario_state.json"}
    }
    assert b.source_files == expected and len(expected) == 5
    assert len(b.source_sha256) == 64 and b.source_path == str(run)


def test_multiple_choice_canary_pack(imported: dict[str, Baseline], engine: Engine, suite_dir: Path) -> None:
    run = run_dir_of(suite_dir, "shc_ptbm_med")
    states = json.loads((run / "scenario_state.json").read_text())["request_states"]
    with session_scope(engine) as s:
        canaries = canaries_for_baseline(s, imported["shc_ptbm_med"].id)
    assert [c.id for c in canaries] == [f"id{i}" for i in range(8)]
    by_id = {st["instance"]["id"]: st for st in states}
    for c in canaries:
        state = by_id[c.id]
        correct = next(r["output"]["text"] for r in state["instance"]["references"] if "correct" in r["tags"])
        assert c.messages == ({"role": "user", "content": state["request"]["prompt"]},)
        assert c.scorer == "multiple_choice" and c.choices == ("A", "B") and c.references == (correct,)
        assert (c.baseline_score, c.baseline_runs, c.replayable) == (0.0, 1, True)
        assert c.pack == "shc_ptbm_med:model=simple_model1" and c.benchmark == "shc_ptbm_med"
        assert c.provenance == str(run)


def test_exact_match_and_jury_canaries(imported: dict[str, Baseline], engine: Engine) -> None:
    with session_scope(engine) as s:
        em = canaries_for_baseline(s, imported["EXACT-MATCH-DEMO"].id)
        jury = canaries_for_baseline(s, imported["LLM-JURY-DEMO"].id)
    assert [c.references for c in em] == [("Yes",), ("No",), ("Yes",), ("No",), ("Yes",), ("No",)]
    assert {c.scorer for c in em} == {"exact_match"}
    assert {c.scorer for c in jury} == {"jury"} and all(c.references == () for c in jury)
    assert all(c.baseline_score == 4.0 for c in jury)


def test_reimport_changes_nothing(engine: Engine, helm_output: Path) -> None:
    with session_scope(engine) as s:
        first = import_helm_path(s, helm_output)
    counts = [_count(engine, t) for t in (Baseline, BaselineInstance, CanaryRecord, LeaderboardEntry)]
    with session_scope(engine) as s:
        again = import_helm_path(s, helm_output)
    assert (first.created, again.created, again.unchanged, again.leaderboard_entries) == (3, 0, 3, 0)
    assert [_count(engine, t) for t in (Baseline, BaselineInstance, CanaryRecord, LeaderboardEntry)] == counts
    assert counts == [3, 18, 18, first.leaderboard_entries]


@pytest.mark.parametrize("form", ["benchmark_output", "suite_dir", "run_dir"])
def test_every_input_form_gives_the_same_evidence(
    form: str, engine: Engine, helm_output: Path, suite_dir: Path
) -> None:
    path = {"benchmark_output": helm_output, "suite_dir": suite_dir, "run_dir": run_dir_of(suite_dir, "shc_ptbm_med")}[
        form
    ]
    with session_scope(engine) as s:
        report = import_helm_path(s, path)
        ptbm = next(b for b in report.baselines if b.benchmark == "shc_ptbm_med")
        assert (ptbm.value, ptbm.n, report.suite) == (0.0, 8, SUITE)
    with session_scope(engine) as s:
        again = import_helm_path(s, run_dir_of(suite_dir, "shc_ptbm_med"))
    assert again.created == 0  # same files, whatever path named them


def test_a_changed_run_becomes_version_2_and_keeps_version_1(engine: Engine, writable_suite: Path) -> None:
    with session_scope(engine) as s:
        import_helm_path(s, writable_suite)
    run = run_dir_of(writable_suite, "EXACT-MATCH-DEMO")
    stats = json.loads((run / "stats.json").read_text())
    for stat in stats:
        if stat["name"]["name"] == "exact_match":
            stat["mean"] = 0.5
    (run / "stats.json").write_text(json.dumps(stats))
    with session_scope(engine) as s:
        report = import_helm_path(s, writable_suite)
        assert [(b.benchmark, b.version) for b in report.baselines if b.created] == [("EXACT-MATCH-DEMO", 2)]
        latest = latest_baseline(s, "EXACT-MATCH-DEMO")
        assert latest is not None and (latest.version, latest.value) == (2, 0.5)
        versions = [b for b in list_baselines(s) if b.benchmark == "EXACT-MATCH-DEMO"]
        assert [(b.version, b.value) for b in versions] == [(1, 0.0), (2, 0.5)]
        assert len(canaries_for_baseline(s, latest.id)) == 6


def test_model_filter(engine: Engine, helm_output: Path) -> None:
    with session_scope(engine) as s:
        assert import_helm_path(s, helm_output, model="simple/model1").created == 3
    with (
        pytest.raises(NotHelmOutput, match=r"model: no run of model 'openai/gpt-4o'; models: simple/model1"),
        session_scope(engine) as s,
    ):
        import_helm_path(s, helm_output, model="openai/gpt-4o")


def test_leaderboard_context_from_group_tables(engine: Engine, helm_output: Path, suite_dir: Path) -> None:
    with session_scope(engine) as s:
        report = import_helm_path(s, helm_output)
        cells = leaderboard_entries(s, benchmark="shc_ptbm_med")
    numeric = 0
    for path in (suite_dir / "groups").glob("*.json"):
        for table in json.loads(path.read_text()):
            for row in table["rows"]:
                numeric += sum(
                    1
                    for h, c in zip(table["header"], row, strict=False)
                    if h.get("metadata", {}).get("metric") and isinstance(c.get("value"), int | float)
                )
    assert report.leaderboard_entries == numeric > 0
    lead = [c for c in cells if c.group == "medhelm_scenarios" and c.table_title == "Accuracy"]
    assert len(lead) == 1
    cell = lead[0]
    assert (cell.model, cell.model_name, cell.column, cell.run_group, cell.value) == (
        "Simple Model 1",
        "simple/model1",
        "ADHD-Behavior - EM",
        "ADHD-Behavior",
        0.0,
    )
    assert cell.lower_is_better is False and cell.run_specs == ["shc_ptbm_med:model=simple_model1"]
    assert cell.mean_win_rate is None and cell.published_mean_win_rate is None  # one model: no win rate
