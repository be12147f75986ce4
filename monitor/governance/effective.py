"""What applies to a task, resolved once and read-only: the one answer every surface shows.

The service's alert rules, the dashboard's pages, the committee report and ``medmon check``
all ask the same question: which baseline and thresholds judge this task, and what is only
proposed? ``effective_task`` answers it from the record. The thresholds in force are the
newest approved ones (``threshold_approved`` audit entries; ``medmon.monitor.governance.thresholds``
records them), else the go-live plan's; a plan edit no owner has approved is a proposal shown
beside them, never in their place. The baseline in force is the task's pin or
the one its first probe will pin (``medmon.monitor.plan.context.baseline_in_force``). Nothing
here writes: pinning the go-live baseline is the probe path's explicit act (``probe_baseline``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.db import as_utc
from medmon.moments import display_time
from medmon.monitor.governance.audit import AuditKind, plan_thresholds
from medmon.monitor.governance.identity import counts
from medmon.monitor.models import AuditEvent, BurnIn
from medmon.monitor.plan.context import BaselineInForce, baseline_in_force
from medmon.monitor.plan.model import Plan, Task, Thresholds

# Which direction makes each threshold easier to meet.
LOOSER_WHEN_LOWER = ("min_score", "min_jury_agreement", "subgroup_min_score")
LOOSER_WHEN_HIGHER = ("tolerated_drop", "cost_budget_per_call", "latency_slo_s", "max_subgroup_gap")


@dataclass(frozen=True)
class InForce:
    """A task's thresholds in force, and the audit entry they come from."""

    thresholds: dict[str, Any]
    seq: int
    source: str  # "approved" (threshold_approved), "go-live approved" (go_live_approved) or "go-live" (first plan)
    actor: str
    at: datetime


@dataclass(frozen=True)
class ThresholdProposal:
    """One threshold of one task whose recorded plan value is not the value in force."""

    task: str
    threshold: str
    in_force: Any
    proposed: Any
    looser: bool
    plan_seq: int | None  # None: an edit of the plan file not recorded yet (who and when unknown)
    proposed_by: str | None
    proposed_at: datetime | None


def written_thresholds(text: str, task_id: str) -> dict[str, Any] | None:
    """A task's thresholds as written in a plan text (defaults filled in); None if the task is absent."""
    written = plan_thresholds(text).get(task_id)
    if written is None:
        return None
    try:
        return Thresholds.model_validate(written).model_dump()
    except ValueError:
        return None


def _plans(before: datetime | None, *, newest_first: bool = False) -> Any:
    """The recorded plans (before ``before``), oldest first unless ``newest_first``."""
    query = select(AuditEvent).where(AuditEvent.kind == AuditKind.plan_change.value)
    if before is not None:
        query = query.where(col(AuditEvent.at) < before)
    return query.order_by(col(AuditEvent.seq).desc() if newest_first else col(AuditEvent.seq))


def thresholds_in_force(session: Session, task_id: str, before: datetime | None = None) -> InForce | None:
    """The task's thresholds in force (at ``before``, else now); None when no plan with it is recorded.

    Only a proven act approves: a ``threshold_approved`` or ``go_live_approved`` entry whose actor
    signed in or signed with a registered key (``medmon.monitor.governance.identity``), newest
    first. Before any, the first recorded plan's thresholds judge the task, worded "not yet approved".
    """
    query = select(AuditEvent).where(
        col(AuditEvent.kind).in_([AuditKind.threshold_approved.value, AuditKind.go_live_approved.value])
    )
    if before is not None:
        query = query.where(col(AuditEvent.at) < before)
    for approved in session.exec(query.order_by(col(AuditEvent.seq).desc())):
        if not counts(approved.details):
            continue
        if approved.kind == AuditKind.threshold_approved.value and approved.subject == f"task:{task_id}":
            return InForce(dict(approved.details["thresholds"]), approved.seq, "approved", approved.actor, approved.at)
        tasks = approved.details.get("tasks") if approved.kind == AuditKind.go_live_approved.value else None
        if isinstance(tasks, dict) and isinstance(tasks.get(task_id), dict):
            return InForce(
                dict(tasks[task_id]["thresholds"]), approved.seq, "go-live approved", approved.actor, approved.at
            )
    for event in session.exec(_plans(before)):
        found = written_thresholds(str(event.details.get("text", "")), task_id)
        if found is not None:
            return InForce(found, event.seq, "go-live", event.actor, event.at)
    return None


