"""Benchmark: medmon's e-detectors against river's detectors and the oracle CUSUM.

Simulated correctness streams: baseline 0.80, a drop at probe 500 to 0.75 / 0.70 / 0.60, and
no-change streams of 20,000 probes. Figures:

1. the deployment promise: 100 streams sharing alpha = 0.05 (A = 100 N / alpha): share of
   100-stream families with any false alarm within N, per-stream false alarms, run length;
2. delays (mean, median, detection rate within 20,000 post-change probes) at two calibrations:
   m = 100 (per-stream false-alarm level alpha/m, where only vectorised detectors can be
   calibrated) and m = 1 (5% per stream, where river's ADWIN, PageHinkley and HDDM_A are
   calibrated by bisection on their parameter); the oracle CUSUM knowing p1 is calibrated by
   simulation at both;
3. paired vs unpaired on a canary pool with K = 5 replicated baselines and the margin;
4. the one-shot test after a known change vs the change detector;
5. updates per second.

Run: ``.venv/bin/python benchmarks/detection.py`` (about 5-10 minutes on 2 cores);
``--quick`` for a smoke run with fewer repetitions.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from medmon.monitor.detection.drift import MixtureSR, MixtureSRBatch  # noqa: E402
from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS  # noqa: E402
from medmon.monitor.detection.drift.layout import baseline_margin  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection_service import run_all  # noqa: E402

P0, DROPS = 0.80, (0.75, 0.70, 0.60)
Draw = Callable[[int, np.ndarray], np.ndarray]  # (t, active mask) -> observations for every stream


class FastESR:
    """The mixture e-SR in the form ``R_k <- (1 + R_k)(a_k - b_k x)``, bets in rows (fast numpy).

    Checked against :class:`medmon.monitor.detection.drift.MixtureSRBatch` at start-up (``self_check``).
    """

    def __init__(self, mu0: np.ndarray, sigma2: np.ndarray, threshold: float, direction: str = "drop") -> None:
        shifts = np.asarray(DEFAULT_SHIFTS)[:, None]
        cap = BET_CAP / (1 - mu0) if direction == "drop" else BET_CAP / mu0
        lam = np.minimum(shifts / sigma2[None, :], cap[None, :])
        sign = 1.0 if direction == "drop" else -1.0
        self.a, self.b = 1 + sign * lam * mu0, sign * lam
        self.r = np.zeros_like(lam)
        self.threshold = threshold
        self._tmp = np.empty_like(lam)

    def update(self, x: np.ndarray) -> np.ndarray:
        np.multiply(self.b, x[None, :], out=self._tmp)
        np.subtract(self.a, self._tmp, out=self._tmp)
        self.r += 1.0
        self.r *= self._tmp
        if self.r.max() < self.threshold:  # the mean of the bets is below their max
            return np.zeros(self.r.shape[1], dtype=bool)
        alarm = self.r.mean(axis=0) >= self.threshold
        self.r[:, alarm] = 0.0
        return alarm


def self_check(rng: np.random.Generator) -> None:
    mu0, s2 = rng.uniform(0.6, 0.9, 50), rng.uniform(0.05, 0.2, 50)
    fast, ref = FastESR(mu0, s2, 1e3), MixtureSRBatch(mu0, s2, 1e3)
    for _ in range(400):
        x = (rng.random(50) < 0.6).astype(float)
        assert (fast.update(x) == ref.update(x)).all()
    assert np.allclose(fast.r.mean(axis=0), ref.statistic)


def bernoulli(p_of_t: Callable[[int], float], rng: np.random.Generator) -> Draw:
    def draw(t: int, active: np.ndarray) -> np.ndarray:
        return (rng.random(active.size) < p_of_t(t)).astype(float)

    return draw


def first_alarms(make: Callable[[], FastESR], draw: Draw, n_streams: int, steps: int) -> np.ndarray:
    """Index of each stream's first alarm within ``steps`` (inf if none)."""
    det, first = make(), np.full(n_streams, np.inf)
    active = np.ones(n_streams, dtype=bool)
    for t in range(steps):
        alarm = det.update(draw(t, active))
        new = alarm & np.isinf(first)
        first[new] = t
    return first


