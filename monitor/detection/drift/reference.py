"""Per-instance baseline references for paired streams, their margin, and the burn-in that builds them.

A paired stream compares each answer with its own canary's baseline outcome ``c_i``, the mean of
``K_i`` baseline runs. Two sources:

- ``helm``: the canaries came from a HELM run and carry ``baseline_score`` / ``baseline_runs``;
- ``burn-in``: the baseline has no per-instance data, so the first probes after go-live are the
  reference: once (nearly) every canary has been answered ``K`` times, ``c_i`` is its mean, and
  the per-instance output-length range gives the exceedance references for cost.

Pairing alone inherits the reference's bias ``b = mean_i (c_i - p_i)`` (a canary set measured once
carries its sampling error forever; lower variance only finds that error sooner), so every
paired null includes a margin ``delta = max(min_margin, z * SD(b))`` (``z`` at least 2, more
when many tasks each carry their own reference: see ``medmon.monitor.detection.drift.layout.margin_z``) with
``SD(b) = sqrt(sum_i v_i / K_i) / N`` and ``v_i`` the per-run variance of instance ``i``:
known from the burn-in's sums of squares, ``c(1 - c) K / (K - 1)`` (unbiased for 0/1 scores, an
upper bound for bounded ones) when ``K >= 2``, and the pooled bound ``p(1 - p)`` with a doubled
minimum when ``K = 1``, where a single run says nothing about an item's own variability.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from medmon.baselines.canary import Canary

MIN_VARIANCE = 0.0025  # floor for the bet-sizing variance of a paired x (items may look deterministic)


@dataclass(frozen=True)
class InstanceRef:
    """One canary's reference: mean over ``runs`` baseline runs, and what else is known."""

    mean: float
    runs: int
    var: float | None = None  # per-run variance, when the runs themselves were seen
    out_min: float | None = None  # shortest and longest output (tokens) over the runs
    out_max: float | None = None


@dataclass(frozen=True)
class References:
    """The per-instance references of a task's canaries, from one source and version."""

    source: str  # helm | burn-in
    version: int
    items: Mapping[str, InstanceRef] = field(default_factory=dict)

    def subset(self, ids: Iterable[str]) -> References:
        keep = set(ids)
        return References(self.source, self.version, {k: v for k, v in self.items.items() if k in keep})

    @property
    def min_runs(self) -> int:
        return min((r.runs for r in self.items.values()), default=0)

    @property
    def mean(self) -> float:
        return sum(r.mean for r in self.items.values()) / max(len(self.items), 1)

    def run_variance(self, ref: InstanceRef) -> float:
        """Per-run variance of one instance's outcome (see the module docstring)."""
        if ref.var is not None:
            return ref.var
        if ref.runs >= 2:
            return ref.mean * (1 - ref.mean) * ref.runs / (ref.runs - 1)
        p = self.mean
        return p * (1 - p)

    def bias_sd(self) -> float:
        """Standard deviation of the reference's bias ``mean_i (c_i - p_i)``."""
        n = len(self.items)
        if n == 0:
            return 0.5
        return math.sqrt(sum(self.run_variance(r) / max(r.runs, 1) for r in self.items.values())) / n

    def margin(self, min_margin: float, z: float = 2.0) -> float:
        """The paired null's tolerance: ``max(min_margin, z SD(b))``, doubled minimum when ``K = 1``."""
        floor = min_margin * (2 if self.min_runs <= 1 else 1)
        return min(max(floor, z * self.bias_sd()), 0.5)

    def sigma2_x(self) -> float:
        """Null variance of a paired ``x = (1 + y - c) / 2``: ``mean_i v_i (1 + 1/K_i) / 4``."""
        n = max(len(self.items), 1)
        total = sum(self.run_variance(r) * (1 + 1 / max(r.runs, 1)) for r in self.items.values())
        return max(total / n / 4, MIN_VARIANCE)

    def key(self) -> str:
        return f"{self.source}:{self.version}"


def helm_references(canaries: Iterable[Canary], coverage: float = 0.9) -> References | None:
    """References from canaries that carry their HELM run's per-instance outcome, if enough do."""
    pool = [c for c in canaries if c.replayable]
    known = {c.id: InstanceRef(float(c.baseline_score), max(c.baseline_runs, 1))
             for c in pool if c.baseline_score is not None}
    if not pool or len(known) < coverage * len(pool):
        return None
    return References("helm", 1, known)


# Burn-in: each instance accumulates [n, sum, sum2, out_min, out_max] of its scored answers.
BurnInTable = dict[str, list[float]]


def burn_in_add(table: BurnInTable, canary_id: str, score: float, output_tokens: int | None) -> None:
    """Add one scored answer to the burn-in table."""
    row = table.setdefault(canary_id, [0, 0.0, 0.0, math.inf, -math.inf])
    row[0] += 1
    row[1] += score
    row[2] += score * score
    if output_tokens is not None:
        row[3] = min(row[3], output_tokens)
        row[4] = max(row[4], output_tokens)


def burn_in_complete(table: Mapping[str, list[float]], pool: Iterable[str], runs: int, coverage: float) -> bool:
    """Whether at least ``coverage`` of the canary pool has ``runs`` answers each."""
    ids = list(pool)
    done = sum(1 for i in ids if i in table and table[i][0] >= runs)
    return bool(ids) and done >= coverage * len(ids)


def burn_in_references(table: Mapping[str, list[float]], runs: int, version: int) -> References:
    """References from a completed burn-in: instances with at least ``runs`` answers."""
    items = {}
    for cid, (n, total, total2, lo, hi) in table.items():
        if n < runs:
            continue
        mean = total / n
        var = max(total2 / n - mean * mean, 0.0) * n / (n - 1) if n > 1 else None
        items[cid] = InstanceRef(mean, int(n), var, None if math.isinf(lo) else lo, None if math.isinf(hi) else hi)
    return References("burn-in", version, items)


def exceedance_null(runs: int, n_items: int) -> float:
    """Null rate of ``1{new output longer than the longest of K reference outputs}``.

    Under no change the new output is exchangeable with the ``K`` reference outputs, so it is the
    longest of ``K + 1`` with probability at most ``1/(K+1)`` (ties only lower it). The rate given
    the reference varies from instance to instance (``1 - F(max)`` is Beta(1, K)); averaged over
    ``n_items`` instances its SD is ``sqrt(K / ((K+1)^2 (K+2) n))``, and two of them are added as
    the margin, as for every other reference.

    Examples
    --------
    >>> round(exceedance_null(5, 40), 3)
    0.211
    """
    k = max(runs, 1)
    sd = math.sqrt(k / ((k + 1) ** 2 * (k + 2) * max(n_items, 1)))
    return min(1 / (k + 1) + 2 * sd, 0.9)


def to_json(table: BurnInTable) -> dict[str, Any]:
    """JSON has no infinity: unknown output ranges are stored as null."""
    return {k: [v[0], v[1], v[2], None if math.isinf(v[3]) else v[3], None if math.isinf(v[4]) else v[4]]
            for k, v in table.items()}


def from_json(data: Mapping[str, Any]) -> BurnInTable:
    return {k: [v[0], v[1], v[2], math.inf if v[3] is None else v[3], -math.inf if v[4] is None else v[4]]
            for k, v in data.items()}
