"""The plan's ``alerts`` section: where alerts go (routes), how often, and when they escalate."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from medmon.alerts.matchers import Matcher
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.section import HttpUrl, Interval, Section


class Route(Section):
    name: str = "default"
    type: Literal["webhook", "slack", "teams", "pagerduty", "alertmanager"] = "webhook"
    url: HttpUrl | None = None
    url_env: str | None = None
    secret_env: str | None = None
    timeout_s: float = Field(10.0, gt=0)
    # PagerDuty: the environment variable holding the integration's routing key.
    routing_key_env: str | None = None
    # Which alerts this route receives, as label matchers ("severity=critical", "task=~dose-.*");
    # none: every alert. Alerts no route matches go to owners.on_call_route.
    matchers: list[str] = Field(default_factory=list)
    send_resolved: bool = True
    group_interval: Interval | None = None
    repeat_interval: Interval | None = None

    @field_validator("matchers")
    @classmethod
    def _matchers(cls, value: list[str]) -> list[str]:
        for text in value:
            Matcher.parse(text)
        return value

    @model_validator(mode="after")
    def _target(self) -> Route:
        if self.type == "pagerduty":
            if self.routing_key_env is None:
                raise ValueError("a pagerduty route needs 'routing_key_env' (the variable holding its routing key)")
            if self.url is not None and self.url_env is not None:
                raise ValueError("expected at most one of 'url' or 'url_env'")
            return self
        if (self.url is None) == (self.url_env is None):
            raise ValueError("expected exactly one of 'url' or 'url_env'")
        return self


class AlertEscalation(Section):
    """An unacknowledged critical alert is also sent to ``route`` after ``after``."""

    after: Interval = "30m"
    route: str


class AlertsConfig(Section):
    routes: list[Route] = Field(default_factory=list)
    repeat_interval: Interval = "4h"
    dashboard_url: str = "http://127.0.0.1:8501"
    # Grouping per task, as in Alertmanager: wait before a new group's first notification, then
    # at least group_interval between two notifications of one group on one route.
    group_wait: Interval = "0s"
    group_interval: Interval = "5m"
    escalation: AlertEscalation | None = None
    max_alerts_per_notification: int = Field(50, ge=1)
    # A task with no usable probe data for this many schedule intervals raises a 'stale' alert.
    stale_after_intervals: float = Field(2.0, ge=1)
    heartbeat_tolerance: Interval = "5m"
    # ``medmon check`` refuses a plan where some alert would reach no route. A plan watched on the
    # dashboard alone says so here, and every report and plan note repeats it.
    allow_unrouted: bool = False
    # What opens on the deployment's tasks this long after a model change is that change's child: one
    # incident family, one page (medmon.alerts.correlation). Long enough for the detectors to see what
    # the new model does at the slowest task's schedule; at most 30 days.
    correlation_window: Interval = "72h"

    @field_validator("correlation_window")
    @classmethod
    def _window(cls, value: str) -> str:
        span = parse_interval(value)
        if span <= timedelta(0) or span > timedelta(days=30):
            raise ValueError(f"expected a duration from 1s to 30d, such as '72h', got {value!r}")
        return value

    @model_validator(mode="after")
    def _route_names(self) -> AlertsConfig:
        names = [r.name for r in self.routes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"route names must be unique; repeated: {', '.join(dupes)}")
        if self.escalation is not None and self.escalation.route not in names:
            raise ValueError(f"escalation.route {self.escalation.route!r} is not one of the routes: {', '.join(names)}")
        return self
