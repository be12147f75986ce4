"""Changes that void the evidence: a new model, fingerprint, prompt, decoding, canaries, scorer, workflow or judge.

A change is *detected* (the pipeline sees a new served model or system fingerprint) or
*declared* by a person (``medmon change record``): a prompt or workflow change is invisible
from the outside. Either way it is stored per task, audited, and owes a re-evaluation
(``medmon.monitor.governance.reevaluation``). After one, the task keeps its old baseline until an owner adopts
the re-evaluation's results; ``medmon.monitor.plan.context.adopted_baseline`` is the baseline such an approval made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Any

from sqlmodel import Session, col, select

from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.models import ChangeRecord, ChangeStatus


class ChangeKind(str, Enum):
    model = "model"
    fingerprint = "fingerprint"
    prompt = "prompt"
    workflow = "workflow"
    judge = "judge"
    decoding = "decoding"  # temperature, max tokens
    canaries = "canaries"  # a task's canary source or benchmark
    scorer = "scorer"
    request = "request"  # headers, query, API style and version, token-limit parameter: what each call sends


class ChangeSource(str, Enum):
    detected = "detected"
    declared = "declared"
    plan = "plan"  # an edit of the recorded plan (``medmon.monitor.governance.change_control``)


def record_change(
    session: Session,
    *,
    task_ids: Sequence[str],
    kind: ChangeKind | str,
    source: ChangeSource | str,
    actor: str,
    note: str,
    now: datetime,
    details: Mapping[str, Any] | None = None,
) -> list[ChangeRecord]:
    """Store a change for each affected task and audit it once; each row is pending re-evaluation."""
    kind, source = ChangeKind(kind), ChangeSource(source)
    if not task_ids:
        raise ValueError("a change needs at least one affected task")
    rows = [
        ChangeRecord(
            task_id=t,
            kind=kind.value,
            source=source.value,
            actor=actor,
            note=note,
            details=dict(details or {}),
            created_at=now,
        )
        for t in task_ids
    ]
    session.add_all(rows)
    session.flush()
    audit_kind = AuditKind.model_change if source == ChangeSource.detected else AuditKind.change_declared
    subject = "task:" + ",".join(task_ids)
    record(
        session,
        audit_kind,
        actor,
        subject,
        {
            "kind": kind.value,
            "source": source.value,
            "note": note,
            "tasks": list(task_ids),
            "change_ids": [r.id for r in rows],
        }
        | dict(details or {}),
        now,
    )
    return rows


def record_detected_change(
    session: Session,
    task_id: str,
    old: tuple[str, str | None],
    new: tuple[str, str | None],
    run_id: int,
    now: datetime,
    *,
    how: str = "joined",
) -> ChangeRecord:
    """The pipeline saw a new served model (or fingerprint) take a real share, or a known one leave."""
    kind = ChangeKind.model if old[0] != new[0] else ChangeKind.fingerprint
    note = f"served model {old[0]} ({old[1] or 'no fingerprint'}) -> {new[0]} ({new[1] or 'no fingerprint'})"
    if how == "left":
        note = f"served model {old[0]} ({old[1] or 'no fingerprint'}) left the pool; now {new[0]}"
    details = {
        "previous_model": old[0],
        "previous_fingerprint": old[1],
        "served_model": new[0],
        "system_fingerprint": new[1],
        "run_id": run_id,
        "how": how,
    }
    return record_change(
        session,
        task_ids=[task_id],
        kind=kind,
        source=ChangeSource.detected,
        actor="medmon",
        note=note,
        now=now,
        details=details,
    )[0]


def pending_changes(session: Session, task_id: str) -> list[ChangeRecord]:
    """Changes of a task still owed a re-evaluation, oldest first."""
    query = select(ChangeRecord).where(ChangeRecord.task_id == task_id, ChangeRecord.status == ChangeStatus.pending)
    return list(session.exec(query.order_by(col(ChangeRecord.id))).all())


def list_changes(
    session: Session, *, since: datetime | None = None, until: datetime | None = None, task_id: str | None = None
) -> list[ChangeRecord]:
    """Changes in time order, optionally for one task and within ``[since, until)``."""
    query = select(ChangeRecord)
    if task_id is not None:
        query = query.where(ChangeRecord.task_id == task_id)
    if since is not None:
        query = query.where(col(ChangeRecord.created_at) >= since)
    if until is not None:
        query = query.where(col(ChangeRecord.created_at) < until)
    return list(session.exec(query.order_by(col(ChangeRecord.created_at), col(ChangeRecord.id))).all())


def change_row(c: ChangeRecord) -> dict[str, Any]:
    """A change as the committee report and ``medmon change list`` show it."""
    return {
        "id": c.id,
        "task": c.task_id,
        "kind": c.kind,
        "source": c.source,
        "actor": c.actor,
        "note": c.note,
        "at": c.created_at,
        "status": c.status.value,
        "reevaluation_id": c.reevaluation_id,
    }
