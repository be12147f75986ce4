"""Purge what is past retention, and say so in the audit chain so ``audit verify`` still passes.

Probe runs finished before ``retention.results`` ago are deleted with their results, judge calls
and jury verdicts; raw traffic spans past ``traffic.retention`` are deleted in small batches (each
its own short transaction, so receivers keep inserting; a span not yet rolled up is never deleted,
and the hourly rollups the dashboard reads stay). The deletion and a ``retention_purge`` entry naming each
run, its seal digest and the counts are one transaction: a run is never gone without the entry
that explains it, and verify treats a run named there as purged, not tampered with. The audit log
and report records are never deleted here: the chain cannot lose entries and still verify, and
their floor (six or ten years) outlasts every deployment medmon has seen; the plan's setting for
them documents the commitment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from medmon.db import session_scope
from medmon.monitor.governance.audit import AuditKind, local_actor, record
from medmon.monitor.governance.evidence import seal_details
from medmon.monitor.models import AuditEvent, TrafficSpan
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.traffic import Traffic
from medmon.probes.models import JudgeCall, JuryVerdict, ProbeResult, ProbeRun, RunStatus

DELETE_BATCH = 5000


def delete_expired(engine: Engine, traffic: Traffic | None, now: datetime, *, batch: int = DELETE_BATCH) -> int:
    """Delete expired spans (judgements, which hold scores only, stay); return how many went."""
    if traffic is None:
        return 0
    cutoff = now - parse_interval(traffic.retention)
    total = 0
    while True:
        with session_scope(engine) as session:
            ids = session.exec(
                select(TrafficSpan.id)
                .where(col(TrafficSpan.ended_at) < cutoff, col(TrafficSpan.streamed).is_(True))
                .order_by(col(TrafficSpan.id))
                .limit(batch)
            ).all()
            if ids:
                session.exec(delete(TrafficSpan).where(col(TrafficSpan.id).in_(ids)))
        total += len(ids)
        if len(ids) < batch:
            return total


def count_expired(engine: Engine, traffic: Traffic | None, now: datetime) -> int:
    """How many spans :func:`delete_expired` would delete now (what ``retention purge --dry-run`` shows)."""
    if traffic is None:
        return 0
    cutoff = now - parse_interval(traffic.retention)
    with session_scope(engine) as session:
        return int(
            session.exec(
                select(func.count())
                .select_from(TrafficSpan)
                .where(col(TrafficSpan.ended_at) < cutoff, col(TrafficSpan.streamed).is_(True))
            ).one()
        )


@dataclass
class PurgeReport:
    """What a purge removed (or, dry, would remove)."""

    cutoff: datetime
    dry_run: bool
    run_ids: list[int] = field(default_factory=list)
    results: int = 0
    judge_calls: int = 0
    verdicts: int = 0
    traffic_spans: int = 0
    seal_digests: dict[str, str] = field(default_factory=dict)
    audit_seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff.isoformat(),
            "dry_run": self.dry_run,
            "run_ids": self.run_ids,
            "results": self.results,
            "judge_calls": self.judge_calls,
            "verdicts": self.verdicts,
            "traffic_spans": self.traffic_spans,
            "seal_digests": self.seal_digests,
            "audit_seq": self.audit_seq,
        }


def expired_runs(session: Session, cutoff: datetime) -> list[ProbeRun]:
    """Finished runs whose end is before ``cutoff``; a running run is never purged."""
    return list(
        session.exec(
            select(ProbeRun)
            .where(col(ProbeRun.finished_at) < cutoff, col(ProbeRun.status) != RunStatus.running)
            .order_by(col(ProbeRun.id))
        )
    )


def _seal_digest(session: Session, run: ProbeRun) -> str:
    """The digest the chain holds for the run (its newest seal), or of what is stored if never sealed."""
    details = session.exec(
        select(AuditEvent.details)
        .where(AuditEvent.kind == AuditKind.run_sealed.value, AuditEvent.subject == f"run:{run.id}")
        .order_by(col(AuditEvent.seq).desc())
    ).first()
    if details and details.get("digest"):
        return str(details["digest"])
    return str(seal_details(session, run)["digest"])


def _count(session: Session, model: Any, column: Any, ids: list[int]) -> int:
    return int(session.exec(select(func.count()).select_from(model).where(column.in_(ids))).one())


def purge(
    engine: Engine,
    plan: Plan,
    now: datetime,
    *,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
    tool: str = "medmon retention purge",
) -> PurgeReport:
    """Delete runs past ``retention.results`` and traffic past ``traffic.retention``; record the purge.

    ``tool`` names who purged in the entry's actor (the command, or the service's daily job)."""
    say = progress or (lambda _msg: None)
    report = PurgeReport(cutoff=now - parse_interval(plan.retention.results), dry_run=dry_run)
    with session_scope(engine) as session:
        runs = expired_runs(session, report.cutoff)
        report.run_ids = [r.id for r in runs if r.id is not None]
        say(f"{len(report.run_ids)} run(s) finished before {report.cutoff:%Y-%m-%d}")
        if report.run_ids:
            result_ids = list(
                session.exec(select(ProbeResult.id).where(col(ProbeResult.run_id).in_(report.run_ids))).all()
            )
            report.results = len(result_ids)
            ids = [i for i in result_ids if i is not None]
            report.judge_calls = _count(session, JudgeCall, col(JudgeCall.result_id), ids)
            report.verdicts = _count(session, JuryVerdict, col(JuryVerdict.result_id), ids)
            report.seal_digests = {str(r.id): _seal_digest(session, r) for r in runs}
            if not dry_run:
                session.exec(delete(JuryVerdict).where(col(JuryVerdict.result_id).in_(ids)))
                session.exec(delete(JudgeCall).where(col(JudgeCall.result_id).in_(ids)))
                session.exec(delete(ProbeResult).where(col(ProbeResult.id).in_(ids)))
                session.exec(delete(ProbeRun).where(col(ProbeRun.id).in_(report.run_ids)))
        say(f"{report.results} result(s), {report.verdicts} verdict(s), {report.judge_calls} judge call(s)")
        if not dry_run and report.run_ids:
            entry = _entry(session, plan, report, now, tool)
            report.audit_seq = entry.seq
    if dry_run:
        report.traffic_spans = count_expired(engine, plan.traffic, now)
    else:
        report.traffic_spans = delete_expired(engine, plan.traffic, now)
        if report.traffic_spans and not report.run_ids:
            with session_scope(engine) as session:
                report.audit_seq = _entry(session, plan, report, now, tool).seq
    say(f"{report.traffic_spans} traffic span(s) past traffic.retention")
    return report


def _entry(session: Session, plan: Plan, report: PurgeReport, now: datetime, tool: str) -> AuditEvent:
    return record(
        session,
        AuditKind.retention_purge,
        local_actor(tool),
        "deployment",
        {
            "status": "done",
            "regime": plan.retention.regime,
            "results_retention": plan.retention.results,
            "cutoff": report.cutoff.isoformat(),
            "run_ids": report.run_ids,
            "results": report.results,
            "judge_calls": report.judge_calls,
            "verdicts": report.verdicts,
            "traffic_spans": report.traffic_spans,
            "seal_digests": report.seal_digests,
        },
        now,
    )


def record_failed_purge(engine: Engine, plan: Plan, now: datetime, error: BaseException, tool: str) -> int | None:
    """Enter a purge that failed in the chain (nothing was deleted: the purge is one transaction, or
    traffic batches that each stand alone); the seq, or None when even that could not be written."""
    try:
        with session_scope(engine) as session:
            return record(
                session,
                AuditKind.retention_purge,
                local_actor(tool),
                "deployment",
                {
                    "status": "failed",
                    "error": f"{type(error).__name__}: {str(error)[:300]}",
                    "regime": plan.retention.regime,
                    "results_retention": plan.retention.results,
                    "run_ids": [],
                },
                now,
            ).seq
    except Exception:  # the database itself is failing: the log line is all that can be left
        return None
