"""From the plan's ``alerts`` section to what the alerts package needs: channels and a notify policy.

Secrets (webhook URLs, HMAC keys, PagerDuty routing keys) come from the environment variables
the plan names; a missing or empty variable, or a URL that is not http(s), is a ``PlanError``
naming the route and the field, raised before anything is sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import SecretStr, ValidationError

from medmon.alerts import (
    CHANNEL_TYPES,
    KINDS,
    Alert,
    Channel,
    Escalation,
    Impact,
    Matcher,
    NotifyPolicy,
    RouteSpec,
    Subject,
    severity_for,
)
from medmon.alerts.signing import secret_key
from medmon.baselines import resolve
from medmon.monitor.errors import PlanError, PlanIssue
from medmon.monitor.plan.alerts import Route
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan

_URL = re.compile(r"^https?://[^\s/]+")
# Alertmanager resolves an alert it has not heard about for resolve_timeout (5m by default).
ALERTMANAGER_REPEAT = timedelta(minutes=1)
ALERTMANAGER_GROUP_INTERVAL = timedelta(seconds=10)
ALERTMANAGER_MAX_ALERTS = 1000


class _Reader:
    """Reads one route's secrets from the environment, collecting what is wrong."""

    def __init__(self, route: Route, where: str, env: Mapping[str, str], require_env: bool) -> None:
        self.route, self.where, self.env, self.require_env = route, where, env, require_env
        self.issues: list[PlanIssue] = []
        self.missing = False

    def issue(self, field: str, message: str) -> None:
        self.issues.append(PlanIssue(f"{self.where}{field}", f"route {self.route.name!r}: {message}"))

    def secret(self, field: str, env_name: str | None) -> SecretStr | None:
        if env_name is None:
            return None
        value = self.env.get(env_name)
        if not value:
            self.missing = True
            if self.require_env:
                self.issue(f".{field}", f"environment variable {env_name} is not set")
            return None
        return SecretStr(value)


def _config(
    route: Route, where: str, env: Mapping[str, str], issues: list[PlanIssue], *, require_env: bool = True
) -> object | None:
    """The route's channel config, or None after adding to ``issues`` what prevents it."""
    read = _Reader(route, where, env, require_env)
    url = SecretStr(route.url) if route.url is not None else read.secret("url_env", route.url_env)
    if url is not None and not _URL.match(url.get_secret_value()):
        read.issue(
            ".url" if route.url is not None else ".url_env",
            "expected an http(s) URL" + ("" if route.url is not None else f" in {route.url_env}"),
        )
    values: dict[str, Any] = {"name": route.name, "timeout_s": route.timeout_s}
    if url is not None:
        values["url"] = url
    if route.type == "webhook":
        values["secret"] = read.secret("secret_env", route.secret_env)
        if values["secret"] is not None:
            try:
                secret_key(values["secret"].get_secret_value())
            except ValueError as exc:
                read.issue(".secret_env", f"{route.secret_env}: {exc}")
    elif route.secret_env is not None:
        read.issue(".secret_env", "only webhook routes are signed")
    if route.type == "pagerduty":
        values["routing_key"] = read.secret("routing_key_env", route.routing_key_env)
    issues.extend(read.issues)
    if read.issues or read.missing:
        return None
    config_cls, _ = CHANNEL_TYPES[route.type]
    try:
        return config_cls(**values)
    except ValidationError as exc:
        issues.extend(PlanIssue(where, f"route {route.name!r}: {e['msg']}") for e in exc.errors())
        return None


def check_routes(
    plan: Plan,
    environ: Mapping[str, str] | None = None,
    *,
    line: Callable[..., int | None] | None = None,
    require_env: bool = False,
) -> list[PlanIssue]:
    """Problems with the routes' URLs and secrets in this environment (empty when none).

    ``medmon check`` runs where the secrets may not be set (a laptop, CI), so by default an
    unset variable is not a problem here (``build_channels`` refuses it when the service
    starts), but a variable that is set must hold a usable value. ``line(*location)`` gives the
    plan line of a field, so each issue points at the route's entry in the file.
    """
    env = os.environ if environ is None else environ
    issues: list[PlanIssue] = []
    for i, route in enumerate(plan.alerts.routes):
        found: list[PlanIssue] = []
        _config(route, f"alerts.routes[{i}]", env, found, require_env=require_env)
        for issue in found:
            field = issue.path.rsplit(".", 1)[-1] if issue.path.count(".") > 1 else None
            at = line("alerts", "routes", i, *([field] if field else [])) if line is not None else None
            issues.append(PlanIssue(issue.path, issue.message, at))
    return issues


def endpoint_variables(plan: Plan) -> list[tuple[str, str]]:
    """(field path, variable) of every environment variable the deployment and judges read."""
    endpoints = [("deployment", plan.deployment)]
    if plan.jury is not None:
        endpoints += [(f"jury.judges[{i}]", j) for i, j in enumerate(plan.jury.judges)]
    found = []
    for where, endpoint in endpoints:
        if endpoint.api_key_env:
            found.append((f"{where}.api_key_env", endpoint.api_key_env))
        found += [(f"{where}.header_env.{header}", var) for header, var in endpoint.header_env.items()]
    return found


def check_endpoints(
    plan: Plan, environ: Mapping[str, str] | None = None, *, line: Callable[..., int | None] | None = None
) -> list[PlanIssue]:
    """Each unset (or empty) variable an endpoint reads, as an issue naming the field and the variable."""
    env = os.environ if environ is None else environ
    issues = []
    for path, var in endpoint_variables(plan):
        if not env.get(var):
            parts = [int(p) if p.isdigit() else p for p in path.replace("[", ".").replace("]", "").split(".")]
            issues.append(
                PlanIssue(
                    path, f"environment variable {var} is not set", line(*parts[:-1]) if line is not None else None
                )
            )
    return issues


