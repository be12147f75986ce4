"""Alert rules: plain data in, a ``Signal`` out (firing, clearing, or None for "no verdict").

The monitor gathers the numbers (``medmon.monitor.alerting.signals``); these functions decide, word the
summary, attach the evidence and set the severity, without touching a database or a clock.
Rules that measure a noisy estimate fire on its interval, not on one run: a score is "below
the approval minimum" only when the whole 95% interval is, and clears only once the whole
interval is back at or above it (hysteresis: one persistent drop is one alert, re-armed only
after the figure has clearly recovered, so an estimate hovering at the line does not flap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from medmon.alerts.catalogue import Impact, Kind, Rule, cause_of, impact_of, stream_kind
from medmon.alerts.models import Severity
from medmon.alerts.signal import Signal

_ORDER = [Severity.info, Severity.warning, Severity.critical]


def severity_of(impact: Impact, task_severity: Severity) -> Severity:
    """The task's severity (risk tier or override) for quality, at most warning for operational.

    Examples
    --------
    >>> severity_of(Impact.quality, Severity.critical).value
    'critical'
    >>> severity_of(Impact.operational, Severity.critical).value
    'warning'
    """
    if impact is Impact.info:
        return Severity.info
    if impact is Impact.operational:
        return min(task_severity, Severity.warning, key=_ORDER.index)
    return task_severity


@dataclass(frozen=True)
class Subject:
    """What every alert about one task carries: where, what, who owns it, and where to look."""

    deployment: str
    task: str = ""
    benchmark: str = ""
    category: str = ""
    owner: str = ""
    dashboard_url: str = ""
    severity: Severity = Severity.warning

    def signal(
        self, rule: Rule, metric: str, *, firing: bool, summary: str, evidence: Mapping[str, Any] | None = None
    ) -> Signal:
        """A signal labelled for this subject, its severity from the rule's impact (a name no rule has raises)."""
        labels = {
            "deployment": self.deployment,
            "task": self.task,
            "metric": metric,
            "rule": Rule(rule).value,
            "benchmark": self.benchmark,
            "category": self.category,
        }
        labels["cause"] = cause_of(labels).value
        severity = severity_of(impact_of(rule), self.severity)
        return Signal(
            labels=labels,
            firing=firing,
            severity=severity,
            summary=summary,
            owner=self.owner,
            category=self.category,
            dashboard_url=self.dashboard_url,
            evidence=dict(evidence or {}),
        )

    @property
    def name(self) -> str:
        return self.task or f"monitor {self.deployment}"


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95% interval and sample size."""

    value: float
    low: float
    high: float
    n: int

    def as_evidence(self) -> dict[str, float]:
        return {"estimate": self.value, "ci_low": self.low, "ci_high": self.high, "n": self.n}


def detector_alarm(
    subject: Subject, metric: str, evidence: Mapping[str, Any], *, kind: Kind | None = None, what: str = ""
) -> Signal:
    """A stream's sequential detector alarmed: the rule of its ``kind`` (default: the metric's), ``what`` it means.

    ``evidence`` holds at least estimate, ci_low, ci_high, null_mean and n (and ``quantity``
    when the estimate is not a plain mean, e.g. a paired difference).
    """
    kind = kind or stream_kind(metric)
    summary = f"{subject.name}: {what or kind.what}: {plain_evidence(evidence, metric)}"
    return subject.signal(kind.rule, metric, firing=True, summary=summary, evidence=evidence)


def plain_evidence(e: Mapping[str, Any], metric: str = "score") -> str:
    """A detector's evidence in words; the interval and the detector's statistic stay in the evidence.

    >>> plain_evidence({"estimate": 0.61, "ci_low": 0.5, "ci_high": 0.7, "null_mean": 0.82, "n": 120})
    'now 0.61 where 0.82 was expected (over 120 observations)'
    >>> plain_evidence({"estimate": -0.2, "ci_low": -0.3, "ci_high": -0.1, "null_mean": 0.0, "n": 40,
    ...                 "quantity": "paired difference"})
    'answers score 0.20 lower than the same canaries did at the reference (over 40 observations)'
    """
    quantity, est, null, n = str(e.get("quantity", "mean")), float(e["estimate"]), float(e["null_mean"]), e["n"]
    over = f"(over {n} observations)"
    unit, suffix = _UNITS.get(metric, ("{:.2f}", ""))
    if quantity == "paired difference":
        way = "lower" if est < 0 else "higher"
        allowed = f", where {abs(null):.2f} was tolerated" if null else ""
        return f"answers score {abs(est):.2f} {way} than the same canaries did at the reference{allowed} {over}"
    if quantity == "gap":
        return f"the gap to the rest is {est:.2f} beyond the gap at baseline {over}"
    if quantity == "mean":
        return f"now {unit.format(est)}{suffix} where {unit.format(null)} was expected {over}"
    return f"{quantity} now {est:.2f} where {null:.2f} was expected {over}"


# How a stream's own values read: most operational streams count the share of calls (or answers)
# beyond a line (over the budget, slower than the objective, longer than the reference's median).
_SHARE = "{:.0%}"
_UNITS = {
    "cost": (_SHARE, " of calls over the budget"),
    "latency": (_SHARE, " of calls slower than the objective"),
    "refusal": (_SHARE, " of answers"),
    "format": (_SHARE, " of answers"),
    "verbosity": (_SHARE, " of answers"),
    "truncation": (_SHARE, " of answers"),
    "error_rate": (_SHARE, " of calls"),
    "traffic_cost": (_SHARE, " of calls"),
    "traffic_latency": (_SHARE, " of calls"),
    "traffic_output_tokens": (_SHARE, " of answers"),
    "traffic_error_rate": (_SHARE, " of calls"),
}


def detector_recovered(subject: Subject, metric: str, *, kind: Kind | None = None) -> Signal:
    """The stream held its null for long enough after an alarm: the alert clears."""
    rule = (kind or stream_kind(metric)).rule
    return subject.signal(rule, metric, firing=False, summary=f"{subject.name}: {metric} recovered")


def below_minimum(subject: Subject, estimate: Estimate | None, minimum: float, *, min_n: int = 30) -> Signal | None:
    """Fire when the recent score's whole 95% interval lies under ``thresholds.min_score``.

    Clears only once the whole interval is at or above the minimum: a score that dropped to the
    line and hovers there stays one alert, whatever its estimate does from run to run. In
    between, and with fewer than ``min_n`` scored results, there is no verdict (None).

    Examples
    --------
    >>> s = Subject("prod", "qa")
    >>> below_minimum(s, Estimate(0.70, 0.64, 0.74, 200), 0.75).firing
    True
    >>> below_minimum(s, Estimate(0.76, 0.70, 0.82, 200), 0.75) is None     # back at the line: not yet clear
    True
    >>> below_minimum(s, Estimate(0.84, 0.78, 0.89, 200), 0.75).firing      # clearly recovered
    False
    """
    if estimate is None or estimate.n < min_n:
        return None
    evidence = {**estimate.as_evidence(), "minimum": minimum}
    if estimate.high < minimum:
        summary = (
            f"{subject.name}: the score is {estimate.value:.2f}, below the minimum in force {minimum:.2f}, and "
            f"clearly so: even the top of its likely range, {estimate.high:.2f}, is below it ({estimate.n} answers)"
        )
        return subject.signal(Rule.below_minimum, "score", firing=True, summary=summary, evidence=evidence)
    if estimate.low >= minimum:
        return subject.signal(
            Rule.below_minimum,
            "score",
            firing=False,
            evidence=evidence,
            summary=(
                f"{subject.name}: the score is {estimate.value:.2f}, back above the minimum {minimum:.2f} "
                f"(even the bottom of its likely range, {estimate.low:.2f}, is above it)"
            ),
        )
    return None


def model_changed(subject: Subject, old: tuple[str, str | None], new: tuple[str, str | None]) -> Signal:
    """The served model or its system fingerprint differs from the last one seen."""
    summary = (
        f"{subject.name}: served model changed from {old[0]} ({old[1] or 'no fingerprint'}) "
        f"to {new[0]} ({new[1] or 'no fingerprint'})"
    )
    return subject.signal(
        Rule.model_change,
        "served_model",
        firing=True,
        summary=summary,
        evidence={
            "previous_model": old[0],
            "previous_fingerprint": old[1],
            "served_model": new[0],
            "system_fingerprint": new[1],
        },
    )


def stale(
    subject: Subject, last_data_at: datetime | None, allowed: timedelta, now: datetime, *, since: datetime
) -> Signal:
    """Fire when no usable probe data arrived for longer than ``allowed``; clear once it does.

    Age is counted from the later of the last usable data and ``since`` (when the monitor's
    current run of heartbeats began): a gap while the monitor itself was down is the heartbeat
    rule's to report.
    """
    start = max(last_data_at, since) if last_data_at is not None else since
    age = now - start
    evidence = {
        "last_data_at": last_data_at.isoformat() if last_data_at else None,
        "age_s": round(age.total_seconds(), 3),
        "allowed_s": allowed.total_seconds(),
    }
    if age > allowed:
        last = last_data_at.isoformat() if last_data_at else "never"
        summary = f"{subject.name}: no usable probe data for {_span(age)} (allowed {_span(allowed)}; last data {last})"
        return subject.signal(Rule.stale, "freshness", firing=True, summary=summary, evidence=evidence)
    return subject.signal(
        Rule.stale, "freshness", firing=False, evidence=evidence, summary=f"{subject.name}: probe data is fresh again"
    )


def heartbeat_missed(
    subject: Subject, last_beat: datetime | None, tolerance: timedelta, now: datetime
) -> Signal | None:
    """Fire when the monitor's last heartbeat is older than ``tolerance``; clear when it beats again.

    ``None`` before the first beat ever: a new installation has no gap to report.
    """
    if last_beat is None:
        return None
    gap = now - last_beat
    evidence = {
        "last_beat": last_beat.isoformat(),
        "gap_s": round(gap.total_seconds(), 3),
        "tolerance_s": tolerance.total_seconds(),
    }
    if gap > tolerance:
        summary = (
            f"{subject.name}: no heartbeat for {_span(gap)} (since {last_beat.isoformat()}); scheduled "
            "probes in that time did not run"
        )
        return subject.signal(Rule.heartbeat, "heartbeat", firing=True, summary=summary, evidence=evidence)
    return subject.signal(
        Rule.heartbeat, "heartbeat", firing=False, evidence=evidence, summary=f"{subject.name}: heartbeat restored"
    )


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
