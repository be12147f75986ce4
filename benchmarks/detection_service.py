"""Detection as the service runs it: detectors built from a plan by the service's own code.

For each simulated deployment the go-live reference is drawn (each canary answered K times by the
approved model, or the reference after its burn-in), turned into ``References`` by
``burn_in_references`` and into streams by ``task_streams`` and ``stream_thresholds`` exactly as
``medmon.monitor.detection.streams`` does for a plan (budget split over the plan's streams, exact
margins, observed variance). The detectors' parameters are then run in a vectorised kernel that is
checked against ``build_detector`` (the service's detector classes) and ``Recovery`` at start-up.

Beside each figure: the oracle CUSUM (knows the pre- and post-change distributions) and river's
ADWIN, both calibrated by simulation to the same false-alarm allowance as the service's streams.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from detection_adwin import Calibration, Runner, calibrate, delays, quiet_share

from medmon.baselines import Baseline, Canary
from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS
from medmon.monitor.detection.drift.finding import RecoveryNull
from medmon.monitor.detection.drift.recovery import Recovery
from medmon.monitor.detection.drift.reference import (
    COST_CLIP,
    burn_in_add,
    burn_in_references,
    log_cost_scale,
    stage_alpha,
)
from medmon.monitor.detection.streams import RECOVERY_THRESHOLD, build_detector, stream_thresholds, task_streams
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.plan.starter import knowledge_starter
from medmon.probes.packs import load_pack

SCORER = "multiple_choice"


# ------------------------------------------------------------------------------------ the plans
def starter_plan(tasks: int = 1, repeats: int | None = None, max_repeats: int | None = None) -> Plan:
    """The plan ``medmon init`` writes, its task repeated ``tasks`` times, optionally another reference size."""
    data = knowledge_starter()  # the knowledge task (the jury-scored one has its own benchmark)
    task = data["tasks"][0]
    if tasks > 1:
        data["tasks"] = [task] + [
            {**task, "id": f"{task['id']}-{i}"} for i in range(1, tasks)
        ]  # oversight names the first
    ref = dict((data.get("detection") or {}).get("reference") or {})
    if repeats is not None:
        ref["repeats"] = repeats
    if max_repeats is not None:
        ref["max_repeats"] = max_repeats
    data.setdefault("detection", {})["reference"] = ref
    return parse_plan(yaml.safe_dump(data), "starter plan")


def pack(items: int) -> list[Canary]:
    """The starter plan's pack (32 canaries), cycled with new ids for larger packs (same tags)."""
    base = load_pack("clinical_knowledge_mcq").canaries
    return [
        Canary(id=f"k{i:04d}", messages=base[i % len(base)].messages, tags=dict(base[i % len(base)].tags))
        for i in range(items)
    ]


@dataclass
class Streams:
    """The parameters of one simulated deployment's streams, as the service built them."""

    score: dict[str, Any]
    paired: dict[str, Any]
    cost: dict[str, Any]
    thresholds: dict[str, float]
    keys: dict[str, str] = field(default_factory=dict)


def service_streams(
    plan: Plan, canaries: list[Canary], table: dict[str, list[Any]], repeats: int, stage: int
) -> Streams:
    ref = plan.detection.reference
    alpha = stage_alpha(plan.detection.baseline_alpha / len(plan.tasks), ref.repeats, ref.max_repeats)
    refs = burn_in_references(table, repeats, 1, stage, alpha)  # as streams._references freezes it
    task = plan.tasks[0]
    baseline = Baseline(benchmark=task.benchmark, model="m", metric="exact_match", value=0.85, normalized=0.85, n=1273)
    specs = task_streams(plan, task, baseline, canaries, refs=refs, burn_in=refs, scorer=SCORER)
    thresholds = stream_thresholds(plan, specs)
    score, paired, cost = (
        next(s for s in specs if s.key == f"{task.id}:{name}")
        for name in ("score:drop", "score_paired:drop", "cost_typical:rise")
    )
    assert score.active and paired.active  # the cost stream needs two calls per canary (K >= 2)
    return Streams(
        dict(score.params),
        dict(paired.params),
        dict(cost.params),
        {"score": thresholds[score.key], "paired": thresholds[paired.key], "cost": thresholds[cost.key]},
        {"score": score.key, "paired": paired.key, "cost": cost.key},
    )


