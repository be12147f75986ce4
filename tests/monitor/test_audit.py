"""The audit log: hash-chained, append-only; tampering with the table is found and located."""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from medmon.db import session_scope
from medmon.monitor.cli.app import app
from medmon.monitor.governance.audit import (
    GENESIS,
    AuditKind,
    entry_hash,
    list_events,
    record,
    record_baseline_import,
    record_plan,
    verify,
)
from medmon.monitor.models import AuditEvent, AuditHead
from tests.conftest import plan_dict

runner = CliRunner()
T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


def _fill(engine: Engine, count: int = 5) -> None:
    with session_scope(engine) as session:
        for i in range(count):
            record(
                session,
                AuditKind.alert_acknowledged,
                f"owner{i}@hospital.example",
                f"alert:{i + 1}",
                {"note": f"looking into it ({i})", "weight": 0.5 + i},
                T0 + timedelta(minutes=i),
            )


def _verify(engine: Engine, expect: tuple[int, str] | None = None):  # type: ignore[no-untyped-def]
    with Session(engine) as session:
        return verify(session, expect)


def test_entries_chain_to_each_other_and_verify(engine: Engine) -> None:
    _fill(engine)
    with Session(engine) as session:
        rows = session.exec(select(AuditEvent).order_by(col(AuditEvent.seq))).all()
        head = session.get(AuditHead, 1)
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0].prev_hash == GENESIS
    assert all(b.prev_hash == a.hash for a, b in zip(rows, rows[1:]))
    assert rows[2].hash == entry_hash(
        3,
        T0 + timedelta(minutes=2),
        "alert_acknowledged",
        "owner2@hospital.example",
        "alert:3",
        {"note": "looking into it (2)", "weight": 2.5},
        rows[1].hash,
    )
    assert head is not None and (head.seq, head.hash) == (5, rows[-1].hash)
    report = _verify(engine)
    assert report.ok and report.entries == 5 and report.head_seq == 5


def _recompute(conn, seq: int) -> None:  # type: ignore[no-untyped-def]
    """What a careful forger does: rewrite an edited entry's own hash (the next link still breaks)."""
    row = conn.execute(
        text("SELECT seq, at, kind, actor, subject, details, prev_hash FROM auditevent WHERE seq = :s"), {"s": seq}
    ).one()
    details = row.details if isinstance(row.details, dict) else json.loads(row.details)
    at = row.at if isinstance(row.at, datetime) else datetime.fromisoformat(row.at)
    digest = entry_hash(row.seq, at, row.kind, row.actor, row.subject, details, row.prev_hash)
    conn.execute(text("UPDATE auditevent SET hash = :h WHERE seq = :s"), {"h": digest, "s": seq})