def delays(make: Callable[[], FastESR], draw: Draw, n_streams: int, change: int, cap: int) -> tuple[np.ndarray, int]:
    """Detection delays after ``change`` (nan when missed within ``cap``); alarms before are reset."""
    det, out, pre = make(), np.full(n_streams, np.nan), 0
    active = np.ones(n_streams, dtype=bool)
    for t in range(change + cap):
        alarm = det.update(draw(t, active))
        if t < change:
            pre += int(alarm.sum())
            continue
        new = alarm & np.isnan(out)
        out[new] = t - change + 1
        if not np.isnan(out).any():
            break
    return out, pre


def cusum_max(p1: float, draw: Draw, n_streams: int, steps: int) -> np.ndarray:
    """Largest CUSUM statistic of each no-change stream over ``steps`` (calibration curve)."""
    up, down = math.log(p1 / P0), math.log((1 - p1) / (1 - P0))
    w, top = np.zeros(n_streams), np.zeros(n_streams)
    active = np.ones(n_streams, dtype=bool)
    for t in range(steps):
        y = draw(t, active)
        w = np.maximum(0.0, w + np.where(y > 0.5, up, down))
        np.maximum(top, w, out=top)
    return top


def cusum_delays(p1: float, h: float, draw: Draw, n_streams: int, change: int, cap: int) -> np.ndarray:
    up, down = math.log(p1 / P0), math.log((1 - p1) / (1 - P0))
    w, out = np.zeros(n_streams), np.full(n_streams, np.nan)
    active = np.ones(n_streams, dtype=bool)
    for t in range(change + cap):
        w = np.maximum(0.0, w + np.where(draw(t, active) > 0.5, up, down))
        alarm = w >= h
        w[alarm] = 0.0
        if t >= change:
            out[alarm & np.isnan(out)] = t - change + 1
            if not np.isnan(out).any():
                break
    return out


def summary(d: np.ndarray) -> str:
    hit = d[~np.isnan(d)]
    if hit.size == 0:
        return "never (0%)"
    rate = hit.size / d.size
    text = f"{hit.mean():,.0f} / {np.median(hit):,.0f}"
    return text if rate == 1 else f"{text} ({rate:.0%})"


def mean_delay(d: np.ndarray, cap: int) -> float:
    """Mean delay counting a miss as the cap: comparable between detectors that miss."""
    return float(np.nan_to_num(d, nan=cap).mean())


# ----------------------------------------------------------------------------------------- river
def river_factory(name: str) -> tuple[Callable[[float], object], tuple[float, float], bool]:
    """river detector from one parameter, its search range, and whether the range is in log10."""
    from river import drift
    from river.drift import binary

    if name == "ADWIN":
        return (lambda v: drift.ADWIN(delta=10**v)), (-12.0, -0.3), True
    if name == "PageHinkley":
        return (lambda v: drift.PageHinkley(threshold=v, mode="up")), (1.0, 400.0), False
    return (lambda v: binary.HDDMA(drift_confidence=10**v)), (-14.0, -1.0), True


def river_first(make: Callable[[], object], errors: np.ndarray, start: int = 0) -> float:
    """Index (from ``start``) of the first alarm at or after ``start``; inf if none."""
    det = make()
    for t, e in enumerate(errors):
        det.update(float(e))  # type: ignore[attr-defined]
        if det.drift_detected and t >= start:  # type: ignore[attr-defined]
            return t - start + 1
    return math.inf


def calibrate_river(name: str, target: float, streams: np.ndarray) -> float:
    """Bisection on the parameter so that the share of streams alarming is at most ``target``."""
    build, (lo, hi), _ = river_factory(name)
    more_alarms_when_larger = name != "PageHinkley"

    def share(v: float) -> float:
        return float(np.mean([np.isfinite(river_first(lambda: build(v), s)) for s in streams]))

    for _ in range(11):
        mid = (lo + hi) / 2
        too_many = share(mid) > target
        if too_many == more_alarms_when_larger:
            hi = mid
        else:
            lo = mid
    return lo if more_alarms_when_larger else hi


