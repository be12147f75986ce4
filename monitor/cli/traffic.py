"""``medmon traffic``: import real traffic from files, and see what has come in.

Exit codes: 0 done, 1 some lines of the file could not be read (the rest is stored),
2 bad input (plan, missing file).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from medmon.monitor.cli.plan_arg import PlanArg, err, out
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import MedmonError

app = typer.Typer(help="Real traffic: OpenTelemetry GenAI spans of the deployed application.", no_args_is_help=True)
EXIT_PARTIAL, EXIT_INPUT = 1, 2

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(EXIT_INPUT)


@app.command("import")
def import_command(
    plan_path: PlanArg,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="OTLP/JSON exports, or JSON Lines of exports (the Collector's file exporter); .gz is read too."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Store the GenAI calls of exported trace files as the receiver would: routed, priced, redacted, once each.

    The next traffic pass of `medmon serve` rolls them up and feeds the task streams.
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from medmon.db import resolve_url, utcnow
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.storage import make_engine
    from medmon.monitor.traffic.files import import_file

    try:
        plan = load_plan(plan_path)
        if plan.traffic is None:
            raise _fail(f"{plan_path}: the plan has no 'traffic' section (routes say which task a call belongs to)")
        engine = make_engine(resolve_url(plan.storage.url))
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise _fail(f"no such file: {', '.join(missing)}")
    report: list[dict[str, Any]] = []
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=as_json,
        transient=True,
    ) as bar:
        for path in files:
            job = bar.add_task(path.name, total=path.stat().st_size)
            got = import_file(engine, plan, path, utcnow(), progress=partial(bar.advance, job))
            report.append(
                {
                    "file": str(path),
                    "calls": got.calls,
                    "refused": dict(got.refused),
                    "skipped": dict(got.skipped),
                    "bad_lines": [{"line": n, "error": e} for n, e in got.bad_lines],
                }
            )
    if as_json:
        out.print_json(json.dumps(report))
    else:
        for r in report:
            refused = ", ".join(f"{n} {k}" for k, n in sorted(r["refused"].items())) or "none"
            out.print(f"{r['file']}: {r['calls']} call(s) stored; refused: {refused}", highlight=False)
            for bad in r["bad_lines"]:
                err.print(f"  {r['file']}:{bad['line']}: {bad['error']}", highlight=False)
    if any(r["bad_lines"] for r in report):
        raise typer.Exit(EXIT_PARTIAL)


@app.command("status")
def status_command(
    plan_path: PlanArg, days: Annotated[int, typer.Option(help="How many days back.")] = 7, as_json: JsonOpt = False
) -> None:
    """Calls, spend, errors and latency per task and model over the last days, unmatched and refused calls too."""
    from datetime import timedelta

    from sqlmodel import Session

    from medmon.db import resolve_url, utcnow
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.read.traffic import traffic_summary
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
        engine = make_engine(resolve_url(plan.storage.url))
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    now = utcnow()
    with Session(engine) as session:
        summary = traffic_summary(session, now - timedelta(days=days), now)
    if as_json:
        out.print_json(json.dumps(summary.as_dict()))
        return
    table = Table(title=f"Traffic, last {days} day(s)")
    for col in ("task", "model", "calls", "errors", "truncated", "spend $", "p50 s", "p95 s"):
        table.add_column(col, justify="left" if col in ("task", "model") else "right")
    for g in summary.groups:
        table.add_row(
            g.task or "(unmatched)",
            g.model,
            f"{g.calls}",
            f"{g.error_rate:.1%}",
            f"{g.truncation_rate:.1%}",
            f"{g.cost_usd:.2f}",
            f"{g.p50_s:.2f}",
            f"{g.p95_s:.2f}",
        )
    out.print(fitted(table, out))
    if summary.refused:
        out.print(
            "refused at the door: " + ", ".join(f"{n} {r}" for r, n in sorted(summary.refused.items())), highlight=False
        )
