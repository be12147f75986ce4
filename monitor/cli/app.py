"""The ``medmon`` command line. Each command parses options, calls one function, and prints.

Exit codes: 0 success, 1 the job ran and found a problem (e.g. alerts firing in ``probe run``),
2 bad input (plan, files, options, an unset variable the plan names), 3 a service or endpoint
could not be reached, 4 the endpoint answered but refused every call (a bad key, no access, an
unknown model or a parameter it rejects): the fix is in the plan or the secrets, not the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from medmon.monitor.cli.plan_arg import PlanArg, err, out
from medmon.monitor.errors import MedmonError, PlanError

if TYPE_CHECKING:
    from medmon.monitor.plan.model import Plan

app = typer.Typer(
    help="medmon: watch a deployed clinical LLM against its MedHELM evidence.\n\n"
    "Every command that reads a plan takes it as its first argument: medmon COMMAND PLAN "
    "[OPTIONS] (or set MEDMON_PLAN). The older '--plan PLAN' of audit, change and baseline "
    "approve/proposals still works, with a deprecation warning.",
    no_args_is_help=True,
    add_completion=False,
)

EXIT_FOUND, EXIT_INPUT, EXIT_UNREACHABLE, EXIT_REFUSED = 1, 2, 3, 4


def _fail(exc: MedmonError, code: int = EXIT_INPUT) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
    return typer.Exit(code)


def _print_version(value: bool) -> None:
    if value:
        from medmon import __version__

        out.print(f"medmon {__version__}", highlight=False)
        raise typer.Exit()


PRIVATE_UMASK = 0o077  # files 0600, folders 0700: what medmon writes may hold patient-adjacent data


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print medmon's version and exit.")
    ] = False,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            envvar="MEDMON_LOG_LEVEL",
            help="DEBUG, INFO, WARNING, ERROR: what is logged to stderr (default: INFO for serve and worker, "
            "WARNING otherwise). Secrets are masked in every line, libraries' included.",
        ),
    ] = None,
    log_file: Annotated[
        Path | None, typer.Option("--log-file", help="Also append log lines to this file (masked the same way).")
    ] = None,
) -> None:
    """medmon: watch a deployed clinical LLM against its MedHELM evidence."""
    from medmon.scrub import setup_logging

    os.umask(PRIVATE_UMASK)  # database, logs, reports, exports: readable by this account only

    try:
        setup_logging(log_level, log_file=log_file)
    except (ValueError, OSError) as exc:
        err.print(f"error: --log-level/--log-file: {exc}", markup=False, highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    if log_level:  # the dashboard's own process logs at the same level
        os.environ["MEDMON_LOG_LEVEL"] = log_level


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the plan.")] = Path("plan.yaml"),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter plan to edit for your deployment."""
    from medmon.monitor.plan.starter import STARTER_PLAN

    if path.exists() and not force:
        err.print(f"{path} exists; use --force to overwrite")
        raise typer.Exit(EXIT_INPUT)
    path.write_text(STARTER_PLAN)
    out.print(f"wrote {path}; edit it, then run: medmon check {path}")


@app.command()
def check(
    plan_path: PlanArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    require_env: Annotated[
        bool,
        typer.Option(
            "--require-env",
            help="Check the environment the plan will run in: an unset variable it names "
            "(endpoint keys and headers, route secrets) is an error, not a note.",
        ),
    ] = False,
) -> None:
    """Validate a plan: every problem with its field path and line; exit 2 if any."""
    from medmon.monitor.governance.audit import local_actor
    from medmon.monitor.governance.checks import check_plan, plan_notes, threshold_notes

    try:
        plan = check_plan(
            plan_path,
            record_by=local_actor("medmon check"),  # audits a changed plan if its db exists
            require_env=require_env,
        )
    except PlanError as exc:
        if as_json:
            out.print_json(
                json.dumps(
                    {
                        "ok": False,
                        "source": exc.source,
                        "issues": [{"path": i.path, "line": i.line, "message": i.message} for i in exc.issues],
                    }
                )
            )
            raise typer.Exit(EXIT_INPUT) from None
        raise _fail(exc) from None
    notes = plan_notes(plan) + threshold_notes(plan)  # an unapproved threshold edit is proposed, not in force
    if as_json:
        out.print_json(json.dumps({"ok": True, "tasks": [t.id for t in plan.tasks], "notes": notes}))
    else:
        out.print(f"[green]ok[/green]: {plan_path} — {len(plan.tasks)} task(s): {', '.join(t.id for t in plan.tasks)}")
        for note in notes:
            out.print(f"note: {note}", highlight=False, markup=False)