# ---------------------------------------------------------------------------------------- main
def family_z(args: argparse.Namespace) -> float:
    """The margin's z when each of the m streams has its own baseline
    (``medmon.monitor.detection.drift.layout.margin_z``)."""
    return max(2.0, NormalDist().inv_cdf(1 - args.alpha / args.streams))


def section_promise(args: argparse.Namespace, rng: np.random.Generator) -> None:
    m, n, alpha = args.streams, args.horizon, args.alpha
    a = m * n / alpha
    total = args.reps * m
    print(f"\n## 1. The deployment promise: {m} streams share alpha = {alpha} (A = m N / alpha = {a:.3g})\n")
    print("| baseline | families with a false alarm in N | per-stream false alarms | probes per false alarm |")
    print("|---|---|---|---|")
    rows = [("known p0 = 0.80", np.full(total, P0))]
    phat = rng.binomial(500, P0, size=total) / 500
    rows.append(("estimated on 500 items, plug-in", phat))
    rows.append(("estimated on 500 items, margin 2 SE", phat - np.array([baseline_margin(p, 500, 0.0) for p in phat])))
    z = family_z(args)
    rows.append(
        (
            f"estimated on 500 items, margin {z:.2f} SE (medmon: z for {m} tasks)",
            phat - np.array([baseline_margin(p, 500, 0.0, z) for p in phat]),
        )
    )
    for label, mu0 in rows:
        mu0 = np.clip(mu0, 0.01, 0.99)
        first = first_alarms(lambda: FastESR(mu0, mu0 * (1 - mu0), a), bernoulli(lambda t: P0, rng), total, n)
        hit = np.isfinite(first).reshape(args.reps, m)
        count = int(hit.sum())
        run = f"{total * n / count:,.0f}" if count else f"> {total * n / 3:,.0f} (none seen)"
        print(
            f"| {label} | {hit.any(axis=1).mean():.3f} ({args.reps} families) | {count} of {total:,} streams | {run} |"
        )


