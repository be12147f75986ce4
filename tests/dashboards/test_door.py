"""The dashboard's door, attacked as a browser after DNS rebinding would: a real websocket client
speaking Streamlit's protocol to a real ``streamlit run`` of the dashboard on 127.0.0.1, with the
attacker's name in the Host header."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from medmon.dashboards.auth import host_name, host_refusal, is_loopback, local_actions_allowed
from medmon.monitor.plan.model import Plan, dashboard_hosts
from tests.dashboards.browser import served_dashboard
from tests.dashboards.seed import Seeded

SEEN_DATA = b"knowledge-qa"  # a task id of the seeded plan: on every page that shows data


def session_messages(url: str, host: str, timeout: float = 120.0) -> list[ForwardMsg]:
    """Open a session as a browser at ``http://{host}`` would and run the default page to its end.

    The TCP connection goes to the dashboard on 127.0.0.1; the Host and Origin headers name
    ``host``, exactly what a browser sends after DNS rebinding.
    """
    port = int(url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    messages: list[ForwardMsg] = []
    with connect(
        f"ws://{host}:{port}/_stcore/stream",
        sock=sock,
        origin=f"http://{host}:{port}",
        subprotocols=["streamlit"],
        open_timeout=timeout,
    ) as ws:  # type: ignore[list-item]
        rerun = BackMsg()
        rerun.rerun_script.query_string = ""
        rerun.rerun_script.page_script_hash = ""
        ws.send(rerun.SerializeToString())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                raw = ws.recv(timeout=deadline - time.monotonic())
            except TimeoutError:
                break
            msg = ForwardMsg()
            msg.ParseFromString(raw if isinstance(raw, bytes) else raw.encode())
            messages.append(msg)
            if msg.WhichOneof("type") == "script_finished":
                break
    return messages


def text_of(messages: list[ForwardMsg]) -> bytes:
    return b"".join(m.SerializeToString() for m in messages)


@pytest.mark.process
def test_streamlit_closes_a_websocket_for_a_foreign_host(seeded: Seeded, tmp_path: Path) -> None:
    with served_dashboard(seeded.plan_path, seeded.db_url, tmp_path / "dash.log", timeout=180) as dash:
        ok = text_of(session_messages(dash.url, "127.0.0.1"))
        assert SEEN_DATA in ok  # the same client, honest Host: the data is there
        with pytest.raises((ConnectionClosed, InvalidStatus)):  # closed before any message
            session_messages(dash.url, "attacker.example")


@pytest.mark.process
def test_the_app_refuses_a_foreign_host_even_when_streamlit_does_not_check(seeded: Seeded, tmp_path: Path) -> None:
    with served_dashboard(
        seeded.plan_path, seeded.db_url, tmp_path / "dash.log", streamlit_host_check=False, timeout=180
    ) as dash:
        ok = text_of(session_messages(dash.url, "localhost"))
        refused = text_of(session_messages(dash.url, "attacker.example"))
    assert SEEN_DATA in ok
    assert SEEN_DATA not in refused
    assert b"Request refused" in refused and b"attacker.example" in refused


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8501", True),
        ("localhost", True),
        ("[::1]:8501", True),
        ("LOCALHOST:8501", True),
        ("medmon.hospital.example", True),
        ("attacker.example:8501", False),
        ("127.0.0.1.attacker.example", False),
        ("evil.localhost.example", False),
    ],
)
def test_host_check(make_plan: Callable[..., Plan], header: str, allowed: bool) -> None:
    plan = make_plan(dashboard={"hosts": ["medmon.hospital.example"]})
    assert (host_refusal(plan, "127.0.0.1", {"Host": header}) is None) is allowed


def test_the_configured_names_are_what_the_dashboard_answers_to(make_plan: Callable[..., Plan]) -> None:
    plan = make_plan(dashboard={"hosts": ["Dash.Hospital.Example"]})
    assert dashboard_hosts(plan, "0.0.0.0") == ("localhost", "127.0.0.1", "::1", "dash.hospital.example")
    assert "10.1.2.3" in dashboard_hosts(plan, "10.1.2.3")
    assert host_name("[::1]:8501") == "::1"


def test_local_actions_need_the_flag_and_a_loopback_address() -> None:
    flag = {"MEDMON_DASHBOARD_LOCAL_ACTIONS": "1"}
    assert local_actions_allowed("127.0.0.1", flag) and local_actions_allowed("::1", flag)
    assert not local_actions_allowed("127.0.0.1", {})
    assert not local_actions_allowed("0.0.0.0", flag) and not local_actions_allowed("10.0.0.5", flag)
    assert is_loopback("127.0.0.2") and not is_loopback("example.org")


def test_the_command_refuses_to_start_when_the_plan_requires_sign_in_and_none_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml
    from typer.testing import CliRunner

    from medmon.monitor.cli.app import app
    from tests.conftest import plan_dict

    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(plan_dict(dashboard={"auth": "oidc"})))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)  # the folder whose .streamlit/secrets.toml `streamlit run` would read
    result = CliRunner().invoke(app, ["dashboard", str(plan), "--port", "9"])
    assert result.exit_code == 2
    assert "dashboard.auth is 'oidc' but no [auth] section was found" in result.output
    assert str(tmp_path / ".streamlit" / "secrets.toml") in result.output.replace("\n", "")
