"""Should a route hear about a group now? A pure decision, in the manner of Alertmanager's DedupStage.

The route's ``NotifyLog`` remembers the fingerprints it was last told were firing,
acknowledged and resolved. Comparing those sets with the group as it is now gives one
``NotifyReason``: a reason to send, or a reason to hold. Only the sets matter, so a finding that
refreshes an alert's evidence, or a second identical finding, sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum


class NotifyReason(str, Enum):
    """Why a route is, or is not, notified about a group."""

    new_group = "new_group"  # first notification of this group to this route
    new_firing = "new_firing"  # an alert fires that the route has not been told about
    escalated = "escalated"  # a new alert on the escalation route: nobody acknowledged it in time
    acknowledged = "acknowledged"  # someone acknowledged an alert the route was told was firing
    resolved = "resolved"  # an alert the route was told about has resolved
    repeat = "repeat"  # still firing and unacknowledged after the repeat interval
    waiting = "waiting"  # a new group inside its group_wait: more alerts may join it
    throttled = "throttled"  # news, but the route was notified less than group_interval ago
    unchanged = "unchanged"  # open alerts the route already knows about; not yet time to repeat
    nothing = "nothing"  # no open alert (all silenced, resolved and told, or never notified)

    @property
    def sends(self) -> bool:
        return self in _SENDS

    @property
    def event(self) -> str:
        """The notification's ``event`` for a sending reason."""
        return {NotifyReason.new_group: "firing", NotifyReason.new_firing: "firing"}.get(self, self.value)


_SENDS = frozenset(
    {
        NotifyReason.new_group,
        NotifyReason.new_firing,
        NotifyReason.escalated,
        NotifyReason.acknowledged,
        NotifyReason.resolved,
        NotifyReason.repeat,
    }
)


@dataclass(frozen=True)
class GroupState:
    """One group as one route sees it now (silenced alerts and other routes' alerts left out)."""

    firing: frozenset[str] = frozenset()
    acknowledged: frozenset[str] = frozenset()
    resolved: frozenset[str] = frozenset()
    born_at: datetime | None = None  # when the oldest firing alert started


@dataclass(frozen=True)
class Told:
    """What the route was last sent about the group, and when."""

    firing: frozenset[str] = frozenset()
    acknowledged: frozenset[str] = frozenset()
    resolved: frozenset[str] = frozenset()
    sent_at: datetime = field(default_factory=lambda: datetime.min)


@dataclass(frozen=True)
class Timers:
    group_wait: timedelta = timedelta(0)
    group_interval: timedelta = timedelta(minutes=5)
    repeat_interval: timedelta = timedelta(hours=4)
    send_resolved: bool = True
    escalation_route: bool = False


@dataclass(frozen=True)
class Decision:
    reason: NotifyReason
    news: frozenset[str] = frozenset()  # the fingerprints that make it worth sending
    newly_resolved: frozenset[str] = frozenset()


def decide(state: GroupState, told: Told | None, timers: Timers, now: datetime) -> Decision:
    """The one place that decides whether a route is notified about a group.

    Examples
    --------
    >>> from datetime import timezone
    >>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> decide(GroupState(firing=frozenset({"a"}), born_at=t0), None, Timers(), t0).reason.value
    'new_group'
    >>> told = Told(firing=frozenset({"a"}), sent_at=t0)
    >>> decide(GroupState(firing=frozenset({"a"}), born_at=t0), told, Timers(), t0 + timedelta(hours=1)).reason.value
    'unchanged'
    """
    if told is None:
        if not state.firing:
            return Decision(NotifyReason.nothing)
        if state.born_at is not None and now < state.born_at + timers.group_wait:
            return Decision(NotifyReason.waiting)
        reason = NotifyReason.escalated if timers.escalation_route else NotifyReason.new_group
        return Decision(reason, state.firing)
    known = told.firing | told.acknowledged
    newly_firing = state.firing - known
    newly_acked = (state.acknowledged & told.firing) - told.acknowledged
    newly_resolved = (state.resolved & known) - told.resolved
    if newly_firing:
        decision = Decision(
            NotifyReason.escalated if timers.escalation_route else NotifyReason.new_firing, newly_firing, newly_resolved
        )
    elif newly_acked:
        decision = Decision(NotifyReason.acknowledged, newly_acked, newly_resolved)
    elif newly_resolved and timers.send_resolved:
        decision = Decision(NotifyReason.resolved, newly_resolved, newly_resolved)
    elif state.firing and now >= told.sent_at + timers.repeat_interval:
        return Decision(NotifyReason.repeat, state.firing)
    elif state.firing or state.acknowledged:
        return Decision(NotifyReason.unchanged)
    else:
        return Decision(NotifyReason.nothing)
    if now < told.sent_at + timers.group_interval:
        return Decision(NotifyReason.throttled, decision.news, decision.newly_resolved)
    return decision
