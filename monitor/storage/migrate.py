"""Schema migrations with Alembic: ``medmon db upgrade``, and the check the service runs first.

Databases made before migrations existed (tables from ``create_all``, no ``alembic_version``) are
adopted: if their schema already matches the newest revision they are stamped with it, otherwise
with the first revision (the schema every such database has) and then upgraded.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlmodel import SQLModel

from medmon.monitor.errors import StorageError
from medmon.monitor.storage import import_all_models

MIGRATIONS = Path(__file__).resolve().parent / "migrations"  # shipped inside the package
INITIAL_REVISION = "0001"
IGNORED_TABLES = {"apscheduler_jobs", "alembic_version"}


def alembic_config() -> Config:
    """Alembic's configuration pointing at the migrations shipped in this package."""
    if not (MIGRATIONS / "env.py").is_file():
        raise StorageError(f"migrations folder not found at {MIGRATIONS}: the installation is incomplete")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@functools.cache
def _scripts() -> ScriptDirectory:
    """The shipped revisions, read once per process (stamping every new database rereads nothing)."""
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None
    return head


def stamp_created(engine: Engine) -> None:
    """Record the newest revision on a database whose tables ``create_all`` has just made.

    Those tables are exactly the newest revision's schema (``tests/monitor/test_migrations.py``
    holds the two equal), so ``medmon db current`` and ``db upgrade`` then know where it stands.
    Another process creating the same database at the same moment may win the race to stamp:
    that is fine as long as the database ends at the newest revision.
    """
    try:
        with engine.begin() as connection:
            context = MigrationContext.configure(connection)
            if context.get_current_revision() is None:
                context.stamp(_scripts(), "head")
    except SQLAlchemyError as exc:
        with engine.connect() as connection:
            if current_revision(connection) == head_revision():
                return
        raise StorageError(f"cannot record the schema revision at {engine.url.render_as_string()}: {exc}") from exc


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def schema_diff(connection: Connection) -> list[object]:
    """Differences between the database and the models (empty when they agree)."""
    import_all_models()

    def include(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
        return not (type_ == "table" and name in IGNORED_TABLES)

    ctx = MigrationContext.configure(connection, opts={"include_object": include, "compare_type": True})
    return list(compare_metadata(ctx, SQLModel.metadata))


@dataclass(frozen=True)
class UpgradeReport:
    before: str | None
    after: str
    adopted: bool  # an unversioned database was stamped first


def _run(engine: Engine, fn: str, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, fn)(config, revision)


def upgrade(engine: Engine, revision: str = "head") -> UpgradeReport:
    """Bring the database to ``revision`` (the newest by default), adopting an unversioned one."""
    try:
        return _upgrade(engine, revision)
    except OperationalError as exc:
        raise StorageError(f"cannot migrate {engine.url.render_as_string()}: {str(exc.orig).strip()}") from exc


def _upgrade(engine: Engine, revision: str) -> UpgradeReport:
    with engine.connect() as connection:
        before = current_revision(connection)
        tables = set(inspect(connection).get_table_names()) - IGNORED_TABLES
        diff = schema_diff(connection) if before is None and tables else []
    adopted = before is None and bool(tables)
    if adopted:
        _run(engine, "stamp", "head" if not diff else INITIAL_REVISION)
    _run(engine, "upgrade", revision)
    with engine.connect() as connection:
        after = current_revision(connection)
    assert after is not None
    return UpgradeReport(before, after, adopted)


def ensure_current(engine: Engine, *, stamp: bool = True) -> str:
    """Refuse to run on a schema older than this code; stamp a fresh ``create_all`` database.

    Returns the revision the database is (or, with ``stamp=False``, would be) at. Raises
    ``StorageError`` naming the command to run. Only one process should stamp (the service's
    leader): two stamping a fresh database at once would record the revision twice.
    """
    head = head_revision()
    with engine.connect() as connection:
        current = current_revision(connection)
        if current == head:
            return head
        if current is None:
            diff = schema_diff(connection)
            if diff:
                raise StorageError(
                    f"the database schema at {engine.url.render_as_string()} is older than this "
                    f"medmon ({len(diff)} difference(s), e.g. {diff[0]}): run 'medmon db upgrade'"
                )
        elif _scripts().get_revision(current) is None:
            raise StorageError(
                f"the database schema at {engine.url.render_as_string()} is at revision {current}, "
                "which this medmon does not know: a newer medmon upgraded it; upgrade medmon"
            )
        else:
            raise StorageError(
                f"the database schema at {engine.url.render_as_string()} is at revision {current}, "
                f"this medmon needs {head}: run 'medmon db upgrade'"
            )
    if stamp:
        _run(engine, "stamp", "head")
    return head
