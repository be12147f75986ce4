"""The committee report speaks in sentences: an alert reads as what happened and by how much,
and its kind of problem is named in words, not by a rule's id or a detector's statistics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import Estimate, record_signals
from medmon.alerts.rules import below_minimum, detector_alarm
from medmon.db import session_scope
from medmon.monitor.alerting.signals import task_subject
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.model import Plan

AT = datetime(2026, 11, 5, 3, 0, tzinfo=UTC)


def test_alerts_in_the_report_read_as_sentences(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    plan = make_plan()
    subject = task_subject(plan, plan.tasks[0])
    evidence = {"estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0, "null_mean": 0.513, "n": 40, "quantity": "mean"}
    signals = [
        below_minimum(subject, Estimate(0.54, 0.47, 0.61, 200), 0.70),
        detector_alarm(subject, "refusal", evidence),
    ]
    with session_scope(engine) as session:
        record_signals(session, [s for s in signals if s is not None], AT)
    with Session(engine) as session:
        report = build_committee_report(session, plan, parse_period("2026-11"), now=AT, plan_text="x")
    html = render_committee(report)
    table = html[html.index('id="alerts-table"') :]
    table = table[: table.index("</table>")]
    assert "the score is 0.54, below the minimum in force 0.70" in table
    assert "the model refuses to answer more often: now 100% of answers where 51% was expected" in table
    for statistician in ("estimate 1.000", "95% CI", "null 0.513", "below_minimum", "refusals_rising"):
        assert statistician not in table, statistician
    assert "<td>accuracy</td>" in table and "<td>answer length or format</td>" in table
