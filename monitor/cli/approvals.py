"""``medmon baseline approve`` and ``medmon baseline proposals``: evidence becomes a baseline by decision.

An import never changes what a task is compared with: it is a proposal until an owner approves
it, naming the rationale (and, below the approval minimum, the committee's decision).

Every approval counts only when its actor proves who they are: ``--key`` signs the act with
an Ed25519 private key whose public key the plan lists beside that person (``keys``). Without
``--key`` the act is recorded as ``unauthenticated`` (the OS account, the e-mail claimed) and
changes nothing. Exit codes: 0 done, 2 bad input or a refused approval, 3 recorded as
unauthenticated and not counted.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlmodel import Session

from medmon.db import session_scope, utcnow
from medmon.moments import display_time
from medmon.monitor.cli.change import EXIT_INPUT, JsonOption, _plan
from medmon.monitor.cli.plan_arg import LegacyPlanOption, OptionalPlanArg
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import GovernanceError, MedmonError
from medmon.monitor.storage import make_engine

if TYPE_CHECKING:
    from medmon.monitor.governance.identity import Identity
    from medmon.monitor.plan.model import Plan

out = Console()
err = Console(stderr=True)
EXIT_UNPROVEN = 3  # the act is recorded as unauthenticated and counts for nothing

KeyOption = Annotated[
    Path | None,
    typer.Option(
        "--key",
        help="Your Ed25519 private key (OpenSSH or PEM; passphrase from MEDMON_KEY_PASSPHRASE) whose public key the "
        "plan lists under your 'keys': it signs the act. Without it the act is recorded as unauthenticated and "
        "does not count.",
    ),
]


def prove(
    plan: Plan, *, by: str, act: str, subject: str, facts: dict[str, Any], key: Path | None, tool: str
) -> Identity:
    """Who is acting (``medmon.monitor.governance.identity.cli_identity``); a key not registered to ``by`` exits 2."""
    from medmon.monitor.governance.identity import cli_identity

    try:
        return cli_identity(plan, by=by, act=act, subject=subject, facts=facts, key=key, tool=tool)
    except GovernanceError as exc:
        err.print(f"[red]refused:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None


def unproven(
    session: Session, identity: Identity, act: str, subject: str, facts: dict[str, Any], as_json: bool
) -> None:
    """Record an act nobody proved, say so, and exit 3: it is kept in the log and changes nothing."""
    from medmon.monitor.governance.identity import record_unproven

    event = record_unproven(session, identity, act, subject, facts, utcnow())
    session.commit()
    message = (
        f"recorded as unauthenticated (audit seq {event.seq}, actor {identity.actor}): NOT counted as "
        f"{act.replace('_', ' ')} for {identity.claimed_by}. Sign it with --key (a key listed under "
        f"{identity.claimed_by}'s 'keys' in the plan), or act on the dashboard after sign-in."
    )
    if as_json:
        typer.echo(json.dumps({"counted": False, "authenticated": False, "seq": event.seq, "message": message}))
    else:
        err.print(f"[yellow]not counted:[/yellow] {message}", highlight=False)
    raise typer.Exit(EXIT_UNPROVEN)


def approve_command(
    plan_path: OptionalPlanArg = None,
    *,
    task: Annotated[str, typer.Option(help="The task whose baseline to replace.")],
    by: Annotated[str, typer.Option(help="The approving owner's e-mail (task owner or clinical owner).")],
    reevaluation: Annotated[
        int | None, typer.Option(help="A re-evaluation to adopt (medmon change reevaluations).")
    ] = None,
    baseline: Annotated[
        int | None, typer.Option(help="An imported baseline to adopt (medmon baseline proposals).")
    ] = None,
    reason: Annotated[str | None, typer.Option(help="The rationale, kept in the audit log (required).")] = None,
    committee_decision: Annotated[
        str | None,
        typer.Option(
            help="The committee decision allowing evidence below the approval minimum (e.g. minutes reference)."
        ),
    ] = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
    legacy_plan: LegacyPlanOption = None,
) -> None:
    """Adopt a re-evaluation's results or an imported baseline as a task's baseline: an owner's recorded decision.

    Counts only with --key (exit 3 without: recorded as unauthenticated, nothing pinned).
    """
    from medmon.monitor.governance.approvals import approve_baseline
    from medmon.monitor.governance.audit import local_actor
    from medmon.monitor.governance.reevaluation import approve

    if (reevaluation is None) == (baseline is None):
        err.print("[red]error:[/red] give exactly one of --reevaluation or --baseline", highlight=False)
        raise typer.Exit(EXIT_INPUT)
    _, plan = _plan(plan_path, legacy_plan, "baseline approve")
    facts = {
        "task": task,
        "reevaluation_id": reevaluation,
        "baseline_id": baseline,
        "reason": reason,
        "committee_decision": committee_decision,
    }
    identity = prove(
        plan,
        by=by,
        act="baseline_approved",
        subject=f"task:{task}",
        facts=facts,
        key=key,
        tool="medmon baseline approve",
    )
    try:
        with session_scope(make_engine(plan.storage.url)) as session:
            if not identity.authenticated:
                from medmon.monitor.governance.approvals import plan_task, require_approver

                require_approver(plan, plan_task(plan, task), by, reason)
                unproven(session, identity, "baseline_approved", f"task:{task}", facts, as_json)
            if reevaluation is not None:
                adopted = approve(
                    session,
                    plan,
                    reevaluation_id=reevaluation,
                    task_id=task,
                    by=identity.actor,
                    now=utcnow(),
                    reason=reason,
                    committee_decision=committee_decision,
                    operator=local_actor("medmon baseline approve"),
                    details=identity.details(),
                )
            else:
                assert baseline is not None
                adopted = approve_baseline(
                    session,
                    plan,
                    task_id=task,
                    baseline_id=baseline,
                    by=identity.actor,
                    reason=reason,
                    now=utcnow(),
                    committee_decision=committee_decision,
                    details=identity.details(),
                )
            info = {
                "task": task,
                "reevaluation": reevaluation,
                "baseline_id": adopted.id,
                "benchmark": adopted.benchmark,
                "model": adopted.model,
                "metric": adopted.metric,
                "version": adopted.version,
                "value": adopted.value,
                "normalized": adopted.normalized,
                "n": adopted.n,
                "approved_by": adopted.approved_by,
                "identity": identity.words,
                "reason": reason,
                "committee_decision": committee_decision,
            }
    except GovernanceError as exc:
        err.print(f"[red]refused:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    except MedmonError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        out.print(
            f"task {task}: baseline is now {info['normalized']:.3f} (n={info['n']}, {info['model']}, "
            f"version {info['version']}), approved by {identity.words}; recorded in the audit log",
            highlight=False,
        )


def proposals_command(
    plan_path: OptionalPlanArg = None, as_json: JsonOption = False, legacy_plan: LegacyPlanOption = None
) -> None:
    """List imported baselines awaiting an owner's approval for a task (they change nothing until then)."""
    from medmon.monitor.governance.approvals import baseline_proposals

    _, plan = _plan(plan_path, legacy_plan, "baseline proposals")
    with Session(make_engine(plan.storage.url)) as session:
        rows: list[dict[str, Any]] = [
            {
                "task": p.task,
                "baseline_id": p.baseline_id,
                "benchmark": p.benchmark,
                "model": p.model,
                "metric": p.metric,
                "version": p.version,
                "normalized": p.normalized,
                "n": p.n,
                "imported_at": p.imported_at.isoformat(),
                "current_baseline_id": p.current_baseline_id,
            }
            for p in baseline_proposals(session, plan)
        ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(
        *("task", "baseline", "model", "metric", "v", "normalized", "n", "imported", "current"),
        title="Baselines proposed by import, awaiting approval",
    )
    for r in rows:
        table.add_row(
            r["task"],
            str(r["baseline_id"]),
            r["model"],
            r["metric"],
            str(r["version"]),
            f"{r['normalized']:.3f}",
            str(r["n"]),
            display_time(datetime.fromisoformat(r["imported_at"]), plan.display_timezone),
            str(r["current_baseline_id"]),
        )
    out.print(fitted(table, out) if rows else "no proposals: every task is compared with its baseline in force")


# --- thresholds: a plan edit proposes, an owner approves ----------------------------------------

approvals_app = typer.Typer(
    help="Decisions awaiting an owner: threshold changes and imported baselines.", no_args_is_help=True
)


def _recorded_engine(positional: Path | None, legacy: Path | None, command: str) -> tuple[Any, Any]:
    """The plan and its database, with the plan file recorded (so its edits are the proposals)."""
    from medmon.monitor.governance.audit import local_actor
    from medmon.monitor.governance.change_control import record_plan_file

    plan_path, plan = _plan(positional, legacy, command)
    engine = make_engine(plan.storage.url)
    record_plan_file(engine, plan_path, local_actor("medmon approvals"), utcnow())
    return plan, engine


@approvals_app.command("list")
def list_command(
    plan_path: OptionalPlanArg = None, as_json: JsonOption = False, legacy_plan: LegacyPlanOption = None
) -> None:
    """List what awaits an owner's decision: threshold edits (not in force until approved) and imported baselines.

    The plan file is recorded first, so an edit made since the last 'medmon check' is listed too.
    """
    from medmon.monitor.governance.approvals import baseline_proposals
    from medmon.monitor.governance.effective import effective_tasks
    from medmon.monitor.governance.golive import go_live_status

    plan, engine = _recorded_engine(plan_path, legacy_plan, "approvals list")
    with Session(engine) as session:
        thresholds = [
            {
                "task": p.task,
                "threshold": p.threshold,
                "in_force": p.in_force,
                "proposed": p.proposed,
                "looser": p.looser,
                "plan_seq": p.plan_seq,
                "proposed_by": p.proposed_by,
                "proposed_at": p.proposed_at.isoformat() if p.proposed_at else None,
                "in_force_since": e.thresholds_at.isoformat() if e.thresholds_at else None,
                "in_force_source": e.thresholds_source,
            }
            for e in effective_tasks(session, plan)
            for p in e.proposals
        ]
        baselines = [
            {
                "task": p.task,
                "baseline_id": p.baseline_id,
                "model": p.model,
                "normalized": p.normalized,
                "n": p.n,
                "current_baseline_id": p.current_baseline_id,
            }
            for p in baseline_proposals(session, plan)
        ]
        go_live = go_live_status(session)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "go_live": {
                        "approved": go_live.approved,
                        "seq": go_live.seq,
                        "by": go_live.by,
                        "words": go_live.words,
                    },
                    "thresholds": thresholds,
                    "baselines": baselines,
                },
                indent=2,
            )
        )
        return
    out.print(go_live.words, highlight=False)
    table = Table(
        *("task", "threshold", "in force", "proposed", "loosens", "plan seq", "proposed by"),
        title="Threshold changes awaiting approval (the value in force judges the task until then)",
    )
    for r in thresholds:
        table.add_row(
            r["task"],
            r["threshold"],
            str(r["in_force"]),
            str(r["proposed"]),
            "yes" if r["looser"] else "",
            str(r["plan_seq"]),
            r["proposed_by"] or "plan file (not recorded)",
        )
    out.print(fitted(table, out) if thresholds else "no threshold changes await approval", highlight=False)
    out.print(
        f"{len(baselines)} imported baseline(s) await approval (medmon baseline proposals)"
        if baselines
        else "no imported baselines await approval",
        highlight=False,
    )


