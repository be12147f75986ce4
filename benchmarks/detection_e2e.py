"""Detection through the real pipeline: the starter plan, probe runs over HTTP, stored results, alerts.

Each simulated deployment is the plan ``medmon init`` writes, pointed at the simulator (the app
``medmon simulate`` serves) over real HTTP on 127.0.0.1, with its own SQLite database. Every
probe run goes through ``run_task_probe``, the function ``medmon probe run`` and the scheduler
call: canaries chosen (the go-live replay first), the model called, answers scored and stored,
the detectors updated and stored, the alert rules applied, incidents opened. A clock moves one
hour per run (the starter plan's schedule). The simulator draws every answer independently, as a
real model at temperature > 0 does: right with probability 0.80, then 0.70 from the drop on.

The drop starts at several times: during the first go-live reference, 10 runs after it
completes, while it grows, and (without ``--quick``) after it has grown to its cap. To share the
quiet history, each deployment runs one quiet line and, at each drop time, copies its database
and continues that copy with the drop: exactly what a deployment whose drop began then would
have stored. Printed per drop time: the delay until a drift detector (any stream of the accuracy
cause) alarms, in answers and in hours; how often the ``below_minimum`` rule found it; alerts and
incidents opened per drop over ``--after`` runs; false alarms over every quiet answer; beside it
the exact CUSUM for 0.80 -> 0.70 at the same allowance as the task's score stream (its threshold
chosen so that its average run length under no change equals that stream's ``A``, computed
exactly on a fine grid rather than approximated by log(A) / KL).

Usage::

    .venv/bin/python benchmarks/detection_e2e.py --deployments 4            # about 30 minutes on 2 cores
    .venv/bin/python benchmarks/detection_e2e.py --quick                     # 1 deployment, no full growth

Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy.sparse import identity, lil_matrix
from scipy.sparse.linalg import spsolve
from sqlmodel import Session, col, func, select

from medmon.alerts import KINDS, Alert, AlertEvent, Cause, Incident, cause_of
from medmon.monitor.models import BurnIn, DetectorState, FindingRecord
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.plan.starter import knowledge_starter
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.probes.packs import load_pack
from medmon.probes.simulator import SIMULATOR_MODEL, Phase, create_simulator

BEFORE, AFTER = 0.80, 0.70
ACCURACY = {Cause.accuracy, Cause.subgroup_gap}
START = datetime(2026, 11, 2, tzinfo=UTC)


# ------------------------------------------------------------------------------- exact CUSUM
def cusum(p0: float, p1: float, threshold: float, step: float = 0.002) -> dict[str, float]:
    """The Bernoulli CUSUM for ``p0 -> p1`` whose average run length under ``p0`` is ``threshold``.

    Its log-likelihood-ratio walk is put on a grid of ``step`` nats (each answer's increment
    rounded to it) and the run lengths solved exactly as a Markov chain absorbed at ``h``.
    Returns ``h``, the delay from a fresh start (Lorden's worst case) and from the quasi-stationary
    state of a CUSUM that has run a long time without alarm.
    """
    up, down = round(math.log(p1 / p0) / step), round(math.log((1 - p1) / (1 - p0)) / step)

    def chain(h: float) -> tuple[Any, int]:
        m = max(int(math.ceil(h / step)), 2)
        q = lil_matrix((m, m))
        return q, m

    def lengths(h: float, p: float) -> tuple[np.ndarray, Any]:
        q, m = chain(h)
        for i in range(m):
            for move, prob in ((up, p), (down, 1 - p)):
                j = max(0, i + move)
                if j < m:
                    q[i, j] += prob
        q = q.tocsr()
        return spsolve((identity(m, format="csr") - q).tocsc(), np.ones(m)), q

    lo, hi = math.log(threshold) - 4, math.log(threshold) + 1
    for _ in range(40):
        mid = (lo + hi) / 2
        arl0 = lengths(mid, p0)[0][0]
        lo, hi = (mid, hi) if arl0 < threshold else (lo, mid)
    h = hi
    _, q0 = lengths(h, p0)
    arl1, _ = lengths(h, p1)
    pi = np.zeros(q0.shape[0])
    pi[0] = 1.0
    for _ in range(3000):  # the state of a CUSUM that has run long without alarm (quasi-stationary)
        pi = q0.T @ pi
        pi /= pi.sum()
    return {"h": h, "fresh": float(arl1[0]), "steady": float(pi @ arl1)}


# ------------------------------------------------------------------------------------- the run
@dataclass
class Clock:
    t: datetime = START

    def __call__(self) -> datetime:
        return self.t


@dataclass
class Line:
    """One deployment's history from some run on: its database, simulator requests and clock."""

    db: Path
    requests: int
    clock: datetime
    run: int


@dataclass
class Drop:
    name: str
    at: int  # the run the drop starts at
    detected: int | None = None  # answers from the onset to the first drift alarm (inclusive run)
    stream: str = ""
    minimum_at: int | None = None  # answers to the first below_minimum alert
    alerts: int = 0  # accuracy alerts opened from the onset
    incidents: int = 0  # accuracy incidents opened from the onset
    minimum_alerts: int = 0
    refires: int = 0  # an accuracy alert firing again after it cleared (flapping)
    stage: int = 0  # the go-live reference's stage when the drop began
    reference_answers: int = 0
    false_alarms: int = 0  # drift alarms before the onset on this line (counted once per deployment)


@dataclass
class Deployment:
    seed: int
    quiet_answers: int = 0
    false_alarms: list[str] = field(default_factory=list)
    other_alarms: list[str] = field(default_factory=list)  # alarms of other causes on quiet runs (latency...)
    drops: list[Drop] = field(default_factory=list)
    threshold: float = 0.0
    seconds: float = 0.0
    reference_complete_run: int | None = None
    reference_full_run: int | None = None
    refused_growths: int = 0  # growths of the reference the two-sample check refused on the quiet line


def starter(url: str, db: Path) -> Plan:
    """The plan ``medmon init`` writes, pointed at the simulator and a database of its own."""
    data = knowledge_starter()  # the knowledge task (the jury-scored one has its own benchmark)
    data["deployment"].update(base_url=f"{url}/v1", model=SIMULATOR_MODEL, api_key_env="MEDMON_E2E_KEY")
    data["deployment"]["max_retries"] = 0
    data["storage"]["url"] = f"sqlite:///{db}"
    return parse_plan(yaml.safe_dump(data), "starter plan")


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.canaries = load_pack("clinical_knowledge_mcq").canaries
        self.app = create_simulator(self.canaries, [Phase(0, accuracy=BEFORE)], seed=args.seed)
        self.server = serve_in_thread(self.app)
        self.tmp = Path(tempfile.mkdtemp(prefix="medmon-e2e-"))

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def probe(self, plan: Plan, ctx: Any, engine: Any, rng: random.Random, clock: Clock) -> Any:
        outcome = run_task_probe(engine, plan, ctx, rng=rng, now=clock)
        clock.t += timedelta(hours=1)
        return outcome

    @staticmethod
    def drift_found(outcome: Any) -> tuple[list[str], list[str]]:
        """The streams whose drift detector alarmed in this run: of the accuracy cause, and of others."""
        acc, other = [], []
        for u in outcome.updates:
            if u.finding is None or u.kind != "drift" or not u.alert:
                continue
            (acc if KINDS[u.spec.kind].cause in ACCURACY else other).append(u.spec.key)
        return acc, other

    def deployment(self, seed: int, marks: dict[str, int]) -> Deployment:
        args, sim = self.args, self.app.state.sim
        started = time.perf_counter()
        dep = Deployment(seed)
        sim.phases, sim.requests, sim.rng = [Phase(0, accuracy=BEFORE)], 0, random.Random(seed)
        base = self.tmp / f"d{seed}"
        base.mkdir()
        db = base / "quiet.db"
        plan = starter(self.server.url, db)
        ctx = load_context(plan, plan.tasks[0])
        engine = make_engine(plan.storage.url)
        clock, rng = Clock(), random.Random(seed)
        lines: dict[str, Line] = {}
        last = max(max(marks.values()) + 1, args.quiet_runs)
        size = plan.tasks[0].sample_size
        for run in range(last):
            for name, at in marks.items():
                if at == run:
                    engine.dispose()
                    copy = base / f"{name.replace(' ', '_')}.db"
                    shutil.copy(db, copy)
                    lines[name] = Line(copy, sim.requests, clock.t, run)
            outcome = self.probe(plan, ctx, engine, rng, clock)
            acc, other = self.drift_found(outcome)
            dep.quiet_answers += outcome.results - outcome.errors
            dep.false_alarms += [f"run {run}: {k}" for k in acc]
            dep.other_alarms += [f"run {run}: {k}" for k in other]
            with Session(engine) as s:
                burn = s.get(BurnIn, ctx.task.id)
                if burn is not None and burn.complete and dep.reference_complete_run is None:
                    dep.reference_complete_run = run
                if burn is not None and dep.reference_full_run is None and burn.complete:
                    full = plan.detection.reference.max_repeats * len(self.canaries)
                    if sum(v[0] for v in burn.instances.values()) >= full and burn.reference == burn.instances:
                        dep.reference_full_run = run
            if args.progress and run % 50 == 0:
                print(f"  deployment {seed}: quiet run {run}/{last}", file=sys.stderr, flush=True)
        with Session(engine) as s:
            row = s.get(DetectorState, f"{ctx.task.id}:score:drop")
            dep.threshold = row.threshold if row is not None else 0.0
            dep.refused_growths = int(
                s.exec(
                    select(func.count()).select_from(FindingRecord).where(FindingRecord.kind == "reference_growth")
                ).one()
            )
        engine.dispose()
        for name, at in marks.items():
            dep.drops.append(self.drop(name, at, lines[name], size, seed))
        dep.seconds = time.perf_counter() - started
        shutil.rmtree(base, ignore_errors=True)
        return dep

    def drop(self, name: str, at: int, line: Line, size: int, seed: int) -> Drop:
        sim = self.app.state.sim
        sim.requests, sim.rng = line.requests, random.Random(seed * 1000 + at)
        sim.phases = [Phase(0, accuracy=BEFORE), Phase(line.requests, accuracy=AFTER, label="drop")]
        plan = starter(self.server.url, line.db)
        ctx = load_context(plan, plan.tasks[0])
        engine = make_engine(plan.storage.url)
        clock, rng = Clock(line.clock), random.Random(seed * 1000 + at + 1)
        out = Drop(name, at)
        with Session(engine) as s:
            burn = s.get(BurnIn, ctx.task.id)
            out.stage = burn.stage if burn is not None and burn.complete else -1
            out.reference_answers = sum(v[0] for v in (burn.reference or {}).values()) if burn is not None else 0
        answered = 0
        for _ in range(self.args.after):
            outcome = self.probe(plan, ctx, engine, rng, clock)
            answered += outcome.results - outcome.errors
            acc, _ = self.drift_found(outcome)
            if acc and out.detected is None:
                out.detected, out.stream = answered, acc[0]
            if out.minimum_at is None and any(
                s.firing and s.labels.get("rule") == "below_minimum" for s in outcome.signals
            ):
                out.minimum_at = answered
        with Session(engine) as s:
            fired = Counter(
                s.exec(
                    select(AlertEvent.alert_id).where(AlertEvent.at >= line.clock, AlertEvent.to_status == "firing")
                ).all()
            )
            alerts = s.exec(select(Alert.id, Alert.labels, Alert.rule).where(col(Alert.id).in_(list(fired)))).all()
            accuracy = [(i, rule) for i, labels, rule in alerts if cause_of(labels) in ACCURACY]
            out.alerts = len(accuracy)
            out.minimum_alerts = sum(1 for _, r in accuracy if r == "below_minimum")
            out.refires = sum(fired[i] - 1 for i, _ in accuracy)
            out.incidents = int(
                s.exec(
                    select(func.count())
                    .select_from(Incident)
                    .where(Incident.opened_at >= line.clock, col(Incident.cause).in_([c.value for c in ACCURACY]))
                ).one()
            )
        engine.dispose()
        return out


def summarize(deps: list[Deployment], marks: dict[str, int], size: int, exact: dict[str, float]) -> dict[str, Any]:
    rows = []
    for name, at in marks.items():
        drops = [d for dep in deps for d in dep.drops if d.name == name]
        found = [d.detected for d in drops if d.detected is not None]
        mins = [d.minimum_at for d in drops if d.minimum_at is not None]
        rows.append(
            {
                "drop": name,
                "at_run": at,
                "deployments": len(drops),
                "detected": len(found),
                "mean_answers": statistics.fmean(found) if found else None,
                "median_answers": statistics.median(found) if found else None,
                "max_answers": max(found) if found else None,
                "mean_hours": statistics.fmean(found) / size if found else None,
                "ratio_to_cusum": statistics.fmean(found) / exact["steady"] if found else None,
                "streams": sorted({d.stream for d in drops if d.stream}),
                "below_minimum_found": len(mins),
                "below_minimum_mean_answers": statistics.fmean(mins) if mins else None,
                "alerts_per_drop": statistics.fmean(d.alerts for d in drops),
                "incidents_per_drop": statistics.fmean(d.incidents for d in drops),
                "below_minimum_alerts_per_drop": statistics.fmean(d.minimum_alerts for d in drops),
                "refires_per_drop": statistics.fmean(d.refires for d in drops),
                "reference_stage": sorted({d.stage for d in drops}),
                "reference_answers": sorted({d.reference_answers for d in drops}),
            }
        )
    return {
        "deployments": len(deps),
        "quiet_answers": sum(d.quiet_answers for d in deps),
        "false_alarms": [f"deployment {d.seed} {a}" for d in deps for a in d.false_alarms],
        "other_alarms_on_quiet_runs": [f"deployment {d.seed} {a}" for d in deps for a in d.other_alarms],
        "threshold": deps[0].threshold if deps else None,
        "refused_growths_on_quiet_lines": sum(d.refused_growths for d in deps),
        "exact_cusum": exact,
        "reference_complete_run": sorted({d.reference_complete_run for d in deps if d.reference_complete_run}),
        "reference_full_run": sorted({d.reference_full_run for d in deps if d.reference_full_run}),
        "seconds_per_deployment": statistics.fmean(d.seconds for d in deps) if deps else None,
        "drops": rows,
    }


def fmt(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=4, help="fresh deployments (each its own database)")
    parser.add_argument("--quick", action="store_true", help="one deployment, no drop after full growth")
    parser.add_argument("--after", type=int, default=150, help="runs after each drop's onset (alerts counted)")
    parser.add_argument(
        "--quiet-runs", type=int, default=1250, help="runs of each deployment's quiet line (no-change answers)"
    )
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--output", default="", help="also write the figures as JSON to this file")
    parser.add_argument("--progress", action="store_true", help="progress on stderr")
    args = parser.parse_args()
    os.environ.setdefault("MEDMON_E2E_KEY", "simulator")
    os.environ.setdefault("MEDMON_WEBHOOK_URL", "http://127.0.0.1:9/alerts")  # never delivered here
    os.environ.setdefault("MEDMON_WEBHOOK_SECRET", "e2e")
    marks = {"during the first reference": 4, "10 runs after it completes": 18, "during growth": 60}
    if args.quick:
        args.deployments, args.after, args.quiet_runs = 1, min(args.after, 80), min(args.quiet_runs, 100)
    else:
        marks["after growth"] = 300
    bench = Bench(args)
    deps = []
    try:
        for i in range(args.deployments):
            deps.append(bench.deployment(args.seed + i, marks))
            if args.progress:
                print(f"deployment {i + 1}/{args.deployments}: {deps[-1].seconds:.0f} s", file=sys.stderr, flush=True)
    finally:
        bench.close()
    size = 20
    exact = cusum(BEFORE, AFTER, deps[0].threshold)
    out = summarize(deps, marks, size, exact)
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=2))
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"\n## Detection through the pipeline: starter plan, simulator over HTTP, 0.80 -> 0.70 "
        f"({out['deployments']} deployments, seed {args.seed}, {args.after} runs after each onset)\n"
    )
    print(
        f"Score stream threshold A = {out['threshold']:,.0f}; exact CUSUM at that allowance: h = {exact['h']:.2f}, "
        f"delay {exact['steady']:,.0f} answers after a long quiet run ({exact['fresh']:,.0f} from a fresh start).\n"
    )
    print(
        "| drop starts | reference then | detected | delay, answers: mean / median / max | hours (mean) | "
        "/ exact CUSUM | below_minimum found (mean answers) | alerts (below_minimum) / re-fires / incidents "
        "per drop |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in out["drops"]:
        ref = "being built" if r["reference_stage"] == [-1] else f"stage {r['reference_stage']}"
        print(
            f"| {r['drop']} (run {r['at_run']}) | {ref}, {r['reference_answers']} answers | "
            f"{r['detected']}/{r['deployments']} | {fmt(r['mean_answers'])} / {fmt(r['median_answers'])} / "
            f"{fmt(r['max_answers'])} | {fmt(r['mean_hours'], '.1f')} | {fmt(r['ratio_to_cusum'], '.2f')}x | "
            f"{r['below_minimum_found']}/{r['deployments']} ({fmt(r['below_minimum_mean_answers'])}) | "
            f"{r['alerts_per_drop']:.2f} ({r['below_minimum_alerts_per_drop']:.2f}) / {r['refires_per_drop']:.2f} / "
            f"{r['incidents_per_drop']:.2f} |"
        )
    print(
        f"\nNo-change answers: {out['quiet_answers']:,}; drift alarms of the accuracy cause on them: "
        f"{len(out['false_alarms'])} {out['false_alarms'] or ''}"
    )
    print(
        f"Alarms of other causes on quiet runs (host-load latency and such): {len(out['other_alarms_on_quiet_runs'])}"
    )
    print(f"Growths refused by the two-sample check on the quiet lines: {out['refused_growths_on_quiet_lines']}")
    print(
        f"Go-live reference complete at run {out['reference_complete_run']}, "
        f"grown to its cap at run {out['reference_full_run'] or 'not within the quiet line'}; "
        f"{fmt(out['seconds_per_deployment'])} s per deployment."
    )


if __name__ == "__main__":
    main()
