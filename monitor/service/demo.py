"""The embedded default: the whole job on one machine, nothing to configure.

A SIMULATED clinical model serves bundled canaries on 127.0.0.1 and degrades on a schedule
(an accuracy drop, a cost rise, a silent model-version swap); ``medmon serve``'s scheduler replays
the canaries through the ``openai`` client on an accelerated clock; detectors compare every stream
with its baseline; alerts go, signed, to a local webhook receiver and to the dashboard.

A SIMULATED clinical application (``medmon.monitor.service.demo_app``, a process of its own)
calls the same model through an ``openai`` client traced by the official OpenTelemetry
instrumentation, and exports its spans to medmon's traffic receiver: the cost rise shows up in
real traffic too. It makes ``app_calls_per_probe`` calls after each probe, so the simulator's
request count, which drives its phases, stays in step with the scenario.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import Session, func, select

from medmon.alerts import Alert, incident_members, incident_title, list_incidents
from medmon.db import session_scope
from medmon.monitor.governance.audit import record_plan
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.plan.routing import build_channels
from medmon.monitor.service.clock import AcceleratedClock
from medmon.monitor.service.receiver import create_receiver as create_traffic_receiver
from medmon.monitor.service.scheduler import build_service_scheduler, register_runtime, unregister_runtime
from medmon.monitor.service.serve import make_dispatch
from medmon.monitor.service.webserver import RunningServer, serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator

SECRET_ENV = "MEDMON_DEMO_WEBHOOK_SECRET"
SIM_KEY_ENV = "MEDMON_DEMO_API_KEY"
TRAFFIC_TOKEN_ENV = "MEDMON_DEMO_TRAFFIC_TOKEN"
APP_SERVICE = "discharge-assistant"
DEMO_RUNTIME = "demo"
DEMO_PACK = "clinical_knowledge_mcq"


@dataclass(frozen=True)
class DemoScenario:
    """When the simulated model degrades, counted in requests it has served."""

    sample_size: int = 20
    drop_after: int = 600
    cost_after: int = 1000
    swap_after: int = 1400
    seconds_per_probe: float = 0.4
    timeout_s: float = 110.0
    app_calls_per_probe: int = 5  # the simulated application's calls after each probe (0: no application)

    def served(self, canary_requests: int) -> int:
        """Requests the simulator has served once the canaries alone have made ``canary_requests``."""
        return canary_requests * (self.sample_size + self.app_calls_per_probe) // self.sample_size

    def phases(self) -> list[Phase]:
        """The phases, at the same probe as without the application (``*_after`` count canary requests)."""
        return [
            Phase(0, accuracy=0.85, label="baseline"),
            Phase(self.served(self.drop_after), accuracy=0.55, label="accuracy drop"),
            Phase(
                self.served(self.cost_after),
                accuracy=0.55,
                extra_completion_tokens=400,
                label="accuracy drop + cost rise",
            ),
            Phase(
                self.served(self.swap_after),
                accuracy=0.55,
                extra_completion_tokens=400,
                model="medmon-simulator/clinical-v2",
                fingerprint="fp_sim_0002",
                label="silent model swap",
            ),
        ]


PLAN_TEMPLATE = """\
# medmon demo plan: the model below is a SIMULATOR on 127.0.0.1, not a real clinical model.
version: 1
use_case:
  name: Clinical knowledge assistant (simulated demo)
  intended_use: Answer clinicians' pharmacology and acute-care knowledge questions.
  intended_users: [hospitalists, clinical pharmacists]
  workflow: Answers are advisory; a clinician verifies before acting.
  consequence_of_error: A wrong answer could lead to a medication error if not verified.
  risk_tier: high
owners:
  clinical: {{name: Dr. Demo Owner, email: cmio@hospital.example}}
  technical: {{name: Demo Data Science, email: ds-team@hospital.example}}
  on_call_route: demo-receiver
deployment:
  name: production
  base_url: {base_url}
  model: medmon-simulator/clinical-v1
  api_key_env: {key_env}
  price: {{input_per_mtok: 5.0, output_per_mtok: 15.0}}
  timeout_s: 10
  max_concurrency: 8
  temperature: 0
  max_tokens: 64