def with_thresholds_in_force(session: Session, plan: Plan, before: datetime | None = None) -> Plan:
    """``plan`` with each task's thresholds replaced by those in force (unrecorded tasks keep the file's)."""
    tasks = []
    for task in plan.tasks:
        in_force = thresholds_in_force(session, task.id, before)
        if in_force is not None and in_force.thresholds != task.thresholds.model_dump():
            task = task.model_copy(update={"thresholds": Thresholds.model_validate(in_force.thresholds)})
        tasks.append(task)
    return plan.model_copy(update={"tasks": tasks})


def loosens(name: str, old: Any, new: Any) -> bool:
    if old is None:
        return False  # a limit where there was none tightens
    if new is None:
        return True  # dropping a limit loosens
    return bool(new < old) if name in LOOSER_WHEN_LOWER else bool(new > old) if name in LOOSER_WHEN_HIGHER else False


def threshold_proposals(session: Session, before: datetime | None = None) -> list[ThresholdProposal]:
    """Every threshold the newest recorded plan sets differently from what is in force, task by task."""
    newest = session.exec(_plans(before, newest_first=True)).first()
    if newest is None:
        return []
    text = str(newest.details.get("text", ""))
    out = []
    for task_id in plan_thresholds(text):
        proposed, in_force = written_thresholds(text, task_id), thresholds_in_force(session, task_id, before)
        if proposed is None or in_force is None:
            continue
        for name in sorted(set(proposed) | set(in_force.thresholds)):
            old, new = in_force.thresholds.get(name), proposed.get(name)
            if old != new:
                out.append(
                    ThresholdProposal(
                        task_id, name, old, new, loosens(name, old, new), newest.seq, newest.actor, newest.at
                    )
                )
    return out


# How the recent score's interval is computed (``medmon.monitor.read._sql.wilson_interval_of_mean``).
RECENT_INTERVAL = (
    "Wilson 95% interval of the mean of the latest scored answers: exact in form for right/wrong "
    "scores, conservative for graded ones"
)


@dataclass(frozen=True)
class GoLiveReference:
    """The state of the task's go-live reference: the approved model's own answers on its canaries."""

    state: str  # "off" (the benchmark's figures are the null), "not started", "being built", "complete"
    canaries_done: int = 0
    repeats: int = 0
    version: int = 0
    since: datetime | None = None

    @property
    def text(self) -> str:
        """The state as a sentence.

        >>> GoLiveReference("being built", 12, 5).text
        'being built: 12 canaries answered 5 times so far'
        """
        if self.state == "being built":
            return f"being built: {self.canaries_done} canaries answered {self.repeats} times so far"
        if self.state == "complete" and self.since is not None:
            return f"complete since {display_time(self.since)} (version {self.version})"
        return self.state


@dataclass(frozen=True)
class EffectiveTask:
    """What judges a task: ``task`` carries the thresholds in force; ``proposals`` sit beside them.

    ``thresholds_source`` says where the thresholds in force come from: ``approved`` (an owner's
    proven approval, by ``thresholds_by`` at ``thresholds_at``), ``go-live approved`` (the proven
    go-live approval), ``go-live`` (the first recorded plan with the task, recorded by
    ``thresholds_by``, not yet approved) or ``plan file`` (no plan is recorded yet). Only the
    first two are worded "approved".
    """

    task: Task
    thresholds_source: str
    thresholds_by: str | None
    thresholds_at: datetime | None
    proposals: tuple[ThresholdProposal, ...]
    baseline: BaselineInForce
    go_live: GoLiveReference
    interval_method: str = RECENT_INTERVAL
    thresholds_seq: int | None = None  # the audit entry the thresholds in force come from

    @property
    def thresholds(self) -> Thresholds:
        return self.task.thresholds

    def proposed(self, name: str) -> Any | None:
        """The proposed value of one threshold, or None when no edit of it awaits approval."""
        return next((p.proposed for p in self.proposals if p.threshold == name), None)

    @property
    def in_force_words(self) -> str:
        """Where the thresholds in force come from, in the record's words."""
        when = f" on {self.thresholds_at:%Y-%m-%d}" if self.thresholds_at else ""
        if self.thresholds_source == "approved":
            return f"approved by {self.thresholds_by}{when}"
        if self.thresholds_source == "go-live approved":
            return f"approved at go-live by {self.thresholds_by}{when}"
        if self.thresholds_source == "go-live":
            return f"the first recorded plan's, recorded by {self.thresholds_by}{when}; not yet approved"
        return "the plan file's; no plan is recorded yet; not yet approved"

    @property
    def thresholds_approved(self) -> bool:
        """Whether a proven act approved the thresholds in force (what "approved" may be said of)."""
        return self.thresholds_source in ("approved", "go-live approved")

    def proposal_sentences(self) -> list[str]:
        """One sentence per threshold edit awaiting approval, naming who proposed it where the record knows."""
        out = []
        for p in self.proposals:
            who = (
                f" by {p.proposed_by} on {p.proposed_at:%Y-%m-%d}"
                if p.proposed_by and p.proposed_at
                else " in the plan file (not recorded yet: run 'medmon check')"
            )
            out.append(
                f"task {self.task.id!r}: {p.threshold} {p.proposed} is proposed{who}, not approved; "
                f"{p.in_force} ({self.in_force_words}) stays in force until an owner approves it "
                "(medmon approvals thresholds)"
            )
        return out


