"""river's ADWIN calibrated to a false-alarm allowance, fast enough for every drop scenario.

The detector is river's own ``drift.ADWIN``; only the bookkeeping around it is arranged to
spend as few of its updates as possible:

- **Critical deltas.** Until its first alarm ADWIN's window does not depend on ``delta`` (bucket
  compression ignores it) and a larger ``delta`` only lowers every cut's threshold, so a stream
  alarms within ``N`` probes exactly when ``delta`` exceeds its own critical value ``delta*``.
  A ladder of deltas (a quarter decade apart, each tried only on the streams that alarmed at the
  previous one) brackets every stream's ``delta*``; the lowest ones are then bisected. The
  share of quiet streams with ``delta* < delta`` is the false-alarm curve for every ``delta`` at
  once, so one calibration serves every plan and scenario with the same pre-change distribution.
- **Below the simulated level** (an allowance smaller than ``10 / streams``) ``delta`` comes from a
  power law fitted to the lowest order statistics of ``delta*`` (log share against log delta),
  stated beside the figure with its fitted exponent.
- Streams are drawn in chunks from a seed, inside at most two worker processes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

LADDER_STEP = 0.25  # decades between the deltas of the screening ladder
TOP = -0.3  # log10 of the largest delta tried
BOTTOM = -14.0
BISECT_STEPS = 7  # each bracket of a quarter decade is halved this many times (0.002 decades)
CHUNK = 100  # streams drawn together from one seed


def draws(
    sc: Any, n: int, steps: int, change: int, seed: int, world: Callable[..., Any], answer: Callable[..., np.ndarray]
) -> np.ndarray:
    """``n`` streams of ``steps`` observations of scenario ``sc`` (log cost for cost), change at ``change``."""
    rng = np.random.default_rng(seed)
    w = world(sc, n, 32, rng)
    rows = np.arange(n)[:, None]
    idx = rng.integers(32, size=(n, steps))
    theta = w.before[rows, idx]
    if sc.changes and change < steps:
        t = np.arange(steps)[None, :]
        on = np.broadcast_to(t >= change, (n, steps))
        if sc.transient:
            on = on & (t < change + sc.transient)
        after = w.after[rows, idx]
        if sc.ramp:
            frac = np.minimum(1.0, (t - change + 1) / sc.ramp)
            on = on & (w.order[rows, idx] < frac)
        theta = np.where(on, after, theta)
    out = answer(sc, theta, rng)
    return np.log(out) if sc.kind == "cost" else out


@dataclass(frozen=True)
class Job:
    """One chunk of streams and what to do with them: first alarms at ``delta`` for the rows ``keep``."""

    scenario: Any
    seed: int
    n: int
    steps: int
    change: int
    start: int
    deltas: tuple[float, ...]  # one per kept row
    keep: tuple[int, ...]


def first_alarms(job: Job) -> list[float]:
    """For each kept row, probes from ``start`` to ADWIN's first alarm at or after it (inf if none)."""
    from detection_service import answer, world
    from river import drift

    xs = draws(job.scenario, job.n, job.steps, job.change, job.seed, world, answer)
    out = []
    for row, delta in zip(job.keep, job.deltas):
        det, found = drift.ADWIN(delta=delta), math.inf
        for t, x in enumerate(xs[row].tolist()):
            det.update(x)
            if det.drift_detected and t >= job.start:
                found = t - job.start + 1
                break
        out.append(found)
    return out


class Runner:
    """Runs jobs in at most two worker processes (or inline with ``workers`` 0), with a progress bar."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(0, min(workers, 2))
        self.pool = ProcessPoolExecutor(self.workers) if self.workers else None

    def map(self, jobs: list[Job], label: str) -> list[list[float]]:
        from tqdm import tqdm

        jobs = [j for j in jobs]
        it: Iterable[list[float]] = self.pool.map(first_alarms, jobs) if self.pool else map(first_alarms, jobs)
        return list(tqdm(it, total=len(jobs), desc=label, leave=False, disable=not os.isatty(2)))

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


@dataclass
class Calibration:
    """Critical deltas of quiet streams: the false-alarm share of every delta below the ladder's top."""

    critical: np.ndarray  # log10 delta* of each stream that alarmed within N at some tried delta; sorted
    streams: int

    def share(self, log_delta: float) -> float:
        return float(np.sum(self.critical < log_delta)) / self.streams

    def delta_for(self, target: float, fit: int = 20) -> tuple[float, str]:
        """The largest delta whose quiet-stream false-alarm share is at most ``target``, and how it was found."""
        k = int(math.floor(target * self.streams))
        if k >= 10 and k < self.critical.size:
            return 10 ** float(self.critical[k]), f"simulated on {self.streams:,} streams"
        m = min(fit, self.critical.size)
        if m < 3:
            return 10**BOTTOM, "no alarm seen"
        ranks = np.arange(1, m + 1) / self.streams
        slope, intercept = np.polyfit(self.critical[:m], np.log10(ranks), 1)  # log share = a + c log delta
        log_delta = (math.log10(target) - intercept) / slope
        return 10 ** min(log_delta, float(self.critical[0])), (
            f"extrapolated from the {m} lowest of {self.streams:,} streams: share ~ delta^{slope:.2f}"
        )


