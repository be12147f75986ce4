"""The governance committee report: one deployment over one period, from the database.

It answers what a committee asks each month: is each task still meeting the threshold it was
approved on (estimate, 95% interval, baseline, pass or fail), which alerts fired and who
handled them how, did the model change and what did the re-evaluation show, what did it cost
(the judges' cost apart), what the evidence cannot tell, and which plan was in force. Every
figure comes from SQL aggregates over the period ``[start, end)``, so ``summary()`` and the
HTML carry the same numbers a query would give.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, or_
from sqlmodel import Session, col, func, select

from medmon.alerts import incident_members, incident_title
from medmon.alerts.catalogue import cause_of
from medmon.alerts.causes import cause_title
from medmon.alerts.models import Alert, AlertEvent, Incident, Silence
from medmon.baselines import resolve
from medmon.moments import display_time
from medmon.monitor.governance.approvals import baseline_proposals
from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.changes import change_row, list_changes
from medmon.monitor.governance.current import CurrentScore, current_score
from medmon.monitor.governance.decisions import CommitteeDecision, committee_decisions, latest_decisions
from medmon.monitor.governance.effective import effective_tasks, threshold_proposals, with_thresholds_in_force
from medmon.monitor.governance.golive import go_live_status
from medmon.monitor.governance.identity import proof_words
from medmon.monitor.governance.reevaluation import judge, list_reevaluations
from medmon.monitor.governance.reports.decision_page import DecisionRow, decision_rows
from medmon.monitor.governance.reports.limitations import known_limitations
from medmon.monitor.governance.reports.oversight import OversightSection, build_oversight_section
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.governance.reports.recommendation import Recommendation, RecommendationRules, TaskFacts, recommend
from medmon.monitor.governance.reports.record import content_hash, plan_in_force, signatures, unproven_signatures
from medmon.monitor.governance.reports.sections import (
    EquityRow,
    HealthRow,
    equity,
    health,
    in_period,
    monitoring,
    provenance,
    task_estimate,
    trend,
)
from medmon.monitor.governance.reports.svg import score_chart
from medmon.monitor.models import AuditEvent, FindingRecord, ModelIdentity, Reevaluation
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.masking import masked_plan
from medmon.monitor.plan.model import Plan
from medmon.monitor.storage import select_row
from medmon.probes.models import JudgeCall, ProbeResult, ProbeRun

MONITORING = "monitoring"
BUILDING = "building the reference"
REEVALUATION = "reevaluation"
MAX_POINTS = 400
HUMAN_KINDS = (
    AuditKind.alert_acknowledged,
    AuditKind.alert_resolved,
    AuditKind.alert_silenced,
    AuditKind.alert_unsilenced,
    AuditKind.baseline_approved,
    AuditKind.change_declared,
    AuditKind.plan_change,
    AuditKind.threshold_change,
    AuditKind.baseline_import,
    AuditKind.threshold_approved,
    AuditKind.committee_decision,
    AuditKind.unproven_act,
    AuditKind.go_live_approved,
)


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
    baseline_id: int | None = None
    thresholds_in_force: str = ""  # where they come from, in the record's words
    proposed: list[str] = field(default_factory=list)  # threshold edits awaiting approval, as sentences
    trend: list[dict[str, Any]] = field(default_factory=list)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    chart: str = ""
    # While the go-live reference is incomplete (its state in words): drift detection is not armed, never "on track".
    reference: str = ""
    current: dict[str, Any] = field(default_factory=dict)  # the current score at the period's end


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
    problem: str = ""  # the kind of problem in words ("accuracy", "a subgroup fell behind"), not the rule's id


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
    plan_recorded: bool = False  # the plan shown is the one recorded as in force (else today's file)
    plan_file_matches: bool | None = None  # today's file equals the recorded plan (None: no file given)
    executive: list[dict[str, Any]] = field(default_factory=list)
    decisions_requested: list[dict[str, Any]] = field(default_factory=list)
    equity: list[EquityRow] = field(default_factory=list)
    health: list[HealthRow] = field(default_factory=list)
    alert_operations: dict[str, Any] = field(default_factory=dict)
    privacy: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""  # of ``figures()``: printed in the report, recorded when it is generated and signed
    signatures: list[dict[str, Any]] = field(default_factory=list)
    unproven_signatures: list[dict[str, Any]] = field(default_factory=list)  # claimed without proof: not counted
    go_live: dict[str, Any] = field(default_factory=dict)  # the go-live record at the period's end
    oversight: OversightSection = field(default_factory=OversightSection)
    traffic: Any = None  # the application's own calls in the period (``medmon.monitor.read.traffic``), if watched
    served: dict[str, str] = field(default_factory=dict)  # per task, the model served at the period's end
    page_one: list[DecisionRow] = field(default_factory=list)  # what to decide per task (the first page)
    committee_decisions: list[CommitteeDecision] = field(default_factory=list)  # recorded in the period

    @property
    def served_now(self) -> str:
        """The model the endpoint served at the period's end, as the header names it."""
        models = sorted(set(self.served.values()))
        return ", ".join(models) if models else self.plan.deployment.model

    def figures(self) -> dict[str, Any]:
        """Everything the period's record says, without the moment of generation (what the hash covers)."""
        data = {
            k: v
            for k, v in self.summary().items()
            if k not in ("audit", "sha256", "signatures", "unproven_signatures", "digest")
        }
        data["plan"] = {"seq": (self.plan_record or {}).get("seq"), "sha256": (self.plan_record or {}).get("sha256")}
        return json.loads(json.dumps(data, default=str))

    def digest(self) -> dict[str, Any]:
        """The board-level page: one status, one line per task, what is asked of the board."""
        failing = [e["task"] for e in self.executive if e["status"] == "fails thresholds"]
        critical = [a for a in self.alerts if a.severity == "critical"]
        attention = bool(
            failing
            or self.decisions_requested
            or not self.audit.get("ok", True)
            or any(a.status != "resolved" for a in critical)
        )
        building = [e["task"] for e in self.executive if e["status"] == BUILDING]
        return {
            "status": "attention needed" if attention else BUILDING if building else "on track",
            "building": building,
            "tasks_meeting": sum(1 for e in self.executive if e["status"] == "meets thresholds"),
            "tasks": len(self.executive),
            "failing": failing,
            "critical_alerts": len(critical),
            "decisions_requested": len(self.decisions_requested),
            "production_cost_usd": sum(c.cost_usd for c in self.costs),
            "audit_ok": self.audit.get("ok"),
        }

    def summary(self) -> dict[str, Any]:
        """The report's figures as JSON-ready data (``medmon report --json``)."""
        production = sum(c.cost_usd for c in self.costs)
        return {
            "deployment": self.plan.deployment.name,
            "model": self.plan.deployment.model,
            "served": dict(self.served),
            "committee_decisions": [asdict(d) for d in self.committee_decisions],
            "period": {
                "label": self.period.label,
                "start": self.period.start.isoformat(),
                "end": self.period.end.isoformat(),
            },
            "tasks": [{k: v for k, v in asdict(t).items() if k not in ("chart", "reasons")} for t in self.tasks],
            "alerts": {
                "count": len(self.alerts),
                "acknowledged": sum(1 for a in self.alerts if a.minutes_to_ack is not None),
                "resolved": sum(1 for a in self.alerts if a.ends_at is not None),
                "items": [
                    {
                        "id": a.id,
                        "task": a.task,
                        "rule": a.rule,
                        "severity": a.severity,
                        "status": a.status,
                        "handling": a.handling,
                    }
                    for a in self.alerts
                ],
            },
            "recommendations": [
                {"task": r.task, "action": r.action, "reasons": list(r.reasons)} for r in self.recommendations
            ],
            "incidents": [
                {
                    "id": i.id,
                    "task": i.task,
                    "cause": i.cause,
                    "severity": i.severity,
                    "opened_at": i.opened_at.isoformat(),
                    "closed": i.closed_at is not None,
                    "signals": i.signals,
                }
                for i in self.incidents
            ],
            "model_changes": len(self.changes),
            "reevaluations": self.reevaluations,
            "cost": {
                "production_usd": production,
                "monitoring_usd": sum(c.cost_usd for c in self.costs if c.purpose == MONITORING),
                "reevaluation_usd": sum(c.cost_usd for c in self.costs if c.purpose == REEVALUATION),
                "judge_usd": self.judge_cost_usd,
                "judge_calls": self.judge_calls,
                "by_task": [asdict(c) for c in self.costs],
            },
            "audit": self.audit,
            "plan_in_force": {
                "recorded": self.plan_recorded,
                "file_matches": self.plan_file_matches,
                "seq": (self.plan_record or {}).get("seq"),
                "sha256": (self.plan_record or {}).get("sha256"),
            },
            "executive": self.executive,
            "decisions_requested": self.decisions_requested,
            "equity": [asdict(e) for e in self.equity],
            "health": [asdict(h) for h in self.health],
            "alert_operations": self.alert_operations,
            "privacy": self.privacy,
            "digest": self.digest(),
            "sha256": self.sha256,
            "signatures": self.signatures,
            "unproven_signatures": self.unproven_signatures,
            "go_live": self.go_live,
            "human_oversight": self.oversight.summary(),
            "traffic": self.traffic.as_dict() if self.traffic is not None else None,
        }


