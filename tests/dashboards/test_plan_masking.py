"""The dashboard and the committee report show one plan text, masked the same way: route URLs,
the secrets the plan refers to and credentials, by the one function both use."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.model import load_plan
from medmon.monitor.storage import make_engine
from medmon.scrub import secret_filter
from tests.dashboards.conftest import AUTH_SECRETS
from tests.dashboards.seed import DEAD_ROUTE_URL, Seeded

# As if the API key had been pasted into the plan (the use case's name holds it here).
PASTED_KEY = "knowledge assistant"


def test_the_dashboard_and_the_committee_report_show_the_same_masked_plan(
    seeded: Seeded, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", PASTED_KEY)
    on_dashboard = open_page("governance").get("code")[0].value
    plan = load_plan(seeded.plan_path)
    engine = make_engine(seeded.db_url)
    try:
        with Session(engine) as session:
            report = build_committee_report(
                session,
                plan,
                parse_period(f"{seeded.start:%Y-%m}"),
                now=seeded.start + timedelta(days=20),
                plan_text=seeded.plan_path.read_text(),
            )
    finally:
        engine.dispose()
    page = render_committee(report)
    [printed] = re.findall(r'<pre id="plan-text">(.*?)</pre>', page, flags=re.S)
    on_paper = html.unescape(printed)
    assert on_paper.rstrip("\n") == on_dashboard.rstrip("\n")  # st.code drops the final newline
    assert "•••• (masked)" in on_paper and DEAD_ROUTE_URL not in on_paper  # a route URL can be the credential
    assert PASTED_KEY not in on_paper and "Medication ***" in on_paper  # the configured secret, blanked
    assert "min_score: 0.7" in on_paper  # the rest is the plan as recorded


def test_the_dashboard_process_masks_plan_and_sign_in_secrets_in_its_log_lines(
    seeded: Seeded, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The dashboard runs in Streamlit's process, not medmon's CLI: its entry point installs the filter."""
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-dash-0123456789")
    open_page(
        "overview",
        secrets=AUTH_SECRETS | {"auth": AUTH_SECRETS["auth"] | {"cookie_secret": "cookie-secret-4567"}},
        user={"is_logged_in": True, "email": "owner@hospital.example", "email_verified": True},
    )
    with caplog.at_level(logging.WARNING):
        logging.getLogger("medmon.dashboards").warning(
            "refused %s with %s (cookie %s)", "sk-dash-0123456789", "test-secret", "cookie-secret-4567"
        )
    assert caplog.text.count("***") == 3 and "refused *** with *** (cookie ***)" in caplog.text
    for secret in ("sk-dash-0123456789", "test-secret", "cookie-secret-4567"):
        assert secret not in caplog.text
    streamlit_handlers = [h for h in logging.getLogger("streamlit").handlers]
    assert all(secret_filter() in h.filters for h in streamlit_handlers)
