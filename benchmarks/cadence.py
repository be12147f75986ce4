"""Adaptive cadence, measured through the service: hours from a 0.80 -> 0.70 drop's onset to the page.

Each deployment is the plan ``medmon init`` writes (its task probed every hour, 20 canaries a
probe, the go-live reference of 5 answers per canary), pointed at ``medmon simulate``'s model
served over HTTP on 127.0.0.1, with its on-call webhook route delivering to a signed-webhook
receiver on 127.0.0.1. The service's own scheduler is built (``build_service_scheduler``: the
stored probe job, the cadence pass) and driven by a moving clock instead of the wall clock: the
clock jumps to the next time the probe job's trigger fires (the trigger adaptive cadence
rescheduled, or the plan's), the job runs as APScheduler would run it (``fire_probe``: slot,
probe, detectors, alert rules, incidents, cadence), then the alert pass delivers what is due.
The page is the first alert notification about the task the receiver accepts after the onset;
the trial goes on to the first page from a drift detector (the stream rules, not the fixed
``min_score`` rule) or gives up.

The same deployments (same seeds) run twice: with the starter plan's ``adaptive_cadence`` and
with it turned off. Reported per arm: hours and answers from onset to the page and to the first
drift-detector page (mean, median, max), the rule that paged, extra probes run (before and after
the onset) and refused, pages before the onset (false alarms).

    .venv/bin/python benchmarks/cadence.py                      # 4 deployments, drop 18 h after start
    .venv/bin/python benchmarks/cadence.py --deployments 3 --onset-hours 18 280  # also after the reference grew
    .venv/bin/python benchmarks/cadence.py --json cadence.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DO_NOT_TRACK", "1")

import yaml  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from medmon.alerts import DeliveryPolicy  # noqa: E402
from medmon.alerts.receiver import create_receiver  # noqa: E402
from medmon.monitor.plan.model import Plan, parse_plan  # noqa: E402
from medmon.monitor.plan.routing import build_channels  # noqa: E402
from medmon.monitor.plan.starter import knowledge_starter  # noqa: E402
from medmon.monitor.service.cadence_ledger import extra_used  # noqa: E402
from medmon.monitor.service.scheduler import (  # noqa: E402
    build_service_scheduler,
    cadence_job,
    delivery_job,
    fire_probe,
    register_runtime,
    unregister_runtime,
)
from medmon.monitor.service.serve import make_dispatch  # noqa: E402
from medmon.monitor.service.webserver import serve_in_thread  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import ProbeResult  # noqa: E402
from medmon.probes.packs import load_pack  # noqa: E402
from medmon.probes.simulator import Phase, create_simulator  # noqa: E402

START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
SECRET = "benchmark-webhook-secret"
KEY = "medmon-cadence-benchmark"
DRIFT_RULES = {"drift_drop", "subgroup_drop", "category_drop"}  # the score streams' detectors (alerts.catalogue)
SLACK = timedelta(seconds=1)


class Clock:
    """The service's clock, moved by the benchmark."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def starter_plan(base_url: str, db_url: str, adaptive: bool, seed: int) -> Plan:
    """The plan ``medmon init`` writes, pointed at the simulator and this run's database."""
    data = knowledge_starter()  # the knowledge task (the jury-scored one has its own benchmark)
    data["deployment"]["base_url"] = base_url
    data["deployment"]["api_key_env"] = "MEDMON_BENCH_KEY"
    data["storage"]["url"] = db_url
    data.setdefault("service", {})["seed"] = seed
    data["adaptive_cadence"] = {**data.get("adaptive_cadence", {}), "enabled": adaptive}
    return parse_plan(yaml.safe_dump(data), "starter plan")


@dataclass
class Trial:
    seed: int
    onset_h: float
    adaptive: bool
    paged_after_h: float | None = None
    answers_to_page: int | None = None
    paged_by: str = ""
    drift_after_h: float | None = None  # the first page from a drift detector (not the min_score rule)
    drift_answers: int | None = None
    drift_by: str = ""
    false_pages: int = 0
    probes: int = 0
    extra_probes: int = 0
    extra_after_onset: int = 0
    refused: int = 0
    wall_s: float = 0.0
    log: list[str] = field(default_factory=list)