def _in(column: Any, period: Period) -> Any:
    return in_period(column, period)


def _task_evidence(session: Session, plan: Plan, period: Period) -> list[TaskEvidence]:
    rows = []
    for effective in effective_tasks(session, plan, before=period.end):
        task, in_force = effective.task, effective.baseline
        baseline = in_force.baseline
        estimate = task_estimate(session, task.id, period)
        runs = session.exec(
            select(func.count())
            .select_from(ProbeRun)
            .where(ProbeRun.task_id == task.id, monitoring(), _in(col(ProbeRun.started_at), period))
        ).one()
        findings = session.exec(
            select(func.count())
            .select_from(FindingRecord)
            .where(
                FindingRecord.task_id == task.id,
                FindingRecord.kind == "drift",
                _in(col(FindingRecord.created_at), period),
            )
        ).one()
        base = baseline.normalized if baseline is not None else None
        verdict = judge(
            estimate.n,
            estimate.mean,
            estimate.ci_low,
            estimate.ci_high,
            base if base is not None else 0.0,
            task.thresholds.min_score,
            task.thresholds.tolerated_drop,
        )
        band = None
        if baseline is not None:
            span = (baseline.scale_max - baseline.scale_min) or 1.0
            band = ((baseline.ci_low - baseline.scale_min) / span, (baseline.ci_high - baseline.scale_min) / span)
        owner = task.owner or plan.owners.clinical
        entry = resolve(task.benchmark)
        source = "none"
        if baseline is not None:
            source = f"{baseline.source_kind} v{baseline.version} ({baseline.model}, {baseline.metric})" + (
                f", approved by {baseline.approved_by}" if baseline.approved_by else ""
            )
            if in_force.pinned_at is not None:
                source += (
                    f"; in force since {display_time(in_force.pinned_at, plan.display_timezone)} ({in_force.pinned_by})"
                )
        evidence = TaskEvidence(
            task=task.id,
            benchmark=task.benchmark,
            category=entry.category,
            subcategory=entry.subcategory,
            owner=f"{owner.name} <{owner.email}>",
            human_review=task.human_review_required,
            schedule=task.schedule,
            baseline=base,
            baseline_ci=band,
            baseline_n=baseline.n if baseline else None,
            baseline_source=source,
            baseline_id=baseline.id if baseline is not None else None,
            min_score=task.thresholds.min_score,
            tolerated_drop=task.thresholds.tolerated_drop,
            runs=int(runs),
            n=verdict.n,
            estimate=verdict.estimate,
            ci_low=verdict.ci_low,
            ci_high=verdict.ci_high,
            difference=verdict.difference if base is not None else None,
            passed=verdict.passed if base is not None else None,
            conclusive=verdict.conclusive,
            reasons=verdict.reasons,
            drift_findings=int(findings),
            trend=trend(session, task.id, period),
            provenance=provenance(session, task.id, period),
            thresholds_in_force=effective.in_force_words,
            proposed=[f"{p.threshold} {p.proposed}" for p in effective.proposals],
            reference=(
                f"go-live reference {effective.go_live.text}: drift detection is not armed yet"
                if effective.go_live.state in ("not started", "being built")
                else ""
            ),
            current=asdict(current_score(session, task.id, until=period.end)),
        )
        points = _series(session, task.id, period)
        # The axis spans the runs, not the whole period: two days of runs drawn on a month's axis are unreadable.
        first, last = (points[0][0], points[-1][0]) if len(points) > 1 else (period.start, period.end)
        evidence.chart = score_chart(
            points,
            start=first,
            end=last,
            baseline=base,
            baseline_band=band,
            min_score=task.thresholds.min_score,
            title=f"{task.id}: mean score per monitoring run",
            tz=plan.display_timezone,
        )
        rows.append(evidence)
    return rows


