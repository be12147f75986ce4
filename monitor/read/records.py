"""The governance record: baselines with their sources, model changes, and the audit log."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from baselines import Baseline, list_baselines
from monitor import audit
from monitor.models import FindingRecord, ModelIdentity
from monitor.read._sql import as_time, score_interval
from probes.models import ProbeRun


def baselines_by_taxonomy(session: Session) -> list[Baseline]:
    """Every stored baseline version, ordered by MedHELM category, subcategory and benchmark."""
    rows = list_baselines(session)
    return sorted(rows, key=lambda b: (b.category, b.subcategory or "", b.benchmark, b.model, b.metric, b.version))


@dataclass(frozen=True)
class Reevaluation:
    """A re-evaluation run: the full canary set replayed after a change."""

    run_id: int
    started_at: datetime | None
    status: str
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class ModelChange:
    """A served model or system fingerprint first seen for a task, and what it triggered."""

    task: str
    served_model: str
    system_fingerprint: str | None
    first_seen: datetime | None
    previous_model: str | None
    previous_fingerprint: str | None
    run_id: int | None
    summary: str = ""
    reevaluations: tuple[Reevaluation, ...] = field(default_factory=tuple)

    @property
    def is_change(self) -> bool:
        """False for the first identity a task ever saw (go-live), True for every later one."""
        return self.previous_model is not None or self.previous_fingerprint is not None


def model_changes(session: Session, task_id: str | None = None) -> list[ModelChange]:
    """Served-model and fingerprint history per task, newest first, with its re-evaluations.

    A re-evaluation belongs to the identity that was current when it started: it ran after
    that change and before the next one.
    """
    query = select(ModelIdentity)
    if task_id is not None:
        query = query.where(ModelIdentity.task_id == task_id)
    identities = list(session.exec(query.order_by(ModelIdentity.task_id, col(ModelIdentity.id))).all())
    summaries = {(f.task_id, f.run_id): f.summary for f in session.exec(
        select(FindingRecord).where(FindingRecord.kind == "model_change")).all()}
    rq = select(ProbeRun).where(ProbeRun.purpose == "reevaluation")
    if task_id is not None:
        rq = rq.where(ProbeRun.task_id == task_id)
    reevals = list(session.exec(rq.order_by(col(ProbeRun.id))).all())
    out: list[ModelChange] = []
    for i, ident in enumerate(identities):
        prev = identities[i - 1] if i and identities[i - 1].task_id == ident.task_id else None
        nxt = identities[i + 1] if i + 1 < len(identities) and identities[i + 1].task_id == ident.task_id else None
        start, end = as_time(ident.first_seen), as_time(nxt.first_seen) if nxt else None
        mine = [r for r in reevals if r.task_id == ident.task_id and start is not None
                and (t := as_time(r.started_at)) is not None and t >= start and (end is None or t < end)]
        out.append(ModelChange(ident.task_id, ident.served_model, ident.system_fingerprint, start,
                               prev.served_model if prev else None, prev.system_fingerprint if prev else None,
                               ident.run_id, summaries.get((ident.task_id, ident.run_id), ""),
                               tuple(_reevaluation(r) for r in mine)))
    out.sort(key=lambda c: (c.first_seen is None, c.first_seen), reverse=True)
    return out


def _reevaluation(run: ProbeRun) -> Reevaluation:
    n = run.n_canaries - run.n_errors
    lo, hi = score_interval(run.mean_score, n)
    return Reevaluation(run.id or 0, as_time(run.started_at), run.status.value, n, run.mean_score, lo, hi)


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


def audit_log(session: Session, *, limit: int = 200, kind: str | None = None) -> list[AuditEntry]:
    """The latest ``limit`` audit entries, newest first (the plan's full text is left out)."""
    rows = audit.list_events(session, kind=kind, limit=limit)
    return [AuditEntry(e.seq, as_time(e.at), e.kind, e.actor, e.subject,
                       {k: v for k, v in (e.details or {}).items() if k not in ("text", "diff")}, e.hash)
            for e in reversed(rows)]


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
    return ChainStatus(report.ok, report.entries, report.head_seq, report.head_hash,
                       tuple(str(p) for p in report.problems))


@dataclass(frozen=True)
class ApprovedPlan:
    """The plan text last recorded in the audit log: the monitoring plan as approved."""

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
    return ApprovedPlan(str(details.get("text", "")), event.seq, as_time(event.at), event.actor,
                        str(details.get("sha256", "")), str(details.get("diff", "")))