def section_delays(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n, change, reps = args.horizon, args.change_at, args.reps
    print(f"\n## 2. Detection delay after a drop at probe {change} (mean / median; detection rate if < 100%)\n")
    levels = [(args.streams, args.alpha / args.streams), (1, args.alpha)]
    results: dict[tuple[int, str, float], np.ndarray] = {}
    for m, per_stream in levels:
        a = m * n / args.alpha
        print(f"\n### m = {m}: per-stream P(false alarm within {n:,}) target {per_stream:.2g}, A = {a:.3g}\n")
        header = "| detector | calibration | " + " | ".join(f"p1 = {p}" for p in DROPS) + " |"
        print(header + "\n|---|---|" + "---|" * len(DROPS))
        mu0 = np.full(reps, P0)
        row = []
        for p1 in DROPS:
            d, pre = delays(
                lambda: FastESR(mu0, mu0 * (1 - mu0), a),
                bernoulli(lambda t: P0 if t < change else p1, rng),
                reps,
                change,
                n,
            )
            results[(m, "esr", p1)] = d
            row.append(summary(d))
        print("| mixture e-SR (medmon) | proven A = m N / alpha | " + " | ".join(row) + " |")
        row, hs = [], []
        cal_streams = max(args.cal_streams, int(20 / per_stream)) if m > 1 else args.cal_streams
        cal_steps = n
        for p1 in DROPS:
            top = cusum_max(p1, bernoulli(lambda t: P0, rng), cal_streams, cal_steps)
            h = float(np.quantile(top, 1 - per_stream))
            hs.append(h)
            d = cusum_delays(p1, h, bernoulli(lambda t: P0 if t < change else p1, rng), reps, change, n)
            results[(m, "cusum", p1)] = d
            row.append(summary(d))
        print(
            f"| oracle CUSUM (knows p1) | simulated, {cal_streams:,} streams: h = "
            + ", ".join(f"{h:.2f}" for h in hs)
            + " | "
            + " | ".join(row)
            + " |"
        )
        ratios = [mean_delay(results[(m, "esr", p)], n) / mean_delay(results[(m, "cusum", p)], n) for p in DROPS]
        print("| e-SR / oracle (mean delay) | target <= 1.25 | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
        if m == 1 and not args.skip_river:
            errors_cal = (rng.random((args.cal_reps, n)) >= P0).astype(float)
            for name in ("ADWIN", "PageHinkley", "HDDM_A"):
                t0 = time.perf_counter()
                build, _, log = river_factory(name)
                v = calibrate_river(name, per_stream, errors_cal)
                fa = float(np.mean([np.isfinite(river_first(lambda: build(v), s)) for s in errors_cal]))
                row = []
                for p1 in DROPS:
                    d = np.full(reps, np.nan)
                    for i in range(reps):
                        y = np.concatenate([rng.random(change) < P0, rng.random(n) < p1])
                        first = river_first(lambda: build(v), (1.0 - y).astype(float), start=change)
                        d[i] = first if math.isfinite(first) else np.nan
                    results[(m, name, p1)] = d
                    row.append(summary(d))
                shown = f"10^{v:.2f}" if log else f"{v:.1f}"
                print(
                    f"| river {name} | bisection on {args.cal_reps} streams: {shown} (FA {fa:.3f}, "
                    f"{time.perf_counter() - t0:.0f} s) | " + " | ".join(row) + " |"
                )
            adwin = results.get((1, "ADWIN", 0.70))
            if adwin is not None:
                speed = mean_delay(adwin, n) / mean_delay(results[(1, "esr", 0.70)], n)
                caught = np.mean(~np.isnan(adwin))
                print(
                    f"\ne-SR vs calibrated ADWIN at p1 = 0.70: {speed:.1f}x faster in mean delay "
                    f"(ADWIN misses counted at the cap; ADWIN caught {caught:.0%}); target >= 3x"
                )


def pool(rng: np.random.Generator, reps: int, items: int, kind: str) -> np.ndarray:
    """Per-item correctness probabilities: near-deterministic (0.98 / 0.02) or stochastic (Beta(4, 1))."""
    if kind == "near-deterministic":
        right = rng.random((reps, items)) < (P0 - 0.02) / 0.96
        return np.where(right, 0.98, 0.02)
    return rng.beta(4.0, 1.0, size=(reps, items))


def dropped(p: np.ndarray, p1: float, kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "near-deterministic":  # some right answers break for good
        breaks = (rng.random(p.shape) < 1 - (p1 - 0.02) / (P0 - 0.02)) & (p > 0.5)
        return np.where(breaks, 0.02, p)
    return p * p1 / p.mean(axis=1, keepdims=True)


def section_paired(args: argparse.Namespace, rng: np.random.Generator, a: float) -> None:
    reps, n, change, items, k = args.reps, args.horizon, args.change_at, 500, 5
    fam = args.paired_families
    z = family_z(args)  # as medmon sets the margin when each of the m streams has its own reference
    print(
        f"\n## 3. Paired vs unpaired: {items} canaries, baselines from K = {k} runs, A = {a:.3g} (m = {args.streams}), "
        f"margins z = {z:.2f} SD of the reference's bias (at least 0.01)\n"
    )
    print("Cells: share of 100-stream families with a false alarm in N; mean / median delay at each drop.\n")
    print("| design | items | FA families | " + " | ".join(f"p1 = {p}" for p in DROPS) + " |")
    print("|---|---|---|" + "---|" * len(DROPS))
    for kind in ("near-deterministic", "stochastic"):
        for design in ("unpaired, p0 known", "unpaired, p0 from 500 items + margin", "paired K=5 + margin"):
            total = fam * args.streams

            def setup(size: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                cbar = rng.binomial(k, p) / k
                if design.startswith("paired"):
                    v = cbar * (1 - cbar) * k / (k - 1)
                    bias_sd = np.sqrt((v / k).sum(axis=1)) / items
                    margin = np.maximum(0.01, z * bias_sd)
                    mu0 = (1 - margin) / 2
                    s2 = np.maximum((v * (1 + 1 / k)).mean(axis=1) / 4, 0.0025)
                elif design == "unpaired, p0 known":
                    mu0 = p.mean(axis=1)
                    s2 = mu0 * (1 - mu0)
                else:
                    phat = rng.binomial(items, p.mean(axis=1)) / items
                    mu0 = phat - np.array([baseline_margin(q, items, 0.0, z) for q in phat])
                    s2 = mu0 * (1 - mu0)
                return cbar, np.clip(mu0, 0.01, 0.99), s2

            def make_draw(p_before: np.ndarray, p_after: np.ndarray, cbar: np.ndarray) -> Draw:
                rows = np.arange(p_before.shape[0])

                def draw(t: int, active: np.ndarray) -> np.ndarray:
                    idx = rng.integers(items, size=rows.size)
                    p = (p_before if t < change else p_after)[rows, idx]
                    y = (rng.random(rows.size) < p).astype(float)
                    return (1 + y - cbar[rows, idx]) / 2 if design.startswith("paired") else y

                return draw

            p = pool(rng, total, items, kind)
            cbar, mu0, s2 = setup(total, p)
            first = first_alarms(lambda: FastESR(mu0, s2, a), make_draw(p, p, cbar), total, n)
            fa = np.isfinite(first).reshape(fam, args.streams).any(axis=1).mean()
            row = []
            for p1 in DROPS:
                p = pool(rng, reps, items, kind)
                cbar, mu0, s2 = setup(reps, p)
                d, _ = delays(
                    lambda: FastESR(mu0, s2, a), make_draw(p, dropped(p, p1, kind, rng), cbar), reps, change, n
                )
                row.append(summary(d))
            print(f"| {design} | {kind} | {fa:.3f} ({fam}) | " + " | ".join(row) + " |")


def section_one_shot(args: argparse.Namespace, rng: np.random.Generator) -> None:
    from medmon.monitor.detection.drift import OneShotPaired

    reps = min(args.reps, 200)
    print("\n## 4. Known change: one-shot test from the change vs the change detector (fresh start)\n")
    print("| method | p1 = 0.75 | p1 = 0.70 |\n|---|---|---|")
    for label, a in (
        ("e-SR, A = N / alpha (m = 1)", args.horizon / args.alpha),
        (f"e-SR, A = m N / alpha (m = {args.streams})", args.streams * args.horizon / args.alpha),
    ):
        row = []
        for p1 in (0.75, 0.70):
            mu0 = np.full(reps, P0)
            d, _ = delays(lambda: FastESR(mu0, mu0 * (1 - mu0), a), bernoulli(lambda t: p1, rng), reps, 0, args.horizon)
            row.append(summary(d))
        print(f"| {label} | " + " | ".join(row) + " |")
    row = []
    for p1 in (0.75, 0.70):
        d = np.full(reps, np.nan)
        for i in range(reps):
            # tolerance just above the margin: "passed" cannot come first when the model is worse
            test = OneShotPaired(
                margin=0.0, tolerance=0.001, alpha=args.alpha, sigma2=P0 * (1 - P0) / 4, max_n=args.horizon
            )
            ys = rng.random(args.horizon) < p1
            for t, y in enumerate(ys):
                f = test.update((float(y), P0))
                if f is not None:
                    d[i] = t + 1 if f.decision == "degraded" else np.nan
                    break
        row.append(summary(d))
    print(f"| one-shot mSPRT, alpha = {args.alpha} (unpaired vs p0) | " + " | ".join(row) + " |")


def section_speed() -> None:
    print("\n## 5. Throughput\n")
    rng = np.random.default_rng(0)
    xs = (rng.random(200_000) < P0).astype(float).tolist()
    det = MixtureSR(0.78, 0.17, 1e12)
    t0 = time.perf_counter()
    for x in xs:
        det.update(x)
    single = len(xs) / (time.perf_counter() - t0)
    batch = MixtureSRBatch(np.full(100, 0.78), np.full(100, 0.17), 1e12)
    steps = (rng.random((5000, 100)) < P0).astype(float)
    t0 = time.perf_counter()
    for row in steps:
        batch.update(row)
    vec = steps.size / (time.perf_counter() - t0)
    fast = FastESR(np.full(100, 0.78), np.full(100, 0.17), 1e12)
    t0 = time.perf_counter()
    for row in steps:
        fast.update(row)
    faster = steps.size / (time.perf_counter() - t0)
    print("| variant | stream-updates per second |\n|---|---|")
    print(f"| MixtureSR, one stream (pure Python, 5 bets) | {single:,.0f} |")
    print(f"| 100 streams with MixtureSR one by one | {single:,.0f} |")
    print(f"| MixtureSRBatch, 100 streams (numpy) | {vec:,.0f} |")
    print(f"| benchmark kernel, 100 streams (numpy, in place) | {faster:,.0f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200, help="repetitions (simulated deployments) per scenario")
    parser.add_argument("--horizon", type=int, default=20_000, help="N: no-change probes and post-change cap")
    parser.add_argument("--change-at", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", action="store_true", help="print one JSON object per scenario instead of tables")
    parser.add_argument("--json-out", default="", help="also write the JSON objects, one a line, to this file")
    parser.add_argument("--plans", default="", help="comma-separated task counts to run (1, 50); default both")
    parser.add_argument("--scenarios", default="", help="comma-separated scenario names to run; default all")
    parser.add_argument("--cal-streams", type=int, default=4000, help="no-change streams calibrating the oracle CUSUM")
    parser.add_argument(
        "--adwin-streams",
        type=int,
        default=2000,
        help="no-change streams calibrating ADWIN (one calibration per pre-change distribution)",
    )
    parser.add_argument("--adwin-reps", type=int, default=0, help="ADWIN's deployments per drop (default: --reps)")
    parser.add_argument(
        "--adwin-cache",
        default="",
        help="JSON file keeping ADWIN's calibrations between runs (same streams, horizon and seed)",
    )
    parser.add_argument(
        "--adwin-check",
        action="store_true",
        help="re-run ADWIN directly on its quiet streams at the chosen delta (no-change rows)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes running ADWIN (at most 2; 0: inline)")
    parser.add_argument("--no-grid", action="store_true", help="skip the reference-size grid")
    parser.add_argument("--skip-river", action="store_true")
    parser.add_argument("--quick", action="store_true", help="smoke run: few repetitions, short horizon")
    parser.add_argument(
        "--idealized",
        action="store_true",
        help="also run the idealized sections (baseline known exactly, no margin, 100 streams)",
    )
    # the idealized sections' own settings
    parser.add_argument("--streams", type=int, default=100, help="idealized: m streams sharing the budget")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cal-reps", type=int, default=200, help="idealized: streams per river bisection step")
    parser.add_argument("--paired-families", type=int, default=50)
    parser.add_argument("--only", default="promise,delays,paired,oneshot,speed")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.horizon, args.cal_reps, args.cal_streams, args.paired_families = 20, 3000, 20, 400, 5
        args.adwin_streams = 200
    started = time.perf_counter()
    out = (lambda text: None) if args.json else print
    out(f"# medmon detection benchmark (seed {args.seed}, {args.reps} repetitions, N = {args.horizon:,})")
    results = run_all(args, out)
    if args.json:
        for r in results:
            print(json.dumps(r))
    if args.json_out:
        Path(args.json_out).write_text("".join(json.dumps(r) + "\n" for r in results))
    if args.idealized:
        rng = np.random.default_rng(args.seed)
        self_check(rng)
        print(
            "\n# Idealized configuration (NOT what the service runs): baseline known exactly, no margin, "
            f"{args.streams} streams sharing alpha = {args.alpha}"
        )
        only = set(args.only.split(","))
        a = args.streams * args.horizon / args.alpha
        if "promise" in only:
            section_promise(args, rng)
        if "delays" in only:
            section_delays(args, rng)
        if "paired" in only:
            section_paired(args, rng, a)
        if "oneshot" in only:
            section_one_shot(args, rng)
        if "speed" in only:
            section_speed()
    out(f"\nTotal time: {time.perf_counter() - started:,.0f} s")


if __name__ == "__main__":
    main()