def _series(session: Session, task_id: str, period: Period) -> list[tuple[datetime, float]]:
    """Per-run mean scores; averaged into at most MAX_POINTS time buckets for long periods."""
    rows = session.exec(
        select(ProbeRun.finished_at, ProbeRun.mean_score)
        .where(
            ProbeRun.task_id == task_id,
            monitoring(),
            col(ProbeRun.mean_score).is_not(None),
            _in(col(ProbeRun.finished_at), period),
        )
        .order_by(col(ProbeRun.finished_at))
    ).all()
    points = [(at, float(m)) for at, m in rows if at is not None and m is not None]
    if len(points) <= MAX_POINTS:
        return points
    width = (period.end - period.start) / MAX_POINTS
    buckets: dict[int, list[float]] = {}
    for at, m in points:
        buckets.setdefault(int((at - period.start) / width), []).append(m)
    return [(period.start + width * (k + 0.5), sum(v) / len(v)) for k, v in sorted(buckets.items())]


def _minutes(later: datetime | None, earlier: datetime) -> float | None:
    return None if later is None else round((later - earlier) / timedelta(minutes=1), 1)


def _alerts(session: Session, period: Period, tz: str = "UTC") -> list[AlertRow]:
    alerts = session.exec(
        select(Alert)
        .where(col(Alert.starts_at) < period.end, or_(col(Alert.ends_at).is_(None), col(Alert.ends_at) >= period.start))
        .order_by(col(Alert.starts_at), col(Alert.id))
    ).all()
    ids = [a.id for a in alerts]
    events: dict[int, list[AlertEvent]] = {}
    if ids:
        for e in session.exec(
            select(AlertEvent)
            .where(col(AlertEvent.alert_id).in_(ids), col(AlertEvent.at) < period.end)
            .order_by(col(AlertEvent.at), col(AlertEvent.id))
        ).all():
            events.setdefault(e.alert_id, []).append(e)
    rows = []
    for a in alerts:
        assert a.id is not None
        history = events.get(a.id, [])
        handling = [
            f"{e.to_status} by {e.actor} at {display_time(e.at, tz)}" + (f": {e.note}" if e.note else "")
            for e in history
            if e.actor != "medmon"
        ]
        ack = next((e.at for e in history if e.to_status == "acknowledged"), None)
        if ack is None and a.acknowledged_at is not None and a.acknowledged_at < period.end:
            ack = a.acknowledged_at
        ended = a.ends_at if a.ends_at is not None and a.ends_at < period.end else None
        acked = ack is not None and ack < period.end
        status = "resolved" if ended is not None else ("acknowledged" if acked else "firing")  # as at the period's end
        rows.append(
            AlertRow(
                a.id,
                a.task_id,
                a.rule,
                a.severity.value,
                status,
                a.summary,
                a.starts_at,
                ended,
                handling,
                _minutes(ack, a.starts_at),
                _minutes(ended, a.starts_at),
                cause_title(cause_of(a.labels)),
            )
        )
    return rows