TAMPERING = {
    # case: (raw SQL statements, seq named in a problem (None: the log's tail), words in that problem)
    "update-details": (
        ['UPDATE auditevent SET details = \'{"note": "nothing to see", "weight": 2.5}\' WHERE seq = 3'],
        3,
        "edited after it was written",
    ),
    "update-actor": (["UPDATE auditevent SET actor = 'mallory@hospital.example' WHERE seq = 2"], 2, "edited"),
    "update-time": (["UPDATE auditevent SET at = '2026-10-01 08:00:00' WHERE seq = 4"], 4, "edited"),
    "update-kind": (["UPDATE auditevent SET kind = 'alert_resolved' WHERE seq = 4"], 4, "kind 'alert_resolved'"),
    "delete-middle": (["DELETE FROM auditevent WHERE seq = 3"], 4, "entry seq 3 is missing (deleted)"),
    "delete-two": (["DELETE FROM auditevent WHERE seq IN (2, 3)"], 4, "entries seq 2-3 are missing"),
    "delete-newest": (["DELETE FROM auditevent WHERE seq = 5"], None, "ends at seq 4 but its head records seq 5"),
    "reorder": (
        [
            "UPDATE auditevent SET seq = 100 WHERE seq = 2",
            "UPDATE auditevent SET seq = 2 WHERE seq = 3",
            "UPDATE auditevent SET seq = 3 WHERE seq = 100",
        ],
        2,
        "link broken",
    ),
    "insert-forged": (
        [
            "INSERT INTO auditevent (seq, at, kind, actor, subject, details, prev_hash, hash) "
            "SELECT 6, at, 'baseline_approved', 'mallory@hospital.example', 'task:qa', '{}', hash, "
            "'0000000000000000000000000000000000000000000000000000000000000000' "
            "FROM auditevent WHERE seq = 5"
        ],
        6,
        "edited after it was written",
    ),
    "edit-and-rehash": (
        ["UPDATE auditevent SET actor = 'mallory@hospital.example' WHERE seq = 3", _recompute],
        4,
        "link broken",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_tampering_with_the_table_is_found_where_it_happened(engine: Engine, case: str) -> None:
    statements, seq, words = TAMPERING[case]
    _fill(engine)
    assert _verify(engine).ok
    with engine.begin() as conn:
        for statement in statements:
            if callable(statement):
                statement(conn, 3)
            else:
                conn.execute(text(statement))
    report = _verify(engine)
    assert not report.ok
    located = [p for p in report.problems if p.seq == seq and words in p.what]
    assert located, [str(p) for p in report.problems]


def test_cli_verify_exits_1_and_names_the_entry(engine: Engine, db_url: str) -> None:
    _fill(engine)
    ok = runner.invoke(app, ["audit", "verify", "--db", db_url])
    assert ok.exit_code == 0, ok.output
    assert "5 entries verify" in ok.output
    with engine.begin() as conn:
        conn.execute(text('UPDATE auditevent SET details = \'{"note": "changed"}\' WHERE seq = 2'))
    bad = runner.invoke(app, ["audit", "verify", "--db", db_url])
    assert bad.exit_code == 1
    assert "TAMPERED" in bad.output and "entry seq 2" in bad.output and "edited" in bad.output
    as_json = runner.invoke(app, ["audit", "verify", "--db", db_url, "--json"])
    data = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and data["ok"] is False and data["problems"][0]["seq"] == 2


def test_an_anchor_catches_a_rewrite_of_the_whole_chain(engine: Engine, db_url: str) -> None:
    _fill(engine)
    anchor = _verify(engine)
    # Rewrite entry 2 and every hash after it, head included: the chain alone verifies again.
    with engine.begin() as conn:
        conn.execute(text("UPDATE auditevent SET actor = 'mallory@hospital.example' WHERE seq = 2"))
        prev = conn.execute(text("SELECT hash FROM auditevent WHERE seq = 1")).scalar_one()
        for seq in range(2, 6):
            conn.execute(text("UPDATE auditevent SET prev_hash = :p WHERE seq = :s"), {"p": prev, "s": seq})
            _recompute(conn, seq)
            prev = conn.execute(text("SELECT hash FROM auditevent WHERE seq = :s"), {"s": seq}).scalar_one()
        conn.execute(text("UPDATE audithead SET hash = :h"), {"h": prev})
    assert _verify(engine).ok
    rewritten = _verify(engine, (anchor.head_seq, anchor.head_hash))
    assert not rewritten.ok and "the chain was rewritten" in rewritten.problems[0].what
    result = runner.invoke(app, ["audit", "verify", "--db", db_url, "--expect", f"5:{anchor.head_hash}"])
    assert result.exit_code == 1 and "entry seq 5" in result.output


def test_two_writers_never_fork_the_chain(engine: Engine) -> None:
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(25):
                with session_scope(engine) as session:
                    record(
                        session,
                        "alert_resolved",
                        f"{name}@hospital.example",
                        f"alert:{i}",
                        {"i": i},
                        T0 + timedelta(seconds=i),
                    )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    report = _verify(engine)
    assert report.ok and report.entries == 50
    with Session(engine) as session:
        actors = [e.actor[0] for e in list_events(session)]
    assert actors.count("a") == 25 and actors.count("b") == 25


def test_record_refuses_unknown_kinds_and_anonymous_actors(engine: Engine) -> None:
    with session_scope(engine) as session:
        with pytest.raises(ValueError, match="unknown audit kind 'coffee_break'.*alert_acknowledged"):
            record(session, "coffee_break", "a@b.example", "x", {}, T0)
        with pytest.raises(ValueError, match="needs an actor"):
            record(session, AuditKind.plan_change, "  ", "x", {}, T0)


def test_a_rolled_back_decision_leaves_no_entry(engine: Engine) -> None:
    with pytest.raises(RuntimeError):
        with session_scope(engine) as session:
            record(session, AuditKind.alert_silenced, "owner@hospital.example", "alert:1", {"reason": "x"}, T0)
            raise RuntimeError("the silence itself failed")
    _fill(engine, 1)
    report = _verify(engine)
    assert report.ok and report.entries == 1


def test_plan_changes_are_recorded_as_diffs_with_threshold_changes(engine: Engine) -> None:
    first = yaml.safe_dump(plan_dict(), sort_keys=False)
    changed_data = plan_dict()
    changed_data["tasks"][0]["thresholds"]["min_score"] = 0.6
    changed = yaml.safe_dump(changed_data, sort_keys=False)
    with session_scope(engine) as session:
        initial = record_plan(session, first, "plan.yaml", "cmio@hospital.example", T0)
        again = record_plan(session, first, "plan.yaml", "cmio@hospital.example", T0 + timedelta(hours=1))
        later = record_plan(session, changed, "plan.yaml", "cmio@hospital.example", T0 + timedelta(days=1))
    assert [e.kind for e in initial] == ["plan_change"] and initial[0].details["initial"] is True
    assert again == []
    assert [e.kind for e in later] == ["plan_change", "threshold_change"]
    diff = later[0].details["diff"]
    assert "-    min_score: 0.7\n" in diff and "+    min_score: 0.6\n" in diff
    assert later[0].details["sha256"] == hashlib.sha256(changed.encode()).hexdigest()
    assert {"task": "knowledge-qa", "threshold": "min_score", "old": 0.7, "new": 0.6}.items() <= later[
        1
    ].details.items()
    assert later[1].subject == "task:knowledge-qa"
    assert _verify(engine).ok


def test_medmon_check_records_a_changed_plan_with_who_ran_it(tmp_path: Path, engine: Engine, db_url: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url}), sort_keys=False))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # unchanged: nothing new
    data = plan_dict(storage={"url": db_url})
    data["tasks"][0]["thresholds"]["tolerated_drop"] = 0.1
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    with Session(engine) as session:
        kinds = [(e.kind, e.actor) for e in list_events(session)]
    assert [k for k, _ in kinds] == ["plan_change", "plan_change", "threshold_change"]
    assert all(actor.endswith("via medmon check") for _, actor in kinds)
    listed = runner.invoke(app, ["audit", "list", "--db", db_url, "--kind", "threshold_change", "--json"])
    rows = json.loads(listed.stdout)
    assert listed.exit_code == 0 and len(rows) == 1
    assert rows[0]["details"]["old"] is None and rows[0]["details"]["new"] == 0.1


