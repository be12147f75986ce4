"""The dashboard served on 127.0.0.1 and used through Chromium: acknowledge an alert on the page,
then screenshot the overview. Playwright from PyPI drives Debian's /usr/bin/chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from alerts import Alert, AlertStatus
from monitor.audit import list_events
from tests.dashboards.browser import CHROMIUM, CHROMIUM_ARGS, dark_pixels, served_dashboard, settle
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
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert dark_pixels(shot) > 500, "the overview screenshot is blank"
    with Session(seeded_engine) as s:
        after = s.get(Alert, alert.id)
        audited = list_events(s, kind="alert_acknowledged")
    assert after is not None and after.status == AlertStatus.acknowledged
    assert after.ack_note == "Reviewing with the vendor" and (after.acknowledged_by or "").endswith("(unauthenticated)")
    assert [e.subject for e in audited] == [f"alert:{alert.id}"]
