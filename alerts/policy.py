"""Who gets told what, and how often: routes, grouping timers, repeats and escalation.

Plain data, so the alerts package never reads the plan; ``medmon.monitor.plan.routing.notify_policy``
builds it from the plan's ``alerts`` section. The timers mean what they mean in Alertmanager:

- ``group_wait``: how long a new group collects alerts before its first notification;
- ``group_interval``: the least time between two notifications of one group on one route,
  which is what keeps a burst of findings to a bounded number of messages;
- ``repeat_interval``: how often a group with firing, unacknowledged alerts is re-sent.

``correlation_window`` is how long after a model change what opens on the deployment's tasks is
taken for its consequence (``medmon.alerts.correlation``; the plan's ``alerts.correlation_window``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from sqlmodel import Session

from medmon.alerts.correlation import CHANGE_WINDOW
from medmon.alerts.matchers import Matcher, matches_all
from medmon.alerts.models import Alert


@dataclass(frozen=True)
class RouteSpec:
    """One destination; its timers, when set, override the policy's for this route only.

    ``repeat_acknowledged`` keeps re-sending acknowledged alerts while they fire: machines
    such as Alertmanager need that, or they resolve the alert themselves after a timeout.
    ``max_alerts`` caps the alerts listed in one notification (the rest are counted).
    """

    name: str
    matchers: tuple[Matcher, ...] = ()
    send_resolved: bool = True
    group_interval: timedelta | None = None
    repeat_interval: timedelta | None = None
    repeat_acknowledged: bool = False
    max_alerts: int | None = None


@dataclass(frozen=True)
class Escalation:
    """A critical alert nobody acknowledged within ``after`` is also sent to ``route``."""

    after: timedelta
    route: str


@dataclass(frozen=True)
class NotifyPolicy:
    routes: tuple[RouteSpec, ...] = ()
    group_wait: timedelta = timedelta(0)
    group_interval: timedelta = timedelta(minutes=5)
    repeat_interval: timedelta = timedelta(hours=4)
    escalation: Escalation | None = None
    fallback_route: str | None = None
    max_alerts: int = 50
    # The task's figure at sending time ("score now 0.54 ..."): the monitor supplies it, so a repeat
    # at 3 a.m. says what holds at 3 a.m., not what held when the alert first fired.
    figure: Callable[[Session, str], str | None] | None = field(default=None, compare=False)
    timezone: str = "UTC"  # the plan's display zone: how a notification writes its moments
    correlation_window: timedelta = CHANGE_WINDOW

    def __post_init__(self) -> None:
        names = [r.name for r in self.routes]
        if len(set(names)) != len(names):
            raise ValueError(f"route names must be unique, got {names}")
        if self.escalation is not None and self.escalation.route not in names:
            raise ValueError(f"escalation route {self.escalation.route!r} is not one of the routes {names}")
        if self.max_alerts < 1:
            raise ValueError(f"max_alerts must be at least 1, got {self.max_alerts}")
        if self.correlation_window <= timedelta(0):
            raise ValueError(f"correlation_window must be longer than 0s, got {self.correlation_window}")

    def route(self, name: str) -> RouteSpec:
        for r in self.routes:
            if r.name == name:
                return r
        raise KeyError(name)

    def group_interval_for(self, route: RouteSpec) -> timedelta:
        return route.group_interval if route.group_interval is not None else self.group_interval

    def repeat_interval_for(self, route: RouteSpec) -> timedelta:
        return route.repeat_interval if route.repeat_interval is not None else self.repeat_interval

    def max_alerts_for(self, route: RouteSpec) -> int:
        return route.max_alerts if route.max_alerts is not None else self.max_alerts

    def is_escalation(self, route: RouteSpec) -> bool:
        return self.escalation is not None and self.escalation.route == route.name

    def accepts(self, route: RouteSpec, alert: Alert) -> bool:
        """Whether ``route`` receives ``alert``.

        The escalation route receives escalated alerts only. Matchers see the labels plus
        ``severity``; a route without matchers receives everything. An alert that no route's
        matchers accept goes to ``fallback_route`` (the plan's on-call route), so every alert
        reaches someone.
        """
        if self.is_escalation(route):
            return alert.escalated_at is not None
        labels = {**alert.labels, "severity": alert.severity.value}
        if matches_all(route.matchers, labels):
            return True
        if route.name != self.fallback_route:
            return False
        return not any(matches_all(r.matchers, labels) for r in self.routes if not self.is_escalation(r))
