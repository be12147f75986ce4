"""Alembic migrations: ``upgrade head`` on an empty database gives exactly the models' schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import inspect, text
from sqlmodel import SQLModel
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import StorageError
from medmon.monitor.storage import create_tables, import_all_models, make_engine
from medmon.monitor.storage.migrate import current_revision, ensure_current, head_revision, schema_diff, upgrade
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict


def test_upgrade_head_on_an_empty_database_matches_the_models(db_url: str) -> None:
    engine = make_engine(db_url, create=False)
    report = upgrade(engine)
    assert (report.before, report.after, report.adopted) == (None, head_revision(), False)
    with engine.connect() as connection:
        diff = schema_diff(connection)
        tables = set(inspect(connection).get_table_names())
    assert diff == [], f"migrations and models disagree; add a revision (migrations/README): {diff}"
    import_all_models()
    assert tables - {"alembic_version"} == set(SQLModel.metadata.tables), "create_all and the migrations differ"
    assert upgrade(engine).before == head_revision(), "a second upgrade is a no-op"
    engine.dispose()


def test_a_database_made_before_migrations_is_adopted(db_url: str) -> None:
    engine = make_engine(db_url, create=False)
    create_tables(engine, stamp=False)  # what medmon made before migrations: tables, no alembic_version
    with engine.connect() as connection:
        assert current_revision(connection) is None
    assert ensure_current(engine) == head_revision()
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
    engine.dispose()


def test_an_older_schema_is_refused_with_the_command_to_run(db_url: str) -> None:
    engine = make_engine(db_url, create=False)
    create_tables(engine, stamp=False)
    with engine.begin() as connection:  # an older medmon: a column this one needs is missing
        connection.execute(text("ALTER TABLE probeslot DROP COLUMN attempts"))
    with pytest.raises(StorageError, match="medmon db upgrade"):
        ensure_current(engine)
    engine.dispose()


def test_db_upgrade_and_current_commands(db_url: str) -> None:
    runner = CliRunner()
    before = runner.invoke(app, ["db", "current", "--url", db_url])
    assert before.exit_code == 1 and "current: none" in before.output
    result = runner.invoke(app, ["db", "upgrade", "--url", db_url])
    assert result.exit_code == 0, result.output
    assert f"none -> {head_revision()}" in result.output
    after = runner.invoke(app, ["db", "current", "--url", db_url])
    assert after.exit_code == 0 and f"current: {head_revision()}" in after.output


def test_a_database_medmon_creates_is_stamped_with_the_newest_revision(db_url: str) -> None:
    engine = make_engine(db_url)
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
        assert schema_diff(connection) == []
    make_engine(db_url).dispose()  # opening it again changes nothing
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    assert rows == [(head_revision(),)]
    engine.dispose()


def test_db_current_answers_on_a_database_probe_run_created(
    tmp_path: Path, db_url: str, serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.9)], seed=3))
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-local")
    data = plan_dict(storage={"url": db_url})
    data["deployment"]["base_url"] = f"{sim.url}/v1"
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(data))
    runner = CliRunner()
    probed = runner.invoke(app, ["probe", "run", str(plan), "--no-deliver", "--json"])
    assert probed.exit_code in (0, 1), probed.output  # 1: an alert fired; either way the run was stored
    assert json.loads(probed.stdout)["runs"][0]["results"] > 0
    current = runner.invoke(app, ["db", "current", str(plan)])
    assert current.exit_code == 0, current.output
    assert f"current: {head_revision()}  newest: {head_revision()}" in current.stdout


def test_processes_creating_one_database_at_once_leave_one_revision(db_url: str) -> None:
    """The service's leader, its standby and a worker may all start on a fresh database together."""
    from concurrent.futures import ThreadPoolExecutor

    def create(_: int) -> None:
        make_engine(db_url).dispose()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(create, range(4)))
    engine = make_engine(db_url, create=False)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        assert schema_diff(connection) == []
    assert rows == [(head_revision(),)]
    engine.dispose()