probe_app = typer.Typer(help="Run probes by hand.", no_args_is_help=True)
app.add_typer(probe_app, name="probe")


@probe_app.command("run")
def probe_run(
    plan_path: PlanArg,
    task: Annotated[list[str] | None, typer.Option(help="Only these task ids (repeatable).")] = None,
    deliver: Annotated[
        bool,
        typer.Option(
            "--deliver/--no-deliver",
            help="Send the notifications the run creates to the plan's routes (the "
            "default, so a cron-driven deployment pages someone); with "
            "--no-deliver they wait in the outbox for 'medmon serve'.",
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Probe every task (or the named ones) once now, store and evaluate the results, deliver alerts.

    Failed calls are summarised by cause (e.g. '20 x HTTP 401 Incorrect API key'). Exit 3 when
    a task's every call failed to reach the endpoint, 4 when the endpoint refused them.
    """
    import random

    from rich.progress import Progress

    from medmon.alerts import DeliveryPolicy, deliver_due
    from medmon.db import utcnow
    from medmon.monitor.governance.thresholds import in_force
    from medmon.monitor.plan.context import load_context
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.plan.privacy import mask_logs
    from medmon.monitor.plan.routing import build_channels, require_endpoint_env
    from medmon.monitor.runs.pipeline import run_task_probe
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
        mask_logs(plan)
        require_endpoint_env(plan)  # every call would fail with 401: refuse now, naming the variable
        channels = build_channels(plan) if deliver else {}
        engine = make_engine(plan.storage.url)
        plan = in_force(engine, plan)  # judged by the approved thresholds, as the service judges
        contexts = [load_context(plan, t) for t in plan.tasks if not task or t.id in task]
    except MedmonError as exc:
        raise _fail(exc) from None
    outcomes = []
    with Progress(console=err, transient=True, disable=as_json) as progress:
        bar = progress.add_task("probing", total=len(contexts))
        for ctx in contexts:
            outcomes.append(run_task_probe(engine, plan, ctx, rng=random.Random(), now=utcnow, purpose="manual"))
            progress.advance(bar)
    report = deliver_due(engine, channels, utcnow, DeliveryPolicy()) if channels else None
    rows: list[dict[str, Any]] = [  # as printed with --json
        {
            "task": o.task_id,
            "run": o.run_id,
            "results": o.results,
            "errors": o.errors,
            "mean_score": o.mean_score,
            "failures": o.causes,
            "alerts": [s.summary for s in o.signals if s.firing],
        }
        for o in outcomes
    ]
    delivery = (
        None
        if report is None
        else {"delivered": report.delivered, "retrying": report.retried + report.waiting, "dead": report.dead}
    )
    if as_json:
        out.print_json(json.dumps({"runs": rows, "delivery": delivery}))
    else:
        for r in rows:
            out.print(
                f"{r['task']}: run {r['run']}, {r['results']} results, {r['errors']} errors, "
                + (
                    "no answer could be scored"
                    if r["mean_score"] is None
                    else f"mean score {round(r['mean_score'], 3)} (this run)"
                )
            )
            for cause, count in r["failures"].items():
                out.print(f"  {count} x {cause}", highlight=False, markup=False)
            for a in r["alerts"]:
                out.print(f"  [red]ALERT[/red] {a}")
        if delivery is not None and any(delivery.values()):
            out.print(
                f"notifications: {delivery['delivered']} delivered, {delivery['retrying']} left for retry "
                f"by 'medmon serve', {delivery['dead']} dead"
            )
    failed = [o for o in outcomes if o.results and o.errors == o.results]
    if any(o.refused * 2 > o.errors for o in failed):
        raise typer.Exit(EXIT_REFUSED)
    if failed:
        raise typer.Exit(EXIT_UNREACHABLE)
    if any(r["alerts"] for r in rows):
        raise typer.Exit(EXIT_FOUND)


@probe_app.command("identity")
def probe_identity(
    plan_path: PlanArg, as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False
) -> None:
    """Ask the identity canaries once now and test which weights answer (the plan's ``identity`` section).

    The first runs form the go-live sample; later ones are tested against it. Other weights
    under the same model name are a model change: finding, incident, change record (exit 1),
    as a changed model string is; exit 3 when every call failed.
    """
    from medmon.db import utcnow
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.plan.privacy import mask_logs
    from medmon.monitor.plan.routing import require_endpoint_env
    from medmon.monitor.runs.identity import run_identity_probe
    from medmon.monitor.storage import make_engine

    try:
        plan = load_plan(plan_path)
        mask_logs(plan)
        require_endpoint_env(plan)
        engine = make_engine(plan.storage.url)
    except MedmonError as exc:
        raise _fail(exc) from None
    o = run_identity_probe(engine, plan, now=utcnow)
    update = o.update
    alerts = [s.summary for s in o.signals if s.firing]
    row: dict[str, Any] = {
        "run": o.run_id,
        "answers": o.answers,
        "errors": o.errors,
        "served_model": o.served_model,
        "missing_logprobs": o.missing_logprobs,
        "go_live_complete": bool(update is not None and update.n > 0),
        "evidence": round(update.evidence, 3) if update is not None else None,
        "model_change": o.changed,
        "alerts": alerts,
    }
    code = EXIT_FOUND if o.changed else EXIT_UNREACHABLE if o.answers and o.errors == o.answers else 0
    if as_json:
        out.print_json(json.dumps(row))
        raise typer.Exit(code)
    state = "tested" if row["go_live_complete"] else "go-live sample"
    out.print(
        f"identity: run {o.run_id}, {o.answers} answers ({o.errors} failed) from {o.served_model or 'no model'}; "
        f"{state}, evidence {row['evidence']}",
        highlight=False,
        markup=False,
    )
    if o.missing_logprobs:
        out.print(f"  {o.missing_logprobs} answers without log-probabilities: set identity.method: answers")
    for a in alerts:
        out.print(f"  [red]ALERT[/red] {a}")
    raise typer.Exit(code)


@app.command()
def serve(
    plan_path: PlanArg,
    health_port: Annotated[
        int | None,
        typer.Option(
            help="Port for /healthz and /metrics (0 picks a free one; default: the plan's service.health_port)."
        ),
    ] = None,
    traffic_port: Annotated[
        int | None,
        typer.Option(
            help="Port of the OTLP/HTTP traces receiver (0 picks a free one; default: the plan's traffic.port)."
        ),
    ] = None,
    stop_timeout: Annotated[float, typer.Option(help="Seconds to let probes in flight finish on SIGTERM.")] = 30.0,
) -> None:
    """Run the monitoring service: scheduled probes, detection and alert delivery, until stopped."""
    from medmon.monitor.service.serve import ServiceOptions, run_service

    try:
        result = run_service(
            plan_path,
            options=ServiceOptions(health_port=health_port, traffic_port=traffic_port, stop_timeout_s=stop_timeout),
        )
    except MedmonError as exc:
        raise _fail(exc) from None
    if result.abandoned_runs:
        # Probe threads still waiting on the model would hold the process open; their runs are
        # already marked interrupted, so leave now.
        sys.stderr.flush()
        os._exit(0)


def dashboard_command(
    port: int, host: str = "127.0.0.1", allowed_hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
) -> list[str]:
    """``streamlit run`` of the dashboard; Streamlit refuses websockets whose Host is not allowed
    (DNS rebinding), and the app checks each session's Host again."""
    app_path = Path(str(resources.files("medmon.dashboards").joinpath("app.py")))
    hosts = [arg for name in allowed_hosts for arg in ("--server.allowedHosts", name)]
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path),
        "--server.address",
        host,
        *hosts,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--client.showErrorDetails",
        "none",  # a traceback is logged (masked), never shown to a viewer
    ]  # no developer menu ('Deploy', rerun) for committee members


def streamlit_secret_files(cwd: Path | None = None) -> list[Path]:
    """Where ``streamlit run`` looks for ``secrets.toml`` (the home folder, then the working folder)."""
    return [Path.home() / ".streamlit" / "secrets.toml", (cwd or Path.cwd()) / ".streamlit" / "secrets.toml"]


def auth_section_found(files: list[Path]) -> bool:
    """Whether any of ``files`` holds an ``[auth]`` table (an unreadable file counts: the app fails closed)."""
    import tomllib

    for path in files:
        if not path.exists():
            continue
        try:
            if "auth" in tomllib.loads(path.read_text("utf-8")):
                return True
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return True
    return False


@app.command()
def dashboard(
    plan_path: PlanArg,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8501,
    address: Annotated[
        str,
        typer.Option(
            help="Address to listen on; keep 127.0.0.1 and put a TLS reverse proxy with sign-in in front for others."
        ),
    ] = "127.0.0.1",
    allow_local_actions: Annotated[
        bool,
        typer.Option(
            "--allow-local-actions",
            help="Without sign-in, let the local user acknowledge, resolve and silence (recorded as the "
            "OS account, labelled unauthenticated). Only honoured on a loopback address.",
        ),
    ] = False,
) -> None:
    """Open the governance dashboard for a plan (Streamlit).

    Without sign-in it is read-only unless --allow-local-actions is given on a loopback address;
    it answers only to its own host names. A plan with dashboard.auth: oidc refuses to start
    until an [auth] section is found in .streamlit/secrets.toml.
    """
    from medmon.db import resolve_url
    from medmon.monitor.plan.model import dashboard_hosts, load_plan
    from medmon.monitor.plan.privacy import mask_logs

    try:
        plan = load_plan(plan_path)
    except PlanError as exc:
        raise _fail(exc) from None
    mask_logs(plan)
    files = streamlit_secret_files()
    signed_in = auth_section_found(files)
    if plan.dashboard.auth == "oidc" and not signed_in:
        err.print(
            f"error: {plan_path}: dashboard.auth is 'oidc' but no [auth] section was found in "
            f"{' or '.join(str(f) for f in files)}; refusing to start without sign-in",
            markup=False,
        )
        raise typer.Exit(EXIT_INPUT)
    local = allow_local_actions and address in ("127.0.0.1", "localhost", "::1")
    if allow_local_actions and not local:
        err.print(f"warning: --allow-local-actions is ignored on {address} (not a loopback address)")
    env = os.environ | {
        "MEDMON_PLAN": str(plan_path.resolve()),
        "MEDMON_DATABASE_URL": resolve_url(plan.storage.url),
        "DO_NOT_TRACK": "1",
        "MEDMON_DASHBOARD_LOCAL_ACTIONS": "1" if local else "0",
    }
    mode = (
        "sign-in: OIDC"
        if signed_in
        else ("unauthenticated, local actions allowed" if local else "unauthenticated, read-only")
    )
    out.print(f"dashboard: http://{address}:{port}  ({mode}, listening on {address})")
    raise typer.Exit(run_forwarding_signals(dashboard_command(port, address, dashboard_hosts(plan, address)), env))


def run_forwarding_signals(cmd: list[str], env: dict[str, str]) -> int:
    """Run ``cmd`` and hand it SIGTERM and SIGINT: stopping medmon stops what it started, and medmon
    exits with the child's code (a service manager then sees the dashboard's own exit)."""
    import signal

    child = subprocess.Popen(cmd, env=env)

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command()
def demo(
    no_dashboard: Annotated[bool, typer.Option("--no-dashboard", help="Run headless.")] = False,
    workdir: Annotated[Path, typer.Option(help="Folder for the demo plan and database.")] = Path("medmon-demo"),
    port: Annotated[int, typer.Option(help="Dashboard port.")] = 8501,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Run the whole job on a SIMULATED model: probes, drift, a signed alert, the dashboard."""
    from medmon.monitor.service.demo import run_demo

    proc: list[subprocess.Popen[bytes]] = []

    def start_dashboard(plan: Plan) -> None:
        if no_dashboard:
            return
        env = os.environ | {
            "MEDMON_PLAN": str((workdir / "plan.yaml").resolve()),
            "MEDMON_DATABASE_URL": plan.storage.url,
            "DO_NOT_TRACK": "1",
            "MEDMON_DASHBOARD_LOCAL_ACTIONS": "1",
        }
        proc.append(
            subprocess.Popen(dashboard_command(port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        out.print(
            f"[bold]dashboard:[/bold] http://127.0.0.1:{port}  (unauthenticated, local actions allowed, "
            "listening on 127.0.0.1)"
        )

    say = (lambda _m: None) if as_json else (lambda m: out.print(m, highlight=False))
    try:
        result = run_demo(workdir, dashboard_url=f"http://127.0.0.1:{port}", say=say, on_start=start_dashboard)
    except MedmonError as exc:
        for p in proc:
            p.terminate()
        raise _fail(exc) from None
    summary = {
        "seconds": round(result.seconds, 1),
        "probe_results": result.probe_results,
        "degraded_at_s": result.degraded_at_s,
        "first_alert_s": result.first_alert_s,
        "incidents": [asdict(i) for i in result.incidents],
        "alerts": result.alerts,
        "webhooks_received": len(result.delivered),
        "bad_signatures": result.rejected_signatures,
        "plan": str(result.plan_path),
        "database": str(result.database),
    }
    open_command = f"medmon dashboard {result.plan_path}"
    if as_json:
        out.print_json(json.dumps(summary | {"dashboard_command": open_command}))
    else:
        out.print(
            f"\n[bold]demo finished[/bold] in {summary['seconds']}s: {result.probe_results} probe results stored; "
            f"{len(result.delivered)} signed webhooks received, {result.rejected_signatures} bad signatures"
        )
        out.print(f"{len(result.incidents)} incident(s) from {len(result.alerts)} alert signal(s):")
        for i in result.incidents:
            out.print(f"  {i.line()}", highlight=False)
    if proc:
        if sys.stdin.isatty() and not as_json:
            out.print(f"dashboard still at http://127.0.0.1:{port} — press Ctrl-C to stop")
            try:
                proc[0].wait()
            except KeyboardInterrupt:
                pass
        for p in proc:
            p.terminate()
    if not as_json:  # the last line, whichever way the demo ended: how to look at what it found
        out.print(f"open the dashboard on this database with:\n  {open_command}", highlight=False)
    if not result.alerts:
        raise typer.Exit(EXIT_FOUND)


def _mount_subcommands() -> None:
    """Sub-commands that live in their own modules under ``medmon/monitor/cli``."""
    from medmon.monitor.cli.approvals import approvals_app, approve_command, proposals_command
    from medmon.monitor.cli.audit import app as audit_app
    from medmon.monitor.cli.baseline import app as baseline_app
    from medmon.monitor.cli.change import app as change_app
    from medmon.monitor.cli.drift import app as drift_app
    from medmon.monitor.cli.oversight import app as oversight_app
    from medmon.monitor.cli.report import report_command
    from medmon.monitor.cli.retention import app as retention_app
    from medmon.monitor.cli.score import score_command
    from medmon.monitor.cli.service import db_app, worker
    from medmon.monitor.cli.simulate import simulate
    from medmon.monitor.cli.traffic import app as traffic_app

    baseline_app.command("approve")(approve_command)
    baseline_app.command("proposals")(proposals_command)
    app.add_typer(baseline_app, name="baseline")
    app.add_typer(approvals_app, name="approvals")
    app.command()(worker)
    app.add_typer(db_app, name="db")
    app.add_typer(audit_app, name="audit")
    app.add_typer(change_app, name="change")
    app.command("report")(report_command)
    app.add_typer(drift_app, name="drift")
    app.command()(simulate)
    app.add_typer(oversight_app, name="oversight")
    app.add_typer(traffic_app, name="traffic")
    app.add_typer(retention_app, name="retention")
    app.command("score")(score_command)


_mount_subcommands()


def main() -> None:
    app()
