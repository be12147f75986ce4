"""Alembic migrations: ``upgrade head`` on an empty database gives exactly the models' schema."""

from __future__ import annotations


import pytest
from sqlalchemy import inspect, text
from sqlmodel import SQLModel
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import StorageError
from medmon.monitor.storage.migrate import current_revision, ensure_current, head_revision, schema_diff, upgrade
from medmon.monitor.storage import import_all_models, make_engine


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
    engine = make_engine(db_url)  # tables from create_all, no alembic_version
    with engine.connect() as connection:
        assert current_revision(connection) is None
    assert ensure_current(engine) == head_revision()
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
    engine.dispose()


def test_an_older_schema_is_refused_with_the_command_to_run(db_url: str) -> None:
    engine = make_engine(db_url)
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