def calibrate(runner: Runner, quiet: Any, streams: int, horizon: int, seed: int, need: int) -> Calibration:
    """Critical deltas of ``streams`` quiet streams, exact (to 0.002 decades) for the ``need`` lowest."""
    chunks = [(seed + c, min(CHUNK, streams - c * CHUNK)) for c in range(math.ceil(streams / CHUNK))]
    alive = {c: list(range(n)) for c, (_, n) in enumerate(chunks)}  # rows still alarming at the current delta
    bracket: dict[tuple[int, int], float] = {}  # (chunk, row) -> lowest ladder delta at which it alarmed
    level = TOP
    while level > BOTTOM and sum(len(v) for v in alive.values()) > 0:
        jobs = [
            Job(quiet, chunks[c][0], chunks[c][1], horizon, horizon, 0, (10**level,) * len(rows), tuple(rows))
            for c, rows in alive.items()
            if rows
        ]
        keys = [c for c, rows in alive.items() if rows]
        results = runner.map(jobs, f"ADWIN ladder 10^{level:.2f}")
        for c, job, res in zip(keys, jobs, results):
            alive[c] = [r for r, f in zip(job.keep, res) if math.isfinite(f)]
            for r in alive[c]:
                bracket[(c, r)] = level
        level -= LADDER_STEP
    # bisect the lowest brackets: a stream first alarming at ``b`` has its delta* in (b - step, b]
    order = sorted(bracket, key=lambda key: bracket[key])
    cut = bracket[order[min(need, len(order)) - 1]] if order else TOP
    exact = [k for k in order if bracket[k] <= cut]
    lo = {k: bracket[k] - LADDER_STEP for k in exact}  # no alarm there
    hi = {k: bracket[k] for k in exact}  # alarm at hi
    for step in range(BISECT_STEPS):
        by_chunk: dict[int, list[tuple[int, float]]] = {}
        for c, r in exact:
            by_chunk.setdefault(c, []).append((r, (lo[(c, r)] + hi[(c, r)]) / 2))
        jobs = [
            Job(
                quiet,
                chunks[c][0],
                chunks[c][1],
                horizon,
                horizon,
                0,
                tuple(10**m for _, m in rows),
                tuple(r for r, _ in rows),
            )
            for c, rows in by_chunk.items()
        ]
        results = runner.map(jobs, f"ADWIN bisection {step + 1}/{BISECT_STEPS}")
        for (c, rows), res in zip(by_chunk.items(), results):
            for (r, mid), f in zip(rows, res):
                if math.isfinite(f):
                    hi[(c, r)] = mid
                else:
                    lo[(c, r)] = mid
    critical = sorted([hi[k] for k in exact] + [bracket[k] for k in bracket if k not in hi])
    return Calibration(np.asarray(critical), streams)


def quiet_share(runner: Runner, quiet: Any, streams: int, horizon: int, seed: int, delta: float) -> float:
    """Share of the calibration's own quiet streams on which ADWIN at ``delta``, run directly, alarms within N.

    It checks the critical-delta shortcut: it must equal ``Calibration.share`` at ``delta``.
    """
    chunks = [(seed + c, min(CHUNK, streams - c * CHUNK)) for c in range(math.ceil(streams / CHUNK))]
    jobs = [Job(quiet, s, n, horizon, horizon, 0, (delta,) * n, tuple(range(n))) for s, n in chunks]
    found = [f for res in runner.map(jobs, "ADWIN check") for f in res]
    return float(np.mean(np.isfinite(found)))


def delays(runner: Runner, sc: Any, delta: float, reps: int, horizon: int, change: int, seed: int) -> np.ndarray:
    """Probes from the change to ADWIN's first alarm after it, for ``reps`` streams (inf if none within N)."""
    chunks = [(seed + c, min(CHUNK, reps - c * CHUNK)) for c in range(math.ceil(reps / CHUNK))]
    jobs = [Job(sc, s, n, change + horizon, change, change, (delta,) * n, tuple(range(n))) for s, n in chunks]
    return np.asarray([f for res in runner.map(jobs, f"ADWIN {sc.name}") for f in res])
