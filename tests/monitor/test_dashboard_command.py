"""`medmon dashboard` stops with what it started: SIGTERM to medmon reaches Streamlit, and medmon
exits when Streamlit has, so no dashboard is left serving after a service manager stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import plan_dict
from tests.dashboards.browser import free_port

pytestmark = pytest.mark.process  # servers, workers or builds started as processes


def _serving(url: str) -> bool:
    try:
        return httpx.get(f"{url}/_stcore/health", timeout=2).text == "ok"
    except httpx.TransportError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_medmon_dashboard_stops_streamlit_too(sig: signal.Signals, tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan_dict(storage={"url": f"sqlite:///{tmp_path / 'm.db'}"})))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    medmon = subprocess.Popen(
        [sys.executable, "-m", "medmon", "dashboard", str(plan_path), "--port", str(port)],
        env=os.environ | {"DO_NOT_TRACK": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 90
        while not _serving(url):
            assert medmon.poll() is None, "medmon dashboard exited before serving"
            assert time.monotonic() < deadline, "the dashboard did not come up"
            time.sleep(0.3)
        medmon.send_signal(sig)
        code = medmon.wait(timeout=60)
        assert code in (0, -sig, 128 + sig), code
        assert not _serving(url), "Streamlit is still serving after medmon dashboard exited"
    finally:
        if medmon.poll() is None:
            medmon.kill()
            medmon.wait()
