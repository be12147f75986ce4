"""The stream catalogue is complete, in the manner of datasette's documentation tests: every kind of stream
and rule has a rule, words, a cause, a row in docs/alerts.md and a test that names it; every stream the
monitor declares for a rich plan is of a kind in the catalogue; adding a kind is one entry plus its detector."""

from __future__ import annotations

import doctest
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

import medmon.alerts.catalogue
from medmon.alerts import KINDS, Cause, Impact, Kind, Rule, Severity, cause_of, stream_kind
from medmon.alerts.causes import RUNBOOKS
from medmon.db import session_scope
from medmon.monitor.alerting import clinician_scale
from medmon.monitor.alerting.signals import stream_signal
from medmon.monitor.detection.drift.reference import InstanceRef, References, helm_references
from medmon.monitor.detection.served import identity_spec
from medmon.monitor.detection.streams import (
    StreamSpec,
    conformance_update,
    start_reevaluation,
    task_streams,
    update_judge_canaries,
    update_stream,
    update_task_streams,
)
from medmon.monitor.models import TrafficReference
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.judging import judgement_specs
from medmon.monitor.traffic.streams import traffic_specs
from medmon.monitor.traffic.volume import volume_specs
from medmon.probes.models import ProbeResultBase
from tests.conftest import plan_dict
from tests.monitor.test_detection import answers, as_before, baseline, canaries, context

