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
from medmon.probes.models import ProbeResult
from tests.dashboards.browser import CHROMIUM, CHROMIUM_ARGS, dark_pixels, save_for_docs, served_dashboard, settle
from tests.dashboards.seed import Seeded

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed"),
]

REVIEWER = "dr.ana@hospital.example"
CRITERIA = ("accuracy", "completeness", "clarity")


def _with_oversight(seeded: Seeded) -> None:
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["tasks"][0]["human_review_required"] = True
    data["oversight"] = {
        "reviewers": [{"name": "Dr. Ana", "email": REVIEWER, "tasks": ["knowledge-qa"]}],
        "review": {"rate": 1.0, "weekly_quota": 10, "double_rate": 0.0},
        "agreement": {"min_items": 5, "min_icc": 0.3},
    }
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_reviewer_rates_sampled_answers_and_a_disagreeing_jury_raises_its_alert(
    seeded: Seeded, seeded_engine: Engine, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    _with_oversight(seeded)
    plan = load_plan(seeded.plan_path)
    with session_scope(seeded_engine) as s:
        oversight_pass(s, plan, datetime.now(UTC))  # the service's pass queues this week's sample
    shot, card_shot = tmp_path / "review.png", tmp_path / "review-card.png"
    rated: dict[int, float | None] = {}
    with (
        served_dashboard(seeded.plan_path, seeded.db_url, tmp_path / "streamlit.log") as dashboard,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"{dashboard.url}/review")
            settle(page)
            expect(page.get_by_text("Answer #").first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(card_shot), full_page=True)
            while page.get_by_text(re.compile(r"^Answer #\d+ · knowledge-qa$")).count():
                heading = page.get_by_text(re.compile(r"^Answer #\d+ · knowledge-qa$")).inner_text()
                result_id = int(re.search(r"#(\d+)", heading).group(1))  # type: ignore[union-attr]
                with Session(seeded_engine) as s:
                    answer = s.get(ProbeResult, result_id)
                    assert answer is not None
                    jury = answer.jury_mean
                # The reviewer disagrees with the jury: what the jury rated well, they rate poorly.
                score = 3 if jury is None else (1 if jury >= 3.5 else 5)
                for criterion in CRITERIA:
                    group = page.locator('[data-testid="stRadio"]').filter(has_text=criterion)
                    group.get_by_text(str(score), exact=True).click()
                page.get_by_role("button", name="Submit rating").click()
                expect(page.get_by_text(f"Rating of answer #{result_id} recorded.")).to_be_visible(timeout=30_000)
                settle(page)
                rated[result_id] = jury
                assert len(rated) <= 10, "the queue holds more than the weekly quota"
            expect(page.get_by_text("Your queue is empty")).to_be_visible()
            with session_scope(seeded_engine) as s:
                oversight_pass(s, plan, datetime.now(UTC))  # the next pass computes agreement
            page.reload()
            settle(page)
            expect(page.get_by_text("jury_icc").first).to_be_visible(timeout=30_000)
            expect(page.get_by_text("MedHELM, for comparison: jury-clinician ICC 0.47")).to_be_visible()
            page.screenshot(path=str(shot), full_page=True)
            page.goto(f"{dashboard.url}/jury")  # the Jury page shows the same streams beside MedHELM's figures
            settle(page)
            expect(page.get_by_text("Against clinicians")).to_be_visible(timeout=30_000)
            expect(page.get_by_text("jury_icc").first).to_be_visible()
            page.screenshot(path=str(tmp_path / "jury.png"), full_page=True)
        finally:
            browser.close()
    for picture in (card_shot, shot, tmp_path / "jury.png"):
        assert dark_pixels(picture) > 500, f"{picture.name} is blank"
        if picture.name != "jury.png":
            save_for_docs(picture, picture.name)
    judged = [r for r, j in rated.items() if j is not None]
    assert len(rated) == 10 and len(judged) >= 5
    with Session(seeded_engine) as s:
        reviews = list_events(s, kind=AuditKind.clinician_review)
        alerts = [a for a in open_alerts(s) if a.rule == "jury_not_validated"]
    assert len(reviews) == 10 and all(e.actor.endswith(f"as {REVIEWER}") for e in reviews)
    assert [a.labels["metric"] for a in alerts] == ["jury_icc:accuracy"]
    assert alerts[0].evidence["ci_high"] < 0.3 and alerts[0].evidence["n"] == len(judged)