tasks:
  - id: knowledge-qa
    benchmark: med_qa
    canaries: {{pack: {pack}}}
    schedule: 1h
    sample_size: {sample_size}
    thresholds:
      min_score: 0.70
      tolerated_drop: 0.05
      cost_budget_per_call: 0.002
      latency_slo_s: 5
    owner: {{name: Dr. Demo Owner, email: cmio@hospital.example}}
    subgroups: [age_band, sex]
alerts:
  routes:
    - {{name: demo-receiver, type: webhook, url: {receiver_url}, secret_env: {secret_env}}}
  repeat_interval: 12h
  # The accelerated clock runs ~40 simulated minutes between alert passes, and a busy machine can hold
  # a pass back for seconds, which are simulated days: only a week-long gap is the monitor stopping.
  heartbeat_tolerance: 7d
  # On a busy machine a probe can outlast its accelerated hour and the next one is skipped:
  # simulated hours pass without data that a real deployment would not lose.
  stale_after_intervals: 72
  dashboard_url: {dashboard_url}
storage:
  url: sqlite:///{db}
service: {{seed: 5}}  # the same canaries on every run
governance:
  medhelm:
    categories: [Clinical Decision Support]
    subcategories: [Providing Clinical Knowledge Support]
    benchmarks: [med_qa]
  evidence:
    summary: Illustrative figures for the simulated model (not a published result).
    limitations: ["The simulator answers from a fixed key; it demonstrates monitoring, not a model."]
  controls:
    decision_criteria: Every task at or above its approval minimum, within its tolerated drop.
    reevaluation: {{on_detected_change: true, repeats: 1}}
privacy:
  redactor: builtin
  store_text: true
traffic:
  # The SIMULATED clinical application's own calls, as OpenTelemetry GenAI spans.
  port: 0
  token_env: {traffic_token_env}
  routes:
    - {{task: knowledge-qa, service: {app_service}}}
  reference_window: 3s
  reference_min_calls: 60
  detect_every: 0.5s
  daily_budget_usd: 5
