"""The task page's output drift report: drifted columns, the full HTML to open or download."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.db import session_scope
from medmon.monitor.models import DriftReport
from medmon.monitor.read import drift_report_html, latest_drift_report_view
from tests.dashboards.seed import Seeded

AT = datetime(2026, 11, 20, 6, tzinfo=UTC)
HTML = "<html><body><h1>Data drift for knowledge-qa</h1></body></html>"
SUMMARY = {
    "output_tokens": {"method": "ks", "p_value": 2e-12, "threshold": 0.05, "drift": True},
    "latency_s": {"method": "ks", "p_value": 0.61, "threshold": 0.05, "drift": False},
    "score": {"method": "ks", "p_value": 0.003, "threshold": 0.05, "drift": True},
}


def store(engine: Engine, task_id: str, *, html: str = HTML, html_path: str = "", at: datetime = AT) -> int:
    """A report row as ``store_drift_report`` writes it (the rendering itself is tested elsewhere)."""
    with session_scope(engine) as s:
        row = DriftReport(
            task_id=task_id,
            created_at=at,
            reference_from=at - timedelta(days=20),
            reference_to=at - timedelta(days=10),
            current_from=at - timedelta(days=2),
            current_to=at,
            n_reference=200,
            n_current=200,
            columns=list(SUMMARY),
            drifted=["output_tokens", "score"],
            summary=SUMMARY,
            html=html,
            html_path=html_path,
            json_text="{}",
        )
        s.add(row)
        s.flush()
        assert row.id is not None
        return row.id


def downloads(at: AppTest) -> list[Any]:
    return list(at.get("download_button"))


def drift_table(at: AppTest) -> pd.DataFrame:
    (found,) = [df.value for df in at.dataframe if "drifted" in df.value.columns]
    return found


def test_task_page_shows_the_latest_report_columns_and_offers_its_html(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    store(seeded_engine, "knowledge-qa", at=AT - timedelta(days=1), html="<html>older</html>")
    newest = store(seeded_engine, "knowledge-qa")
    at = open_page("task")
    table = drift_table(at)
    assert list(table["column"]) == ["output_tokens", "latency_s", "score"]
    assert list(table["drifted"]) == [True, False, True]
    assert float(table["p-value"][1]) == 0.61
    assert any(w.value == "Drifted: output_tokens, score" for w in at.warning)
    assert any(f"Report {newest} of 2026-11-20 06:00 UTC" in c.value for c in at.caption)
    (button,) = downloads(at)
    assert button.proto.label == "Download the full report (HTML)"
    with Session(seeded_engine) as s:
        assert drift_report_html(s, newest) == HTML  # what the button hands over when clicked


def test_each_task_shows_its_own_report_or_how_to_make_one(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    store(seeded_engine, "knowledge-qa")
    at = open_page("task")
    at.selectbox(key="task").set_value("dose-calc").run()
    assert not at.exception
    assert any(
        "No drift report yet" in m.value and "medmon drift report PLAN --task dose-calc" in m.value for m in at.markdown
    )
    assert not downloads(at)


def test_report_written_to_a_file_is_offered_and_a_missing_file_is_said(
    seeded: Seeded, seeded_engine: Engine, tmp_path: Path, open_page: Callable[..., AppTest]
) -> None:
    path = tmp_path / "drift-knowledge-qa.html"
    path.write_text(HTML, "utf-8")
    store(seeded_engine, "knowledge-qa", html="", html_path=str(path))
    at = open_page("task")
    assert len(downloads(at)) == 1
    with Session(seeded_engine) as s:
        view = latest_drift_report_view(s, "knowledge-qa")
        assert view is not None and view.html_available and drift_report_html(s, view.id) == HTML
    path.unlink()
    at.run()
    assert not downloads(at)
    assert any("The report's HTML is missing" in m.value and str(path) in m.value for m in at.markdown)


def test_the_page_says_which_columns_were_not_compared_and_why(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    jumped = "constant within each window but changed between them: 1 → 401 (drift)"
    skipped = "not compared: no values in either window (a KS test needs 30 in each); the plan sets no price"
    summary = {
        **SUMMARY,
        "output_tokens": SUMMARY["output_tokens"] | {"note": jumped},
        "cost_usd": {"compared": False, "note": skipped},
    }
    with session_scope(seeded_engine) as s:
        s.add(
            DriftReport(
                task_id="knowledge-qa",
                created_at=AT,
                n_reference=200,
                n_current=200,
                columns=["output_tokens", "latency_s", "score"],
                drifted=["output_tokens", "score"],
                summary=summary,
                html=HTML,
                json_text="{}",
            )
        )
    with Session(seeded_engine) as s:
        view = latest_drift_report_view(s, "knowledge-qa")
    assert view is not None and view.not_compared == {"cost_usd": skipped}
    at = open_page("task")
    assert list(drift_table(at)["column"]) == ["output_tokens", "latency_s", "score"]
    captions = [c.value for c in at.caption]
    assert f"**output_tokens**: {jumped}" in captions and f"**cost_usd**: {skipped}" in captions
