"""The clinician review queue used through Chromium: answers sampled from the seeded database are
rated by a reviewer on the page; the agreement figures appear, and a jury that disagrees with the
reviewer raises its alert. The review page screenshot becomes the documentation's picture."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import open_alerts
from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.plan.model import load_plan
from tests.dashboards.browser import CHROMIUM, CHROMIUM_ARGS, dark_pixels, served_dashboard, settle
from tests.dashboards.seed import Seeded

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed"),
]

REVIEWER = "dr.ana@hospital.example"


def _with_oversight(seeded: Seeded) -> None:
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["tasks"][0]["human_review_required"] = True
    data["oversight"] = {
        "reviewers": [{"name": "Dr. Ana", "email": REVIEWER, "tasks": ["knowledge-qa"]}],
        "review": {"rate": 1.0, "weekly_quota": 10, "double_rate": 0.0},
        "agreement": {"min_items": 5, "min_icc": 0.3},
    }
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_without_sign_in_a_browser_gets_no_review_queue_and_cannot_rate(
    seeded: Seeded, seeded_engine: Engine, tmp_path: Path
) -> None:
    """The review's attack through Chromium: an unauthenticated dashboard used to let anyone pick a
    named reviewer and rate (and open a safety event). Ratings are now recorded under a verified
    sign-in only (the signed-in flow is covered by tests/dashboards/test_read_only_writes.py)."""
    from playwright.sync_api import expect, sync_playwright

    _with_oversight(seeded)
    plan = load_plan(seeded.plan_path)
    with session_scope(seeded_engine) as s:
        oversight_pass(s, plan, datetime.now(UTC))  # the service's pass queues this week's sample
    shot = tmp_path / "review-read-only.png"
    with (
        served_dashboard(seeded.plan_path, seeded.db_url, tmp_path / "streamlit.log") as dashboard,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"{dashboard.url}/review")
            settle(page)
            expect(page.get_by_text("Ratings are recorded under a verified sign-in only").first).to_be_visible(
                timeout=30_000
            )
            assert page.get_by_role("button", name="Submit rating").count() == 0
            assert page.get_by_text(re.compile(r"^Answer #\d+")).count() == 0
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert dark_pixels(shot) > 500, f"{shot.name} is blank"
    with Session(seeded_engine) as s:
        assert list_events(s, kind=AuditKind.clinician_review) == []
        assert [a for a in open_alerts(s) if a.rule == "jury_not_validated"] == []
