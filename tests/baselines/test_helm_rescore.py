"""Importing the real HELM fixture re-scores its completions with medmon's scorer and keeps both figures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from medmon.baselines import Baseline, BaselineInstance, canaries_for_baseline, import_helm_path, instance_scores
from medmon.db import session_scope
from medmon.monitor.detection.drift.layout import task_streams
from medmon.monitor.plan.model import Plan
from medmon.probes.scoring import rescore
from tests.baselines.helm_runs import run_dir_of
from tests.probes import helm_reference_metrics as helm


def _states(run: Path) -> list[dict[str, Any]]:
    return json.loads((run / "scenario_state.json").read_text())["request_states"]


@pytest.fixture
def rescored(engine: Engine, helm_output: Path) -> dict[str, Any]:
    with session_scope(engine) as s:
        report = import_helm_path(s, helm_output, rescore=rescore)
        baselines = {b.benchmark: b for b in s.exec(select(Baseline)).all()}
        rows = {
            b.benchmark: {
                r.instance_id: r
                for r in s.exec(select(BaselineInstance).where(BaselineInstance.baseline_id == b.id)).all()
            }
            for b in baselines.values()
        }
        canaries = {b.benchmark: {c.id: c for c in canaries_for_baseline(s, b.id)} for b in baselines.values()}
        medmon = {b.benchmark: instance_scores(s, b.id, scored_by="medmon") for b in baselines.values()}
        for b in baselines.values():
            s.expunge(b)
        return {"report": report, "baselines": baselines, "rows": rows, "canaries": canaries, "medmon": medmon}


def test_strict_exact_match_run_agrees_with_helm_instance_by_instance(
    rescored: dict[str, Any], suite_dir: Path
) -> None:
    run = run_dir_of(suite_dir, "EXACT-MATCH-DEMO")
    rows = rescored["rows"]["EXACT-MATCH-DEMO"]
    for state in _states(run):
        instance = state["instance"]
        gold = next(r["output"]["text"] for r in instance["references"] if "correct" in r["tags"])
        completion = state["result"]["completions"][0]["text"]
        row = rows[instance["id"]]
        assert row.medmon_score == helm.exact_match(gold, completion)  # HELM's own metric as the oracle
        assert row.score == row.medmon_score  # and HELM's stored per-instance score
    b = rescored["baselines"]["EXACT-MATCH-DEMO"]
    assert (b.disagreements, b.compared, b.rescored_unparsed) == (0, len(rows), 0)
    assert b.disagreement_rate == 0.0
    # quasi exact match would have read '"No"' as "No": not how the baseline was measured
    assert any(helm.quasi_exact_match(r["instance"]["references"][0]["output"]["text"], '"No"') for r in _states(run))


def test_unreadable_completions_are_counted_and_flagged(rescored: dict[str, Any], suite_dir: Path) -> None:
    """The multiple-choice fixture's model answered ':' (max_tokens 1): HELM scored 0, medmon cannot read it."""
    run = run_dir_of(suite_dir, "shc_ptbm_med")
    completions = {s["instance"]["id"]: s["result"]["completions"][0]["text"] for s in _states(run)}
    b = rescored["baselines"]["shc_ptbm_med"]
    rows = rescored["rows"]["shc_ptbm_med"]
    unreadable = {
        i for i, text in completions.items() if rescore(rescored["canaries"]["shc_ptbm_med"][i], text) is None
    }
    assert unreadable == set(rows)  # every completion is ':'
    assert all(r.medmon_score is None and r.medmon_unparsed >= 1 for r in rows.values())
    assert b.rescored_unparsed == len(rows) and b.disagreements == len(rows) == b.compared
    assert b.disagreement_rate == 1.0
    assert all(c.baseline_score is None for c in rescored["canaries"]["shc_ptbm_med"].values())
    outcome = next(o for o in rescored["report"].baselines if o.benchmark == "shc_ptbm_med")
    assert outcome.flagged and any("disagree (100.0%)" in n and "flag" in n for n in outcome.notes)


def test_jury_runs_are_not_rescored(rescored: dict[str, Any]) -> None:
    b = rescored["baselines"]["LLM-JURY-DEMO"]
    assert b.rescored_value is None and b.disagreements is None and b.disagreement_rate is None
    assert rescored["medmon"]["LLM-JURY-DEMO"] == {}


def test_canaries_carry_the_decoding_settings_helm_sent(rescored: dict[str, Any], suite_dir: Path) -> None:
    """What the request carried (here no stop sequence, though the adapter spec lists one)."""
    requests = {s["instance"]["id"]: s["request"] for s in _states(run_dir_of(suite_dir, "shc_ptbm_med"))}
    for canary in rescored["canaries"]["shc_ptbm_med"].values():
        sent = requests[canary.id]
        assert sent["stop_sequences"] == []
        assert canary.decoding == {"temperature": sent["temperature"], "max_tokens": sent["max_tokens"]}
    for canary in rescored["canaries"]["EXACT-MATCH-DEMO"].values():
        assert canary.decoding is not None and canary.decoding["max_tokens"] == 1


def test_detectors_use_the_medmon_scored_baseline(rescored: dict[str, Any], make_plan: Callable[..., Plan]) -> None:
    b = rescored["baselines"]["EXACT-MATCH-DEMO"]
    canaries = list(rescored["canaries"]["EXACT-MATCH-DEMO"].values())
    assert b.detector_normalized == b.rescored_value
    task = {
        "id": "em",
        "benchmark": "EXACT-MATCH-DEMO",
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "thresholds": {"min_score": 0.1},
    }
    plan = make_plan(tasks=[task])
    specs = task_streams(plan, plan.tasks[0], b, canaries, scorer="exact_match")
    score = next(s for s in specs if s.key == "em:score:drop")
    assert score.baseline_mean == b.rescored_value
    # the paired references are the canaries' medmon-scored outcomes
    medmon = rescored["medmon"]["EXACT-MATCH-DEMO"]
    assert {c.id: c.baseline_score for c in canaries} == medmon
