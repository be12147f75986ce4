"""Every canary stream's alert belongs to the incident of the problem it measures: a rise in typical
latency or cost is a latency or cost incident, never evidence of an accuracy drop."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from medmon.alerts import KINDS, Rule, apply_signals, cause_of
from medmon.alerts.incidents import incident_members, open_incidents
from medmon.db import session_scope
from medmon.monitor.alerting.signals import stream_signal
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.routing import notify_policy
from tests.monitor.test_traffic_incidents import _update
from tests.monitor.traffic_helpers import traffic_plan

# What each stream measures, as a clinician or an operator would file it.
EXPECTED = {
    "score": "accuracy",
    "pooled_score": "accuracy",
    "reevaluation": "accuracy",
    "conformance": "accuracy",
    "error_rate": "availability",
    "cost": "cost",
    "cost_typical": "cost",
    "latency": "latency",
    "latency_typical": "latency",
    "jury_agreement": "jury",
    "judge_canaries": "jury",
    "judge_bias": "jury",
    "judge_failures": "jury",
    "reader_agreement": "jury",  # the reader model is watched like a judge
    "refusal": "output",
    "format": "output",
    "verbosity": "output",
    "truncation": "output",
    "served_identity": "model_change",
}


def test_every_stream_rule_is_filed_under_what_it_measures() -> None:
    streams = [
        k
        for k in KINDS.values()
        if k.source in ("canary", "judge") and k.rule not in (Rule.subgroup_drop, Rule.subgroup_gap, Rule.drift_change)
    ]
    assert set(EXPECTED) == {k.metric for k in streams}  # a new stream needs its cause written down here
    filed = {k.metric: cause_of({"rule": k.rule.value, "metric": k.metric}).value for k in streams}
    assert filed == EXPECTED


@pytest.mark.parametrize(("metric", "cause"), [("latency_typical", "latency"), ("cost_typical", "cost")])
def test_a_typical_latency_or_cost_rise_at_the_moment_of_an_accuracy_drop_joins_its_incident(
    engine, db_url, metric: str, cause: str
) -> None:
    plan = traffic_plan(db_url)
    ctx = load_context(plan, plan.task("discharge"))
    drop = stream_signal(plan, ctx, _update("discharge", "score", "drop"))
    rise = stream_signal(plan, ctx, _update("discharge", metric, "rise"))
    assert drop is not None and rise is not None
    with session_scope(engine) as s:
        apply_signals(s, [drop, rise], notify_policy(plan), datetime.now(UTC))
    with session_scope(engine) as s:
        incidents = {i.cause: [a.labels["metric"] for a in incident_members(s, i.id or 0)] for i in open_incidents(s)}
    assert incidents == {"accuracy": ["score", metric]}  # one problem of one task at one moment: one page