def run_trial(seed: int, onset_h: float, adaptive: bool, give_up_h: float, workdir: Path) -> Trial:
    trial = Trial(seed, onset_h, adaptive)
    wall0 = time.perf_counter()
    sim_app = create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(accuracy=0.80)], seed=seed)
    sim = serve_in_thread(sim_app)
    receiver_app = create_receiver(SECRET)
    receiver = serve_in_thread(receiver_app)
    os.environ["MEDMON_WEBHOOK_URL"] = f"{receiver.url}/alerts"
    os.environ["MEDMON_WEBHOOK_SECRET"] = SECRET
    db_url = f"sqlite:///{workdir / f'cadence-{seed}-{int(adaptive)}-{onset_h:g}.db'}"
    plan = starter_plan(f"{sim.url}/v1", db_url, adaptive, seed)
    task_id = plan.tasks[0].id
    engine = make_engine(db_url)
    clock = Clock(START)
    dispatch, runtime = make_dispatch(engine, plan, clock)
    register_runtime(KEY, runtime)
    channels = build_channels(plan)
    scheduler = build_service_scheduler(engine, plan, KEY, channels, now=clock)  # paused: the clock drives it
    onset = START + timedelta(hours=onset_h)
    state = receiver_app.state.receiver
    answers_at_onset: int | None = None
    dropped = False
    alerted: set[tuple[str, str]] = set()
    try:
        while clock.at < onset + timedelta(hours=give_up_h):
            cadence_job(KEY)  # the service's periodic cadence pass
            job = scheduler.get_job(f"probe:{task_id}", jobstore="default")
            clock.at = job.trigger.get_next_fire_time(None, clock.at + timedelta(milliseconds=1))
            if not dropped and clock.at >= onset:  # the model degrades from the onset on
                sim_app.state.sim.phases = [Phase(accuracy=0.70, label="drop")]
                dropped = True
                answers_at_onset = answers(engine, task_id)
            before = len(state.received)
            fire_probe(KEY, task_id)
            delivery_job(engine, plan, channels, clock, DeliveryPolicy(base_delay_s=0.2))
            pages = task_pages([r.body for r in state.received[before:]], task_id, alerted)
            if pages and not dropped:
                trial.false_pages += len(pages)
                trial.log.append(f"{clock.at:%d %H:%M} page before the onset: {titles(pages)}")
            elif pages:
                after_h = (clock.at - onset).total_seconds() / 3600
                taken = answers(engine, task_id) - (answers_at_onset or 0)
                if trial.paged_after_h is None:
                    trial.paged_after_h, trial.answers_to_page, trial.paged_by = after_h, taken, titles(pages)
                drift = [a for a in pages if a.get("rule") in DRIFT_RULES]
                if drift:
                    trial.drift_after_h, trial.drift_answers, trial.drift_by = after_h, taken, titles(drift)
                    break
    finally:
        with Session(engine) as s:
            trial.extra_probes = extra_used(s, task_id, runtime.triggers[task_id], START, clock.at + SLACK).probes
            trial.extra_after_onset = extra_used(s, task_id, runtime.triggers[task_id], onset, clock.at + SLACK).probes
        trial.refused = runtime.refused.get(task_id, 0)
        scheduler.shutdown(wait=False)
        unregister_runtime(KEY)
        with Session(engine) as s:
            trial.probes = int(s.exec(select(func.count(func.distinct(ProbeResult.run_id)))).one())
        engine.dispose()
        sim.stop()
        receiver.stop()
        del dispatch
    trial.wall_s = time.perf_counter() - wall0
    return trial


def answers(engine: Any, task_id: str) -> int:
    with Session(engine) as s:
        return int(s.exec(select(func.count()).select_from(ProbeResult).where(ProbeResult.task_id == task_id)).one())


