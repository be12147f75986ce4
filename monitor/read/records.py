"""The governance record: baselines with their sources, model changes, and the audit log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.baselines import Baseline, list_baselines
from medmon.monitor.governance import audit
from medmon.monitor.governance.changes import list_changes
from medmon.monitor.governance.effective import effective_tasks
from medmon.monitor.governance.golive import GoLiveStatus, go_live_status
from medmon.monitor.governance.reevaluation import list_reevaluations
from medmon.monitor.models import ChangeStatus, ModelIdentity, ReevaluationStatus
from medmon.monitor.plan.model import Plan


def baselines_by_taxonomy(session: Session) -> list[Baseline]:
    """Every stored baseline version, ordered by MedHELM category, subcategory and benchmark."""
    rows = list_baselines(session)
    return sorted(rows, key=lambda b: (b.category, b.subcategory or "", b.benchmark, b.model, b.metric, b.version))


@dataclass(frozen=True)
class ServedModel:
    """A served model and system fingerprint first seen for a task (the go-live one included)."""

    task: str
    served_model: str
    system_fingerprint: str | None
    first_seen: datetime | None
    previous_model: str | None
    previous_fingerprint: str | None
    run_id: int | None

    @property
    def is_change(self) -> bool:
        """False for the first identity a task ever saw (go-live), True for every later one."""
        return self.previous_model is not None


def served_model_history(session: Session) -> list[ServedModel]:
    """Each task's served-model and fingerprint history, newest first."""
    rows = list(session.exec(select(ModelIdentity).order_by(ModelIdentity.task_id, col(ModelIdentity.id))).all())
    out = []
    for i, row in enumerate(rows):
        prev = rows[i - 1] if i and rows[i - 1].task_id == row.task_id else None
        out.append(
            ServedModel(
                row.task_id,
                row.served_model,
                row.system_fingerprint,
                row.first_seen,
                prev.served_model if prev else None,
                prev.system_fingerprint if prev else None,
                row.run_id,
            )
        )
    out.sort(key=lambda m: (m.first_seen is not None, m.first_seen), reverse=True)
    return out


@dataclass(frozen=True)
class ReevaluationRow:
    """The full canary set replayed after a change, against the baseline and the approval threshold."""

    id: int
    task: str
    status: str
    started_at: datetime | None
    served_model: str | None
    n: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    baseline: float | None
    difference: float | None
    min_score: float | None
    passed: bool | None
    conclusive: bool | None
    reasons: tuple[str, ...]
    approved_by: str | None
    approved_at: datetime | None


def reevaluations(session: Session) -> list[ReevaluationRow]:
    """Re-evaluations, newest first, with their verdict and who (if anyone) adopted the result."""
    rows = list_reevaluations(session)
    return [
        ReevaluationRow(
            r.id or 0,
            r.task_id,
            ReevaluationStatus(r.status).value,
            r.started_at,
            r.served_model,
            r.n,
            r.estimate,
            r.ci_low,
            r.ci_high,
            r.baseline_value,
            r.difference,
            r.min_score,
            r.passed,
            r.conclusive,
            tuple(r.reasons or ()),
            r.approved_by,
            r.approved_at,
        )
        for r in reversed(rows)
    ]


@dataclass(frozen=True)
class ChangeRow:
    """A change of model, fingerprint, prompt, workflow or judge (detected or declared), and the
    re-evaluation it triggered."""

    id: int
    task: str
    kind: str
    source: str
    actor: str
    note: str
    at: datetime | None
    status: str
    reevaluation: ReevaluationRow | None = None


def change_history(session: Session) -> list[ChangeRow]:
    """Every recorded change, newest first, each with its re-evaluation where one ran."""
    evals = {r.id: r for r in reevaluations(session)}
    return [
        ChangeRow(
            c.id or 0,
            c.task_id,
            c.kind,
            c.source,
            c.actor,
            c.note,
            c.created_at,
            ChangeStatus(c.status).value,
            evals.get(c.reevaluation_id) if c.reevaluation_id else None,
        )
        for c in reversed(list_changes(session))
    ]


@dataclass(frozen=True)
class AuditEntry:
    """One entry of the append-only audit log, as the dashboard shows it."""

    seq: int
    at: datetime | None
    kind: str
    actor: str
    subject: str
    details: dict[str, Any]
    entry_hash: str


def audit_log(session: Session, *, limit: int = 200) -> list[AuditEntry]:
    """The latest ``limit`` audit entries, newest first (the plan's full text is left out)."""
    rows = audit.list_events(session, limit=limit)
    return [
        AuditEntry(
            e.seq,
            e.at,
            e.kind,
            e.actor,
            e.subject,
            {k: v for k, v in (e.details or {}).items() if k not in ("text", "diff")},
            e.hash,
        )
        for e in reversed(rows)
    ]


@dataclass(frozen=True)
class ChainStatus:
    """Whether the audit log's hash chain holds, and where it breaks if not."""

    ok: bool
    entries: int
    head_seq: int
    head_hash: str
    problems: tuple[str, ...]


def audit_chain(session: Session) -> ChainStatus:
    """Verify the whole chain (as `medmon audit verify` does)."""
    report = audit.verify(session)
    return ChainStatus(
        report.ok, report.entries, report.head_seq, report.head_hash, tuple(str(p) for p in report.problems)
    )


@dataclass(frozen=True)
class ApprovedPlan:
    """The plan text last recorded in the audit log (approved only if ``approval_record`` says so)."""

    text: str
    seq: int
    at: datetime | None
    actor: str
    sha256: str
    diff: str


def approved_plan(session: Session) -> ApprovedPlan | None:
    """The newest recorded plan, with the diff against the one before (None before any)."""
    event = audit.last_plan_text(session)
    if event is None:
        return None
    details = event.details or {}
    return ApprovedPlan(
        str(details.get("text", "")),
        event.seq,
        event.at,
        event.actor,
        str(details.get("sha256", "")),
        str(details.get("diff", "")),
    )


def served_now(session: Session) -> list[str]:
    """The models the endpoint serves now: each task's newest served-model identity (one per model)."""
    newest: dict[str, str] = {}
    for row in session.exec(select(ModelIdentity).order_by(col(ModelIdentity.first_seen), col(ModelIdentity.id))):
        newest[row.task_id] = row.served_model
    return sorted(set(newest.values()))


@dataclass(frozen=True)
class TaskApproval:
    """Whether a task's thresholds in force were approved by a proven act, in the record's words."""

    task: str
    approved: bool
    words: str  # e.g. "approved by owner@x on 2026-11-03" or "the first recorded plan's ...; not yet approved"
    seq: int | None  # the audit entry the thresholds in force come from


@dataclass(frozen=True)
class ApprovalRecord:
    """What the record says was approved, and by which authenticated act: what every page may word "approved"."""

    go_live: GoLiveStatus
    tasks: tuple[TaskApproval, ...]

    @property
    def words(self) -> str:
        return self.go_live.words


def approval_record(session: Session, plan: Plan) -> ApprovalRecord:
    """Go-live and each task's thresholds: approved (by whom, by which proven act) or not yet approved.

    Read-only; an act without proof of identity (``unproven_act``) never makes anything approved.
    """
    tasks = tuple(
        TaskApproval(e.task.id, e.thresholds_approved, e.in_force_words, e.thresholds_seq)
        for e in effective_tasks(session, plan)
    )
    return ApprovalRecord(go_live_status(session), tasks)
