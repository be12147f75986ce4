"""``medmon change``: declare a change and re-evaluate (``medmon baseline approve`` adopts the result).

A prompt, workflow or judge change cannot be seen from outside, so a person declares it; the
full canary set of each affected task is then replayed at once and compared with its baseline.
Exit codes: 0 every re-evaluation passed (or none ran), 1 one failed its thresholds or could
not run, 2 bad input or a refused approval.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlmodel import Session

from medmon.db import session_scope, utcnow
from medmon.moments import display_time
from medmon.monitor.cli.plan_arg import LegacyPlanOption, OptionalPlanArg, chosen_plan
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import MedmonError
from medmon.monitor.governance.audit import local_actor
from medmon.monitor.governance.changes import ChangeKind, ChangeSource, change_row, list_changes, record_change
from medmon.monitor.models import Reevaluation
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.storage import make_engine

app = typer.Typer(
    help="Declared changes (model, fingerprint, prompt, workflow, judge) and their re-evaluations.",
    no_args_is_help=True,
)
out = Console()
err = Console(stderr=True)
EXIT_FOUND, EXIT_INPUT = 1, 2

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _plan(positional: Path | None, legacy: Path | None, command: str) -> tuple[Path, Plan]:
    """The plan given first (or through the deprecated ``--plan``, or the old implicit ./plan.yaml), loaded."""
    path = chosen_plan(positional, legacy, command, implicit=Path("plan.yaml"))
    assert path is not None
    try:
        return path, load_plan(path)
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None


def reevaluation_row(r: Reevaluation) -> dict[str, Any]:
    return {
        "id": r.id,
        "task": r.task_id,
        "status": r.status.value,
        "n": r.n,
        "errors": r.n_errors,
        "repeats": r.repeats,
        "estimate": r.estimate,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "baseline": r.baseline_value,
        "difference": r.difference,
        "min_score": r.min_score,
        "tolerated_drop": r.tolerated_drop,
        "passed": r.passed,
        "conclusive": r.conclusive,
        "reasons": r.reasons,
        "served_model": r.served_model,
        "cost_usd": r.cost_usd,
        "error": r.error,
        "approved_by": r.approved_by,
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_reevaluations(rows: list[dict[str, Any]]) -> None:
    table = Table(
        "id",
        "task",
        "n",
        "estimate (95% CI)",
        "baseline",
        "difference",
        "min",
        "decision",
        "adopted by",
        title="Re-evaluations against baseline",
    )
    for r in rows:
        decision = ("no data" if r["passed"] is None else "pass" if r["passed"] else "FAIL") + (
            "" if r["conclusive"] or r["passed"] is None else " (undecided)"
        )
        table.add_row(
            str(r["id"]),
            r["task"],
            str(r["n"]),
            "-" if r["estimate"] is None else f"{r['estimate']:.3f} ({r['ci_low']:.3f}-{r['ci_high']:.3f})",
            _fmt(r["baseline"]),
            "-" if r["difference"] is None else f"{r['difference']:+.3f}",
            _fmt(r["min_score"]),
            decision if not r["error"] else f"failed: {r['error']}",
            r["approved_by"] or "-",
        )
    out.print(fitted(table, out))


@app.command("record")
def record_command(
    plan_path: OptionalPlanArg = None,
    *,
    kind: Annotated[ChangeKind, typer.Option(help="What changed.")],
    task: Annotated[list[str], typer.Option(help="Affected task id (repeatable).")],
    note: Annotated[str, typer.Option(help="What changed and why (kept in the audit log).")],
    legacy_plan: LegacyPlanOption = None,
    by: Annotated[str | None, typer.Option(help="Who declares it (default: this user and host).")] = None,
    repeats: Annotated[
        int | None,
        typer.Option(min=1, max=50, help="Replays of every canary (default: the plan's governance policy, else 1)."),
    ] = None,
    run: Annotated[bool, typer.Option("--run/--no-run", help="Re-evaluate now (default) or leave it pending.")] = True,
    as_json: JsonOption = False,
) -> None:
    """Record a change for the named tasks, then replay their full canary sets against the model."""
    from medmon.monitor.governance.change_control import cited_entry
    from medmon.monitor.governance.reevaluation import run_reevaluation
    from medmon.monitor.governance.thresholds import in_force
    from medmon.monitor.plan.context import load_context

    plan_path, plan = _plan(plan_path, legacy_plan, "change record")
    unknown = [t for t in task if t not in {x.id for x in plan.tasks}]
    if unknown:
        err.print(
            f"[red]error:[/red] --task: not in {plan_path}: {', '.join(unknown)}; tasks are "
            f"{', '.join(t.id for t in plan.tasks)}",
            highlight=False,
        )
        raise typer.Exit(EXIT_INPUT)
    if not note.strip():
        err.print("[red]error:[/red] --note: say what changed", highlight=False)
        raise typer.Exit(EXIT_INPUT)
    actor = by or local_actor("medmon change record")
    try:
        engine = make_engine(plan.storage.url)
        with session_scope(engine) as session:
            changes = record_change(
                session,
                task_ids=task,
                kind=kind,
                source=ChangeSource.declared,
                actor=actor,
                note=note,
                now=utcnow(),
                details={
                    # A declaration is not an approval: the name given is kept, and so is who typed it.
                    "authenticated": False,
                    "via": "cli",
                    "os_user": local_actor("medmon change record"),
                    "claimed_by": by,
                    "change_control": cited_entry(plan, kind),
                },
            )
            change_ids = {c.task_id: c.id for c in changes}
        plan = in_force(engine, plan)  # a re-evaluation is judged by the approved thresholds, not an edit
        contexts = [load_context(plan, plan.task(t)) for t in dict.fromkeys(task)]
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    results: list[dict[str, Any]] = []
    if run:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True, disable=as_json) as progress:
            for ctx in contexts:
                bar = progress.add_task(f"re-evaluating {ctx.task.id}", total=None)

                def advance(done: int, total: int, bar: Any = bar) -> None:
                    progress.update(bar, completed=done, total=total)

                cid = change_ids.get(ctx.task.id)
                row = run_reevaluation(
                    engine,
                    plan,
                    ctx,
                    now=utcnow,
                    change_ids=[cid] if cid else [],
                    repeats=repeats,
                    progress=advance,
                    actor=actor,
                )
                results.append(reevaluation_row(row))
    summary = {"changes": [{"id": cid, "task": t} for t, cid in change_ids.items()], "reevaluations": results}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        out.print(f"recorded {kind.value} change for {', '.join(change_ids)} (by {actor})", highlight=False)
        if results:
            _print_reevaluations(results)
            out.print(
                "adopt a result as the baseline with: medmon baseline approve PLAN --task TASK "
                "--reevaluation ID --by OWNER_EMAIL --reason WHY",
                highlight=False,
            )
        else:
            out.print(
                "re-evaluation pending (run later with: medmon change record ... or let a detected change trigger it)"
            )
    if any(r["passed"] is not True for r in results):
        raise typer.Exit(EXIT_FOUND)


@app.command("list")
def list_command(
    plan_path: OptionalPlanArg = None, as_json: JsonOption = False, legacy_plan: LegacyPlanOption = None
) -> None:
    """List every recorded change (detected and declared) with its re-evaluation."""
    _, plan = _plan(plan_path, legacy_plan, "change list")
    with Session(make_engine(plan.storage.url)) as session:
        rows = [{**change_row(c), "at": c.created_at.isoformat()} for c in list_changes(session)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(*("id", "task", "kind", "source", "by", "at", "status", "re-evaluation", "note"), title="Changes")
    for r in rows:
        table.add_row(
            str(r["id"]),
            r["task"],
            r["kind"],
            r["source"],
            r["actor"],
            display_time(datetime.fromisoformat(r["at"]), plan.display_timezone),
            r["status"],
            str(r["reevaluation_id"] or "-"),
            r["note"],
        )
    out.print(fitted(table, out) if rows else "no changes recorded")


@app.command("reevaluations")
def reevaluations_command(
    plan_path: OptionalPlanArg = None, as_json: JsonOption = False, legacy_plan: LegacyPlanOption = None
) -> None:
    """List every re-evaluation with its comparison against the baseline."""
    from medmon.monitor.governance.reevaluation import list_reevaluations

    _, plan = _plan(plan_path, legacy_plan, "change reevaluations")
    with Session(make_engine(plan.storage.url)) as session:
        rows = [reevaluation_row(r) for r in list_reevaluations(session)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    elif rows:
        _print_reevaluations(rows)
    else:
        out.print("no re-evaluations")
