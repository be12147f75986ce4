"""``medmon oversight``: the review queue, the jury's agreement with clinicians, safety events and their export.

Exit codes: 0 ok, 1 something needs attention (``agreement``: a stream below its floor;
``events``: a clock due soon or overdue), 2 bad input (plan, database, unknown event).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.db import session_scope, utcnow
from medmon.moments import display_time
from medmon.monitor.cli.audit import open_database
from medmon.monitor.cli.plan_arg import PlanArg, err, out
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import GovernanceError, MedmonError
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.plan.oversight import MEDHELM_JURY_ICC

# The statistics (numpy, krippendorff, pingouin) load when a command runs, not when `medmon` starts.

app = typer.Typer(
    help="Human oversight: clinician review, the jury validated against clinicians, safety events.",
    no_args_is_help=True,
)
EXIT_ATTENTION, EXIT_INPUT = 1, 2

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _open(plan_path: Path) -> tuple[Plan, Engine]:
    try:
        return load_plan(plan_path), open_database(plan_path, None)
    except (MedmonError, typer.BadParameter) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None


def _record_read(
    engine: Engine,
    tool: str,
    what: str,
    *,
    task: str | None = None,
    answers: list[int] | None = None,
    rows: int | None = None,
    details: dict[str, object] | None = None,
) -> None:
    """One ``answers_viewed`` entry for this invocation (``medmon.monitor.governance.access``)."""
    from medmon.monitor.governance.access import record_text_read

    with session_scope(engine) as session:
        record_text_read(
            session, tool=tool, task=task, what=what, answers=answers or [], rows=rows, now=utcnow(), details=details
        )


@app.command("pass")
def pass_command(plan_path: PlanArg, as_json: JsonOption = False) -> None:
    """Run one oversight pass now (as `medmon serve` does with every alert pass): queue this week's
    review sample, recompute agreement where reviews arrived, raise or clear oversight alerts."""
    from medmon.monitor.alerting.oversight import oversight_pass
    from medmon.monitor.read import review_progress

    plan, engine = _open(plan_path)
    now = utcnow()
    with session_scope(engine) as session:
        signals = oversight_pass(session, plan, now)
        progress = review_progress(session, plan, now)
    summary = {
        "reviews": [p.__dict__ for p in progress],
        "alerts": [
            {"rule": s.labels["rule"], "metric": s.labels["metric"], "firing": s.firing, "summary": s.summary}
            for s in signals
        ],
    }
    if as_json:
        out.print_json(json.dumps(summary))
        return
    for p in progress:
        out.print(
            f"{p.task_id}: {p.done} reviewed of {p.queued} queued this week (quota {p.quota}); "
            f"{p.flagged} safety flag(s)",
            highlight=False,
        )
    for s in summary["alerts"]:
        out.print(
            f"{'FIRING' if s['firing'] else 'cleared'} {s['rule']} {s['metric']}: {s['summary']}", highlight=False
        )


@app.command("agreement")
def agreement_command(plan_path: PlanArg, as_json: JsonOption = False) -> None:
    """The latest jury-clinician and reviewer-reviewer agreement per task and criterion, beside MedHELM's ICC."""
    from medmon.monitor.alerting.oversight import FLOORED
    from medmon.monitor.read import agreement_table

    plan, engine = _open(plan_path)
    with Session(engine) as session:
        rows = agreement_table(session)
    floors = plan.oversight.agreement
    below = [
        r
        for r in rows
        if r.statistic in FLOORED
        and r.value is not None
        and (floor := getattr(floors, FLOORED[r.statistic])) is not None
        and (r.ci_high if r.ci_high is not None else r.value) < floor
    ]
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "medhelm_jury_icc": MEDHELM_JURY_ICC,
                    "streams": [
                        {
                            "task": r.task_id,
                            "criterion": r.criterion,
                            "statistic": r.statistic,
                            "value": r.value,
                            "ci_low": r.ci_low,
                            "ci_high": r.ci_high,
                            "n": r.n,
                            "at": r.at.isoformat(),
                        }
                        for r in rows
                    ],
                    "below_floor": [f"{r.task_id}:{r.statistic}:{r.criterion}" for r in below],
                }
            )
        )
    else:
        table = Table("task", "criterion", "statistic", "value", "95% CI", "answers")
        for r in rows:
            table.add_row(
                r.task_id,
                r.criterion,
                r.statistic,
                "" if r.value is None else f"{r.value:.2f}",
                "" if r.ci_low is None or r.ci_high is None else f"{r.ci_low:.2f} to {r.ci_high:.2f}",
                str(r.n),
            )
        out.print(fitted(table, out))
        out.print(
            f"MedHELM: jury-clinician ICC {MEDHELM_JURY_ICC}."
            if rows
            else "No agreement figures yet: too few answers rated by both clinicians and judges."
        )
    if below:
        raise typer.Exit(EXIT_ATTENTION)


