"""The overview page renders a seeded database: tasks, status and open alerts."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.alerts import Severity, Signal, apply_signal
from medmon.monitor.models import DetectorState, StreamStatus
from medmon.monitor.storage import make_engine
from tests.conftest import plan_dict

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")


def test_overview_shows_degraded_task_and_alert(tmp_path: Path, db_url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url})))
    engine = make_engine(db_url)
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with Session(engine) as s:
        s.add(DetectorState(key="knowledge-qa:score:drop", task_id="knowledge-qa", metric="score", direction="drop",
                            status=StreamStatus.degraded, null_mean=0.8, baseline_mean=0.85, threshold=1e6))
        apply_signal(s, Signal(labels={"deployment": "production", "task": "knowledge-qa", "metric": "score",
                                       "rule": "drift_drop"}, firing=True, severity=Severity.critical,
                               summary="knowledge-qa: score dropped below its baseline"), [], now)
        s.commit()
    monkeypatch.setenv("MEDMON_PLAN", str(plan_path))
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert "1 task(s) degraded: knowledge-qa" in at.error[0].value
    table = at.dataframe[0].value
    assert table["why"][0] == "detector alarm: score (drop)"
    assert list(table["task"]) == ["knowledge-qa"]
    assert table["category"][0] == "Clinical Decision Support"
    assert table["open alerts"][0] == 1
    alerts = at.dataframe[1].value
    assert list(alerts["summary"]) == ["knowledge-qa: score dropped below its baseline"]
    assert list(alerts["severity"]) == ["critical"]
