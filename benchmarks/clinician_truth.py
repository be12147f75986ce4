"""Benchmark (a simulation model, labelled as one): clinician-truth monitoring with few labels.

A stream of answers, each with a latent quality on the 0-1 clinician scale. Clinicians rate an answer
with their own noise; the jury scores it with a known bias (lenient by ``--bias``) and a noise that grows
with the answer's difficulty (20% of answers are hard), and its judges agree less on hard answers. Three
detectors, with the same threshold ``A`` (one task's share of the plan's default budget, 200,000):

- jury-only: ``MixtureSR`` on every jury score, its null the jury's go-live level minus the same margin
  (what the canary score stream watches: the jury's opinion);
- clinician-only: ``MixtureSR`` on the clinicians' ratings of a random ``rate`` of the answers;
- prediction-powered: ``PredictionPoweredSR`` on every answer, the clinicians' ratings of the answers
  drawn by the queue's active selection (``medmon.monitor.governance.selection``, mean probability
  ``rate``, floor ``rate / 2``); and the same detector with a random draw at ``rate`` (``pp, random draw``),
  whose bets may be larger because no answer is drawn with less than ``rate``.

Scenarios (change after ``--change`` answers): ``null`` (nothing changes, the jury stays biased),
``fooled`` (answers get worse for clinicians by ``--drop``; the jury goes on scoring as before),
``jury_drift`` (the jury turns severe by ``--drop``; the answers do not change), ``both`` (a real drop
the jury sees too). For each detector and label rate: the share of runs with an alarm on the clinician
scale, the median delay in answers after the change when the change is a clinician-scale drop, and false
alarms (an alarm where clinicians saw no drop).

Then the interval width: the 95% half-width of the clinician-scale mean of a week of answers at the same
quota, with random and with active selection (empirical, over ``--reps`` weeks).

Usage::

    .venv/bin/python benchmarks/clinician_truth.py [--reps 20] [--horizon 12000] [--change 1000]
                                                   [--bias 0.08] [--drop 0.15] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from medmon.monitor.detection.drift import MixtureSR, PredictionPoweredSR
from medmon.monitor.governance.selection import residual_scale

THRESHOLD = 2e5
MU0 = 0.70  # the task's null on the clinician scale
LEVEL = 0.80  # the answers' mean quality before a change
RATES = (0.01, 0.05, 0.10)


@dataclass(frozen=True)
class World:
    bias: float
    drop: float
    change: int
    scenario: str


@dataclass(frozen=True)
class Answer:
    jury: float
    clinician: float
    agreement: float


def clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def answer(world: World, t: int, rng: random.Random) -> Answer:
    after = t >= world.change
    hard = rng.random() < 0.2
    quality = clip(rng.gauss(LEVEL, 0.12))
    clinician_drop = world.drop if after and world.scenario in ("fooled", "both") else 0.0
    jury_shift = -world.drop if after and world.scenario in ("jury_drift", "both") else 0.0
    jury_noise = 0.20 if hard else 0.05
    jury = clip(quality + world.bias + jury_shift + rng.gauss(0.0, jury_noise))
    clinician = clip(quality - clinician_drop + rng.gauss(0.0, 0.08))
    agreement = clip((0.55 if hard else 0.9) + rng.gauss(0.0, 0.05))
    return Answer(jury, clinician, agreement)


def probability(a: Answer, rate: float, mean_scale: float) -> float:
    return min(1.0, max(rate / 2, rate * residual_scale(a.agreement, a.jury, MU0) / mean_scale))


def mean_scale(world: World, rng: random.Random, n: int = 4000) -> float:
    """The mean scale of a week before the change (the queue takes it from the week before)."""
    return statistics.fmean(residual_scale(a.agreement, a.jury, MU0) for a in (answer(world, 0, rng) for _ in range(n)))


def run(world: World, rate: float, horizon: int, seed: int) -> dict[str, int | None]:
    """First alarm (answer index) of each detector on one stream, None if none within the horizon."""
    rng = random.Random(seed)
    scale = mean_scale(world, random.Random(seed + 1))
    jury_null = MU0 + world.bias
    detectors: dict[str, Callable[[Answer, random.Random], Any]] = {}
    jury_only = MixtureSR(mu0=jury_null, sigma2=0.03, threshold=THRESHOLD)
    clinician_only = MixtureSR(mu0=MU0, sigma2=0.03, threshold=THRESHOLD)
    pp = PredictionPoweredSR(mu0=MU0, sigma2=0.03, threshold=THRESHOLD, pi_min=rate / 2)
    detectors["jury-only"] = lambda a, r: jury_only.update(a.jury)
    detectors["clinician-only"] = lambda a, r: clinician_only.update(a.clinician) if r.random() < rate else None

    def powered(a: Answer, r: random.Random) -> Any:
        pi = probability(a, rate, scale)
        return pp.update((a.jury, a.clinician if r.random() < pi else None, pi))

    detectors["prediction-powered"] = powered
    pp_random = PredictionPoweredSR(mu0=MU0, sigma2=0.03, threshold=THRESHOLD, pi_min=rate)
    detectors["pp, random draw"] = lambda a, r: pp_random.update(
        (a.jury, a.clinician if r.random() < rate else None, rate)
    )
    first: dict[str, int | None] = dict.fromkeys(detectors)
    for t in range(horizon):
        a = answer(world, t, rng)
        for name, update in detectors.items():
            if first[name] is None and update(a, rng) is not None:
                first[name] = t
        if all(v is not None for v in first.values()):
            break
    return first


def week_half_width(world: World, quota: int, week: int, reps: int, active: bool, seed: int) -> float:
    """Empirical 95% half-width of the clinician-scale mean of one week, ``quota`` ratings expected."""
    rate = quota / week
    scale = mean_scale(world, random.Random(seed + 1))
    errors = []
    for rep in range(reps):
        rng = random.Random(seed * 1000 + rep)
        answers = [answer(world, 0, rng) for _ in range(week)]
        total = 0.0
        for a in answers:
            pi = probability(a, rate, scale) if active else rate
            # the prediction is the raw jury score less its go-live bias, fixed before the week
            f = clip(a.jury - world.bias)
            total += f + ((a.clinician - f) / pi if rng.random() < pi else 0.0)
        truth = statistics.fmean(a.clinician for a in answers)
        errors.append(total / week - truth)
    return 1.96 * math.sqrt(statistics.fmean(e * e for e in errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20, help="streams per scenario and label rate")
    parser.add_argument("--horizon", type=int, default=12000, help="answers per stream")
    parser.add_argument("--change", type=int, default=1000, help="answers before the change")
    parser.add_argument("--bias", type=float, default=0.08, help="the jury's leniency on the 0-1 scale")
    parser.add_argument("--drop", type=float, default=0.15, help="size of the change on the 0-1 scale")
    parser.add_argument("--week", type=int, default=2000, help="answers a week, for the interval widths")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    began = time.perf_counter()
    out: dict[str, Any] = {"model": "simulation", "threshold": THRESHOLD, "mu0": MU0, "bias": args.bias}
    rows = []
    for scenario in ("null", "fooled", "jury_drift", "both"):
        world = World(args.bias, args.drop, args.change, scenario)
        clinician_drop = scenario in ("fooled", "both")
        for rate in RATES:
            hits: dict[str, list[int | None]] = {}
            for rep in range(args.reps):
                for name, t in run(world, rate, args.horizon, args.seed * 10_000 + rep).items():
                    hits.setdefault(name, []).append(t)
            for name, times in hits.items():
                alarms = [t for t in times if t is not None]
                early = [t for t in alarms if t < args.change]
                late = [t - args.change for t in alarms if t >= args.change]
                row = {
                    "scenario": scenario,
                    "rate": rate,
                    "detector": name,
                    "alarmed": len(alarms) / len(times),
                    "false_alarms": (len(early) + (0 if clinician_drop else len(late))) / len(times),
                    "median_delay": statistics.median(late) if clinician_drop and late else None,
                    "missed": sum(1 for t in times if t is None or t < args.change) / len(times)
                    if clinician_drop
                    else None,
                }
                rows.append(row)
    out["detection"] = rows
    widths = []
    null_world = World(args.bias, args.drop, args.change, "null")
    for rate in RATES:
        quota = round(rate * args.week)
        random_w = week_half_width(null_world, quota, args.week, max(args.reps * 10, 100), False, args.seed)
        active_w = week_half_width(null_world, quota, args.week, max(args.reps * 10, 100), True, args.seed)
        widths.append({"rate": rate, "quota": quota, "random": random_w, "active": active_w})
    out["interval"] = widths
    out["seconds"] = round(time.perf_counter() - began, 1)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"Simulation model: {args.reps} streams of {args.horizon} answers, change after {args.change}; jury "
        f"bias +{args.bias}, change {args.drop}; null {MU0} on the clinician scale, threshold {THRESHOLD:g}"
    )
    print(
        f"{'scenario':<11} {'rate':>5} {'detector':<19} {'alarmed':>8} {'false al.':>9} {'median delay':>13} "
        f"{'missed':>7}"
    )
    for r in rows:
        delay = f"{r['median_delay']:.0f}" if r["median_delay"] is not None else "-"
        missed = f"{r['missed']:.0%}" if r["missed"] is not None else "-"
        print(
            f"{r['scenario']:<11} {r['rate']:>5.0%} {r['detector']:<19} {r['alarmed']:>8.0%} "
            f"{r['false_alarms']:>9.0%} {delay:>13} {missed:>7}"
        )
    print(f"\n95% half-width of a week's clinician-scale mean ({args.week} answers), same quota:")
    print(f"{'rate':>5} {'quota':>6} {'random':>8} {'active':>8} {'narrower':>9}")
    for w in widths:
        print(
            f"{w['rate']:>5.0%} {w['quota']:>6} {w['random']:>8.4f} {w['active']:>8.4f} "
            f"{1 - w['active'] / w['random']:>9.0%}"
        )
    print(f"({out['seconds']} s)")


if __name__ == "__main__":
    main()
