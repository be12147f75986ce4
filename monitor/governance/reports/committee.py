"""The governance committee report: one deployment over one period, from the database.

It answers what a committee asks each month: is each task still meeting the threshold it was
approved on (estimate, 95% interval, baseline, pass or fail), which alerts fired and who
handled them how, did the model change and what did the re-evaluation show, what did it cost
(the judges' cost apart), what the evidence cannot tell, and which plan was in force. Every
figure comes from SQL aggregates over the period ``[start, end)``, so ``summary()`` and the
HTML carry the same numbers a query would give.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, or_
from sqlmodel import Session, col, func, select

from medmon.alerts import incident_title
from medmon.alerts.models import Alert, AlertEvent, Incident, Silence
from medmon.baselines import Baseline
from medmon.baselines.interval import mean_interval, wilson_interval
from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.changes import list_changes
from medmon.monitor.plan.context import load_context, task_baseline
from medmon.monitor.errors import MedmonError
from medmon.monitor.models import AuditEvent, FindingRecord, ModelIdentity
from medmon.monitor.plan.model import Plan
from medmon.monitor.governance.reevaluation import judge, list_reevaluations
from medmon.monitor.governance.reports.limitations import known_limitations
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.governance.reports.recommendation import Recommendation, RecommendationRules, TaskFacts, recommend
from medmon.monitor.governance.reports.svg import score_chart
from medmon.db import as_utc
from medmon.probes.models import JudgeCall, ProbeResult, ProbeRun

MONITORING = "monitoring"
REEVALUATION = "reevaluation"
MAX_POINTS = 400
RECENT_WINDOW = 200  # answers: the dashboard's "score now" (medmon.monitor.read.overview.RECENT_WINDOW)
HUMAN_KINDS = (AuditKind.alert_acknowledged, AuditKind.alert_resolved, AuditKind.alert_silenced,
               AuditKind.alert_unsilenced, AuditKind.baseline_approved, AuditKind.change_declared,
               AuditKind.plan_change, AuditKind.threshold_change, AuditKind.baseline_import)


@dataclass
class TaskEvidence:
    task: str
    benchmark: str
    category: str
    subcategory: str | None
    owner: str
    human_review: bool
    schedule: str
    baseline: float | None
    baseline_ci: tuple[float, float] | None
    baseline_n: int | None
    baseline_source: str
    min_score: float
    tolerated_drop: float
    runs: int
    n: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    difference: float | None
    passed: bool | None
    conclusive: bool | None
    reasons: list[str]
    drift_findings: int
    chart: str = ""


@dataclass
class AlertRow:
    id: int
    task: str
    rule: str
    severity: str
    status: str
    summary: str
    starts_at: datetime
    ends_at: datetime | None
    handling: list[str]
    minutes_to_ack: float | None
    minutes_to_resolve: float | None


@dataclass
class IncidentRow:
    """One incident active in the period: one task, one cause, its signals, and who handled it."""

    id: int
    task: str
    cause: str
    title: str
    severity: str
    summary: str
    opened_at: datetime
    closed_at: datetime | None
    signals: int
    acknowledged_by: str | None
    resolved_by: str | None
    resolve_reason: str | None


@dataclass
class CostRow:
    task: str
    purpose: str
    calls: int
    errors: int
    cost_usd: float
    prompt_tokens: int
    completion_tokens: int
    mean_latency_s: float | None


@dataclass
class CommitteeReport:
    plan: Plan
    period: Period
    generated_at: datetime
    tasks: list[TaskEvidence]
    alerts: list[AlertRow]
    silences: list[dict[str, Any]]
    identities: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    reevaluations: list[dict[str, Any]]
    costs: list[CostRow]
    judge_cost_usd: float | None
    judge_calls: int
    limitations: list[str]
    decisions: list[dict[str, Any]]
    audit: dict[str, Any]
    plan_record: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    incidents: list[IncidentRow] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The report's figures as JSON-ready data (``medmon report --json``)."""
        production = sum(c.cost_usd for c in self.costs)
        return {
            "deployment": self.plan.deployment.name, "model": self.plan.deployment.model,
            "period": {"label": self.period.label, "start": self.period.start.isoformat(),
                       "end": self.period.end.isoformat()},
            "tasks": [{k: v for k, v in asdict(t).items() if k not in ("chart", "reasons")} for t in self.tasks],
            "alerts": {"count": len(self.alerts), "acknowledged": sum(1 for a in self.alerts if a.minutes_to_ack
                                                                      is not None),
                       "resolved": sum(1 for a in self.alerts if a.ends_at is not None),
                       "items": [{"id": a.id, "task": a.task, "rule": a.rule, "severity": a.severity,
                                  "status": a.status, "handling": a.handling} for a in self.alerts]},
            "recommendations": [{"task": r.task, "action": r.action, "reasons": list(r.reasons)}
                                for r in self.recommendations],
            "incidents": [{"id": i.id, "task": i.task, "cause": i.cause, "severity": i.severity,
                           "opened_at": i.opened_at.isoformat(), "closed": i.closed_at is not None,
                           "signals": i.signals} for i in self.incidents],
            "model_changes": len(self.changes),
            "reevaluations": self.reevaluations,
            "cost": {"production_usd": production,
                     "monitoring_usd": sum(c.cost_usd for c in self.costs if c.purpose == MONITORING),
                     "reevaluation_usd": sum(c.cost_usd for c in self.costs if c.purpose == REEVALUATION),
                     "judge_usd": self.judge_cost_usd, "judge_calls": self.judge_calls,
                     "by_task": [asdict(c) for c in self.costs]},
            "audit": self.audit,
        }