def task_pages(bodies: list[dict[str, Any]], task_id: str, seen: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """The alerts about the task firing for the first time in the notifications received (an alert
    joining an open incident arrives in that incident's notification). The monitor's own heartbeat
    alert is not one: it measures gaps between alert passes, which the service runs every second and
    this benchmark after each probe."""
    out = []
    for b in bodies:
        for a in b.get("alerts", []):
            key = (str(a.get("fingerprint")), str(a.get("starts_at")))
            if a.get("status") == "firing" and a.get("labels", {}).get("task") == task_id and key not in seen:
                seen.add(key)
                out.append(a)
    return out


def titles(alerts: list[dict[str, Any]]) -> str:
    return ", ".join(sorted({f"{a.get('rule')} ({a.get('labels', {}).get('metric')})" for a in alerts}))


def spread(values: list[float] | list[int], digits: int = 2) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "max": None}
    return {
        "mean": round(statistics.mean(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
    }


def summary(trials: list[Trial]) -> dict[str, Any]:
    hours = [t.paged_after_h for t in trials if t.paged_after_h is not None]
    drift_hours = [t.drift_after_h for t in trials if t.drift_after_h is not None]
    return {
        "deployments": len(trials),
        "paged": len(hours),
        "hours_to_page": spread(hours),
        "answers_to_page": spread([t.answers_to_page for t in trials if t.answers_to_page is not None], 1),
        "paged_within_24h": sum(h <= 24 for h in hours),
        "paged_by": sorted({t.paged_by for t in trials if t.paged_by}),
        "drift_detector_paged": len(drift_hours),
        "hours_to_drift_page": spread(drift_hours),
        "answers_to_drift_page": spread([t.drift_answers for t in trials if t.drift_answers is not None], 1),
        "false_pages_before_onset": sum(t.false_pages for t in trials),
        "probes_run": sum(t.probes for t in trials),
        "extra_probes": sum(t.extra_probes for t in trials),
        "extra_probes_after_onset": sum(t.extra_after_onset for t in trials),
        "extra_probes_refused": sum(t.refused for t in trials),
        "wall_s": round(sum(t.wall_s for t in trials), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deployments", type=int, default=4)
    parser.add_argument("--onset-hours", type=float, nargs="+", default=[18.0], help="drop onsets after start")
    parser.add_argument("--give-up-hours", type=float, default=96.0, help="stop looking this long after onset")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    os.environ["MEDMON_BENCH_KEY"] = "simulator-needs-no-key"
    workdir = Path(tempfile.mkdtemp(prefix="medmon-cadence-"))
    figures: dict[str, Any] = {"plan": "medmon init starter plan", "drop": "0.80 -> 0.70", "onsets": {}}
    for onset in args.onset_hours:
        arms: dict[str, list[Trial]] = {"adaptive": [], "plan_schedule": []}
        for i in range(args.deployments):
            for arm, adaptive in (("adaptive", True), ("plan_schedule", False)):
                t = run_trial(args.seed + i, onset, adaptive, args.give_up_hours, workdir)
                arms[arm].append(t)
                print(
                    f"onset {onset:g} h, deployment {i + 1}, {arm:13s}: "
                    + (
                        f"paged {t.paged_after_h:.2f} h / {t.answers_to_page} answers after onset by {t.paged_by}"
                        if t.paged_after_h is not None
                        else f"not paged within {args.give_up_hours:g} h"
                    )
                    + (
                        f"; drift detector {t.drift_after_h:.2f} h / {t.drift_answers} answers ({t.drift_by})"
                        if t.drift_after_h is not None
                        else "; no drift-detector page"
                    )
                    + f"; {t.probes} probes ({t.extra_probes} extra, {t.extra_after_onset} after onset, "
                    f"{t.refused} refused), {t.false_pages} false pages, {t.wall_s:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
                for line in t.log:
                    print("   ", line, file=sys.stderr)
        figures["onsets"][f"{onset:g}h"] = {arm: summary(ts) for arm, ts in arms.items()}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
