"""The clinician-scale section through Chromium at 1,024 and 1,400 px: the Jury and Clinician review pages served
for real (``medmon dashboard``'s command) on a database the oversight pass filled, one sentence per rubric
criterion, the section's table in view and no page wider than the window."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine

from medmon.dashboards.auth import LOCAL_ACTIONS_ENV
from tests.conftest import plan_dict
from tests.dashboards.browser import CHROMIUM, CHROMIUM_ARGS, dark_pixels, served_dashboard, settle
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT
from tests.monitor.test_clinician_scale import _fooled, _plan

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed"),
]


def test_the_clinician_scale_section_reads_per_criterion_at_1024_and_1400_px(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect, sync_playwright

    plan = _plan()
    _fooled(engine, plan)
    data = plan_dict(oversight={**OVERSIGHT, "review": plan.oversight.review.model_dump(mode="json")})
    data["tasks"][0] |= {"human_review_required": True}
    path = tmp_path / "medmon.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(LOCAL_ACTIONS_ENV, "1")  # the reviewer's page as the local user sees it
    shots: list[Path] = []
    with served_dashboard(path, db_url, tmp_path / "streamlit.log") as dashboard, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width in (1024, 1400):
                page = browser.new_page(viewport={"width": width, "height": 1000})
                for view in ("jury", "review"):
                    page.goto(f"{dashboard.url}/{view}")
                    settle(page)
                    heading = page.get_by_role("heading", name="On the clinician scale")
                    expect(heading).to_be_visible(timeout=30_000)
                    for criterion in CRITERIA:
                        sentence = page.get_by_text(f"knowledge-qa · {criterion}: clinician scale")
                        expect(sentence.first).to_be_visible()
                    page.get_by_text("One row per criterion of the jury's rubric").scroll_into_view_if_needed()
                    wide = page.evaluate("() => document.documentElement.scrollWidth")
                    assert wide <= width, f"the {view} page is {wide} px wide in a {width} px window"
                    shot = tmp_path / f"{view}-{width}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    shots.append(shot)
                page.close()
        finally:
            browser.close()
    for shot in shots:
        assert dark_pixels(shot) > 500, f"{shot.name} is blank"
