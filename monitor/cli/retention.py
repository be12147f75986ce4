"""``medmon retention purge``: delete what is past the plan's retention, recording the purge in the chain.

Exit codes: 0 done (or nothing past retention), 1 a dry run found records past retention,
2 bad input (plan, database).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from medmon.monitor.cli.plan_arg import PlanArg, err, out
from medmon.monitor.errors import MedmonError

app = typer.Typer(help="Retention: keep records as long as the plan's regime requires, then purge them.")
EXIT_PENDING, EXIT_INPUT = 1, 2


@app.command("purge")
def purge_command(
    plan_path: PlanArg,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Delete probe runs past retention.results and traffic past traffic.retention; a purge is an audit entry."""
    from medmon.db import resolve_url, utcnow
    from medmon.monitor.governance.retention import purge
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
        engine = make_engine(resolve_url(plan.storage.url))
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    report = purge(engine, plan, utcnow(), dry_run=dry_run, progress=None if as_json else err.print)
    if as_json:
        out.print_json(json.dumps(report.to_dict()))
    else:
        verb = "would delete" if dry_run else "deleted"
        out.print(
            f"{verb} {len(report.run_ids)} run(s), {report.results} result(s), {report.traffic_spans} "
            f"traffic span(s) (results kept since {report.cutoff:%Y-%m-%d}, regime {plan.retention.regime})"
            + (f"; recorded as audit entry {report.audit_seq}" if report.audit_seq is not None else ""),
            highlight=False,
        )
    if dry_run and (report.run_ids or report.traffic_spans):
        raise typer.Exit(EXIT_PENDING)
