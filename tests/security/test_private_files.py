"""The review's low findings, re-run: files other accounts could read, tracebacks shown to viewers,
an empty HMAC key, and webhook ids that repeat across deployments."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medmon.alerts.signing import secret_key
from medmon.monitor.cli.app import dashboard_command
from medmon.monitor.governance.suspension import route_sender
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.plan.routing import check_routes
from tests.conftest import plan_dict


def _medmon(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "medmon"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),  # the usual shell umask: files would be 0644
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_database_log_plan_and_report_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    _medmon("--log-file", "medmon.log", "init", "plan.yaml", cwd=tmp_path)
    _medmon("--log-file", "medmon.log", "db", "upgrade", "plan.yaml", cwd=tmp_path)
    _medmon("report", "plan.yaml", "--plan-document", "-o", "plan-document.html", cwd=tmp_path)
    for name in ("plan.yaml", "medmon.log", "medmon.db", "plan-document.html"):
        mode = stat.S_IMODE((tmp_path / name).stat().st_mode)
        assert mode == 0o600, f"{name}: {oct(mode)}"


def test_the_dashboard_shows_viewers_no_traceback() -> None:
    cmd = dashboard_command(8501)
    assert cmd[cmd.index("--client.showErrorDetails") + 1] == "none"


def test_an_empty_webhook_key_is_refused_at_check(monkeypatch: pytest.MonkeyPatch) -> None:
    for empty in ("whsec_", "whsec_=="):
        with pytest.raises(ValueError, match="must not be empty"):
            secret_key(empty)
    data = plan_dict()
    data["alerts"] = {
        "routes": [{"name": "hook", "type": "webhook", "url": "https://hooks.example/x", "secret_env": "HOOK_KEY"}],
        "allow_unrouted": True,
    }
    monkeypatch.setenv("HOOK_KEY", "whsec_")
    issues = check_routes(parse_plan(yaml.safe_dump(data)), require_env=True)
    assert any("must not be empty" in i.message for i in issues)


def test_suspension_webhook_ids_differ_across_deployments(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def hook(request: Request) -> Response:
        seen.append(request.headers["webhook-id"])
        return Response("ok")

    url = serve(Starlette(routes=[Route("/flag", hook, methods=["POST"])])).url
    monkeypatch.setenv("FLAG_SECRET", "whsec_c2VjcmV0LWtleS1mb3ItdGVzdHM=")
    data = plan_dict(oversight={"suspend": {"url": f"{url}/flag", "secret_env": "FLAG_SECRET"}})
    route = parse_plan(yaml.safe_dump(data)).oversight.suspend
    assert route is not None
    send = route_sender(route)
    for deployment in ("production", "staging"):  # each deployment's first suspension has id 1
        send({"action": "suspend", "suspension": 1, "deployment": deployment, "task": "t"})
    assert len(set(seen)) == 2 and all("suspension-1-suspend" in i for i in seen)


def test_audit_list_json_masks_a_webhook_url_written_in_a_plan_diff(engine: Any, db_url: str) -> None:
    from typer.testing import CliRunner

    from medmon.db import session_scope, utcnow
    from medmon.monitor.cli.app import app
    from medmon.monitor.governance.audit import record_plan

    hook = "https://hooks.slack.com/services/T000/B000/XXXXsecretXXXX"
    before = yaml.safe_dump(plan_dict())
    after = yaml.safe_dump(plan_dict(alerts={"routes": [{"name": "s", "type": "slack", "url": hook}]}))
    with session_scope(engine) as s:
        record_plan(s, before, "plan.yaml", "owner@hospital.example", utcnow())
        record_plan(s, after, "plan.yaml", "owner@hospital.example", utcnow())
    result = CliRunner().invoke(app, ["audit", "list", "--db", db_url, "--json"])
    assert result.exit_code == 0, result.output
    assert "hooks.slack.com/services" in before + after and "diff" in result.output
    assert "XXXXsecretXXXX" not in result.output
