"""Build the notification channels the plan's alert routes name; secrets come from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import SecretStr

from alerts import Channel, WebhookChannel
from monitor.errors import PlanError, PlanIssue
from monitor.plan import Plan


def build_channels(plan: Plan, environ: Mapping[str, str] | None = None) -> dict[str, Channel]:
    """One channel per route; a missing environment variable is a plan error naming the route."""
    env = os.environ if environ is None else environ
    channels: dict[str, Channel] = {}
    issues = []
    for i, route in enumerate(plan.alerts.routes):
        where = f"alerts.routes[{i}]"
        url = route.url
        if route.url_env is not None:
            url = env.get(route.url_env)
            if not url:
                issues.append(PlanIssue(f"{where}.url_env", f"environment variable {route.url_env} is not set"))
                continue
        secret = None
        if route.secret_env is not None:
            value = env.get(route.secret_env)
            if not value:
                issues.append(PlanIssue(f"{where}.secret_env", f"environment variable {route.secret_env} is not set"))
                continue
            secret = SecretStr(value)
        if route.type != "webhook":
            issues.append(PlanIssue(f"{where}.type", f"channel type {route.type!r} is not available in this build"))
            continue
        channels[route.name] = WebhookChannel(route.name, SecretStr(url or ""), secret, timeout_s=route.timeout_s)
    if issues:
        raise PlanError("plan", issues)
    return channels
