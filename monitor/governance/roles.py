"""Who may take which act on which task: roles scoped per task and per act.

The plan names the people: the clinical and technical owners (answerable for the whole
deployment), each task's owner (``tasks[].owner``, answerable for that task only), the reviewers
(``oversight.reviewers``, each for their tasks) and the governance committee's chair
(``owners.chair``). ``ACTS`` says which roles may take each act; an act on a task is allowed to a
person holding one of those roles *for that task*. A task owner therefore acts on their own
task's incidents, safety events and suspension, and not on another's; a reviewer only rates.
"""

from __future__ import annotations

from enum import StrEnum

from medmon.monitor.plan.model import Plan


class Role(StrEnum):
    clinical_owner = "clinical owner"
    technical_owner = "technical owner"
    task_owner = "task owner"
    reviewer = "reviewer"
    chair = "governance chair"


_OWNERS = frozenset({Role.clinical_owner, Role.technical_owner, Role.task_owner, Role.chair})
ACTS: dict[str, frozenset[Role]] = {
    "acknowledge": _OWNERS,
    "resolve": _OWNERS,
    "silence": _OWNERS,
    "requeue notifications": frozenset({Role.clinical_owner, Role.technical_owner, Role.chair}),
    "record safety decisions": frozenset({Role.clinical_owner, Role.task_owner, Role.chair}),
    "suspend": _OWNERS,
    "resume": _OWNERS,
    "rate answers": frozenset({Role.reviewer}),
    "record near misses": frozenset({Role.clinical_owner, Role.task_owner, Role.chair, Role.reviewer}),
    "approve thresholds": frozenset({Role.clinical_owner, Role.task_owner, Role.chair}),
    "sign reports": frozenset({Role.clinical_owner, Role.technical_owner, Role.chair}),
}


def roles(plan: Plan, email: str | None, task_id: str | None) -> frozenset[Role]:
    """The roles ``email`` holds for ``task_id`` (None: the deployment as a whole)."""
    address = (email or "").strip().lower()
    if not address:
        return frozenset()
    held = set()
    if plan.owners.clinical.email.lower() == address:
        held.add(Role.clinical_owner)
    if plan.owners.technical.email.lower() == address:
        held.add(Role.technical_owner)
    if plan.owners.chair is not None and plan.owners.chair.email.lower() == address:
        held.add(Role.chair)
    for task in plan.tasks:
        if task_id == task.id and task.owner is not None and task.owner.email.lower() == address:
            held.add(Role.task_owner)
    for reviewer in plan.oversight.reviewers:
        if reviewer.email.lower() == address and task_id in reviewer.tasks:
            held.add(Role.reviewer)
    return frozenset(held)


def refusal(plan: Plan, email: str | None, act: str, task_id: str | None) -> str | None:
    """Why ``email`` may not take ``act`` on ``task_id``, or None when one of their roles allows it."""
    allowed = ACTS.get(act)
    if allowed is None:
        raise KeyError(f"unknown act {act!r}; expected one of {', '.join(ACTS)}")
    if roles(plan, email, task_id) & allowed:
        return None
    where = f"task {task_id!r}" if task_id is not None else "the deployment as a whole"
    needed = ", ".join(sorted(r.value for r in allowed))
    return f"{email or 'this account'} may not {act} on {where} (needs: {needed})"
