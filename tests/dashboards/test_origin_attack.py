"""The review's cross-origin attack, re-run against a real ``streamlit run``: a page on another
localhost port opens the dashboard's websocket (Streamlit lets any localhost origin through) and
asks for a script run; the dashboard answers only with its refusal. The same request from the
dashboard's own origin gets the page."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.dashboards.browser import served_dashboard
from tests.dashboards.seed import Seeded


async def _run_page(url: str, origin: str) -> bytes:
    """Drive one script run over the websocket as a browser page at ``origin`` would."""
    stream = url.replace("http://", "ws://") + "/_stcore/stream"
    async with websockets.connect(stream, origin=origin, subprotocols=["streamlit"], max_size=None) as ws:  # type: ignore[arg-type]
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        await ws.send(msg.SerializeToString())
        data = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=2)
            except TimeoutError:
                continue
            chunk = raw if isinstance(raw, bytes) else raw.encode()
            data += chunk
            forward = ForwardMsg()
            forward.ParseFromString(chunk)
            if forward.WhichOneof("type") == "script_finished":
                break
        return data


@pytest.mark.slow
def test_a_page_on_another_localhost_port_cannot_drive_the_dashboard(seeded: Seeded, tmp_path: Path) -> None:
    with served_dashboard(seeded.plan_path, seeded.db_url, tmp_path / "streamlit.log") as dashboard:
        own = asyncio.run(_run_page(dashboard.url, dashboard.url))
        hostile = asyncio.run(_run_page(dashboard.url, "http://localhost:9999"))
    assert b"may not drive this dashboard" not in own and b"Clinician review" in own  # the app's navigation
    assert b"may not drive this dashboard" in hostile
    assert b"Clinician review" not in hostile  # nothing of the app was rendered for it
