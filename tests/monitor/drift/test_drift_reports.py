"""evidently drift report of output descriptors: reference window vs recent window, stored."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.db import session_scope
from medmon.monitor.detection.reports import store_drift_report
from medmon.monitor.models import DriftReport
from medmon.monitor.read.drift import latest_drift_report_view
from medmon.probes.models import ProbeResult, ProbeRun

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def seed(engine: Engine, runs: int, longer_from: int) -> None:
    rng = random.Random(1)
    with session_scope(engine) as s:
        for i in range(runs):
            run = ProbeRun(task_id="qa", started_at=T0 + timedelta(hours=i))
            s.add(run)
            s.flush()
            for _ in range(20):
                tokens = rng.randint(40, 60) * (4 if i >= longer_from else 1)
                s.add(
                    ProbeResult(
                        run_id=run.id,
                        task_id="qa",
                        canary_id=f"c{rng.randint(0, 39)}",
                        score=float(rng.random() < 0.8),
                        completion_tokens=tokens,
                        cost_usd=tokens * 15e-6,
                        latency_s=rng.uniform(0.5, 1.5),
                        created_at=T0 + timedelta(hours=i),
                    )
                )


@pytest.mark.slow
def test_report_flags_longer_outputs_and_is_stored_as_html_and_json(engine: Engine, tmp_path: Path) -> None:
    seed(engine, runs=30, longer_from=20)
    with session_scope(engine) as s:
        assert store_drift_report(s, "qa", T0, window=200) is not None
    with session_scope(engine) as s:
        file_row = store_drift_report(s, "qa", T0 + timedelta(days=1), window=200, reports_dir=tmp_path / "reports")
        assert file_row is not None and Path(file_row.html_path).read_text("utf-8").lstrip().startswith("<")
    with Session(engine) as s:
        row = latest_drift_report_view(s, "qa")
        first = s.get(DriftReport, 1)
    assert row is not None and row.id == file_row.id
    assert first is not None and "<html" in first.html.lower()
    assert set(first.drifted) == {"output_tokens", "cost_usd"}  # score and latency did not move
    assert first.summary["output_tokens"]["p_value"] < 0.05 < first.summary["latency_s"]["p_value"]
    assert first.n_reference == first.n_current == 200
    assert json.loads(first.json_text)["metrics"]


def test_no_report_until_two_windows_exist(engine: Engine) -> None:
    seed(engine, runs=5, longer_from=99)
    with session_scope(engine) as s:
        assert store_drift_report(s, "qa", T0, window=200, render=lambda a, b: pytest.fail("rendered")) is None