def _incidents(session: Session, period: Period) -> list[IncidentRow]:
    rows = session.exec(
        select(Incident)
        .where(
            col(Incident.opened_at) < period.end,
            or_(col(Incident.closed_at).is_(None), col(Incident.closed_at) >= period.start),
        )
        .order_by(col(Incident.opened_at), col(Incident.id))
    ).all()
    counts = (
        dict(
            session.exec(
                select(Alert.incident_id, func.count())
                .where(col(Alert.incident_id).in_([i.id for i in rows]))
                .group_by(col(Alert.incident_id))
            ).all()
        )
        if rows
        else {}
    )
    return [
        IncidentRow(
            i.id or 0,
            i.task_id,
            i.cause,
            incident_title(i, incident_members(session, i.id or 0)),
            i.severity.value,
            i.summary,
            i.opened_at,
            i.closed_at if i.closed_at and i.closed_at < period.end else None,
            int(counts.get(i.id, 0)),
            i.acknowledged_by,
            i.resolved_by,
            i.resolve_reason,
        )
        for i in rows
    ]


def _at_end(session: Session, task_id: str, period: Period) -> tuple[float, float, float, int] | None:
    """The task's current score at the period's end (``medmon.monitor.governance.current``): where it
    stands when the committee decides, which a month's mean dilutes with the weeks before a drop."""
    found = current_score(session, task_id, until=period.end)
    if found.value is None or found.low is None or found.high is None:
        return None
    return found.value, found.low, found.high, found.n


