"""Alembic environment for medmon: one SQLModel metadata, batch mode on SQLite.

The database comes from, in order: a connection handed over by ``medmon.monitor.storage.migrate``
(``config.attributes["connection"]``), ``-x url=...``, ``MEDMON_DATABASE_URL``, the ini file.
APScheduler's job table is created by APScheduler itself and left alone here.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

from medmon.db import resolve_url
from medmon.monitor.storage import import_all_models

import_all_models()
config = context.config
target_metadata = SQLModel.metadata
IGNORED_TABLES = {"apscheduler_jobs"}


def include_object(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]  # Alembic hook; not type-checked (excluded)
    return not (type_ == "table" and name in IGNORED_TABLES)


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    url = url or resolve_url()
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url


def _configure(connection) -> None:  # type: ignore[no-untyped-def]  # Alembic hook; not type-checked (excluded)
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=include_object,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_offline() -> None:
    url = _url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        include_object=include_object,
        render_as_batch=url.startswith("sqlite"),
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _configure(given)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config({"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