# ---------------------------------------------------------------------------------- the kernels
class Bets:
    """Mixture Shiryaev-Roberts for many streams at once (bets in rows), as ``MixtureSR``; with the
    recovery mixture CUSUM of ``Recovery`` and the stream's status, as ``streams._settle``."""

    def __init__(self, mu0: np.ndarray, sigma2: np.ndarray, threshold: float, direction: str = "drop") -> None:
        shifts = np.asarray(DEFAULT_SHIFTS)[:, None]
        self.mu0, self.direction, self.threshold = mu0, direction, threshold
        cap = BET_CAP / (1 - mu0) if direction == "drop" else BET_CAP / mu0
        lam = np.minimum(shifts / sigma2[None, :], cap[None, :])
        sign = 1.0 if direction == "drop" else -1.0
        self.a, self.b = 1 + sign * lam * mu0, sign * lam
        self.r = np.zeros_like(lam)
        rcap = BET_CAP / mu0 if direction == "drop" else BET_CAP / (1 - mu0)  # recovery bets the other way
        rlam = np.minimum(shifts / sigma2[None, :], rcap[None, :])
        self.ra, self.rb = 1 - sign * rlam * mu0, sign * rlam
        self.w = np.zeros_like(lam)
        self.degraded = np.zeros(mu0.size, dtype=bool)
        self.alerts = np.zeros(mu0.size, dtype=int)

    def update(self, x: np.ndarray) -> np.ndarray:
        """One observation per stream; returns the streams whose detector alarmed."""
        self.r = (self.r + 1.0) * (self.a - self.b * x[None, :])
        alarm = self.r.mean(axis=0) >= self.threshold
        self.r[:, alarm] = 0.0
        fresh = alarm & ~self.degraded
        self.alerts += fresh
        self.w[:, alarm] = 0.0
        self.degraded |= alarm
        watch = self.degraded & ~alarm
        if watch.any():
            self.w[:, watch] = np.maximum(
                0.0, self.w[:, watch] + np.log(self.ra[:, watch] + self.rb[:, watch] * x[watch])
            )
            back = watch & (np.exp(np.minimum(self.w, 700)).mean(axis=0) >= RECOVERY_THRESHOLD)
            self.w[:, back] = 0.0
            self.r[:, back] = 0.0
            self.degraded &= ~back
        return alarm


def self_check(plan: Plan, rng: np.random.Generator) -> None:
    """The kernel decides as the service's detector classes and ``Recovery`` do, observation by observation."""
    mu0, s2 = np.array([0.74]), np.array([0.18])
    bets = Bets(mu0, s2, 2e3)
    det = build_detector("mixture_sr", {"mu0": 0.74, "sigma2": 0.18}, 2e3, None)
    rec, degraded = None, False
    for t in range(6000):
        x = float(rng.random() < (0.8 if t < 1000 or t > 3500 else 0.6))
        alarm = bets.update(np.array([x]))[0]
        found = det.update(x) is not None
        assert alarm == found, t
        if found:
            degraded, rec = True, Recovery(RecoveryNull(0.74, "drop", 0.18), RECOVERY_THRESHOLD)
        elif degraded and rec is not None and rec.update([x]):
            degraded = False
            det.reset()
        assert degraded == bool(bets.degraded[0]), t
        assert math.isclose(det.statistic, float(bets.r.mean()), rel_tol=1e-9, abs_tol=1e-12), t


# ------------------------------------------------------------------------------------ scenarios
@dataclass(frozen=True)
class Scenario:
    name: str
    p0: float = 0.80
    p1: float | None = None  # None: no change
    kind: str = "binary"  # binary | bounded | cost
    ramp: int = 0  # gradual change over this many probes
    transient: int = 0  # the change lasts this many probes
    cost_rise: float = 0.0

    @property
    def changes(self) -> bool:
        return self.p1 is not None or self.cost_rise != 0.0