def _in(column: Any, period: Period) -> Any:
    return (column >= period.start) & (column < period.end)


def _interval(n: int, total: float, total2: float, binary: bool) -> tuple[float, float, float]:
    mean = total / n
    if binary:
        lo, hi = wilson_interval(mean, n)
    else:
        var = max(total2 - n * mean * mean, 0.0) / (n - 1) if n > 1 else 0.0
        lo, hi = mean_interval(mean, math.sqrt(var), n)
    return mean, lo, hi


def _monitoring() -> Any:
    return col(ProbeRun.purpose) != REEVALUATION


def _task_evidence(session: Session, plan: Plan, period: Period) -> list[TaskEvidence]:
    rows = []
    for task in plan.tasks:
        ctx = load_context(plan, task)
        try:
            baseline: Baseline | None = task_baseline(session, plan, ctx)
        except MedmonError:
            baseline = None
        score = col(ProbeResult.score)
        n, total, total2, non_binary = session.exec(
            select(func.count(score), func.sum(score), func.sum(score * score),
                   func.sum(case((score.in_([0.0, 1.0]), 0), else_=1)))
            .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
            .where(ProbeResult.task_id == task.id, score.is_not(None), _monitoring(),
                   _in(col(ProbeResult.created_at), period))).one()
        runs = session.exec(select(func.count()).select_from(ProbeRun).where(
            ProbeRun.task_id == task.id, _monitoring(), _in(col(ProbeRun.started_at), period))).one()
        findings = session.exec(select(func.count()).select_from(FindingRecord).where(
            FindingRecord.task_id == task.id, FindingRecord.kind == "drift",
            _in(col(FindingRecord.created_at), period))).one()
        mean = lo = hi = None
        if n:
            mean, lo, hi = _interval(int(n), float(total), float(total2), not non_binary)
        base = baseline.normalized if baseline is not None else None
        verdict = judge(int(n or 0), mean, lo, hi, base if base is not None else 0.0, task.thresholds.min_score,
                        task.thresholds.tolerated_drop)
        band = None
        if baseline is not None:
            span = (baseline.scale_max - baseline.scale_min) or 1.0
            band = ((baseline.ci_low - baseline.scale_min) / span, (baseline.ci_high - baseline.scale_min) / span)
        owner = task.owner or plan.owners.clinical
        entry = ctx.taxonomy
        evidence = TaskEvidence(
            task=task.id, benchmark=task.benchmark, category=entry.category, subcategory=entry.subcategory,
            owner=f"{owner.name} <{owner.email}>", human_review=task.human_review_required, schedule=task.schedule,
            baseline=base, baseline_ci=band, baseline_n=baseline.n if baseline else None,
            baseline_source=(f"{baseline.source_kind} v{baseline.version} ({baseline.model}, {baseline.metric})"
                             + (f", approved by {baseline.approved_by}" if baseline.approved_by else "")
                             if baseline else "none"),
            min_score=task.thresholds.min_score, tolerated_drop=task.thresholds.tolerated_drop, runs=int(runs),
            n=verdict.n, estimate=verdict.estimate, ci_low=verdict.ci_low, ci_high=verdict.ci_high,
            difference=verdict.difference if base is not None else None,
            passed=verdict.passed if base is not None else None, conclusive=verdict.conclusive,
            reasons=verdict.reasons, drift_findings=int(findings))
        points = _series(session, task.id, period)
        # The axis spans the runs, not the whole period: two days of runs drawn on a month's axis are unreadable.
        first, last = (points[0][0], points[-1][0]) if len(points) > 1 else (period.start, period.end)
        evidence.chart = score_chart(points, start=first, end=last, baseline=base, baseline_band=band,
                                     min_score=task.thresholds.min_score,
                                     title=f"{task.id}: mean score per monitoring run")
        rows.append(evidence)
    return rows