@app.command("events")
def events_command(plan_path: PlanArg, as_json: JsonOption = False) -> None:
    """Safety events with their reporting clocks (exit 1 when a clock is due soon or overdue)."""
    from medmon.monitor.read import safety_events

    plan, engine = _open(plan_path)
    now = utcnow()
    with Session(engine) as session:
        rows = safety_events(session, plan, now)
    urgent = [r for r in rows if r.clock.state in ("due_soon", "overdue")]
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {
                        "id": r.event.id,
                        "task": r.event.task_id,
                        "severity": r.event.severity,
                        "status": r.event.status,
                        "due_at": r.clock.due_at.isoformat() if r.clock.due_at else None,
                        "clock": r.clock.state,
                        "label": r.clock.label,
                        "open_actions": sum(1 for a in r.actions if a.status != "closed"),
                    }
                    for r in rows
                ]
            )
        )
    else:
        if rows:  # the table quotes each event's stored narrative: who read it is audited (JSON holds none)
            _record_read(
                engine,
                "medmon oversight events",
                "safety event narratives",
                rows=len(rows),
                details={"safety_events": [r.event.id for r in rows]},
            )
        table = Table("event", "task", "severity", "status", "due", "clock", "open actions", "what happened")
        for r in rows:
            table.add_row(
                f"#{r.event.id}",
                r.event.task_id,
                r.event.severity,
                r.event.status,
                display_time(r.clock.due_at, plan.display_timezone) if r.clock.due_at else "",
                r.clock.label,
                str(sum(1 for a in r.actions if a.status != "closed")),
                r.event.what_happened,
            )
        out.print(fitted(table, out) if rows else "No safety event has been opened.")
    if urgent:
        raise typer.Exit(EXIT_ATTENTION)


