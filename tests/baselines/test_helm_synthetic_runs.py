"""HELM and MedHELM runs the fixture does not cover, written by ``helm_runs.RunWriter``."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from medmon.baselines import (
    NoMainMetric,
    canaries_for_baseline,
    import_helm_path,
    instance_scores,
    jury_detail,
    latest_baseline,
)
from medmon.baselines.helm_stats import choose_main_metric
from medmon.baselines.taxonomy import resolve
from medmon.db import session_scope
from tests.baselines.helm_runs import Inst, RunWriter

Z = 1.959963984540054
JUDGES = {
    "gpt": {"accuracy": 4, "completeness": 3, "clarity": 5},
    "llama": {"accuracy": 5, "completeness": 4, "clarity": 5},
    "claude": {"accuracy": 2, "completeness": 3, "clarity": 4},
}


def _jury_instances() -> list[Inst]:
    out = []
    for k, shift in enumerate([0, 1, -1, 0, 1]):
        judges = {j: {c: max(1, min(5, s + shift)) for c, s in crit.items()} for j, crit in JUDGES.items()}
        score = statistics.mean(s for crit in judges.values() for s in crit.values())
        out.append(
            Inst(
                f"note{k}", [score], prompt=f"Write the note {k}", correct=(f"gold note {k}",), wrong=(), judges=judges
            )
        )
    return out


def test_medhelm_jury_benchmark(engine: Engine, write_run: RunWriter) -> None:
    insts = _jury_instances()
    run = write_run(
        "aci", insts, groups=["aci_bench"], metric="aci_bench_accuracy", method="generation", jury_key="aci_bench"
    )
    with session_scope(engine) as s:
        report = import_helm_path(s, run)
        b = latest_baseline(s, "aci_bench")
        assert b is not None
        scores = [i.scores[0] for i in insts]
        mean, sd = statistics.mean(scores), statistics.stdev(scores)
        assert (b.metric, b.scale_min, b.scale_max, b.n, b.category) == (
            "aci_bench_accuracy",
            1.0,
            5.0,
            5,
            "Clinical Note Generation",
        )
        assert math.isclose(b.value, mean) and math.isclose(b.normalized, (mean - 1) / 4)
        assert math.isclose(b.ci_low, mean - Z * sd / math.sqrt(5)) and math.isclose(
            b.ci_high, mean + Z * sd / math.sqrt(5)
        )
        assert instance_scores(s, b.id) == pytest.approx({i.id: i.scores[0] for i in insts})
        detail = jury_detail(s, b.id)
        canaries = canaries_for_baseline(s, b.id)
    assert detail["note0"] == {j: {c: float(v) for c, v in crit.items()} for j, crit in JUDGES.items()}
    assert {c.scorer for c in canaries} == {"jury"}
    assert canaries[0].references == ("gold note 0",) and canaries[0].prompt == "[trial 0] Write the note 0"
    assert report.baselines[0].in_taxonomy and not report.baselines[0].notes


def test_duplicates_perturbations_and_trials(engine: Engine, write_run: RunWriter) -> None:
    # the writer adds a perturbation copy worth -9 and a second metric-class entry per (instance, trial)
    insts = [Inst("a", [1.0, 0.0, 1.0]), Inst("b", [0.0, 0.0, 0.0]), Inst("c", [1.0, 1.0, 1.0])]
    run = write_run("trials", insts, groups=["med_qa"])
    with session_scope(engine) as s:
        import_helm_path(s, run)
        b = latest_baseline(s, "med_qa")
        assert b is not None and (b.value, b.n, b.replicates) == (pytest.approx(5 / 9), 3, 3)
        assert instance_scores(s, b.id) == pytest.approx({"a": 2 / 3, "b": 0.0, "c": 1.0})
        canaries = {c.id: c for c in canaries_for_baseline(s, b.id)}
        sd = statistics.stdev([2 / 3, 0.0, 1.0])  # instance means are not 0/1: normal interval
        assert math.isclose(b.ci_low, max(0.0, 5 / 9 - Z * sd / math.sqrt(3)))
    assert canaries["a"].baseline_score == pytest.approx(2 / 3) and canaries["a"].baseline_runs == 3
    assert canaries["a"].prompt == "[trial 0] Question?"  # the first trial's request
    assert (
        canaries["a"].scorer == "multiple_choice"
        and canaries["a"].references == ("A",)
        and canaries["a"].choices == ("yes", "no")
    )


def test_medcalc_tolerance_and_billing_set_f1(engine: Engine, write_run: RunWriter) -> None:
    calc = write_run(
        "calc",
        [
            Inst(
                "n1",
                [1.0],
                correct=("5.0",),
                wrong=(),
                extra={"category": "lab", "lower_limit": "4.5", "upper_limit": "5.5"},
            ),
            Inst(
                "d1",
                [0.0],
                correct=("01/02/2020",),
                wrong=(),
                extra={"category": "date", "lower_limit": "01/02/2020", "upper_limit": "01/02/2020"},
            ),
        ],
        groups=["medcalc_bench"],
        metric="medcalc_bench_accuracy",
        method="generation",
    )
    bill = write_run(
        "bill",
        [Inst("x", [0.5], correct=("I10, E11.9",), wrong=()), Inst("y", [0.8], correct=("J45",), wrong=())],
        groups=["mimiciv_billing_code"],
        metric="mimiciv_billing_code_f1",
        method="generation",
    )
    with session_scope(engine) as s:
        import_helm_path(s, calc)
        import_helm_path(s, bill)
        calc_b, bill_b = latest_baseline(s, "medcalc_bench"), latest_baseline(s, "mimiciv_billing_code")
        assert calc_b is not None and bill_b is not None
        calc_c = {c.id: c for c in canaries_for_baseline(s, calc_b.id)}
        bill_c = canaries_for_baseline(s, bill_b.id)
    assert calc_c["n1"].scorer == "numeric_tolerance" and calc_c["n1"].tolerance == {"lower": 4.5, "upper": 5.5}
    assert calc_c["n1"].tags["category"] == "lab"
    assert calc_c["d1"].scorer == "exact_match" and calc_c["d1"].tolerance is None
    assert {c.scorer for c in bill_c} == {"set_f1"}
    assert math.isclose(bill_b.ci_high, 0.65 + Z * statistics.stdev([0.5, 0.8]) / math.sqrt(2))  # F1 is not 0/1: normal


def test_redacted_text_keeps_the_score_but_is_not_replayable(engine: Engine, write_run: RunWriter) -> None:
    run = write_run(
        "private",
        [Inst("p1", [1.0], prompt="[redacted]", correct=("[redacted]",)), Inst("p2", [0.0])],
        groups=["shc_conf_med"],
    )
    with session_scope(engine) as s:
        report = import_helm_path(s, run)
        b = latest_baseline(s, "shc_conf_med")
        assert b is not None and instance_scores(s, b.id) == {"p1": 1.0, "p2": 0.0}
        canaries = {c.id: c for c in canaries_for_baseline(s, b.id)}
    assert not canaries["p1"].replayable and canaries["p2"].replayable
    assert (report.baselines[0].canaries, report.baselines[0].replayable) == (2, 1)
    assert any("redacted" in n for n in report.baselines[0].notes)


def test_request_messages_are_replayed_as_sent(engine: Engine, write_run: RunWriter) -> None:
    messages = [{"role": "system", "content": "You are a clinician."}, {"role": "user", "content": "Dose?"}]
    run = write_run("chat", [Inst("m1", [1.0], messages=messages)], groups=["med_qa"])
    with session_scope(engine) as s:
        import_helm_path(s, run)
        b = latest_baseline(s, "med_qa")
        assert b is not None
        (canary,) = canaries_for_baseline(s, b.id)
    assert list(canary.messages) == messages


@pytest.mark.parametrize(
    ("benchmark", "metric"),
    [
        ("health_bench", "health_bench_score"),
        ("medxpert_qa_text", "exact_match"),
        ("sct_bench", "sct_score"),
        ("health_admin_bench", "health_admin_bench_score"),
    ],
)
def test_medhelm_package_benchmarks_are_in_the_taxonomy(
    benchmark: str, metric: str, engine: Engine, write_run: RunWriter
) -> None:
    run = write_run(
        benchmark, [Inst("h1", [0.25]), Inst("h2", [0.75])], groups=[benchmark], metric=metric, method="generation"
    )
    with session_scope(engine) as s:
        report = import_helm_path(s, run)
    (b,) = report.baselines
    assert (b.benchmark, b.metric, b.in_taxonomy, b.value, b.scale) == (benchmark, metric, True, 0.5, (0.0, 1.0))
    assert b.category == resolve(benchmark).category


def test_runs_sharing_a_benchmark_are_combined_like_the_leaderboard(engine: Engine, write_run: RunWriter) -> None:
    write_run("clear_a", [Inst("i0", [1.0]), Inst("i1", [1.0])], groups=["clear"])
    write_run("clear_b", [Inst("i0", [0.0]), Inst("i1", [1.0]), Inst("i2", [0.0]), Inst("i3", [0.0])], groups=["clear"])
    with session_scope(engine) as s:
        report = import_helm_path(s, write_run.root)
        (b,) = report.baselines
        assert (b.benchmark, b.value, b.n) == (
            "clear",
            pytest.approx((1.0 + 0.25) / 2),
            6,
        )  # unweighted mean of run means
        scores = instance_scores(s, b.baseline_id)
        canary_ids = [c.id for c in canaries_for_baseline(s, b.baseline_id)]
    assert (
        set(scores)
        == set(canary_ids)
        == {"clear_a/i0", "clear_a/i1", "clear_b/i0", "clear_b/i1", "clear_b/i2", "clear_b/i3"}
    )
    assert any("combined 2 runs" in n for n in b.notes)


def test_configurable_jury_default_score_widens_the_scale(engine: Engine, write_run: RunWriter) -> None:
    spec = [
        {"class_name": "helm.benchmark.metrics.llm_jury_metrics.LLMJuryMetric", "args": {"metric_name": "jury_score"}}
    ]
    run = write_run(
        "MY-JURY",
        [Inst("j1", [4.0]), Inst("j2", [0.0])],
        groups=["MY-JURY"],
        metric="jury_score",
        method="generation",
        metric_specs=spec,
    )
    with session_scope(engine) as s:
        (b,) = import_helm_path(s, run).baselines
    assert b.scale == (0.0, 5.0) and b.normalized == pytest.approx(0.4) and not b.in_taxonomy
    assert any("scale widened" in n for n in b.notes)


def test_n_falls_back_to_per_instance_count(engine: Engine, write_run: RunWriter) -> None:
    run = write_run(
        "no_n", [Inst("a", [1.0]), Inst("b", [1.0]), Inst("c", [0.0])], groups=["pubmed_qa"], num_instances=False
    )
    with session_scope(engine) as s:
        (b,) = import_helm_path(s, run).baselines
    assert b.n == 3 and any("no num_instances" in n for n in b.notes)


def _stats(*names: str) -> dict[tuple[str, str], dict[str, object]]:
    return {(n, "test"): {"count": 1, "mean": 0.5} for n in names}


@pytest.mark.parametrize(
    ("spec_metric", "written", "chosen"),
    [
        (None, ["exact_match", "jury_score", "x_accuracy"], "exact_match"),
        ("judge_score", ["exact_match", "judge_score"], "judge_score"),
        (None, ["jury_score", "x_accuracy"], "jury_score"),
        (None, ["b_accuracy", "a_accuracy", "a_f1"], "a_accuracy"),
        (None, ["code_f1", "z_score"], "code_f1"),
        (None, ["z_score", "num_instances"], "z_score"),
    ],
)
def test_main_metric_rule_outside_the_taxonomy(spec_metric: str | None, written: list[str], chosen: str) -> None:
    spec = {"metric_specs": [{"class_name": "X", "args": {"metric_name": spec_metric}}] if spec_metric else []}
    metric = choose_main_metric(spec, _stats(*written), resolve("custom"), Path("stats.json"))
    assert metric.name == chosen and metric.split == "test"


def test_no_usable_metric_outside_the_taxonomy() -> None:
    with pytest.raises(NoMainMetric, match=r"stats\.json: metrics: no usable main metric"):
        choose_main_metric({}, _stats("num_instances", "perplexity"), resolve("custom"), Path("stats.json"))