"""


@dataclass(frozen=True)
class DemoIncident:
    """One incident at the end of the demo, with the rules of its member signals."""

    id: int
    title: str
    severity: str
    status: str
    summary: str
    signals: list[str]

    def line(self) -> str:
        n = len(self.signals)
        return f"#{self.id} {self.severity:8} {self.status:12} {self.title} ({n} signal{'s' if n != 1 else ''})"


def plain(summary: str) -> str:
    """An alert's sentence without the test's figures in brackets at its end (the dashboard and the
    report keep them): the console tells the story, the pages carry the statistics.

    >>> plain("knowledge-qa: cost per call exceeds its budget (estimate 1.000, 95% CI 1.000 to 1.000, n=12)")
    'knowledge-qa: cost per call exceeds its budget'
    """
    return re.sub(r" \((?:estimate|paired difference) [^()]*\)$", "", summary)


def demo_incidents(session: Session) -> list[DemoIncident]:
    """Every incident in the database, oldest first."""
    out = []
    for inc in reversed(list_incidents(session)):
        members = incident_members(session, inc.id or 0)
        status = "resolved" if inc.closed_at else "acknowledged" if inc.acknowledged_at else "open"
        out.append(
            DemoIncident(
                inc.id or 0,
                incident_title(inc, members),
                inc.severity.value,
                status,
                inc.summary,
                [a.rule for a in members],
            )
        )
    return out


@dataclass
class DemoResult:
    plan_path: Path
    database: Path
    seconds: float
    probe_results: int
    alerts: list[str]
    incidents: list[DemoIncident]
    delivered: list[dict[str, object]]
    rejected_signatures: int
    first_alert_s: float | None
    degraded_at_s: float | None
    events: list[str] = field(default_factory=list)


def _start_app(scenario: DemoScenario, sim_url: str, model: str, traffic_url: str) -> subprocess.Popen[str]:
    """Start the application and wait until it is set up (its imports would otherwise stall the first probes)."""
    app = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medmon.monitor.service.demo_app",
            "--base-url",
            f"{sim_url}/v1",
            "--model",
            model,
            "--traffic",
            traffic_url,
            "--token",
            os.environ[TRAFFIC_TOKEN_ENV],
            "--pack",
            DEMO_PACK,
            "--service",
            APP_SERVICE,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    if app.stdout is not None:
        app.stdout.readline()  # "ready", or "" if it failed to start (the demo then runs without it)
    return app


def _app_calls(app: subprocess.Popen[str], n: int) -> None:
    """Ask the application for ``n`` calls and wait until their spans are exported."""
    if app.poll() is not None or app.stdin is None or app.stdout is None:
        return
    try:
        app.stdin.write(f"{n}\n")
        app.stdin.flush()
        app.stdout.readline()
    except (BrokenPipeError, OSError):
        pass


def _stop_app(app: subprocess.Popen[str]) -> None:
    if app.stdin is not None:
        try:
            app.stdin.close()
        except OSError:
            pass
    try:
        app.wait(10)
    except subprocess.TimeoutExpired:
        app.kill()
        app.wait(5)


def run_demo(
    workdir: Path,
    *,
    scenario: DemoScenario | None = None,
    dashboard_url: str = "http://127.0.0.1:8501",
    say: Callable[[str], None] = print,
    on_start: Callable[[Plan], None] | None = None,
) -> DemoResult:
    """Run the demo scenario to its end (every expected alert received) or its timeout."""
    from medmon.alerts.receiver import create_receiver

    scenario = scenario or DemoScenario()
    workdir.mkdir(parents=True, exist_ok=True)
    db = (workdir / "medmon.db").resolve()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.environ.setdefault(SECRET_ENV, secrets.token_hex(16))
    os.environ.setdefault(SIM_KEY_ENV, "simulator-needs-no-key")
    os.environ.setdefault(TRAFFIC_TOKEN_ENV, secrets.token_hex(16))
    pack_canaries = load_pack(DEMO_PACK).canaries
    sim_app = create_simulator(pack_canaries, scenario.phases(), seed=11)
    receiver_app = create_receiver(os.environ[SECRET_ENV])
    servers: list[RunningServer] = []
    sim = serve_in_thread(sim_app)
    servers.append(sim)
    receiver = serve_in_thread(receiver_app)
    servers.append(receiver)
    plan_path = workdir / "plan.yaml"
    plan_path.write_text(
        PLAN_TEMPLATE.format(
            base_url=f"{sim.url}/v1",
            key_env=SIM_KEY_ENV,
            pack=DEMO_PACK,
            sample_size=scenario.sample_size,
            receiver_url=f"{receiver.url}/alerts",
            secret_env=SECRET_ENV,
            dashboard_url=dashboard_url,
            db=db,
            traffic_token_env=TRAFFIC_TOKEN_ENV,
            app_service=APP_SERVICE,
        )
    )
    plan = load_plan(plan_path)
    engine = make_engine(plan.storage.url)
    if on_start is not None:
        on_start(plan)
    say(f"SIMULATED model (not a real LLM) on {sim.url}/v1; webhook receiver on {receiver.url}/alerts")
    say(f"plan: {plan_path}   database: {db}")
    traffic = serve_in_thread(create_traffic_receiver(engine, plan, token=os.environ[TRAFFIC_TOKEN_ENV]))
    servers.append(traffic)
    app = _start_app(scenario, sim.url, plan.deployment.model, traffic.url) if scenario.app_calls_per_probe else None
    if app is not None:
        say(
            f"SIMULATED clinical application ({APP_SERVICE}) traced by the OpenTelemetry OpenAI instrumentation, "
            f"sending its spans to {traffic.url}/v1/traces"
        )
    clock = AcceleratedClock(
        scale=3600 / scenario.seconds_per_probe,  # probes fire half-way through simulated hours
        start=datetime.now(UTC).replace(minute=30, second=0, microsecond=0),
    )
    anchor = datetime.now(UTC)
    with session_scope(engine) as session:  # the governance record starts with the plan
        record_plan(session, plan_path.read_text("utf-8"), str(plan_path), "medmon demo", clock())
    # On an accelerated clock a probe can outlast its simulated hour; APScheduler then warns that it
    # skipped the next one. That is the demo's pace, not news: keep the console for the story.
    logging.getLogger("apscheduler.scheduler").setLevel(logging.ERROR)
    state = sim_app.state.sim
    events: list[str] = []
    started = time.monotonic()
    degraded_at: list[float] = []
    phase_label = [state.phase().label]

    told: dict[int, int] = {}  # incident id -> member signals already reported

    def tell_phase() -> None:
        label = state.phase().label
        if label != phase_label[0]:
            phase_label[0] = label
            if not degraded_at:
                degraded_at.append(time.monotonic() - started)
            events.append(msg := f"[{time.monotonic() - started:5.1f}s] simulator phase -> {label}")
            say(msg)

    def on_outcome(outcome: object) -> None:
        tell_phase()
        if app is not None:
            _app_calls(app, scenario.app_calls_per_probe)
        if getattr(outcome, "signals", []):
            tell_incidents()

    def tell_incidents() -> None:
        at = f"[{time.monotonic() - started:5.1f}s]"
        with Session(engine) as s:
            for inc in demo_incidents(s):
                before = told.get(inc.id)
                if before is None:
                    msg = f"{at} INCIDENT #{inc.id} opened ({inc.severity}): {inc.title} — {plain(inc.summary)}"
                elif len(inc.signals) > before:
                    msg = f"{at}   #{inc.id} {inc.title}: {len(inc.signals)} signals agree"
                else:
                    continue
                told[inc.id] = len(inc.signals)
                events.append(msg)
                if before is None:  # a signal joining an open incident is evidence, not news: the summary counts them
                    say(msg)

    # The production scheduler and executor, on the accelerated clock. The receiver checks span times on the
    # real clock (the application's); findings are dated on the demo's.
    _, runtime = make_dispatch(engine, plan, clock, on_outcome=on_outcome)
    register_runtime(DEMO_RUNTIME, runtime)
    scheduler = build_service_scheduler(
        engine,
        plan,
        DEMO_RUNTIME,
        build_channels(plan),
        now=clock,
        delivery_every_s=0.25,
        time_scale=clock.scale,
        anchor=anchor,
    )
    receiver_state = receiver_app.state.receiver
    expected = {"score", "cost", "served_model"} | ({"traffic_cost"} if app is not None else set())
    first_alert: float | None = None
    scheduler.resume()
    try:
        while time.monotonic() - started < scenario.timeout_s:
            time.sleep(0.2)
            with receiver_state.lock:
                got = {
                    a["labels"]["metric"]
                    for r in receiver_state.received
                    for a in r.body["alerts"]
                    if a["status"] == "firing"
                }
                if got and first_alert is None:
                    first_alert = time.monotonic() - started
            if expected <= got:
                break
    finally:
        scheduler.shutdown(wait=True)
        unregister_runtime(DEMO_RUNTIME)
        from medmon.alerts import deliver_due

        deliver_due(engine, build_channels(plan), clock)
        if app is not None:
            _stop_app(app)
        for server in servers:
            server.stop()
    tell_phase()  # what happened after the last probe's report (the swap the final alert is about)
    tell_incidents()
    with Session(engine) as s:
        alerts = [f"{a.severity.value:8} {a.status.value:9} {a.summary}" for a in s.exec(select(Alert)).all()]
        incidents = demo_incidents(s)
        probe_results = int(s.exec(select(func.count()).select_from(ProbeResult)).one())
    with receiver_state.lock:
        delivered = [r.body for r in receiver_state.received]
    return DemoResult(
        plan_path=plan_path,
        database=db,
        seconds=time.monotonic() - started,
        probe_results=probe_results,
        alerts=alerts,
        incidents=incidents,
        delivered=delivered,
        rejected_signatures=receiver_state.rejected,
        first_alert_s=first_alert,
        degraded_at_s=degraded_at[0] if degraded_at else None,
        events=events,
    )
