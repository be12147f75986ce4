"""``medmon audit``: list the audit log and verify its hash chain.

Exit codes: 0 ok, 1 the chain does not verify (tampered), 2 bad input (no database, bad option).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.db import resolve_url
from medmon.moments import display_time
from medmon.monitor.cli.plan_arg import LegacyPlanOption, OptionalPlanArg, chosen_plan
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import MedmonError
from medmon.monitor.governance.audit import AuditKind, event_dict, list_events, verify
from medmon.monitor.plan.model import load_plan
from medmon.monitor.storage import make_engine

app = typer.Typer(help="The tamper-evident audit log: who changed or decided what, and when.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)
EXIT_TAMPERED, EXIT_INPUT = 1, 2

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: the plan's, MEDMON_DATABASE_URL, else sqlite:///medmon.db)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def open_database(plan_path: Path | None, db: str | None) -> Engine:
    """The database named by ``--db``, else the plan's; an absent SQLite file is an input error."""
    url = db or resolve_url(load_plan(plan_path).storage.url if plan_path is not None else None)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        if not path.exists():
            raise typer.BadParameter(f"no database at {path}", param_hint="--db/PLAN")
    return make_engine(url)


def _engine(positional: Path | None, legacy: Path | None, db: str | None, command: str) -> Engine:
    plan_path = chosen_plan(positional, legacy, command, required=False)
    try:
        return open_database(plan_path, db)
    except (MedmonError, typer.BadParameter) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        err.print(f"[red]error:[/red] --since: expected an ISO date or time, got {text!r}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _masked(value: Any) -> Any:
    """Every text in an entry's details with ``url:`` values and credential shapes masked."""
    from medmon.monitor.plan.masking import masked_plan

    if isinstance(value, str):
        return masked_plan(value, None)
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


@app.command("list")
def list_command(
    plan: OptionalPlanArg = None,
    db: DbOption = None,
    kind: Annotated[AuditKind | None, typer.Option(help="Only entries of this kind.")] = None,
    subject: Annotated[str | None, typer.Option(help="Only subjects starting with this, e.g. task:qa.")] = None,
    since: Annotated[str | None, typer.Option(help="Only entries at or after this ISO time (UTC).")] = None,
    limit: Annotated[int, typer.Option(min=1, help="The newest N entries.")] = 50,
    as_json: JsonOption = False,
    legacy_plan: LegacyPlanOption = None,
) -> None:
    """List audit entries, oldest first (the newest ``--limit``), from the plan's database (or ``--db``)."""
    engine = _engine(plan, legacy_plan, db, "audit list")
    with Session(engine) as session:
        events = list_events(session, kind=kind, subject=subject, since=_since(since), limit=limit)
        rows = [event_dict(e) for e in events]
    if as_json:
        from medmon.db import session_scope, utcnow
        from medmon.monitor.governance.access import record_text_read, text_entries

        if quoted := text_entries(rows):  # clinicians' notes, near misses: who read them is audited
            with session_scope(engine) as session:
                record_text_read(
                    session,
                    tool="medmon audit list --json",
                    task=None,
                    what="audit entries quoting reviewers' notes or near misses",
                    rows=len(quoted),
                    now=utcnow(),
                    details={"entries": [e["seq"] for e in quoted]},
                )
        for row in rows:  # a plan diff may carry a webhook URL (the credential): masked as the dashboard does
            row["details"] = _masked({k: v for k, v in (row["details"] or {}).items() if k != "text"})
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    table = Table("seq", "at (UTC)", "kind", "actor", "subject", "hash", title="Audit log")
    for r in rows:
        table.add_row(
            str(r["seq"]),
            display_time(datetime.fromisoformat(r["at"])),
            r["kind"],
            r["actor"],
            r["subject"],
            r["hash"][:12],
        )
    out.print(fitted(table, out) if rows else "no audit entries")


@app.command("verify")
def verify_command(
    plan: OptionalPlanArg = None,
    db: DbOption = None,
    expect: Annotated[
        str | None,
        typer.Option(help="SEQ:HASH noted earlier (a report's head): that entry must still carry that hash."),
    ] = None,
    as_json: JsonOption = False,
    legacy_plan: LegacyPlanOption = None,
) -> None:
    """Recompute the hash chain of the plan's database (or ``--db``); exit 1 and say where if any entry
    was edited, deleted or inserted."""
    anchor = None
    if expect is not None:
        seq, _, digest = expect.partition(":")
        if not seq.isdigit() or len(digest) != 64:
            err.print("[red]error:[/red] --expect: expected SEQ:HASH (a 64-character SHA-256)", highlight=False)
            raise typer.Exit(EXIT_INPUT)
        anchor = (int(seq), digest)
    engine = _engine(plan, legacy_plan, db, "audit verify")
    with Session(engine) as session:
        report = verify(session, anchor)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    elif report.ok:
        out.print(
            f"[green]ok[/green]: {report.entries} entries verify; head seq {report.head_seq} {report.head_hash}",
            highlight=False,
        )
        out.print(
            f"evidence: the stored results of {report.runs_sealed} sealed probe runs ({report.results_checked} "
            "results) match their seals",
            highlight=False,
        )
        if report.runs_purged:
            out.print(f"purged: {report.purged_text}", highlight=False)
        if anchor is None:
            out.print(
                "compare this head with the one printed in the last committee report (or pass it with "
                "--expect SEQ:HASH): without it, deleting the newest entries that no other record covers "
                "cannot be detected",
                highlight=False,
            )
    else:
        err.print(
            f"[red]TAMPERED[/red]: {len(report.problems)} problem(s) in {report.entries} entries and "
            f"{report.runs_sealed} sealed runs; head checked: seq {report.head_seq} {report.head_hash}",
            highlight=False,
        )
        for problem in report.problems:
            err.print(f"  {problem}", highlight=False, markup=False)
    if not report.ok:
        raise typer.Exit(EXIT_TAMPERED)