def require_endpoint_env(plan: Plan) -> None:
    """Refuse to call the endpoints while a variable they read is unset (every call would fail with 401)."""
    issues = check_endpoints(plan)
    if issues:
        raise PlanError("plan", issues)


def build_channels(plan: Plan, environ: Mapping[str, str] | None = None) -> dict[str, Channel]:
    """One channel per route; any missing variable or bad URL is a PlanError naming the route."""
    env = os.environ if environ is None else environ
    channels: dict[str, Channel] = {}
    issues: list[PlanIssue] = []
    for i, route in enumerate(plan.alerts.routes):
        config = _config(route, f"alerts.routes[{i}]", env, issues)
        if config is not None:
            _, channel_cls = CHANNEL_TYPES[route.type]
            channels[route.name] = channel_cls(config)
    if issues:
        raise PlanError("plan", issues)
    return channels


def _route_spec(route: Route) -> RouteSpec:
    machine = route.type == "alertmanager"
    group = parse_interval(route.group_interval) if route.group_interval else None
    repeat = parse_interval(route.repeat_interval) if route.repeat_interval else None
    return RouteSpec(
        name=route.name,
        matchers=tuple(Matcher.parse(m) for m in route.matchers),
        send_resolved=route.send_resolved,
        group_interval=group if group is not None or not machine else ALERTMANAGER_GROUP_INTERVAL,
        repeat_interval=repeat if repeat is not None or not machine else ALERTMANAGER_REPEAT,
        repeat_acknowledged=machine,
        max_alerts=ALERTMANAGER_MAX_ALERTS if machine else None,
    )


def notify_policy(plan: Plan) -> NotifyPolicy:
    """The plan's routes, grouping timers, repeat interval and escalation as a ``NotifyPolicy``."""
    cfg = plan.alerts
    names = [r.name for r in cfg.routes]
    escalation = None
    if cfg.escalation is not None:
        escalation = Escalation(after=parse_interval(cfg.escalation.after), route=cfg.escalation.route)
    fallback = plan.owners.on_call_route if plan.owners.on_call_route in names else None
    return NotifyPolicy(
        routes=tuple(_route_spec(r) for r in cfg.routes),
        group_wait=parse_interval(cfg.group_wait),
        group_interval=parse_interval(cfg.group_interval),
        repeat_interval=parse_interval(cfg.repeat_interval),
        escalation=escalation,
        fallback_route=fallback,
        max_alerts=cfg.max_alerts_per_notification,
        timezone=plan.display_timezone,
        correlation_window=parse_interval(cfg.correlation_window),
    )


def _possible_alerts(plan: Plan) -> list[tuple[str, Alert]]:
    """Every (task, rule) alert the plan can raise, labelled and graded as the monitor would."""
    tier = plan.use_case.risk_tier.value
    subjects = [
        (
            task.id,
            Subject(
                deployment=plan.deployment.name,
                task=task.id,
                benchmark=task.benchmark,
                category=resolve(task.benchmark).category,
                severity=severity_for(tier, task.severity),
            ),
        )
        for task in plan.tasks
    ]
    subjects.append(("monitor", Subject(deployment=plan.deployment.name, severity=severity_for(tier))))
    alerts = []
    for name, subject in subjects:
        for kind in KINDS.values():
            if kind.impact is not Impact.info:  # information never pages
                signal = subject.signal(kind.rule, kind.metric, firing=True, summary="")
                alerts.append(
                    (
                        name,
                        Alert(
                            fingerprint="",
                            labels=signal.labels,
                            task_id=subject.task,
                            rule=kind.rule.value,
                            severity=signal.severity,
                        ),
                    )
                )
    return alerts


def unreachable_alerts(plan: Plan) -> list[tuple[str, str]]:
    """The (task, severity) pairs of alerts that no route receives, by the notify policy itself.

    An alert no route's matchers accept goes to ``owners.on_call_route``; when that names no
    route, it goes nowhere. Each pair is listed once, in plan order.
    """
    policy = notify_policy(plan)
    lost: list[tuple[str, str]] = []
    for name, alert in _possible_alerts(plan):
        if not any(policy.accepts(route, alert) for route in policy.routes if not policy.is_escalation(route)):
            pair = (name, alert.severity.value)
            if pair not in lost:
                lost.append(pair)
    return lost


def routing_issues(plan: Plan, *, line: Callable[..., int | None] | None = None) -> list[PlanIssue]:
    """Refusals for a plan whose alerts can reach nobody, naming the unreachable combinations."""
    lost = unreachable_alerts(plan)
    if not lost or plan.alerts.allow_unrouted:
        return []
    where = line or (lambda *loc: None)
    pairs = ", ".join(f"({task}, {severity})" for task, severity in lost)
    names = [r.name for r in plan.alerts.routes]
    if not names:
        return [
            PlanIssue(
                "alerts.routes",
                f"no route is configured, so no alert reaches anyone: {pairs}; add a "
                "route (webhook, slack, teams, pagerduty or alertmanager)",
                where("alerts"),
            )
        ]
    issues = [
        PlanIssue(
            "alerts.routes",
            f"these (task, severity) alerts match no route's matchers and have no "
            f"on-call route to fall back to: {pairs}",
            where("alerts", "routes"),
        )
    ]
    if plan.owners.on_call_route not in names:
        issues.append(
            PlanIssue(
                "owners.on_call_route",
                f"{plan.owners.on_call_route!r} names no route (routes: "
                f"{', '.join(names)}); alerts no route matches would go nowhere",
                where("owners", "on_call_route"),
            )
        )
    return issues