def _recommendations(
    session: Session,
    plan: Plan,
    period: Period,
    tasks: list[TaskEvidence],
    incidents: list[IncidentRow],
    alerts: list[AlertRow],
    changes: list[dict[str, Any]],
) -> list[Recommendation]:
    """Each task's recommendation by the plan's rules (the defaults when the plan sets none)."""
    rules = plan.governance.controls.recommendation if plan.governance else RecommendationRules()
    facts = []
    for t in tasks:
        still_open = [i for i in incidents if i.task == t.task and i.closed_at is None]
        facts.append(
            TaskFacts(
                t.task,
                t.n,
                t.estimate,
                t.ci_low,
                t.ci_high,
                t.min_score,
                t.passed,
                t.conclusive,
                t.drift_findings,
                tuple(i.title for i in still_open),
                tuple(i.cause for i in still_open),
                sum(1 for c in changes if c["task"] == t.task),
                _at_end(session, t.task, period),
                any(a.task == t.task and a.rule == "below_minimum" and a.ends_at is None for a in alerts),
                t.reference,
            )
        )
    return recommend(facts, rules)


def _silences(session: Session, period: Period) -> list[dict[str, Any]]:
    rows = session.exec(
        select(Silence)
        .where(col(Silence.starts_at) < period.end, col(Silence.ends_at) > period.start)
        .order_by(col(Silence.starts_at))
    ).all()
    return [
        {
            "id": s.id,
            "matchers": " ".join(f"{m.get('name')}{m.get('op')}{m.get('value')}" for m in s.matchers),
            "starts_at": s.starts_at,
            "ends_at": s.ends_at,
            "reason": s.reason,
            "created_by": s.created_by,
            "expired_by": s.expired_by,
        }
        for s in rows
    ]


def _costs(session: Session, period: Period) -> list[CostRow]:
    purpose = case((col(ProbeRun.purpose) == REEVALUATION, REEVALUATION), else_=MONITORING)
    rows = session.exec(
        select_row(
            ProbeResult.task_id,
            purpose,
            func.count(),
            func.sum(case((col(ProbeResult.error_type).is_not(None), 1), else_=0)),
            func.coalesce(func.sum(ProbeResult.cost_usd), 0.0),
            func.coalesce(func.sum(ProbeResult.prompt_tokens), 0),
            func.coalesce(func.sum(ProbeResult.completion_tokens), 0),
            func.avg(ProbeResult.latency_s),
        )
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(_in(col(ProbeResult.created_at), period))
        .group_by(ProbeResult.task_id, purpose)
        .order_by(ProbeResult.task_id, purpose)
    ).all()
    return [
        CostRow(t, p, int(c), int(e), float(usd), int(pt), int(ct), float(lat) if lat is not None else None)
        for t, p, c, e, usd, pt, ct, lat in rows
    ]


def _judge_cost(session: Session, period: Period) -> tuple[float | None, int]:
    calls, usd = session.exec(
        select(func.count(), func.sum(JudgeCall.cost_usd)).where(_in(col(JudgeCall.created_at), period))
    ).one()
    return (float(usd) if usd is not None else (0.0 if calls else None)), int(calls)