ROOT = Path(__file__).resolve().parents[2]
MARK, END = "<!-- catalogue -->\n", "<!-- /catalogue -->"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
STREAMS = {k.name for k in KINDS.values() if k.detector}
JURY = {"judges": [{"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}]}


@pytest.mark.parametrize("kind", KINDS.values(), ids=list(KINDS))
def test_every_kind_names_its_rule_cause_impact_owner_words_and_advice(kind: Kind) -> None:
    assert isinstance(kind.rule, Rule) and isinstance(kind.cause, Cause) and isinstance(kind.impact, Impact)
    assert kind.owner in ("clinical", "technical") and kind.source in ("canary", "judge", "traffic", "monitor")
    assert kind.family in ("quality", "operational", "info")
    assert kind.words().strip() and (kind.todo or RUNBOOKS[kind.cause]).strip(), f"{kind.name} says nothing to do"
    if kind.detector:  # a stream's metric label leads back to its rule
        assert stream_kind(f"{kind.metric}[x]" if kind.sub else kind.metric, kind.direction).rule is kind.rule


def test_every_rule_has_a_kind_and_one_impact_and_each_metric_one_cause() -> None:
    assert {k.rule for k in KINDS.values()} == set(Rule)  # no rule outside the catalogue, no kind without a rule
    for rule in Rule:
        assert len({k.impact for k in KINDS.values() if k.rule is rule}) == 1, rule
    for kind in KINDS.values():
        metric = f"{kind.metric}[x]" if kind.sub else kind.metric
        assert cause_of({"rule": kind.rule.value, "metric": metric}) is kind.cause, kind.name
        if kind.detector:
            assert cause_of({"metric": metric}) is kind.cause, kind.name  # as the overview files a stream


def test_an_unknown_stream_or_rule_is_an_error_where_it_is_declared() -> None:
    with pytest.raises(KeyError, match="no kind in the stream catalogue"):
        StreamSpec("t:invented:rise", "t", "invented", "rise", 0.1, 0.0, lambda r: None)
    with pytest.raises(ValueError):
        Rule("invented")


def docs_table() -> str:
    """The catalogue as docs/alerts.md shows it (``python -m tests.alerts.test_catalogue`` prints it)."""
    rows = [
        "| kind | source | metric | rule | cause | impact | owner | an alarm means | the committee |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k in KINDS.values():
        rows.append(
            f"| {k.name} | {k.source} | `{k.metric}{'[...]' if k.sub else ''}` | `{k.rule.value}` | "
            f"{k.cause.value} | {k.impact.value} | {k.owner} | {k.words()} | "
            f"{k.todo or 'the runbook of its cause'} |"
        )
    return "\n".join(rows)


def test_docs_alerts_lists_every_kind_from_the_catalogue() -> None:
    text = (ROOT / "docs" / "alerts.md").read_text("utf-8")
    table = text[text.index(MARK) + len(MARK) : text.index(END)].strip()
    assert table == docs_table(), (
        "docs/alerts.md's catalogue table is out of date: paste the output of "
        "`python -m tests.alerts.test_catalogue` between its markers"
    )


def test_every_kind_is_named_by_a_test() -> None:
    texts = "\n".join(p.read_text("utf-8") for p in (ROOT / "tests").rglob("*.py") if p.name != "test_catalogue.py")
    untested = [
        k.name
        for k in KINDS.values()
        if f'"{k.rule.value}"' not in texts and f"Rule.{k.rule.value}" not in texts and f'"{k.metric}' not in texts
    ]
    assert untested == [], f"kinds no test names (by rule or metric): {untested}"


def test_the_catalogue_doctests_run() -> None:
    result = doctest.testmod(medmon.alerts.catalogue)
    assert result.failed == 0 and result.attempted > 0


def _rich_plan() -> Plan:
    task = {
        "id": "knowledge-qa",
        "benchmark": "med_qa",
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "schedule": "1h",
        "sample_size": 20,
        "subgroups": ["sex"],
        "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5, "min_jury_agreement": 0.7},
    }
    traffic = {"token_env": None, "routes": [{"task": "knowledge-qa", "attributes": {"medmon.task": "knowledge-qa"}}]}
    return Plan.model_validate(
        plan_dict(
            tasks=[task, {**task, "id": "head", "benchmark": "head_qa", "subgroups": []}],
            jury=JURY,
            traffic=traffic,
            reader_model={"base_url": "http://127.0.0.1:9/v1", "model": "reader", "enabled": True},
        )
    )


def _reference() -> TrafficReference:
    median = {"n": 500, "median": 1.0, "share_above": 0.5}
    rate = {"n": 500, "rate": 0.02}
    stats = {
        "traffic_cost": median,
        "traffic_latency": median,
        "traffic_output_tokens": median,
        "traffic_error_rate": rate,
        "traffic_truncation": rate,
        "traffic_refusal": rate,
        "volume": {"phi": 0.01},
        "judged": {"n": 60, "score": 0.8, "var": 0.02},
    }
    return TrafficReference(
        task_id="knowledge-qa", period_from=T0, period_to=T0 + timedelta(days=7), calls=500, stats=stats, models=["m"]
    )


def test_every_stream_a_rich_plan_declares_is_of_its_kind_and_every_stream_kind_is_declared(
    engine: Engine, make_plan: Callable[..., Plan]
) -> None:
    plan, pool = _rich_plan(), canaries()
    benchmark = Plan.model_validate(
        {
            **plan.model_dump(mode="json", exclude_none=True),
            "detection": {"burn_in_runs": 0, "distribution_checks": True},
        }
    )
    helm = helm_references(pool, plan.detection.reference.coverage)
    specs: list[StreamSpec] = []
    for p in (plan, benchmark):
        for scorer in ("jury", "multiple_choice"):
            specs += task_streams(
                p, p.tasks[0], baseline(0.78), pool, refs=helm if p is benchmark else None, scorer=scorer
            )
    # a completed go-live reference (before it the score stream is armed against the baseline)
    golive = References("burn-in", 1, {c.id: InstanceRef(0.8, 5, total2=4.0) for c in pool})
    specs += task_streams(plan, plan.tasks[0], baseline(0.78), pool, refs=golive, burn_in=golive)
    ref = _reference()
    specs += traffic_specs(plan, ref) + volume_specs(plan, ref) + judgement_specs(plan, "knowledge-qa", ref)
    ctx = context(benchmark, pool)
    conformance = conformance_update(benchmark, ctx, helm)
    assert conformance is not None
    specs.append(conformance.spec)
    specs.append(identity_spec(plan))  # the deployment's served-model identity stream
    rng = random.Random(1)
    with session_scope(engine) as s:
        specs += [u.spec for u in update_judge_canaries(s, plan, "j1", [(3.0, 3.0)] * 10, T0)]
        start_reevaluation(s, benchmark, ctx, baseline(0.78), T0)
        for task in (1, 0):  # the second task's primary stream completes the category's pool
            specs += [
                u.spec
                for u in update_task_streams(
                    s,
                    benchmark,
                    context(benchmark, pool, task),
                    baseline(0.78),
                    answers(rng, pool, 20, as_before, task_id=benchmark.tasks[task].id),
                    T0,
                )
            ]
    for spec in specs:
        kind = KINDS[spec.kind]
        assert stream_kind(spec.metric, spec.direction).rule is kind.rule, spec.key
        assert spec.family == kind.family and spec.what, spec.key
    # the clinician-scale stream is kept by the oversight pass (medmon.monitor.alerting.clinician_scale), not a layout
    assert KINDS["clinician_scale"].metric == clinician_scale.METRIC == "clinician_scale"
    assert stream_kind(clinician_scale.METRIC).detector == clinician_scale.PredictionPoweredSR.name
    assert {s.kind for s in specs} == STREAMS - {"clinician_scale"}  # no stream outside the catalogue, none undeclared


def test_a_new_stream_kind_is_one_catalogue_entry_plus_its_detector(
    engine: Engine, make_plan: Callable[..., Plan], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worked example: empty answers, added as one entry, flow to an alert of the right rule, cause and severity."""
    plan = make_plan()  # risk tier high: a quality alert is critical
    ctx = load_context(plan, plan.tasks[0])

    def declare() -> StreamSpec:  # its detector: a one-sided mixture SR on "the answer came back empty"
        return StreamSpec(
            "knowledge-qa:empty_answer:rise",
            "knowledge-qa",
            "empty_answer",
            "rise",
            0.05,
            0.0,
            lambda r: None if r.error_type else float(not r.completion_tokens),
            params={"mu0": 0.05, "sigma2": 0.05, "direction": "rise"},
        )

    with pytest.raises(KeyError, match="empty_answer"):
        declare()  # not in the catalogue: an error where the stream is declared
    monkeypatch.setitem(
        KINDS,
        "empty_answer",
        Kind(
            "empty_answer",
            "canary",
            "empty_answer",
            Rule.format_drift,
            Cause.output,
            Impact.quality,
            "clinical",
            "more answers come back empty",
            "Check that the application shows an answer at all.",
            "mixture_sr",
        ),
    )
    spec = declare()
    assert (spec.kind, spec.family, spec.what) == ("empty_answer", "quality", "more answers come back empty")
    empty = [
        ProbeResultBase(task_id="knowledge-qa", canary_id=f"c{i}", score=0.0, completion_tokens=0) for i in range(40)
    ]
    with session_scope(engine) as s:
        update = update_stream(s, spec, 100.0, empty, T0)
    assert update.finding is not None
    signal = stream_signal(plan, ctx, update)
    assert signal is not None and signal.firing
    assert (signal.labels["rule"], signal.labels["cause"], signal.severity) == (
        "format_drift",
        "output",
        Severity.critical,
    )
    assert signal.summary.startswith("knowledge-qa: more answers come back empty: now 1.00 where 0.05 was expected")
    monkeypatch.undo()
    with pytest.raises(KeyError):
        declare()  # removed again: nothing else remembers it


if __name__ == "__main__":
    print(docs_table())