def _series(session: Session, task_id: str, period: Period) -> list[tuple[datetime, float]]:
    """Per-run mean scores; averaged into at most MAX_POINTS time buckets for long periods."""
    rows = session.exec(select(ProbeRun.finished_at, ProbeRun.mean_score).where(
        ProbeRun.task_id == task_id, _monitoring(), col(ProbeRun.mean_score).is_not(None),
        _in(col(ProbeRun.finished_at), period)).order_by(col(ProbeRun.finished_at))).all()
    points = [(as_utc(at), float(m)) for at, m in rows if at is not None and m is not None]
    if len(points) <= MAX_POINTS:
        return points
    width = (period.end - period.start) / MAX_POINTS
    buckets: dict[int, list[float]] = {}
    for at, m in points:
        buckets.setdefault(int((at - period.start) / width), []).append(m)
    return [(period.start + width * (k + 0.5), sum(v) / len(v)) for k, v in sorted(buckets.items())]


def _minutes(later: datetime | None, earlier: datetime) -> float | None:
    return None if later is None else round((as_utc(later) - as_utc(earlier)) / timedelta(minutes=1), 1)


def _alerts(session: Session, period: Period) -> list[AlertRow]:
    alerts = session.exec(select(Alert).where(col(Alert.starts_at) < period.end,
                                              or_(col(Alert.ends_at).is_(None), col(Alert.ends_at) >= period.start))
                          .order_by(col(Alert.starts_at), col(Alert.id))).all()
    ids = [a.id for a in alerts]
    events: dict[int, list[AlertEvent]] = {}
    if ids:
        for e in session.exec(select(AlertEvent).where(col(AlertEvent.alert_id).in_(ids),
                                                       col(AlertEvent.at) < period.end)
                              .order_by(col(AlertEvent.at), col(AlertEvent.id))).all():
            events.setdefault(e.alert_id, []).append(e)
    rows = []
    for a in alerts:
        assert a.id is not None
        history = events.get(a.id, [])
        handling = [f"{e.to_status} by {e.actor} at {as_utc(e.at):%Y-%m-%d %H:%M} UTC" + (f": {e.note}" if e.note
                                                                                           else "")
                    for e in history if e.actor != "medmon"]
        ack = next((e.at for e in history if e.to_status == "acknowledged"), a.acknowledged_at)
        ended = a.ends_at if a.ends_at is not None and as_utc(a.ends_at) < period.end else None
        rows.append(AlertRow(a.id, a.task_id, a.rule, a.severity.value, a.status.value, a.summary,
                             as_utc(a.starts_at), ended, handling, _minutes(ack, a.starts_at),
                             _minutes(ended, a.starts_at)))
    return rows


def _incidents(session: Session, period: Period) -> list[IncidentRow]:
    rows = session.exec(select(Incident).where(col(Incident.opened_at) < period.end,
                                               or_(col(Incident.closed_at).is_(None),
                                                   col(Incident.closed_at) >= period.start))
                        .order_by(col(Incident.opened_at), col(Incident.id))).all()
    counts = dict(session.exec(select(Alert.incident_id, func.count()).where(
        col(Alert.incident_id).in_([i.id for i in rows])).group_by(Alert.incident_id)).all()) if rows else {}
    return [IncidentRow(i.id or 0, i.task_id, i.cause, incident_title(i), i.severity.value, i.summary,
                        as_utc(i.opened_at), as_utc(i.closed_at) if i.closed_at and as_utc(i.closed_at) < period.end
                        else None, int(counts.get(i.id, 0)), i.acknowledged_by, i.resolved_by, i.resolve_reason)
            for i in rows]