SCENARIOS = [
    Scenario("no change", p0=0.80),
    Scenario("0.80 -> 0.75", p1=0.75),
    Scenario("0.80 -> 0.70", p1=0.70),
    Scenario("0.80 -> 0.60", p1=0.60),
    Scenario("0.95 -> 0.90", p0=0.95, p1=0.90),
    Scenario("0.30 -> 0.20", p0=0.30, p1=0.20),
    Scenario("gradual 0.80 -> 0.65 over 3,000", p1=0.65, ramp=3000),
    Scenario("transient 150-probe drop 0.80 -> 0.60", p1=0.60, transient=150),
    Scenario("bounded scores 0.75 -> 0.70", p0=0.75, p1=0.70, kind="bounded"),
    Scenario("no cost change", kind="cost"),
    Scenario("median cost +20%", kind="cost", cost_rise=0.20),
    Scenario("median cost +50%", kind="cost", cost_rise=0.50),
]
RIGHT, WRONG = 0.98, 0.02  # near-deterministic items (temperature 0, as the starter plan)
CONCENTRATION = 12.0  # bounded scores: an answer's score ~ Beta around its item's mean
COST_SIGMA = 0.6  # lognormal spread of one canary's cost (log scale): a heavy right tail
LOG_COST_ITEMS = 0.5  # spread of typical cost between canaries (log scale)


