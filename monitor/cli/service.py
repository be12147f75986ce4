"""``medmon worker`` and ``medmon db ...``: the production service's other commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from medmon.monitor.cli.plan_arg import EXIT_INPUT, PlanArg, err, out
from medmon.monitor.errors import MedmonError

db_app = typer.Typer(help="Database schema: migrations with Alembic.", no_args_is_help=True)


def _database_url(plan_path: Path | None, url: str | None) -> str:
    from medmon.db import resolve_url
    from medmon.monitor.plan.model import load_plan

    if url:
        return url
    return resolve_url(load_plan(plan_path).storage.url if plan_path is not None else None)


PlanOpt = Annotated[
    Path | None,
    typer.Argument(
        metavar="PLAN",
        envvar="MEDMON_PLAN",
        show_envvar=True,
        help="The monitoring plan (its storage.url); MEDMON_DATABASE_URL wins.",
    ),
]
UrlOpt = Annotated[str | None, typer.Option("--url", help="Database URL (instead of the plan's).")]


@db_app.command("upgrade")
def db_upgrade(
    plan_path: PlanOpt = None,
    url: UrlOpt = None,
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
) -> None:
    """Migrate the database to the newest schema (adopting one created before migrations)."""
    from medmon.monitor.storage import make_engine
    from medmon.monitor.storage.migrate import upgrade

    try:
        engine = make_engine(_database_url(plan_path, url), create=False)
        report = upgrade(engine, revision)
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    adopted = " (existing tables adopted)" if report.adopted else ""
    out.print(f"database schema: {report.before or 'none'} -> {report.after}{adopted}", highlight=False)


@db_app.command("current")
def db_current(plan_path: PlanOpt = None, url: UrlOpt = None) -> None:
    """Print the database's schema revision and the newest this medmon knows."""
    from medmon.monitor.storage import make_engine
    from medmon.monitor.storage.migrate import current_revision, head_revision

    try:
        engine = make_engine(_database_url(plan_path, url), create=False)
        with engine.connect() as connection:
            current = current_revision(connection)
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    head = head_revision()
    out.print(f"current: {current or 'none'}  newest: {head}", highlight=False)
    if current != head:
        raise typer.Exit(1)


def worker(
    plan_path: PlanArg,
    concurrency: Annotated[int, typer.Option(help="Probes at once in this process.")] = 1,
    hostname: Annotated[str | None, typer.Option(help="Celery node name, e.g. probe1@%h.")] = None,
) -> None:
    """Run a Celery worker that executes the probes a 'service: {executor: celery}' plan schedules."""
    from medmon.monitor.service.workers import run_worker

    try:
        run_worker(plan_path, concurrency=concurrency, hostname=hostname)
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