def test_check_never_creates_a_database(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    db = tmp_path / "absent.db"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": f"sqlite:///{db}"})))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    assert not db.exists()


def test_baseline_imports_are_audited(tmp_path: Path, engine: Engine, db_url: str) -> None:
    scores = tmp_path / "published.csv"
    scores.write_text(
        "model,benchmark,metric,value,n,source\n"
        "openai/gpt-4o-2024-05-13,med_qa,exact_match,0.87,1273,MedHELM leaderboard\n"
    )
    first = runner.invoke(app, ["baseline", "import", str(scores), "--db", db_url])
    assert first.exit_code == 0, first.output
    assert runner.invoke(app, ["baseline", "import", str(scores), "--db", db_url]).exit_code == 0  # no new evidence
    with Session(engine) as session:
        events = list_events(session, kind=AuditKind.baseline_import)
    assert len(events) == 1
    assert events[0].details["created"] == 1 and events[0].details["baselines"][0]["benchmark"] == "med_qa"
    assert events[0].actor.endswith("via medmon baseline import")


def test_a_noop_import_report_is_not_audited(engine: Engine) -> None:
    with session_scope(engine) as session:
        assert record_baseline_import(session, {"source": "x.csv", "baselines": [{"created": False}]}, "a", T0) is None


def test_cli_verify_on_a_missing_database_is_an_input_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", "verify", "--db", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == 2 and "no database" in result.output


def test_details_with_times_and_enums_are_stored_as_hashed(engine: Engine) -> None:
    until = T0 + timedelta(days=2)
    with session_scope(engine) as session:
        event = record(
            session,
            AuditKind.alert_silenced,
            "owner@hospital.example",
            "alert:1",
            {"until": until, "kind": AuditKind.alert_silenced, "tasks": ("a", "b")},
            T0,
        )
    assert event.details == {"until": "2026-11-03T08:00:00.000000+00:00", "kind": "alert_silenced", "tasks": ["a", "b"]}
    assert _verify(engine).ok
    with session_scope(engine) as session:
        with pytest.raises(TypeError, match="audit details must be JSON data; got object"):
            record(session, AuditKind.alert_silenced, "owner@hospital.example", "alert:1", {"x": object()}, T0)