def _at_end(session: Session, task_id: str, period: Period) -> tuple[float, float, float, int] | None:
    """The task's latest RECENT_WINDOW scored monitoring answers before the period's end: where it
    stands when the committee decides, which a month's mean dilutes with the weeks before a drop."""
    score = col(ProbeResult.score)
    recent = (select(ProbeResult.score).join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
              .where(ProbeResult.task_id == task_id, score.is_not(None), _monitoring(),
                     col(ProbeResult.created_at) >= period.start, col(ProbeResult.created_at) < period.end)
              .order_by(col(ProbeResult.id).desc()).limit(RECENT_WINDOW).subquery())
    n, total, total2, non_binary = session.exec(select(
        func.count(recent.c.score), func.sum(recent.c.score), func.sum(recent.c.score * recent.c.score),
        func.sum(case((recent.c.score.in_([0.0, 1.0]), 0), else_=1)))).one()
    if not n:
        return None
    mean, lo, hi = _interval(int(n), float(total), float(total2), not non_binary)
    return mean, lo, hi, int(n)


def _recommendations(session: Session, plan: Plan, period: Period, tasks: list[TaskEvidence],
                     incidents: list[IncidentRow], alerts: list[AlertRow], changes: list[dict[str, Any]]
                     ) -> list[Recommendation]:
    """Each task's recommendation by the plan's rules (the defaults when the plan sets none)."""
    rules = plan.governance.controls.recommendation if plan.governance else RecommendationRules()
    facts = []
    for t in tasks:
        still_open = [i for i in incidents if i.task == t.task and i.closed_at is None]
        facts.append(TaskFacts(t.task, t.n, t.estimate, t.ci_low, t.ci_high, t.min_score, t.passed, t.conclusive,
                               t.drift_findings, tuple(i.title for i in still_open),
                               tuple(i.cause for i in still_open), sum(1 for c in changes if c["task"] == t.task),
                               _at_end(session, t.task, period),
                               any(a.task == t.task and a.rule == "below_minimum" and a.ends_at is None
                                   for a in alerts)))
    return recommend(facts, rules)


def _silences(session: Session, period: Period) -> list[dict[str, Any]]:
    rows = session.exec(select(Silence).where(col(Silence.starts_at) < period.end, col(Silence.ends_at) > period.start)
                        .order_by(col(Silence.starts_at))).all()
    return [{"id": s.id, "matchers": " ".join(f"{m.get('name')}{m.get('op')}{m.get('value')}" for m in s.matchers),
             "starts_at": as_utc(s.starts_at), "ends_at": as_utc(s.ends_at), "reason": s.reason,
             "created_by": s.created_by, "expired_by": s.expired_by} for s in rows]


def _costs(session: Session, period: Period) -> list[CostRow]:
    purpose = case((col(ProbeRun.purpose) == REEVALUATION, REEVALUATION), else_=MONITORING)
    rows = session.exec(
        select(ProbeResult.task_id, purpose, func.count(), func.sum(case((col(ProbeResult.error_type).is_not(None), 1),
                                                                         else_=0)),
               func.coalesce(func.sum(ProbeResult.cost_usd), 0.0),
               func.coalesce(func.sum(ProbeResult.prompt_tokens), 0),
               func.coalesce(func.sum(ProbeResult.completion_tokens), 0), func.avg(ProbeResult.latency_s))
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(_in(col(ProbeResult.created_at), period))
        .group_by(ProbeResult.task_id, purpose).order_by(ProbeResult.task_id, purpose)).all()
    return [CostRow(t, p, int(c), int(e), float(usd), int(pt), int(ct), float(lat) if lat is not None else None)
            for t, p, c, e, usd, pt, ct, lat in rows]


def _judge_cost(session: Session, period: Period) -> tuple[float | None, int]:
    calls, usd = session.exec(select(func.count(), func.sum(JudgeCall.cost_usd))
                              .where(_in(col(JudgeCall.created_at), period))).one()
    return (float(usd) if usd is not None else (0.0 if calls else None)), int(calls)


