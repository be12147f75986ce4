"""The dashboard served on 127.0.0.1 and used through Chromium: acknowledge an alert on the page,
screenshot the overview, and watch it refresh itself when the alert is resolved elsewhere; the
overview and task screenshots become the documentation's pictures (docs/images/); with
OIDC sign-in configured, nothing shows until the provider has signed the user in.
Playwright from PyPI drives Debian's /usr/bin/chromium."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from medmon.alerts import Alert, AlertStatus, open_alerts, resolve
from medmon.monitor.governance.audit import list_events
from medmon.db import session_scope
from medmon.monitor.service.webserver import RunningServer
from tests.dashboards.browser import (CHROMIUM, CHROMIUM_ARGS, dark_pixels, save_for_docs, served_dashboard,
                                      settle)
from tests.dashboards.seed import Seeded

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed "
                                 "(apt-get install -y --no-install-recommends chromium)")]


def test_acknowledge_through_the_page_and_screenshot_the_overview(seeded: Seeded, seeded_engine: Engine,
                                                                  tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    with Session(seeded_engine) as s:
        alert = s.exec(select(Alert).where(Alert.task_id == "knowledge-qa", Alert.rule == "drift_drop")).one()
    assert alert.status == AlertStatus.firing
    shot = tmp_path / "overview.png"
    task_shot = tmp_path / "task.png"
    with served_dashboard(seeded.plan_path, seeded.db_url, tmp_path / "streamlit.log") as dashboard, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{dashboard.url}/alerts")
            settle(page)
            page.get_by_role("combobox", name="Alert").click()
            page.get_by_role("option", name=re.compile(rf"^#{alert.id} · critical")).click()
            settle(page)
            page.get_by_label("Reason (recorded with your name in the alert's history and the audit log)").fill(
                "Reviewing with the vendor")
            page.keyboard.press("Enter")  # commits the text input, as a person tabbing away would
            settle(page)
            page.get_by_role("button", name="Acknowledge").click()
            expect(page.get_by_text(f"Alert #{alert.id} acknowledged by")).to_be_visible(timeout=30_000)
            page.goto(dashboard.url)
            settle(page)
            expect(page.get_by_text("task(s) degraded").first).to_be_visible()
            expect(page.get_by_role("button", name="Deploy")).to_have_count(0)  # no developer toolbar
            page.screenshot(path=str(shot), full_page=True)
            # While the page stays open, someone else resolves the alert: the page refreshes itself.
            with Session(seeded_engine) as s:
                before = len(open_alerts(s))
            expect(page.get_by_text(f"Open alerts ({before})")).to_be_visible()
            with session_scope(seeded_engine) as s:
                resolve(s, alert.id, "owner@hospital.example", "Vendor fixed it", None, datetime.now(timezone.utc))
            expect(page.get_by_text(f"Open alerts ({before - 1})")).to_be_visible(timeout=30_000)
            page.goto(f"{dashboard.url}/task?task=knowledge-qa")  # where an alert's link opens
            settle(page)
            expect(page.get_by_text("Detector evidence")).to_be_visible()
            page.screenshot(path=str(task_shot), full_page=True)
        finally:
            browser.close()
    assert dark_pixels(shot) > 500, "the overview screenshot is blank"
    assert dark_pixels(task_shot) > 500, "the task screenshot is blank"
    save_for_docs(shot, "overview.png")
    save_for_docs(task_shot, "task.png")
    with Session(seeded_engine) as s:
        after = s.get(Alert, alert.id)
        audited = list_events(s, kind="alert_acknowledged")
    assert after is not None and after.acknowledged_by is not None and after.status == AlertStatus.resolved
    assert after.ack_note == "Reviewing with the vendor" and (after.acknowledged_by or "").endswith("(unauthenticated)")
    assert [e.subject for e in audited] == [f"alert:{alert.id}"]


def _fake_provider() -> Starlette:
    """An OpenID provider's discovery document and authorize page, on 127.0.0.1."""

    async def discovery(request: Request) -> JSONResponse:
        base = str(request.base_url).rstrip("/")
        return JSONResponse({"issuer": base, "authorization_endpoint": f"{base}/authorize",
                             "token_endpoint": f"{base}/token", "jwks_uri": f"{base}/jwks",
                             "response_types_supported": ["code"], "subject_types_supported": ["public"],
                             "id_token_signing_alg_values_supported": ["RS256"]})

    async def authorize(request: Request) -> HTMLResponse:
        return HTMLResponse("<h1>Hospital sign-in (test provider)</h1>")

    return Starlette(routes=[Route("/.well-known/openid-configuration", discovery), Route("/authorize", authorize)])


def test_with_sign_in_configured_the_served_dashboard_shows_nothing_and_sends_users_to_the_provider(
        seeded: Seeded, tmp_path: Path, serve: Callable[[object], RunningServer]) -> None:
    from playwright.sync_api import expect, sync_playwright

    provider = serve(_fake_provider())
    folder = tmp_path / "auth"
    (folder / ".streamlit").mkdir(parents=True)
    (folder / ".streamlit" / "secrets.toml").write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "a-long-random-test-cookie-secret"\n'
        'client_id = "medmon-dashboard"\n'
        'client_secret = "test-client-secret"\n'
        f'server_metadata_url = "{provider.url}/.well-known/openid-configuration"\n')
    with served_dashboard(seeded.plan_path, seeded.db_url, folder / "streamlit.log") as dashboard, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for path in ("", "/alerts", "/governance"):
                page.goto(f"{dashboard.url}{path}")
                settle(page)
                expect(page.get_by_text("Sign in to see the monitoring of this deployment.")).to_be_visible()
                assert page.locator('[data-testid="stDataFrame"]').count() == 0
                assert page.get_by_text("knowledge-qa").count() == 0
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(re.compile(re.escape(f"{provider.url}/authorize") + r"\?.*"), timeout=30_000)
            query = parse_qs(urlparse(page.url).query)
        finally:
            browser.close()
    assert query["client_id"] == ["medmon-dashboard"] and query["response_type"] == ["code"]
    assert query["redirect_uri"] == [f"{dashboard.url}/oauth2callback"]
    assert "openid" in query["scope"][0].split()