def _changes(
    session: Session, period: Period
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    identities = [
        {
            "task": m.task_id,
            "served_model": m.served_model,
            "fingerprint": m.system_fingerprint,
            "first_seen": m.first_seen,
            "run_id": m.run_id,
        }
        for m in session.exec(
            select(ModelIdentity)
            .where(_in(col(ModelIdentity.first_seen), period))
            .order_by(col(ModelIdentity.first_seen), col(ModelIdentity.id))
        ).all()
    ]
    changes = [change_row(c) for c in list_changes(session, since=period.start, until=period.end)]
    reevaluations = [
        {
            "id": r.id,
            "task": r.task_id,
            "status": r.status.value,
            "started_at": r.started_at,
            "repeats": r.repeats,
            "n": r.n,
            "errors": r.n_errors,
            "estimate": r.estimate,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "baseline": r.baseline_value,
            "difference": r.difference,
            "min_score": r.min_score,
            "tolerated_drop": r.tolerated_drop,
            "passed": r.passed,
            "conclusive": r.conclusive,
            "served_model": r.served_model,
            "cost_usd": r.cost_usd,
            "approved_by": r.approved_by,
            "approved_at": r.approved_at,
            "reasons": r.reasons,
            "error": r.error,
        }
        for r in list_reevaluations(session, since=period.start, until=period.end)
    ]
    return identities, changes, reevaluations


def _alert_operations(plan: Plan, alerts: list[AlertRow]) -> dict[str, Any]:
    """Per severity: how many alerts, and how many were acknowledged and resolved within the plan's targets."""
    controls = plan.governance.controls if plan.governance is not None else None
    targets = controls.response_targets if controls is not None else None
    rows = []
    for severity in ("critical", "warning", "info"):
        mine = [a for a in alerts if a.severity == severity]
        if not mine:
            continue
        ack_target = _target_minutes(targets.acknowledge.get(severity)) if targets is not None else None
        resolve_target = _target_minutes(targets.resolve.get(severity)) if targets is not None else None
        rows.append(
            {
                "severity": severity,
                "alerts": len(mine),
                "acknowledged": sum(1 for a in mine if a.minutes_to_ack is not None),
                "resolved": sum(1 for a in mine if a.minutes_to_resolve is not None),
                "ack_target_min": ack_target,
                "resolve_target_min": resolve_target,
                "ack_within_target": None
                if ack_target is None
                else sum(1 for a in mine if a.minutes_to_ack is not None and a.minutes_to_ack <= ack_target),
                "resolved_within_target": None
                if resolve_target is None
                else sum(
                    1 for a in mine if a.minutes_to_resolve is not None and a.minutes_to_resolve <= resolve_target
                ),
            }
        )
    return {"targets_set": targets is not None, "by_severity": rows}


def _target_minutes(text: str | None) -> float | None:
    return None if text is None else parse_interval(text) / timedelta(minutes=1)


def _decisions_requested(
    session: Session,
    plan: Plan,
    period: Period,
    tasks: list[TaskEvidence],
    reevaluations: list[dict[str, Any]],
    equity_rows: list[EquityRow],
) -> list[dict[str, Any]]:
    """What the committee is asked to decide, as things stood at the end of the period."""
    out: list[dict[str, Any]] = []
    for t in tasks:
        if t.passed is False:
            out.append(
                {
                    "task": t.task,
                    "kind": "failing task",
                    "ask": f"{t.task} fails its thresholds over the period "
                    f"(the period's mean {t.estimate:.3f} against minimum {t.min_score:.3f} and baseline "
                    f"{t.baseline:.3f}): continue, restrict, or withdraw the use?",
                }
            )
    for p in baseline_proposals(session, plan, before=period.end):
        out.append(
            {
                "task": p.task,
                "kind": "baseline proposal",
                "ask": f"approve or reject imported baseline "
                f"{p.baseline_id} ({p.model}, {p.metric} v{p.version}, {p.normalized:.3f} on n={p.n}) for "
                f"{p.task}; until then it is compared with baseline {p.current_baseline_id}",
            }
        )
    for c in list_changes(session, until=period.end):
        answer = session.get(Reevaluation, c.reevaluation_id) if c.reevaluation_id is not None else None
        if answer is None or answer.started_at >= period.end:  # still owed when the period ended
            out.append(
                {
                    "task": c.task_id,
                    "kind": "change without re-evaluation",
                    "ask": f"{c.kind} change {c.id} ({c.note}) has not been re-evaluated",
                }
            )
    for r in reevaluations:
        approved_in_time = r["approved_at"] is not None and r["approved_at"] < period.end
        if r["status"] in ("complete", "approved") and not approved_in_time:
            out.append(
                {
                    "task": r["task"],
                    "kind": "re-evaluation result",
                    "ask": f"adopt or reject re-evaluation {r['id']} (estimate {r['estimate']:.3f}, "
                    f"{'pass' if r['passed'] else 'fail'}) as {r['task']}'s baseline",
                }
            )
    for tp in threshold_proposals(session, before=period.end):
        out.append(
            {
                "task": tp.task,
                "kind": "threshold change",
                "ask": f"approve or reject {tp.task} {tp.threshold} {tp.in_force} -> {tp.proposed}"
                f"{' (loosens it)' if tp.looser else ''}, proposed by {tp.proposed_by} in the plan "
                f"recorded at audit seq {tp.plan_seq}; until then {tp.in_force} is in force",
            }
        )
    for row in equity_rows:
        if row.gap_exceeds:
            out.append(
                {
                    "task": row.task,
                    "kind": "equity gap",
                    "ask": f"{row.task}: the gap between {row.tag} subgroups is {row.gap:.3f}, above the plan's "
                    f"{row.max_gap:.3f}",
                }
            )
    return out


def _executive(tasks: list[TaskEvidence], alerts: list[AlertRow]) -> list[dict[str, Any]]:
    out = []
    for t in tasks:
        status = "no data" if t.passed is None else ("meets thresholds" if t.passed else "fails thresholds")
        if t.reference and t.passed is not False:  # nothing to call fine before detection is armed
            status = BUILDING
        open_alerts = sum(1 for a in alerts if a.task == t.task and a.status != "resolved")
        out.append(
            {
                "task": t.task,
                "status": status,
                "conclusive": t.conclusive,
                "passed": t.passed,
                "estimate": t.estimate,
                "difference": t.difference,
                "open_alerts": open_alerts,
            }
        )
    return out


def _answer_views(session: Session, period: Period) -> dict[str, Any]:
    """Who was shown stored text in the period: on the dashboard (one entry per session, task and page)
    and from the command line (one per invocation)."""
    views = list_events(session, kind=AuditKind.answers_viewed, since=period.start, until=period.end)
    by_task: dict[str, int] = {}
    for e in views:
        task = str(e.details.get("task") or "deployment")
        by_task[task] = by_task.get(task, 0) + 1
    cli = sum(1 for e in views if e.details.get("via") == "cli")
    return {
        "views": len(views),
        "by_path": {"dashboard": len(views) - cli, "command line": cli},
        "viewers": sorted({e.actor for e in views}),
        "by_task": dict(sorted(by_task.items())),
        "unauthenticated": sum(1 for e in views if not e.details.get("authenticated")),
    }


def _privacy(session: Session, plan: Plan, period: Period) -> dict[str, Any]:
    stored = session.exec(
        select(func.count())
        .select_from(ProbeResult)
        .where(col(ProbeResult.answer).is_not(None), _in(col(ProbeResult.created_at), period))
    ).one()
    return {
        "redactor": plan.privacy.redactor,
        "store_text": plan.privacy.store_text,
        "answers_stored_with_text": int(stored),
        "secrets": "Routes and endpoints appear by name; keys and URLs come from the environment",
    }


def build_committee_report(
    session: Session, plan: Plan, period: Period, *, now: datetime, plan_text: str | None = None, traffic: Any = None
) -> CommitteeReport:
    """Gather every figure of the committee report for ``period``: reads only, never pins or records a baseline.

    ``plan`` and ``plan_text`` are today's file: the report uses the plan recorded as in force
    during the period instead and flags the file when it differs. ``traffic`` is the period's
    real-traffic summary, read by the caller (the read layer sits above this one) when the plan
    watches traffic.
    """
    in_force = plan_in_force(session, period, plan, plan_text)
    plan = with_thresholds_in_force(session, in_force.plan, before=period.end)  # approved ones, not the edit
    identities, changes, reevaluations = _changes(session, period)
    check = verify(session)
    decisions = [
        {
            "seq": e.seq,
            "at": e.at,
            "kind": e.kind,
            "actor": e.actor,
            "subject": e.subject,
            "what": _decision_text(e),
            "identity": proof_words(e.details),
        }
        for e in list_events(session, since=period.start, until=period.end)
        if AuditKind(e.kind) in HUMAN_KINDS
    ]
    judge_usd, judge_calls = _judge_cost(session, period)
    tasks = _task_evidence(session, plan, period)
    alerts = _alerts(session, period, plan.display_timezone)
    equity_rows = equity(session, plan, period)
    incidents = _incidents(session, period)
    report = CommitteeReport(
        go_live=_go_live(session, period),
        plan=plan,
        period=period,
        generated_at=now,
        tasks=tasks,
        incidents=incidents,
        recommendations=_recommendations(session, plan, period, tasks, incidents, alerts, changes),
        alerts=alerts,
        silences=_silences(session, period),
        identities=identities,
        changes=changes,
        reevaluations=reevaluations,
        costs=_costs(session, period),
        judge_cost_usd=judge_usd,
        judge_calls=judge_calls,
        limitations=known_limitations(plan),
        decisions=decisions,
        audit={
            "ok": check.ok,
            "entries": check.entries,
            "head_seq": check.head_seq,
            "head_hash": check.head_hash,
            "problems": [str(p) for p in check.problems],
            "runs_sealed": check.runs_sealed,
            "results_checked": check.results_checked,
            "summary": check.summary,
            "purged": check.purged_text,
            "answers_viewed": _answer_views(session, period),
        },
        # URLs can carry credentials (a Slack or Teams webhook URL is one): masked by the function
        # the dashboard uses; the SHA-256 shown is of the plan as recorded.
        plan_record=(
            in_force.record | {"text": masked_plan(str(in_force.record.get("text") or ""), plan)}
            if in_force.record
            else None
        ),
        notes=in_force.notes,
        plan_recorded=in_force.recorded,
        plan_file_matches=in_force.file_matches,
        executive=_executive(tasks, alerts),
        decisions_requested=_decisions_requested(session, plan, period, tasks, reevaluations, equity_rows),
        equity=equity_rows,
        health=health(session, plan, period, stale_after=plan.alerts.stale_after_intervals, now=now),
        alert_operations=_alert_operations(plan, alerts),
        privacy=_privacy(session, plan, period),
        oversight=build_oversight_section(session, plan, period, min(now, period.end)),
        traffic=traffic,
    )
    report.served = _served(session, period)
    report.committee_decisions = committee_decisions(session, since=period.start, until=period.end)
    report.page_one = decision_rows(
        report,
        {t.task: CurrentScore(**t.current) for t in tasks if t.current},
        latest_decisions(session, until=period.end),
        report.served,
    )
    report.sha256 = content_hash(report.figures())
    report.signatures = signatures(session, period, report.sha256)
    report.unproven_signatures = unproven_signatures(session, period, report.sha256)
    return report


def _served(session: Session, period: Period) -> dict[str, str]:
    """Each task's served model at the period's end: the newest identity its probes saw before then."""
    rows = session.exec(
        select(ModelIdentity)
        .where(col(ModelIdentity.first_seen) < period.end)
        .order_by(col(ModelIdentity.first_seen), col(ModelIdentity.id))
    ).all()
    return {m.task_id: m.served_model for m in rows}


def _go_live(session: Session, period: Period) -> dict[str, Any]:
    status = go_live_status(session, before=period.end)
    return {"approved": status.approved, "by": status.by, "seq": status.seq, "words": status.words}


def _decision_text(event: AuditEvent) -> str:
    d = event.details or {}
    if event.kind == AuditKind.committee_decision.value:
        terms = f" ({d['terms']})" if d.get("terms") else ""
        return f"committee decision for {d.get('task')}: {d.get('decision')}{terms}; why: {d.get('reason')}"
    if event.kind == AuditKind.unproven_act.value:
        return f"NOT COUNTED: {d.get('act')} claimed for {d.get('claimed_by')} without proof of identity"
    if event.kind == AuditKind.go_live_approved.value:
        tasks = ", ".join(d.get("tasks") or {})
        return f"go-live approved: plan seq {d.get('plan_seq')}, risk tier {d.get('risk_tier')}, tasks {tasks}"
    if event.kind == AuditKind.threshold_approved.value:
        changed = ", ".join(f"{c.get('threshold')} {c.get('old')} -> {c.get('new')}" for c in d.get("changes") or [])
        committee = f"; committee: {d['committee_decision']}" if d.get("committee_decision") else ""
        return f"thresholds approved: {changed} ({d.get('reason')}{committee})"
    for key in ("note", "reason", "summary"):
        if d.get(key):
            return str(d[key])
    if event.kind == AuditKind.threshold_change.value:
        return f"{d.get('threshold')}: {d.get('old')} -> {d.get('new')}"
    if event.kind == AuditKind.plan_change.value:
        n_changed = len(d.get("threshold_changes") or [])
        return "initial plan recorded" if d.get("initial") else f"plan changed ({n_changed} threshold change(s))"
    if event.kind == AuditKind.baseline_approved.value:
        return f"adopted re-evaluation {d.get('reevaluation_id')} as baseline {d.get('baseline_id')}"
    return ", ".join(f"{k}={v}" for k, v in list(d.items())[:4])