@app.command("export")
def export_command(
    plan_path: PlanArg,
    event_id: Annotated[int, typer.Argument(help="The safety event's number.")],
    out_path: Annotated[
        Path | None, typer.Option("--output", "-o", "--out", help="JSON file to write (the HTML and PDF go beside it).")
    ] = None,
    pdf: Annotated[bool, typer.Option("--pdf/--no-pdf", help="Also print a PDF.")] = True,
) -> None:
    """Export a safety event for the hospital's incident system: JSON, and HTML with a PDF where Chromium exists."""
    from medmon.monitor.governance.access import record_text_read
    from medmon.monitor.governance.reports.render import render_safety_event, to_pdf
    from medmon.monitor.governance.safety import event_document

    plan, engine = _open(plan_path)
    now = utcnow()
    try:
        with Session(engine) as session:
            document = event_document(session, plan, event_id, now)
            # The export carries the event's stored narrative and evidence: who read it is audited.
            record_text_read(
                session,
                tool="medmon oversight export",
                task=document["task"],
                what=f"safety event {event_id} (narrative and evidence)",
                answers=[
                    a["result_id"]
                    for a in (document.get("evidence") or {}).get("answers") or []
                    if isinstance(a, dict) and isinstance(a.get("result_id"), int)
                ],
                now=now,
                details={"safety_event": event_id},
            )
            session.commit()
    except GovernanceError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    target = out_path or Path(f"safety-event-{event_id}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2, sort_keys=True, default=str), "utf-8")
    html = target.with_suffix(".html")
    html.write_text(render_safety_event(document, now), "utf-8")
    printed = to_pdf(html, target.with_suffix(".pdf")) if pdf else None
    out.print(
        f"wrote {target}, {html}" + (f", {printed}" if printed else ("" if not pdf else " (no PDF converter found)")),
        highlight=False,
    )


@app.command("freeze-judge-set")
def freeze_judge_set_command(
    plan_path: PlanArg,
    task: Annotated[str, typer.Option("--task", help="The task whose clinician-rated answers are frozen.")],
    out_path: Annotated[Path, typer.Option("--output", "-o", "--out", help="JSONL file to write.")],
    limit: Annotated[int, typer.Option(help="The newest rated answers to keep.")] = 200,
    as_json: JsonOption = False,
) -> None:
    """Freeze clinician-rated answers as judge canaries (gold: the clinicians' mean), for ``jury.canary_path``.

    Re-judged on ``jury.canary_schedule``, a change in the jury's scores on these unchanged answers is a
    judge change (``judge_drift``), told apart from a change of the model. The set's version is its SHA-256.
    """
    from medmon.monitor.governance.frozen_set import freeze_judge_set

    plan, engine = _open(plan_path)
    try:
        with Session(engine) as session:
            frozen = freeze_judge_set(session, plan, task, limit=limit)
    except (ValueError, MedmonError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    out_path.parent.mkdir(parents=True, exist_ok=True)
    frozen.write(out_path)
    _record_read(  # the file carries the stored answers themselves
        engine,
        "medmon oversight freeze-judge-set",
        f"clinician-rated answers written to {out_path}",
        task=task,
        answers=[int(json.loads(line)["tags"]["result"]) for line in frozen.lines],
        details={"output": str(out_path), "version": frozen.version},
    )
    if as_json:
        out.print_json(json.dumps({"path": str(out_path), "answers": len(frozen.lines), "version": frozen.version}))
    else:
        out.print(
            f"wrote {len(frozen.lines)} judge canaries to {out_path} (version sha256:{frozen.version[:12]}); "
            "set jury.canary_path to it",
            highlight=False,
        )


@app.command("clinician-scale")
def clinician_scale_command(plan_path: PlanArg, as_json: JsonOption = False) -> None:
    """Each task's clinician-scale estimate beside the jury's opinion and MedHELM's ICC, and what the queue needs.

    Exit 1 when a task's clinician-scale stream is in alarm.
    """
    from dataclasses import asdict

    from medmon.monitor.read import clinician_scale

    plan, engine = _open(plan_path)
    with Session(engine) as session:
        rows = clinician_scale(session, plan, utcnow())
    if as_json:
        out.print_json(json.dumps({"selection": plan.oversight.review.selection, "tasks": [asdict(r) for r in rows]}))
    elif plan.oversight.review.selection != "active":
        out.print("Not measured: oversight.review.selection is 'strata' (no known probability per answer).")
    else:
        columns = ("task", "criterion", "clinician scale", "95% CS", "jury's opinion", "null", "status", "ratings")
        table = Table(*columns, "more needed")
        for r in rows:
            table.add_row(
                r.task_id,
                r.criterion,
                "" if r.clinician is None else f"{r.clinician:.2f}",
                "" if r.ci_low is None or r.ci_high is None else f"{r.ci_low:.2f} to {r.ci_high:.2f}",
                "" if r.jury is None else f"{r.jury:.2f}",
                "" if r.null is None else f"{r.null:.2f}",
                "ALARM" if r.alarm else "ok",
                str(r.ratings),
                "unreachable" if r.ratings_needed is None else str(r.ratings_needed),
            )
        out.print(fitted(table, out))
        out.print(f"MedHELM: jury-clinician ICC {MEDHELM_JURY_ICC}.")
    if any(r.alarm for r in rows):
        raise typer.Exit(EXIT_ATTENTION)
