"""Helpers for the alerts tests: a settable clock and signals about one subject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session

from medmon.alerts import Alert, NotifyPolicy, Severity, Signal, Subject, apply_signals
from medmon.alerts.rules import Rule

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


class FakeClock:
    """Time that moves only when a test moves it."""

    def __init__(self, start: datetime = T0) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t

    def advance(self, **kwargs: float) -> datetime:
        self.t += timedelta(**kwargs)
        return self.t


def subject(task: str = "dosing", severity: Severity = Severity.critical) -> Subject:
    return Subject(
        deployment="production",
        task=task,
        benchmark="medcalc_bench",
        category="Clinical Decision Support",
        owner="Dr. Owner <owner@hospital.example>",
        dashboard_url=f"http://127.0.0.1:8501/task?task={task}",
        severity=severity,
    )


def fire(
    task: str = "dosing",
    metric: str = "score",
    rule: Rule | str = Rule.drift_drop,
    severity: Severity = Severity.critical,
    summary: str = "",
    **evidence: float,
) -> Signal:
    return subject(task, severity).signal(
        rule, metric, firing=True, summary=summary or f"{task}: {metric} {rule}", evidence=evidence
    )


def clear(task: str = "dosing", metric: str = "score", rule: Rule | str = Rule.drift_drop) -> Signal:
    return subject(task).signal(rule, metric, firing=False, summary=f"{task}: {metric} recovered")


def apply_signal(session: Session, signal: Signal, routes: NotifyPolicy, now: datetime) -> Alert | None:
    """Apply one signal: the alert it created, refreshed or resolved (None if nothing to do)."""
    return apply_signals(session, [signal], routes, now)[0]
