"""Change control: a plan edit that touches what was evaluated is a declared change.

A new model or endpoint, the models accepted as served (``expected_models``), a system prompt,
decoding settings (the deployment's, or a task's ``decoding`` override), what each call sends
(headers, query, API style and version, the token-limit parameter), a task's canaries or scorer,
or the jury (its judges, criteria and scale: the rubric) void the evidence the deployment was
approved on just as a vendor's silent model swap does. What the plan text cannot show (a canary
file edited in place, the canaries' own stop sequences, a medmon upgrade that changes a scorer
or the jury's rubric) shows in a run's provenance: :func:`record_provenance_changes` compares
each run's hashes with the task's previous run and opens the change the plan did not.

When the plan is recorded (``medmon check``, ``medmon serve``), each such difference opens a
change record per affected task, audited with the plan's hash, and owes a re-evaluation; the
plan's ``governance.controls.reevaluation.on_plan_change`` says whether the next probe runs it
at once. Thresholds are not changes of the deployment: they are recorded as threshold changes for an owner to approve.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.db import session_scope
from medmon.monitor.errors import MedmonError
from medmon.monitor.governance.audit import last_plan_text, record_plan
from medmon.monitor.governance.changes import ChangeKind, ChangeSource, record_change
from medmon.monitor.models import AuditEvent, ChangeRecord
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.probes.jury import JURY_SCORER
from medmon.probes.models import ProbeRun, RunStatus

# deployment field -> the kind of change it is
DEPLOYMENT_FIELDS = {
    "model": ChangeKind.model,
    "base_url": ChangeKind.model,
    "system_prompt": ChangeKind.prompt,
    "temperature": ChangeKind.decoding,
    "max_tokens": ChangeKind.decoding,
    "expected_models": ChangeKind.model,
    "api_style": ChangeKind.request,
    "api_version": ChangeKind.request,
    "headers": ChangeKind.request,
    "header_env": ChangeKind.request,
    "query": ChangeKind.request,
    "token_limit_param": ChangeKind.request,
    "auth_header": ChangeKind.request,
}
TASK_FIELDS = {
    "canaries": ChangeKind.canaries,
    "scorer": ChangeKind.scorer,
    "benchmark": ChangeKind.canaries,
    "decoding": ChangeKind.decoding,
}
# A run's provenance column -> the kind of change a difference from the task's previous run is.
# The kinds listed after it are the plan changes that already account for such a difference.
PROVENANCE = {
    "pack_sha256": (ChangeKind.canaries, "the canaries' content", (ChangeKind.canaries,)),
    "prompt_sha256": (
        ChangeKind.prompt,
        "what the calls send (prompt, decoding, stop sequences, request)",
        (ChangeKind.prompt, ChangeKind.decoding, ChangeKind.request, ChangeKind.canaries),
    ),
    "scorer_version": (
        ChangeKind.scorer,
        "the scorer or the medmon version implementing it",
        (ChangeKind.scorer, ChangeKind.canaries),
    ),
}


@dataclass(frozen=True)
class PlanChange:
    """One kind of change between two plan texts, the fields that differ and the tasks it affects."""

    kind: ChangeKind
    fields: tuple[str, ...]
    tasks: tuple[str, ...]

    @property
    def note(self) -> str:
        return f"plan edit: {', '.join(self.fields)} changed"


def _sections(text: str) -> dict[str, Any]:
    """The plan's sections with defaults filled in (so an explicit default is no change); raw when invalid."""
    try:
        return parse_plan(text).model_dump(mode="json")
    except MedmonError:
        data = yaml.safe_load(text) if text.strip() else {}
        return data if isinstance(data, dict) else {}


def _jury_tasks(plan: Plan | None, tasks: list[str]) -> list[str]:
    if plan is None:
        return tasks
    out = []
    for task in plan.tasks:
        try:
            if load_context(plan, task).scorer == JURY_SCORER:
                out.append(task.id)
        except MedmonError:
            out.append(task.id)  # a task whose canaries cannot be read: re-evaluating it is the safe side
    return out


