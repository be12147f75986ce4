"""The overview and task pages tell a committee member the task's status with every reason, most
serious first, in sentences; a task never probed has no data yet, never a green status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.alerts import Severity, Subject, record_signals
from medmon.alerts.rules import Rule
from medmon.monitor.models import DetectorState, StreamStatus
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from tests.conftest import plan_dict

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")
NOW = datetime(2026, 12, 3, 14, 0, tzinfo=UTC)
SUBJECT = Subject(deployment="production", task="knowledge-qa", severity=Severity.critical)


def _plan(tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url})))
    monkeypatch.setenv("MEDMON_PLAN", str(plan_path))
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)


def _state(task: str, metric: str, direction: str, status: StreamStatus) -> DetectorState:
    return DetectorState(
        key=f"{task}:{metric}:{direction}",
        task_id=task,
        metric=metric,
        direction=direction,
        status=status,
        null_mean=0.8,
        baseline_mean=0.85,
        threshold=1e6,
    )


def _answers(session: Session, task: str, correct: int, n: int = 200) -> None:
    run = ProbeRun(
        task_id=task, status=RunStatus.complete, started_at=NOW - timedelta(hours=1), finished_at=NOW, n_canaries=n
    )
    session.add(run)
    session.flush()
    assert run.id is not None
    for i in range(n):
        session.add(
            ProbeResult(run_id=run.id, task_id=task, canary_id=f"c{i}", score=float(i < correct), created_at=NOW)
        )


def test_overview_shows_degraded_task_and_its_incident(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan(tmp_path, db_url, monkeypatch)
    engine = make_engine(db_url)
    with Session(engine) as s:
        s.add(_state("knowledge-qa", "score", "drop", StreamStatus.degraded))
        record_signals(
            s,
            [
                SUBJECT.signal(
                    Rule.drift_drop, "score", firing=True, summary="knowledge-qa: score dropped below its baseline"
                )
            ],
            NOW,
        )
        s.commit()
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert "1 task(s) degraded: knowledge-qa" in at.error[0].value
    assert list(at.dataframe[0].proto.column_order) == [  # drawn; every other column on demand
        "task",
        "status",
        "score now",
        "95% CI",
        "minimum in force",
        "baseline",
    ]
    table = at.dataframe[0].value  # every column, the ticked rows written out in full under the table
    assert table["why"][0] == "A drift detector found the score below its go-live reference"
    assert list(table["task"]) == ["knowledge-qa"]
    assert list(table["status"]) == ["degraded"]
    assert table["category"][0] == "Clinical Decision Support"
    assert table["open incidents"][0] == 1
    incidents = at.dataframe[1].value
    assert list(incidents["incident"]) == ["#1 knowledge-qa: accuracy"]
    assert list(incidents["signals"]) == [1]  # the signals' summaries are on the Alerts page
    assert list(incidents["severity"]) == ["critical"]


def test_the_accuracy_breach_leads_even_when_a_new_segment_alarms_on_cost_and_length(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a model swap restarts the detectors, only cost and verbosity have alarmed in the new
    segment; the score (0.63, its interval under the approved 0.70) must still lead the reasons."""
    _plan(tmp_path, db_url, monkeypatch)
    engine = make_engine(db_url)
    with Session(engine) as s:
        for metric, status in (
            ("cost", StreamStatus.degraded),
            ("verbosity", StreamStatus.degraded),
            ("score", StreamStatus.watching),
            ("score_paired", StreamStatus.watching),
        ):
            s.add(_state("knowledge-qa", metric, "rise" if metric in ("cost", "verbosity") else "drop", status))
        _answers(s, "knowledge-qa", correct=126)  # 0.63 over 200 answers: 95% CI 0.56 to 0.69
        record_signals(
            s,
            [
                SUBJECT.signal(
                    Rule.below_minimum,
                    "score",
                    firing=True,
                    summary="knowledge-qa: recent score 0.630 is below the approved minimum",
                ),
                SUBJECT.signal(
                    Rule.model_change,
                    "served_model",
                    firing=True,
                    summary="knowledge-qa: served model changed from v1 to v2",
                ),
            ],
            NOW,
        )
        s.commit()
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    why = at.dataframe[0].value["why"][0].split("; ")
    assert why[0].startswith("Score 0.63 (0.56-0.69) is below the minimum in force 0.70 since 2026-12-03 14:00 UTC")
    assert why[1] == "Served model changed from v1 to v2 since 2026-12-03 14:00 UTC"
    assert why[2:] == [
        "Answers grew longer than every reference answer more often than at go-live",
        "More calls cost over the budget of $0.002 than at go-live",
    ]
    at.switch_page("views/task.py").run()
    assert not at.exception
    lead = at.error[0].value
    assert lead.startswith("**knowledge-qa: degraded**")
    assert lead.index("below the minimum in force") < lead.index("cost over the budget")
    assert "What to do" in [h.value for h in at.subheader]


def test_a_task_never_probed_has_no_data_yet_not_ok(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan(tmp_path, db_url, monkeypatch)
    make_engine(db_url).dispose()
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert not at.success  # nothing green on an empty database
    table = at.dataframe[0].value
    assert list(table["status"]) == ["no data yet"]
    assert set(table["why"]) == {"No probe has run for this task yet"}


def test_category_detectors_read_as_sentences_not_e_values(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan(tmp_path, db_url, monkeypatch)
    engine = make_engine(db_url)
    with Session(engine) as s:
        for slug, status, evidence in (
            ("clinical-decision-support", StreamStatus.degraded, 2.0),
            ("patient-communication", StreamStatus.watching, 100.0),
        ):
            s.add(
                DetectorState(
                    key=f"category:{slug}:pooled_score:drop",
                    task_id=f"category:{slug}",
                    metric="pooled_score",
                    direction="drop",
                    status=status,
                    null_mean=0.8,
                    baseline_mean=0.85,
                    evidence=evidence,
                    threshold=1e4,
                    n=290,
                )
            )
        s.commit()
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "what it means" in d.value.columns)
    assert "evidence" not in table.columns and "alarm threshold" not in table.columns
    assert list(table["status"]) == ["degraded", "watching"]
    assert table["what it means"][0] == "The tasks of this category together score below their go-live reference"
    assert table["what it means"][1].startswith("Evidence of a drop shared by its tasks is building (half way")
    assert list(table["answers"]) == [290, 290]
