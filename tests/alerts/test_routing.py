"""From the plan to channels and a notify policy (``medmon.monitor.plan.routing``); bad routes are refused with
the route, the field and the line named, at ``medmon check`` and before anything is sent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from medmon.alerts.channels import AlertmanagerChannel, PagerDutyChannel, SlackChannel, TeamsChannel, WebhookChannel
from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.plan.routing import build_channels, check_routes, notify_policy
from tests.conftest import plan_dict

ENV = {
    "SLACK_URL": "https://hooks.slack.example/services/T/B/x",
    "HOOK_SECRET": "s3cret",
    "PD_KEY": "0123456789abcdef0123456789abcdef",
    "TEAMS_URL": "https://teams.example/workflows/1",
}
ROUTES: list[dict[str, Any]] = [
    {"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/hook", "secret_env": "HOOK_SECRET"},
    {"name": "slack", "type": "slack", "url_env": "SLACK_URL", "matchers": ["severity=~critical|warning"]},
    {"name": "teams", "type": "teams", "url_env": "TEAMS_URL", "send_resolved": False},
    {"name": "pager", "type": "pagerduty", "routing_key_env": "PD_KEY", "matchers": ["severity=critical"]},
    {"name": "am", "type": "alertmanager", "url": "http://127.0.0.1:9093"},
]


def test_every_route_type_builds_its_channel(make_plan: Callable[..., Plan]) -> None:
    plan = make_plan(alerts={"routes": ROUTES})
    channels = build_channels(plan, ENV)
    assert {k: type(v) for k, v in channels.items()} == {
        "hook": WebhookChannel,
        "slack": SlackChannel,
        "teams": TeamsChannel,
        "pager": PagerDutyChannel,
        "am": AlertmanagerChannel,
    }
    pager = channels["pager"]
    assert isinstance(pager, PagerDutyChannel)
    assert pager.config.url.get_secret_value() == "https://events.pagerduty.com/v2/enqueue"
    assert pager.config.routing_key.get_secret_value() == ENV["PD_KEY"]
    assert "0123456789abcdef" not in repr(channels) + repr([c.config for c in channels.values()])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("missing", "path"),
    [
        ("SLACK_URL", "alerts.routes[1].url_env"),
        ("HOOK_SECRET", "alerts.routes[0].secret_env"),
        ("PD_KEY", "alerts.routes[3].routing_key_env"),
    ],
)
def test_missing_environment_variable_names_the_route(make_plan: Callable[..., Plan], missing: str, path: str) -> None:
    plan = make_plan(alerts={"routes": ROUTES})
    env = {k: v for k, v in ENV.items() if k != missing}
    with pytest.raises(PlanError) as info:
        build_channels(plan, env)
    (issue,) = info.value.issues
    assert issue.path == path
    assert missing in issue.message and f"route {plan.alerts.routes[int(path[14])].name!r}" in issue.message


def test_url_from_environment_must_be_http(make_plan: Callable[..., Plan]) -> None:
    plan = make_plan(alerts={"routes": ROUTES})
    issues = check_routes(plan, {**ENV, "SLACK_URL": "hooks.slack.com/services/T/B/x"})
    assert [(i.path, i.message) for i in issues] == [
        ("alerts.routes[1].url_env", "route 'slack': expected an http(s) URL in SLACK_URL")
    ]
    assert "hooks.slack.com" not in str(issues)  # the value is a secret: never echoed


@pytest.mark.parametrize(
    ("route", "path", "message"),
    [
        ({"name": "x", "url": "not a url"}, "alerts.routes[0].url", "http(s) URL"),
        ({"name": "x", "type": "pagerduty"}, "alerts.routes[0]", "needs 'routing_key_env'"),
        (
            {"name": "x", "url": "http://h/x", "matchers": ["task=~(bad"]},
            "alerts.routes[0].matchers",
            "invalid regular expression",
        ),
        (
            {"name": "x", "url": "http://h/x", "matchers": ["task dosing"]},
            "alerts.routes[0].matchers",
            "expected a matcher like",
        ),
        (
            {"name": "x", "url": "http://h/x", "repeat_interval": "often"},
            "alerts.routes[0].repeat_interval",
            "interval like '1h'",
        ),
        ({"name": "x", "type": "slack"}, "alerts.routes[0]", "exactly one of 'url' or 'url_env'"),
    ],
)
def test_bad_route_is_a_clear_check_error(tmp_path: Path, route: dict[str, Any], path: str, message: str) -> None:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(alerts={"routes": [route]}), sort_keys=False))
    result = CliRunner().invoke(app, ["check", str(plan_file), "--json"])
    assert result.exit_code == 2, result.output
    issues = [i for i in yaml.safe_load(result.output)["issues"] if i["path"].startswith(path)]
    assert issues and message in issues[0]["message"] and issues[0]["line"] is not None


def test_check_reports_a_bad_url_in_the_environment_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(alerts={"routes": [ROUTES[1]]}), sort_keys=False))
    monkeypatch.delenv("SLACK_URL", raising=False)  # unset where `check` runs: fine, `serve` refuses it
    assert CliRunner().invoke(app, ["check", str(plan_file)]).exit_code == 0
    monkeypatch.setenv("SLACK_URL", "hooks.slack.com/services/T/B/x")
    result = CliRunner().invoke(app, ["check", str(plan_file), "--json"])
    assert result.exit_code == 2
    line = next(i for i, text in enumerate(plan_file.read_text().splitlines(), 1) if "url_env" in text)
    assert yaml.safe_load(result.output)["issues"] == [
        {
            "path": "alerts.routes[0].url_env",
            "line": line,
            "message": "route 'slack': expected an http(s) URL in SLACK_URL",
        }
    ]
    assert "hooks.slack.com" not in result.output
    assert check_routes(load_plan(plan_file), {}, require_env=True)[0].message == (
        "route 'slack': environment variable SLACK_URL is not set"
    )


@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        ({"routes": [ROUTES[0], ROUTES[0]]}, "route names must be unique; repeated: hook"),
        ({"routes": [ROUTES[0]], "escalation": {"after": "30m", "route": "pager"}}, "'pager' is not one of the routes"),
        ({"group_interval": "soon"}, "interval like '1h'"),
    ],
)
def test_alerts_section_validation(make_plan: Callable[..., Plan], alerts: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError) as info:
        make_plan(alerts=alerts)
    assert any(message in i.message for i in info.value.issues), info.value


def test_notify_policy_from_plan(make_plan: Callable[..., Plan]) -> None:
    owners = {
        "clinical": {"name": "Dr", "email": "dr@h.example"},
        "technical": {"name": "T", "email": "t@h.example"},
        "on_call_route": "teams",
    }
    plan = make_plan(
        owners=owners,
        alerts={
            "routes": ROUTES,
            "repeat_interval": "2h",
            "group_wait": "10s",
            "group_interval": "3m",
            "escalation": {"after": "20m", "route": "pager"},
            "max_alerts_per_notification": 20,
        },
    )
    policy = notify_policy(plan)
    assert (policy.group_wait, policy.group_interval, policy.repeat_interval) == (
        timedelta(seconds=10),
        timedelta(minutes=3),
        timedelta(hours=2),
    )
    assert policy.escalation is not None and (policy.escalation.after, policy.escalation.route) == (
        timedelta(minutes=20),
        "pager",
    )
    assert policy.fallback_route == "teams" and policy.max_alerts == 20
    am = policy.route("am")
    assert am.repeat_acknowledged and am.repeat_interval == timedelta(minutes=1) < timedelta(minutes=5)
    assert policy.route("teams").send_resolved is False
    assert [str(m) for m in policy.route("pager").matchers] == ["severity=critical"]