def plan_changes(old_text: str, new_text: str) -> list[PlanChange]:
    """The declared changes between two plan texts, kind by kind.

    Examples
    --------
    >>> old = "deployment: {model: a}\\ntasks: [{id: t}]"
    >>> [(c.kind.value, c.fields, c.tasks) for c in plan_changes(old, old.replace("model: a", "model: b"))]
    [('model', ('deployment.model',), ('t',))]
    """
    old, new = _sections(old_text), _sections(new_text)
    new_tasks = {t["id"]: t for t in new.get("tasks") or [] if isinstance(t, dict) and "id" in t}
    old_tasks = {t["id"]: t for t in old.get("tasks") or [] if isinstance(t, dict) and "id" in t}
    every = [t for t in new_tasks if t in old_tasks]
    found: dict[ChangeKind, tuple[list[str], list[str]]] = {}

    def add(kind: ChangeKind, field: str, tasks: list[str]) -> None:
        fields, affected = found.setdefault(kind, ([], []))
        fields.append(field)
        affected.extend(t for t in tasks if t not in affected)

    before, after = old.get("deployment") or {}, new.get("deployment") or {}
    for name, kind in DEPLOYMENT_FIELDS.items():
        if before.get(name) != after.get(name):
            add(kind, f"deployment.{name}", every)
    if (old.get("jury") or None) != (new.get("jury") or None):
        try:
            plan: Plan | None = parse_plan(new_text)
        except MedmonError:
            plan = None
        add(ChangeKind.judge, "jury", [t for t in _jury_tasks(plan, every) if t in every])
    for task_id in every:
        for name, kind in TASK_FIELDS.items():
            if old_tasks[task_id].get(name) != new_tasks[task_id].get(name):
                add(kind, f"tasks[{task_id}].{name}", [task_id])
    return [PlanChange(kind, tuple(fields), tuple(tasks)) for kind, (fields, tasks) in found.items() if tasks]


def cited_entry(plan: Plan | None, kind: ChangeKind | str) -> dict[str, Any]:
    """The plan's ``governance.change_control`` entry a change of this kind relies on, as a change record cites it.

    A kind the plan does not anticipate (or a plan without the section) is cited as such: it
    needs a full re-review.
    """
    kind = ChangeKind(kind).value
    section = plan.governance.change_control if plan is not None and plan.governance is not None else None
    found = section.entry_for(kind) if section is not None else None
    if found is None:
        return {"entry": None, "kind": kind, "full_review": True, "why": "not anticipated by governance.change_control"}
    index, entry = found
    return {
        "entry": index,
        "kind": kind,
        "protocol": entry.protocol,
        "acceptance": entry.acceptance,
        "max_drop": entry.max_drop,
        "full_review_when": entry.full_review_when,
        "full_review": False,
    }


def record_plan_changes(session: Session, text: str, source: str, actor: str, now: datetime) -> list[AuditEvent]:
    """Record a changed plan (``record_plan``) and open a change record for each declared change in it."""
    last = last_plan_text(session)
    old = str(last.details.get("text", "")) if last is not None else None
    events = record_plan(session, text, source, actor, now)
    if not events or old is None:
        return events
    digest = events[0].details["sha256"]
    try:
        plan: Plan | None = parse_plan(text)
    except MedmonError:
        plan = None
    for change in plan_changes(old, text):
        record_change(
            session,
            task_ids=list(change.tasks),
            kind=change.kind,
            source=ChangeSource.plan,
            actor=actor,
            note=change.note,
            now=now,
            details={
                "fields": list(change.fields),
                "plan_sha256": digest,
                "plan_seq": events[0].seq,
                "change_control": cited_entry(plan, change.kind),
            },
        )
    return events


def record_plan_file(engine: Engine, path: str | Path, actor: str, now: datetime) -> list[AuditEvent]:
    """Record the plan file's text and its declared changes if it changed since it was last recorded."""
    text = Path(path).read_text("utf-8")
    with session_scope(engine) as session:
        return record_plan_changes(session, text, str(path), actor, now)


def record_provenance_changes(
    session: Session, run: ProbeRun, actor: str, now: datetime, plan: Plan | None = None
) -> list[ChangeRecord]:
    """Open a change for each provenance hash of ``run`` that differs from the task's previous finished run.

    A difference some change record of that kind already covers (a plan edit recorded since the
    previous run) opens nothing more. Runs without provenance (judge canaries, old rows) are skipped.
    """
    previous = session.exec(
        select(ProbeRun)
        .where(
            ProbeRun.task_id == run.task_id,
            col(ProbeRun.id) < run.id,
            col(ProbeRun.status).in_([RunStatus.complete, RunStatus.failed]),
            ProbeRun.pack_sha256 != "",
        )
        .order_by(col(ProbeRun.id).desc())
    ).first()
    if previous is None or not run.pack_sha256:
        return []
    since = previous.finished_at or previous.started_at
    opened: list[ChangeRecord] = []
    for column, (kind, what, covering) in PROVENANCE.items():
        old, new = getattr(previous, column), getattr(run, column)
        if not old or old == new:
            continue
        covered = session.exec(
            select(ChangeRecord.id).where(
                ChangeRecord.task_id == run.task_id,
                col(ChangeRecord.kind).in_([k.value for k in covering]),
                col(ChangeRecord.created_at) >= since,
            )
        ).first()
        if covered is not None:
            continue
        opened += record_change(
            session,
            task_ids=[run.task_id],
            kind=kind,
            source=ChangeSource.detected,
            actor=actor,
            note=f"{what} changed since run {previous.id} ({column} {old[:12]} -> {new[:12]})",
            now=now,
            details={
                "field": column,
                "old": old,
                "new": new,
                "previous_run": previous.id,
                "run": run.id,
                "change_control": cited_entry(plan, kind),
            },
        )
    return opened
