"""``medmon drift``: evidently drift reports of output descriptors, made now or listed.

A report compares a task's first ``--window`` successful answers (the reference) with its
latest ``--window`` on output length, latency, score and cost, and is stored for the dashboard's
task page. It describes *how* outputs changed; it never raises an alert (the detectors do).

Exit codes: 0 done, 2 bad input (plan, unknown task, too few answers, nothing comparable).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from medmon.moments import display_time
from medmon.monitor.cli.plan_arg import EXIT_INPUT, PlanArg, err, out
from medmon.monitor.errors import MedmonError

app = typer.Typer(help="evidently drift reports of output length, latency, score and cost.", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", markup=True, highlight=False)
    return typer.Exit(EXIT_INPUT)


def _when(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def _row(view: Any) -> dict[str, Any]:
    return {
        "id": view.id,
        "task": view.task_id,
        "created_at": _when(view.created_at),
        "reference": {"from": _when(view.reference_from), "to": _when(view.reference_to), "n": view.n_reference},
        "current": {"from": _when(view.current_from), "to": _when(view.current_to), "n": view.n_current},
        "drifted": view.drifted,
        "columns": [
            {
                "column": c.column,
                "method": c.method,
                "p_value": c.p_value,
                "threshold": c.threshold,
                "drift": c.drifted,
                "note": view.notes.get(c.column),
            }
            for c in view.columns
        ],
        "not_compared": [{"column": name, "why": why} for name, why in view.not_compared.items()],
    }


@app.command("report")
def report(
    plan_path: PlanArg,
    task: Annotated[str, typer.Option(help="The task id to report on.")],
    window: Annotated[
        int, typer.Option(help="Answers in each window (reference: the first; current: the latest).")
    ] = 200,
    out_path: Annotated[
        Path | None, typer.Option("--output", "-o", "--out", help="Also write the HTML report here.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a drift report of one task now, store it for the dashboard, and write its HTML."""
    from sqlmodel import Session

    from medmon.db import session_scope, utcnow
    from medmon.monitor.detection.reports import report_shortfall, store_drift_report
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.read.drift import drift_report_html, drift_reports
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    ids = [t.id for t in plan.tasks]
    if task not in ids:
        raise _fail(f"task {task!r} is not in {plan_path} (tasks: {', '.join(ids)})")
    try:
        engine = make_engine(plan.storage.url)
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    with session_scope(engine) as session:
        shortfall = report_shortfall(session, task, window)
        if shortfall is not None:
            raise _fail(shortfall)
        err.print(
            f"comparing the first {window} answers of {task} with the latest {window} (evidently, KS tests)…",
            highlight=False,
        )
        try:
            row = store_drift_report(session, task, utcnow(), window=window)
        except ValueError as exc:  # every descriptor constant or missing: nothing a KS test can compare
            raise _fail(f"task {task!r}: {exc}") from None
        if row is None or row.id is None:
            raise _fail(f"task {task!r} has no two windows of {window} answers that do not overlap")
        report_id = row.id
    with Session(engine) as session:
        (view,) = drift_reports(session, report_id=report_id)
        html = drift_report_html(session, report_id) if out_path is not None else ""
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(html, "utf-8")
        err.print(f"wrote {out_path}", highlight=False)
    if as_json:
        out.print_json(json.dumps(_row(view) | {"html": str(out_path) if out_path else None}))
        return
    drifted = ", ".join(view.drifted) or "none"
    out.print(
        f"{task}: report {view.id}, {view.n_reference} reference and {view.n_current} recent answers; "
        f"drifted: {drifted}",
        highlight=False,
    )
    for c in view.columns:
        p = "—" if c.p_value is None else f"{c.p_value:.3g}"
        note = view.notes.get(c.column)
        out.print(
            f"  {c.column:<14} {c.method or '?':<4} p={p:<9} {'DRIFT' if c.drifted else 'ok'}"
            + (f"  ({note})" if note else ""),
            highlight=False,
        )
    for name, why in view.not_compared.items():
        out.print(f"  {name:<14} {why}", highlight=False)


@app.command("list")
def list_reports(
    plan_path: PlanArg,
    task: Annotated[str | None, typer.Option(help="Only this task's reports.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List the stored drift reports, newest first, with the columns each found drifted."""
    from sqlmodel import Session

    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.read.drift import drift_reports
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
        engine = make_engine(plan.storage.url)
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    ids = [t.id for t in plan.tasks]
    if task is not None and task not in ids:
        raise _fail(f"task {task!r} is not in {plan_path} (tasks: {', '.join(ids)})")
    with Session(engine) as session:
        views = drift_reports(session, task, limit=limit)
    if as_json:
        out.print_json(json.dumps([_row(v) for v in views]))
        return
    if not views:
        err.print("no drift report stored yet; make one with: medmon drift report PLAN --task TASK", highlight=False)
        return
    for v in views:
        out.print(
            f"{v.id:>5}  {display_time(v.created_at, plan.display_timezone)}  {v.task_id:<20} "
            f"n={v.n_reference}/{v.n_current}  "
            f"drifted: {', '.join(v.drifted) or 'none'}",
            highlight=False,
        )