@approvals_app.command("thresholds")
def approve_thresholds_command(
    plan_path: OptionalPlanArg = None,
    *,
    task: Annotated[str, typer.Option(help="The task whose proposed thresholds to put in force.")],
    by: Annotated[str, typer.Option(help="The approving owner's e-mail (task owner or clinical owner).")],
    reason: Annotated[str | None, typer.Option(help="The rationale, kept in the audit log (required).")] = None,
    committee_decision: Annotated[
        str | None,
        typer.Option(help="The committee decision allowing a lower approval minimum (min_score, subgroup_min_score)."),
    ] = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
    legacy_plan: LegacyPlanOption = None,
) -> None:
    """Approve a task's edited thresholds: from now on detection and reports judge the task by them.

    A running 'medmon serve' uses them from its next start. Exit 2 when refused (not an owner, no
    rationale, nothing proposed, or a lowered minimum without --committee-decision); exit 3 without
    --key (recorded as unauthenticated, not counted).
    """
    from medmon.monitor.governance.approvals import plan_task, require_approver
    from medmon.monitor.governance.audit import last_plan_text
    from medmon.monitor.governance.thresholds import approve_thresholds

    plan, engine = _recorded_engine(plan_path, legacy_plan, "approvals thresholds")
    try:
        with session_scope(engine) as session:
            last = last_plan_text(session)
            facts = {
                "task": task,
                "plan_sha256": last.details.get("sha256") if last else None,
                "reason": reason,
                "committee_decision": committee_decision,
            }
            identity = prove(
                plan,
                by=by,
                act="threshold_approved",
                subject=f"task:{task}",
                facts=facts,
                key=key,
                tool="medmon approvals thresholds",
            )
            if not identity.authenticated:
                require_approver(plan, plan_task(plan, task), by, reason)
                unproven(session, identity, "threshold_approved", f"task:{task}", facts, as_json)
            event = approve_thresholds(
                session,
                plan,
                task_id=task,
                by=identity.actor,
                reason=reason,
                now=utcnow(),
                committee_decision=committee_decision,
                details=identity.details(),
            )
            info = {
                "task": task,
                "approved_by": identity.actor,
                "identity": identity.words,
                "seq": event.seq,
                "thresholds": event.details["thresholds"],
                "changes": event.details["changes"],
                "reason": reason,
                "committee_decision": committee_decision,
            }
    except GovernanceError as exc:
        err.print(f"[red]refused:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    changed = ", ".join(f"{c['threshold']} {c['old']} -> {c['new']}" for c in info["changes"])
    out.print(
        f"task {task}: {changed} approved by {identity.words} (audit seq {info['seq']}); restart 'medmon serve' to "
        "apply them to detection",
        highlight=False,
    )


@approvals_app.command("go-live")
def go_live_command(
    plan_path: OptionalPlanArg = None,
    *,
    by: Annotated[str, typer.Option(help="The approver's e-mail (the clinical owner or the plan's approver).")],
    reason: Annotated[str | None, typer.Option(help="The rationale, e.g. the committee minute (required).")] = None,
    key: KeyOption = None,
    as_json: JsonOption = False,
    legacy_plan: LegacyPlanOption = None,
) -> None:
    """Approve go-live: the recorded plan, its risk tier, each task's thresholds and baseline in force.

    Until this is recorded by a proven person every surface says "not yet approved". The plan file
    is recorded first, so what is approved is what 'medmon check' would record. Exit 3 without --key.
    """
    from medmon.monitor.governance.golive import approve_go_live, go_live_approvers, go_live_facts

    plan, engine = _recorded_engine(plan_path, legacy_plan, "approvals go-live")
    try:
        with session_scope(engine) as session:
            facts = go_live_facts(session, plan) | {"reason": reason}
            identity = prove(
                plan,
                by=by,
                act="go_live_approved",
                subject="deployment:go-live",
                facts=facts,
                key=key,
                tool="medmon approvals go-live",
            )
            if not identity.authenticated:
                if by.strip().lower() not in go_live_approvers(plan):
                    raise GovernanceError(
                        f"{by} may not approve go-live; the plan names: {', '.join(go_live_approvers(plan))}"
                    )
                unproven(session, identity, "go_live_approved", "deployment:go-live", facts, as_json)
            event = approve_go_live(
                session, plan, by=identity.actor, reason=reason, details=identity.details(), now=utcnow()
            )
            info: dict[str, Any] = {"seq": event.seq, "approved_by": identity.actor, "identity": identity.words} | facts
    except GovernanceError as exc:
        err.print(f"[red]refused:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    out.print(
        f"go-live approved by {identity.words} (audit seq {info['seq']}): plan seq {info['plan_seq']}, "
        f"risk tier {info['risk_tier']}, thresholds and baselines of {', '.join(info['tasks'])}",
        highlight=False,
    )
