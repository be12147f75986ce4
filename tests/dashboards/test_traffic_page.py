"""The Production traffic page shows what came in, from the rollups, per task and model."""

from __future__ import annotations

import random
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from medmon.db import utcnow
from medmon.monitor.storage import make_engine
from tests.conftest import plan_dict
from tests.dashboards.browser import CHROMIUM, CHROMIUM_ARGS, dark_pixels, save_for_docs, served_dashboard, settle
from tests.dashboards.conftest import APP
from tests.dashboards.test_pages import frame
from tests.monitor.test_traffic_streams import _calls, _pass, _store
from tests.monitor.traffic_helpers import traffic_plan


def _traffic(tmp_path: Path, db_url: str) -> tuple[Path, list]:  # type: ignore[type-arg]
    """Thirty hours of a task's calls (5% failing) and 40 calls no route matches, rolled up."""
    plan = traffic_plan(db_url, reference_window="1h", daily_budget_usd=5.0)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan.model_dump(mode="json", exclude_none=True)))
    engine = make_engine(db_url)
    start = utcnow() - timedelta(hours=30)
    rng = random.Random(4)
    calls = _calls(rng, 3000, start, per_hour=100, error_share=0.05)
    stray = _calls(rng, 40, start, per_hour=100)
    for c in stray:
        c.service = "billing-app"
    _store(engine, plan, calls + stray, start)
    _pass(engine, plan, utcnow())
    engine.dispose()
    return path, calls


def test_traffic_page_shows_calls_spend_latency_and_unmatched(tmp_path: Path, db_url: str, monkeypatch) -> None:
    path, calls = _traffic(tmp_path, db_url)
    monkeypatch.setenv("MEDMON_PLAN", str(path))
    monkeypatch.setenv("MEDMON_DATABASE_URL", db_url)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/traffic.py").run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Calls"] == "3,000" and metrics["Unmatched calls"] == "40"
    assert metrics["Errors"] == f"{sum(1 for c in calls if c.error_type) / 3000:.1%}"
    table = frame(at, "p95 (s)")
    row = table[table.task == "discharge"].iloc[0]
    assert row.calls == 3000 and 1.7 < row["p95 (s)"] <= 2.0  # latencies drawn uniformly from 0.5-2 s
    assert "(unmatched)" in set(table.task)
    assert len(at.get("plotly_chart")) == 6


@pytest.mark.browser
@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed")
def test_traffic_page_in_chromium_for_the_documentation(tmp_path: Path, db_url: str) -> None:
    from playwright.sync_api import sync_playwright

    path, _ = _traffic(tmp_path, db_url)
    shot = tmp_path / "traffic.png"
    with served_dashboard(path, db_url, tmp_path / "streamlit.log", refresh="1h") as dashboard, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{dashboard.url}/traffic")
            settle(page, timeout_ms=90_000)  # six charts: slow to settle on a loaded machine
            page.get_by_text("Spend per day").first.wait_for()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert dark_pixels(shot) > 500
    save_for_docs(shot, "traffic.png")


def test_traffic_page_explains_a_plan_without_traffic(tmp_path: Path, db_url: str, monkeypatch) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url})))
    make_engine(db_url).dispose()
    monkeypatch.setenv("MEDMON_PLAN", str(path))
    monkeypatch.setenv("MEDMON_DATABASE_URL", db_url)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/traffic.py").run()
    assert not at.exception
    assert "no `traffic` section" in at.info[0].value
