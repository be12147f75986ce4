"""The dashboard served for real on 127.0.0.1, and Debian's Chromium driven by Playwright.

Playwright comes from PyPI and drives ``/usr/bin/chromium``; its own browser download is never
used. A page counts as settled when the script has stopped running, no skeleton is left and the
main area holds at least one element (the script state alone once caught skeletons).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from medmon.monitor.cli.app import dashboard_command
from tests.conftest import stop_process

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The documentation's screenshots (docs/images/) are written by the browser test, so they stay current.
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SETTLED = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stSkeleton"]')
    && !!document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]'); }"""


@dataclass(frozen=True)
class Dashboard:
    url: str
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served_dashboard(
    plan_path: Path,
    db_url: str,
    log: Path,
    *,
    refresh: str = "5s",
    timeout: float = 60.0,
    streamlit_host_check: bool = True,
) -> Iterator[Dashboard]:
    """Run ``streamlit run dashboards/app.py`` on a free 127.0.0.1 port until the block ends.

    ``streamlit_host_check=False`` starts it without Streamlit's ``allowedHosts`` (as an operator
    running ``streamlit run`` by hand would), leaving the app's own check of each session's Host.
    """
    port = free_port()
    env = os.environ | {
        "MEDMON_PLAN": str(plan_path),
        "MEDMON_DATABASE_URL": db_url,
        "DO_NOT_TRACK": "1",
        "MEDMON_DASHBOARD_REFRESH": refresh,
    }
    # As `medmon dashboard` starts it.
    cmd = dashboard_command(port) if streamlit_host_check else dashboard_command(port, allowed_hosts=())
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(log.parent))
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the dashboard exited with {proc.returncode}: {log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{url}/_stcore/health", timeout=2).text == "ok":
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the dashboard did not answer within {timeout:.0f} s")
                time.sleep(0.2)
            yield Dashboard(url, proc)
        finally:
            stop_process(proc)


def settle(page: object, timeout_ms: int = 30_000) -> None:
    """Wait until the page is settled, twice with a short pause: a rerun can start in between."""
    page.wait_for_function(SETTLED, timeout=timeout_ms)  # type: ignore[attr-defined]
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    page.wait_for_function(SETTLED, timeout=timeout_ms)  # type: ignore[attr-defined]


def dark_pixels(png: Path, below: int = 128) -> int:
    """How many pixels of a screenshot are darker than ``below`` (a blank page has none)."""
    from PIL import Image

    with Image.open(png) as image:
        gray = image.convert("L")
        return sum(count for value, count in enumerate(gray.histogram()) if value < below)


def save_for_docs(png: Path, name: str) -> None:
    """Write a checked screenshot to ``docs/images/NAME`` when run from a checkout holding ``docs/``.

    Stored with a 256-colour palette (the pages are flat colours and text), a few times smaller than
    the browser's PNG and as sharp."""
    from PIL import Image

    if DOCS_IMAGES.parent.is_dir():
        DOCS_IMAGES.mkdir(exist_ok=True)
        with Image.open(png) as image:
            image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                DOCS_IMAGES / name, optimize=True
            )