def _changes(session: Session, period: Period) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                         list[dict[str, Any]]]:
    identities = [{"task": m.task_id, "served_model": m.served_model, "fingerprint": m.system_fingerprint,
                   "first_seen": as_utc(m.first_seen), "run_id": m.run_id}
                  for m in session.exec(select(ModelIdentity).where(_in(col(ModelIdentity.first_seen), period))
                                        .order_by(col(ModelIdentity.first_seen), col(ModelIdentity.id))).all()]
    changes = [{"id": c.id, "task": c.task_id, "kind": c.kind, "source": c.source, "actor": c.actor, "note": c.note,
                "at": as_utc(c.created_at), "status": c.status.value, "reevaluation_id": c.reevaluation_id}
               for c in list_changes(session, since=period.start, until=period.end)]
    reevaluations = [{"id": r.id, "task": r.task_id, "status": r.status.value, "started_at": as_utc(r.started_at),
                      "repeats": r.repeats, "n": r.n, "errors": r.n_errors, "estimate": r.estimate,
                      "ci_low": r.ci_low, "ci_high": r.ci_high, "baseline": r.baseline_value,
                      "difference": r.difference, "min_score": r.min_score, "tolerated_drop": r.tolerated_drop,
                      "passed": r.passed, "conclusive": r.conclusive, "served_model": r.served_model,
                      "cost_usd": r.cost_usd, "approved_by": r.approved_by,
                      "approved_at": as_utc(r.approved_at) if r.approved_at else None, "reasons": r.reasons,
                      "error": r.error}
                     for r in list_reevaluations(session, since=period.start, until=period.end)]
    return identities, changes, reevaluations


def _plan_record(session: Session, period: Period) -> dict[str, Any] | None:
    """The plan in force at the end of the period, as recorded in the audit log."""
    event = session.exec(select(AuditEvent).where(AuditEvent.kind == AuditKind.plan_change.value,
                                                  col(AuditEvent.at) < period.end)
                         .order_by(col(AuditEvent.seq).desc())).first()
    if event is None:
        return None
    return {"seq": event.seq, "hash": event.hash, "at": as_utc(event.at), "actor": event.actor,
            "sha256": event.details.get("sha256"), "text": event.details.get("text", ""),
            "source": event.details.get("source", "")}


def build_committee_report(session: Session, plan: Plan, period: Period, *, now: datetime,
                           plan_text: str | None = None) -> CommitteeReport:
    """Gather every figure of the committee report for ``period`` (reads; may record inline baselines)."""
    identities, changes, reevaluations = _changes(session, period)
    check = verify(session)
    decisions = [{"seq": e.seq, "at": as_utc(e.at), "kind": e.kind, "actor": e.actor, "subject": e.subject,
                  "what": _decision_text(e)}
                 for e in list_events(session, since=period.start, until=period.end)
                 if AuditKind(e.kind) in HUMAN_KINDS]
    judge_usd, judge_calls = _judge_cost(session, period)
    record = _plan_record(session, period)
    notes = []
    if record is None:
        notes.append("No plan is recorded in the audit log for this period; the plan shown is the current file.")
        record = {"seq": None, "hash": None, "at": None, "actor": None, "sha256": None, "text": plan_text or "",
                  "source": "current file"}
    tasks = _task_evidence(session, plan, period)
    incidents = _incidents(session, period)
    alerts = _alerts(session, period)
    return CommitteeReport(
        plan=plan, period=period, generated_at=now, tasks=tasks, incidents=incidents,
        recommendations=_recommendations(session, plan, period, tasks, incidents, alerts, changes),
        alerts=alerts, silences=_silences(session, period), identities=identities,
        changes=changes, reevaluations=reevaluations, costs=_costs(session, period), judge_cost_usd=judge_usd,
        judge_calls=judge_calls, limitations=known_limitations(plan), decisions=decisions,
        audit={"ok": check.ok, "entries": check.entries, "head_seq": check.head_seq, "head_hash": check.head_hash,
               "problems": [str(p) for p in check.problems]},
        plan_record=record, notes=notes)


def _decision_text(event: AuditEvent) -> str:
    d = event.details or {}
    for key in ("note", "reason", "summary"):
        if d.get(key):
            return str(d[key])
    if event.kind == AuditKind.threshold_change.value:
        return f"{d.get('threshold')}: {d.get('old')} -> {d.get('new')}"
    if event.kind == AuditKind.plan_change.value:
        changed = len(d.get("threshold_changes") or [])
        return "initial plan recorded" if d.get("initial") else f"plan changed ({changed} threshold change(s))"
    if event.kind == AuditKind.baseline_approved.value:
        return f"adopted re-evaluation {d.get('reevaluation_id')} as baseline {d.get('baseline_id')}"
    return ", ".join(f"{k}={v}" for k, v in list(d.items())[:4])