def go_live_reference(session: Session, plan: Plan, task_id: str) -> GoLiveReference:
    """How far the task's go-live reference is built now (read-only; a past period sees today's state)."""
    repeats = plan.detection.reference.repeats
    if repeats < 1:
        return GoLiveReference("off")
    row = session.get(BurnIn, task_id)
    if row is None:
        return GoLiveReference("not started", 0, repeats)
    done = sum(1 for v in (row.instances or {}).values() if v and int(v[0]) >= row.runs)
    if row.complete:
        return GoLiveReference(
            "complete", done, row.runs, row.version, as_utc(row.completed_at) if row.completed_at else None
        )
    return GoLiveReference("being built", done, row.runs, row.version, as_utc(row.started_at))


def _file_proposals(
    task: Task, in_force: dict[str, Any], recorded: Sequence[ThresholdProposal]
) -> list[ThresholdProposal]:
    """The recorded proposals, and the file's edits not recorded yet (who and when unknown)."""
    out = list(recorded)
    written = task.thresholds.model_dump()
    for name in sorted(set(written) | set(in_force)):
        old, new = in_force.get(name), written.get(name)
        if old != new and not any(p.threshold == name and p.proposed == new for p in recorded):
            out = [p for p in out if p.threshold != name]
            out.append(ThresholdProposal(task.id, name, old, new, loosens(name, old, new), None, None, None))
    return out


def effective_task(
    session: Session,
    plan: Plan,
    task: Task | str,
    *,
    before: datetime | None = None,
    proposals: Sequence[ThresholdProposal] | None = None,
) -> EffectiveTask:
    """What judges ``task`` (at ``before``, else now), read from the record without writing anything.

    ``plan`` is the plan as given (today's file, or the recorded plan of a past period): its
    thresholds count as proposed wherever they differ from the approved ones. ``proposals``
    (``threshold_proposals`` for every task) saves the query when resolving many tasks.
    """
    task = plan.task(task) if isinstance(task, str) else task
    source = thresholds_in_force(session, task.id, before)
    recorded = [
        p for p in (threshold_proposals(session, before) if proposals is None else proposals) if p.task == task.id
    ]
    if source is None:  # no plan with the task is recorded: the file's thresholds are all there is
        judged, found, by, at = task, "plan file", None, None
        pending: list[ThresholdProposal] = []
    else:
        judged = task.model_copy(update={"thresholds": Thresholds.model_validate(source.thresholds)})
        found, by, at = source.source, source.actor, as_utc(source.at)
        pending = _file_proposals(task, source.thresholds, recorded)
    return EffectiveTask(
        judged,
        found,
        by,
        at,
        tuple(pending),
        baseline_in_force(session, plan, task, before),
        go_live_reference(session, plan, task.id),
        thresholds_seq=source.seq if source is not None else None,
    )


def effective_tasks(
    session: Session, plan: Plan, task_ids: Sequence[str] | None = None, *, before: datetime | None = None
) -> list[EffectiveTask]:
    """``effective_task`` for every task of the plan (or those in ``task_ids``), in plan order."""
    proposals = threshold_proposals(session, before)
    return [
        effective_task(session, plan, t, before=before, proposals=proposals)
        for t in plan.tasks
        if task_ids is None or t.id in task_ids
    ]