@dataclass
class World:
    """Per-repetition item parameters before and after the change."""

    before: np.ndarray  # (reps, items): correctness probability, mean score, or log median cost
    after: np.ndarray
    order: np.ndarray  # (reps, items) in [0, 1): which items change first in a gradual drop

    def at(self, t: int, change: int, sc: Scenario, rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
        if not sc.changes or t < change or (sc.transient and t >= change + sc.transient):
            return self.before[rows, idx]
        if sc.ramp:
            frac = min(1.0, (t - change + 1) / sc.ramp)
            return np.where(self.order[rows, idx] < frac, self.after[rows, idx], self.before[rows, idx])
        return self.after[rows, idx]


def world(sc: Scenario, reps: int, items: int, rng: np.random.Generator) -> World:
    order = rng.random((reps, items))
    if sc.kind == "cost":
        before = rng.normal(math.log(0.002), LOG_COST_ITEMS, (reps, items))
        return World(before, before + math.log1p(sc.cost_rise), order)
    if sc.kind == "bounded":
        before = rng.beta(sc.p0 * 6, (1 - sc.p0) * 6, (reps, items))
        after = before * (sc.p1 or sc.p0) / sc.p0
        return World(before, after, order)
    # exactly as many right items as the pack's mean says, and exactly as many of them break
    n_right = round((sc.p0 - WRONG) / (RIGHT - WRONG) * items)
    n_break = round((sc.p0 - (sc.p1 if sc.p1 is not None else sc.p0)) / (RIGHT - WRONG) * items)
    rank = rng.random((reps, items)).argsort(axis=1).argsort(axis=1)  # a random order of the items
    before = np.where(rank < n_right, RIGHT, WRONG)
    return World(before, np.where(rank < n_break, WRONG, before), order)


def answer(sc: Scenario, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if sc.kind == "cost":
        return np.exp(theta + COST_SIGMA * rng.standard_normal(theta.shape))
    if sc.kind == "bounded":
        m = np.clip(theta, 1e-3, 1 - 1e-3)
        return rng.beta(m * CONCENTRATION, (1 - m) * CONCENTRATION)
    return (rng.random(theta.shape) < theta).astype(float)


def references(sc: Scenario, w: World, k: int, rng: np.random.Generator) -> list[dict[str, list[Any]]]:
    """Each repetition's go-live reference table, built with the service's ``burn_in_add``."""
    reps, items = w.before.shape
    tables = []
    for i in range(reps):
        table: dict[str, list[Any]] = {}
        draws = answer(sc, np.repeat(w.before[i][None, :], k, axis=0), rng)  # (k, items)
        cost = draws if sc.kind == "cost" else np.full((k, items), 0.002)
        for j in range(items):
            for r in range(k):
                score = float(draws[r, j]) if sc.kind != "cost" else float(rng.random() < 0.8)
                burn_in_add(table, f"k{j:04d}", score, 50, float(cost[r, j]), 1.0)
        tables.append(table)
    return tables


@dataclass
class Result:
    name: str
    plan: str
    false_alarm_rate: float | None = None
    mean_delay: float | None = None
    median_delay: float | None = None
    detected_share: float | None = None
    oracle_mean_delay: float | None = None
    oracle_median_delay: float | None = None
    adwin_mean_delay: float | None = None
    adwin_median_delay: float | None = None
    alerts_per_persistent_drop: float | None = None
    degraded_share_after_detection: float | None = None
    recovered_share: float | None = None
    budget_share: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def simulate(
    plan: Plan,
    sc: Scenario,
    reps: int,
    items: int,
    k: int,
    stage: int,
    horizon: int,
    change: int,
    rng: np.random.Generator,
) -> Result:
    """Run ``reps`` deployments of one scenario; the detectors are the service's for each one's reference."""
    canaries = pack(items)
    w = world(sc, reps, items, rng)
    tables = references(sc, w, k, rng)
    built = [service_streams(plan, canaries, t, k, stage) for t in tables]
    ids = [f"k{j:04d}" for j in range(items)]
    rows = np.arange(reps)
    sample = plan.tasks[0].sample_size
    if sc.kind == "cost":  # each call's log cost against its canary's go-live mean, as _cost_vs_reference
        centre = np.array([[t[c][5][1] / t[c][5][0] for c in ids] for t in tables])
        scale = np.array([log_cost_scale(burn_in_references(t, k, 1)) for t in tables])
        streams = {
            "cost": Bets(
                np.array([b.cost["mu0"] for b in built]),
                np.array([b.cost["sigma2"] for b in built]),
                built[0].thresholds["cost"],
                "rise",
            )
        }
    else:
        cbar = np.array([[t[c][1] / t[c][0] for c in ids] for t in tables])
        streams = {
            "score": Bets(
                np.array([b.score["mu0"] for b in built]),
                np.array([b.score["sigma2"] for b in built]),
                built[0].thresholds["score"],
            ),
            "paired": Bets(
                (1 - np.array([b.paired["margin"] for b in built])) / 2,
                np.array([b.paired["sigma2"] for b in built]),
                built[0].thresholds["paired"],
            ),
        }
    budget = sum(horizon / built[0].thresholds[s] for s in streams)
    steps = horizon if not sc.changes else change + horizon
    first = np.full(reps, np.nan)
    pre = np.zeros(reps, dtype=bool)
    runs_degraded, runs_seen = np.zeros(reps), np.zeros(reps)
    for t in range(steps):
        idx = rng.integers(items, size=reps)
        y = answer(sc, w.at(t, change, sc, rows, idx), rng)
        any_alarm = np.zeros(reps, dtype=bool)
        if sc.kind == "cost":
            z = np.clip((np.log(y) - centre[rows, idx]) / scale, -COST_CLIP, COST_CLIP)
            any_alarm |= streams["cost"].update(0.5 + z / (2 * COST_CLIP))
        else:
            any_alarm |= streams["score"].update(y)
            any_alarm |= streams["paired"].update((1 + y - cbar[rows, idx]) / 2)
        if not sc.changes:
            pre |= any_alarm
            continue
        if t < change:
            pre |= any_alarm
            if t == change - 1:  # the comparison starts from a quiet state, as after a quiet period
                for s in streams.values():
                    s.r[:] = 0.0
                    s.degraded[:] = False
                    s.alerts[:] = 0
            continue
        new = any_alarm & np.isnan(first)
        first[new] = t - change + 1
        if (t - change + 1) % sample == 0:
            seen = ~np.isnan(first)
            degraded = np.zeros(reps, dtype=bool)
            for s in streams.values():
                degraded |= s.degraded
            runs_seen += seen
            runs_degraded += seen & degraded
    res = Result(sc.name, "", budget_share=budget)
    if not sc.changes:
        res.false_alarm_rate = float(pre.mean())
        return res
    capped = np.nan_to_num(first, nan=horizon)  # a miss counts as the horizon, as for the oracle and ADWIN
    res.false_alarm_rate = float(pre.mean())
    res.detected_share = float(np.mean(~np.isnan(first)))
    res.mean_delay = float(capped.mean())
    res.median_delay = float(np.median(capped))
    res.alerts_per_persistent_drop = float(max(s.alerts.mean() for s in streams.values()))
    with np.errstate(invalid="ignore"):
        share = runs_degraded[runs_seen > 0] / runs_seen[runs_seen > 0]
    res.degraded_share_after_detection = float(share.mean()) if share.size else None
    res.recovered_share = float(np.mean([~s.degraded for s in streams.values()], axis=0).mean())
    res.extra = {
        "margin": float(np.mean([b.paired["margin"] for b in built])) if sc.kind != "cost" else None,
        "null": float(np.mean([(b.cost if sc.kind == "cost" else b.score)["mu0"] for b in built])),
    }
    return res


# ------------------------------------------------------------------------- oracle CUSUM, ADWIN
def _llr(sc: Scenario, w: World) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The oracle's log-likelihood ratio per observation ``y`` of an item with parameter ``theta``.

    It knows both distributions of each deployment: for correctness and bounded scores its pack's
    mean before and after the change (marginal over the canaries drawn), for cost each canary's
    own typical log cost (a CUSUM on log cost, centred per canary, the lognormal spread known).
    """
    if sc.kind == "cost":
        shift = math.log1p(sc.cost_rise) if sc.cost_rise else 0.2
        return lambda y, theta: shift / COST_SIGMA**2 * (np.log(y) - theta - shift / 2)
    p0, p1 = w.before.mean(axis=1), w.after.mean(axis=1)
    if sc.kind == "bounded":
        m0 = p0.mean()
        v = m0 * (1 - m0) / 7 + m0 * (1 - m0) / (CONCENTRATION + 1) * 6 / 7  # item spread plus answer noise
        return lambda y, theta: (p1 - p0) / v * (y - (p0 + p1) / 2)
    up, down = np.log(p1 / p0), np.log((1 - p1) / (1 - p0))
    return lambda y, theta: np.where(y > 0.5, up, down)


def oracle(
    sc: Scenario, target: float, reps: int, horizon: int, change: int, rng: np.random.Generator, cal_streams: int
) -> tuple[float, float]:
    """Mean and median delay of the CUSUM knowing both distributions, its threshold simulated to ``target``.

    The threshold is the (1 - target') quantile of the largest no-change statistic over the horizon
    on ``cal_streams`` deployments, target' = max(target, 10 / cal_streams); below that the CUSUM's
    false-alarm rate falls as exp(-h) (its ARL grows as e^h), so h moves up by log(target' / target).
    """
    w = world(sc, cal_streams, 32, rng)
    llr = _llr(sc, w)
    rows = np.arange(cal_streams)
    s, top = np.zeros(cal_streams), np.zeros(cal_streams)
    for t in range(horizon):
        theta = w.before[rows, rng.integers(32, size=cal_streams)]
        s = np.maximum(0.0, s + llr(answer(sc, theta, rng), theta))
        np.maximum(top, s, out=top)
    level = max(target, 10 / cal_streams)
    h = float(np.quantile(top, 1 - level)) + math.log(level / target)
    w = world(sc, reps, 32, rng)
    llr = _llr(sc, w)
    rows = np.arange(reps)
    s, first = np.zeros(reps), np.full(reps, np.nan)
    for t in range(change + horizon):
        idx = rng.integers(32, size=reps)
        y = answer(sc, w.at(t, change, sc, rows, idx), rng)
        s = np.maximum(0.0, s + llr(y, w.before[rows, idx]))
        alarm = s >= h
        s[alarm] = 0.0
        if t >= change:
            first[alarm & np.isnan(first)] = t - change + 1
            if not np.isnan(first).any():
                break
    capped = np.nan_to_num(first, nan=horizon)
    return float(capped.mean()), float(np.median(capped))


def adwin_calibration(runner: Runner, sc: Scenario, args: Any, seed: int) -> tuple[Calibration, int | None]:
    """ADWIN's quiet-stream calibration for ``sc``'s pre-change distribution and the seed of its streams.

    Kept in ``--adwin-cache`` if given (the seed is None for an entry written without it).
    """
    key = f"{sc.kind}:{sc.p0}:{args.adwin_streams}:{args.horizon}:{args.seed}"
    path = Path(args.adwin_cache) if getattr(args, "adwin_cache", "") else None
    cache = json.loads(path.read_text()) if path is not None and path.exists() else {}
    if key in cache:
        entry = cache[key] if isinstance(cache[key], dict) else {"critical": cache[key], "seed": None}
        return Calibration(np.asarray(entry["critical"]), args.adwin_streams), entry["seed"]
    quiet = Scenario(f"quiet {sc.p0}", sc.p0, None, sc.kind)
    cal = calibrate(runner, quiet, args.adwin_streams, args.horizon, seed, need=max(30, int(0.02 * args.adwin_streams)))
    if path is not None:
        cache[key] = {"critical": cal.critical.tolist(), "seed": seed}
        path.write_text(json.dumps(cache))
    return cal, seed


def run_all(args: Any, out: Callable[[str], None]) -> list[dict[str, Any]]:
    """The service figures for the 1-task and 50-task starter plans, and the reference-size grid."""
    rng = np.random.default_rng(args.seed)
    random.seed(args.seed)
    self_check(starter_plan(), rng)
    results: list[dict[str, Any]] = []
    plans = [(1, starter_plan(1)), (50, starter_plan(50))]
    ref = plans[0][1].detection.reference
    out(
        f"\n## Detection as the service runs it (starter plan: K = {ref.repeats} at go-live, burn-in to "
        f"{ref.max_repeats} answers per canary, 32 canaries; seed {args.seed}, {args.reps} repetitions, "
        f"N = {args.horizon:,})\n"
    )
    out(
        "Detectors built by `task_streams` / `stream_thresholds` from each simulated reference; delays in probes "
        "after the change (at probe 500 after the burn-in), misses counted at N for the oracle and ADWIN.\n"
    )
    out(
        "| plan | scenario | false alarms | budget | mean / median delay | detected | oracle CUSUM | ADWIN (cal.) "
        "mean / median | alerts per drop | runs degraded after detection |"
    )
    out("|---|---|---|---|---|---|---|---|---|---|")
    only = set(args.scenarios.split(",")) if args.scenarios else None
    runner = None if args.skip_river else Runner(args.workers)
    calibrations: dict[tuple[float, str], Calibration] = {}  # ADWIN's quiet streams per pre-change distribution
    seeds: dict[tuple[float, str], int | None] = {}
    for tasks, plan in plans:
        if args.plans and str(tasks) not in args.plans.split(","):
            continue
        stage = max(0, int(math.log2(max(ref.max_repeats // ref.repeats, 1))))
        for sc in SCENARIOS:
            if only and sc.name not in only:
                continue
            res = simulate(plan, sc, args.reps, 32, ref.max_repeats, stage, args.horizon, args.change_at, rng)
            res.plan = f"{tasks}-task"
            target = 1 - math.exp(-res.budget_share)  # the same allowance as the service's streams
            if sc.changes:
                res.oracle_mean_delay, res.oracle_median_delay = oracle(
                    sc, target, args.reps, args.horizon, args.change_at, rng, args.cal_streams
                )
            if runner is not None and sc.kind != "cost":
                key = (sc.p0, sc.kind)
                seed = int(rng.integers(2**31))
                if key not in calibrations:
                    calibrations[key], seeds[key] = adwin_calibration(runner, sc, args, seed)
                delta, how = calibrations[key].delta_for(target)
                res.extra.update(
                    adwin_delta=delta,
                    adwin_calibration=how,
                    adwin_quiet_share=calibrations[key].share(math.log10(delta) + 1e-12),
                )
                if args.adwin_check and not sc.changes:
                    quiet = Scenario(f"quiet {sc.p0}", sc.p0, None, sc.kind)
                    same = seeds[key] is not None  # else on fresh streams: an out-of-sample check
                    at, _ = calibrations[key].delta_for(max(target, 20 / args.adwin_streams))  # a level simulated
                    res.extra["adwin_check_delta"] = at
                    res.extra["adwin_check_share"] = calibrations[key].share(math.log10(at) + 1e-12)
                    res.extra["adwin_quiet_share_direct"] = quiet_share(
                        runner, quiet, args.adwin_streams, args.horizon, seeds[key] if same else seed, at
                    )
                    res.extra["adwin_check_streams"] = "the calibration's own" if same else "fresh"
                if sc.changes:
                    d = delays(
                        runner,
                        sc,
                        delta,
                        args.adwin_reps or args.reps,
                        args.horizon,
                        args.change_at,
                        int(rng.integers(2**31)),
                    )
                    capped = np.where(np.isfinite(d), d, args.horizon)
                    res.adwin_mean_delay, res.adwin_median_delay = float(capped.mean()), float(np.median(capped))
                    res.extra["adwin_detected_share"] = float(np.isfinite(d).mean())
            results.append({"name": sc.name, **{k: v for k, v in res.__dict__.items() if k not in ("name",)}})
            out(row(res))
    if runner is not None:
        runner.close()
    if args.no_grid:
        return results
    out("\n### Reference size: at go-live (K answers per canary, stage 0) and after the burn-in, 1-task plan\n")
    out("| canaries | K | reference | no-change false alarms | 0.80 -> 0.70 mean / median | margin |")
    out("|---|---|---|---|---|---|")
    for items in (32, 200):
        for k in (1, 3, 5):
            plan = starter_plan(1, repeats=k)
            for label, kk, stage in (
                ("at go-live", k, 0),
                (
                    "after burn-in",
                    plan.detection.reference.max_repeats,
                    max(0, int(math.log2(max(plan.detection.reference.max_repeats // k, 1)))),
                ),
            ):
                if args.quick and (items, k) != (32, 5):
                    continue
                quiet = simulate(plan, SCENARIOS[0], args.reps, items, kk, stage, args.horizon, args.change_at, rng)
                drop = simulate(plan, SCENARIOS[2], args.reps, items, kk, stage, args.horizon, args.change_at, rng)
                results.append(
                    {
                        "name": f"reference {items} canaries K={k} {label}",
                        "plan": "1-task",
                        "false_alarm_rate": quiet.false_alarm_rate,
                        "mean_delay": drop.mean_delay,
                        "median_delay": drop.median_delay,
                        "detected_share": drop.detected_share,
                        "repeats": k,
                        "canaries": items,
                        "reference": label,
                        "margin": drop.extra.get("margin"),
                    }
                )
                out(
                    f"| {items} | {k} | {label} ({kk} answers) | {quiet.false_alarm_rate:.3f} | "
                    f"{fmt(drop.mean_delay)} / {fmt(drop.median_delay)} ({drop.detected_share:.0%}) | "
                    f"{drop.extra.get('margin', 0):.3f} |"
                )
    return results


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def row(r: Result) -> str:
    delay = f"{fmt(r.mean_delay)} / {fmt(r.median_delay)}" if r.mean_delay is not None else "-"
    adwin = f"{fmt(r.adwin_mean_delay)} / {fmt(r.adwin_median_delay)}"
    if r.adwin_mean_delay is None and "adwin_quiet_share" in r.extra:  # no change: ADWIN's false alarms
        adwin = f"quiet streams alarming: {r.extra['adwin_quiet_share']:.4f}"
        if "adwin_quiet_share_direct" in r.extra:
            adwin += (
                f"; at delta {r.extra['adwin_check_delta']:.3g}: {r.extra['adwin_check_share']:.4f}, run directly "
                f"on {r.extra['adwin_check_streams']} streams {r.extra['adwin_quiet_share_direct']:.4f}"
            )
    return (
        f"| {r.plan} | {r.name} | {r.false_alarm_rate:.3f} | {r.budget_share:.3f} | {delay} | "
        f"{'-' if r.detected_share is None else f'{r.detected_share:.0%}'} | "
        f"{fmt(r.oracle_mean_delay)} / {fmt(r.oracle_median_delay)} | "
        f"{adwin} | {'-' if r.alerts_per_persistent_drop is None else f'{r.alerts_per_persistent_drop:.2f}'} | "
        f"{'-' if r.degraded_share_after_detection is None else f'{r.degraded_share_after_detection:.1%}'} |"
    )
