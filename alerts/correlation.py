"""Correlation across tasks: a model change and what followed it on the deployment's tasks are one page.

When a vendor swaps the model, every task of the deployment sees it: each task's probe reports the
change, then the detectors see what the new model does (accuracy falls, answers grow longer, calls
cost more), task by task, over the hours that follow. Paged separately that is a dozen pages for
one cause. The rule (``parent_for``, the one place it is written): an incident that opens on any
task of a deployment within the *correlation window* after that deployment's model-change incident
opened, while that incident is open, is its *child* (``Incident.parent_id``). The window is the plan's
``alerts.correlation_window``, which the monitor hands over in ``NotifyPolicy.correlation_window``
(``CHANGE_WINDOW``, 72 hours, when none is given).

- The children's alerts are notified in the parent's group (``notify_key``), so on-call gets one
  page; a child's signals arrive as follow-up updates of that page, which lists the children.
- The judges (``jury``: other models) and the monitor's own alerts never follow a model change.
- What opened before the change stays on its own: the change did not cause it.
- A child resolved alone leaves the parent open; a parent stays open while a child is open,
  unless a person resolves it, and its open children then notify on their own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from medmon.alerts.causes import Cause
from medmon.alerts.models import Incident
from medmon.alerts.signal import MONITOR_GROUP
from medmon.db import as_utc

# How long after a model change what opens on the deployment's tasks is taken for its consequence, unless
# the plan says otherwise (alerts.correlation_window): a sequential detector needs several probes to see a
# drop (hours at an hourly schedule, days at a daily one).
CHANGE_WINDOW = timedelta(hours=72)
# What a new model produces: its own change seen from another task, and what it does differently.
FOLLOWS_CHANGE = frozenset(
    {
        Cause.model_change,
        Cause.accuracy,
        Cause.subgroup_gap,
        Cause.output,
        Cause.cost,
        Cause.latency,
        Cause.availability,
    }
)


def parent_for(
    session: Session, deployment: str, task: str, cause: str, now: datetime, window: timedelta = CHANGE_WINDOW
) -> Incident | None:
    """The model-change incident that a new incident of ``task`` and ``cause`` follows, if any.

    The deployment's oldest open model-change incident without a parent, opened at most
    ``window`` before ``now``; none for the monitor's own alerts or a cause a new model
    does not produce.
    """
    if task == MONITOR_GROUP or cause not in FOLLOWS_CHANGE:
        return None
    return session.exec(
        select(Incident)
        .where(
            Incident.deployment == deployment,
            Incident.cause == Cause.model_change.value,
            col(Incident.parent_id).is_(None),
            col(Incident.closed_at).is_(None),
            col(Incident.opened_at) >= as_utc(now) - window,
        )
        .order_by(col(Incident.opened_at), col(Incident.id))
    ).first()


def notify_key(session: Session, incident: Incident) -> str:
    """The notification group of an incident's alerts: its open parent's key, else its own."""
    parent = session.get(Incident, incident.parent_id) if incident.parent_id is not None else None
    return parent.key if parent is not None and parent.closed_at is None else incident.key


def incident_children(session: Session, incident_id: int) -> list[Incident]:
    """The incidents that followed a model-change incident, oldest first."""
    rows = session.exec(
        select(Incident).where(Incident.parent_id == incident_id).order_by(col(Incident.opened_at), col(Incident.id))
    ).all()
    return list(rows)
