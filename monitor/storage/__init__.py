"""Storage with every table: one SQLModel metadata over every package's ``models.py``.

The engine, sessions and time helpers live one layer down in ``medmon.db``, which table
modules import; this room registers those table modules, creates the tables, and migrates
them (``migrate``, with the Alembic scripts in ``migrations/``).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Table, inspect
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from sqlmodel.sql.expression import Select

from medmon.db import connect
from medmon.errors import StorageError

__all__ = ["create_tables", "import_all_models", "make_engine", "select_row", "table_of"]


def select_row(*columns: Any) -> Select[*tuple[Any, ...]]:
    """``sqlmodel.select`` of any number of columns: its typed overloads stop at four."""
    return Select(*columns)


def table_of(model: type[SQLModel]) -> Table:
    """A table model's ``Table`` (its ``__table__``, which SQLModel sets at run time without declaring it)."""
    table = inspect(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


def make_engine(url: str | None = None, *, create: bool = True) -> Engine:
    """Create an engine for ``url`` and, by default, every medmon table.

    Importing the table modules here keeps one metadata for the whole project while each
    package still owns its own ``models.py``.
    """
    engine = connect(url)
    if create:
        create_tables(engine)
    return engine


def create_tables(engine: Engine, *, stamp: bool = True) -> None:
    """Create every table that does not exist yet.

    A database created here from nothing is stamped with the newest migration, so every database
    medmon makes (the demo's, ``probe run``'s, the service's) answers ``medmon db current``.
    One that already held medmon's tables without a revision (made before migrations) is left
    for ``medmon db upgrade`` to adopt; ``stamp=False`` makes such a database on purpose.
    """
    from sqlalchemy import inspect

    import_all_models()
    try:
        existing = set(inspect(engine).get_table_names()) - {"apscheduler_jobs", "alembic_version"}
    except Exception as exc:  # translated once, at the boundary
        raise StorageError(f"cannot create tables at {engine.url.render_as_string()}: {exc}") from exc
    # Another process (a standby, a worker) creating the same database at the same moment makes a
    # table or type between our check and our CREATE: look again, then create the rest. Each such
    # race means one more table exists, so at most one retry per table is needed; a deadline bounds
    # the wait on a database that fails for another reason.
    attempts = len(SQLModel.metadata.tables) + 1
    deadline = time.monotonic() + 30.0
    for attempt in range(attempts):
        try:
            SQLModel.metadata.create_all(engine)
            break
        except Exception as exc:
            if attempt == attempts - 1 or time.monotonic() > deadline:
                raise StorageError(f"cannot create tables at {engine.url.render_as_string()}: {exc}") from exc
            time.sleep(min(0.05 * (attempt + 1), 0.5))
    if stamp and not existing:
        from medmon.monitor.storage.migrate import stamp_created

        stamp_created(engine)


def import_all_models() -> None:
    """Register every package's tables on the shared metadata."""
    import medmon.alerts.models  # noqa: F401
    import medmon.baselines.models  # noqa: F401
    import medmon.monitor.models  # noqa: F401
    import medmon.probes.models  # noqa: F401
