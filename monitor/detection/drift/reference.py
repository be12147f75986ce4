"""The go-live reference: what the approved model did on these canaries, and its exact margin.

Every score stream of a task is tested against what the approved model did on *the same
canaries* at go-live, never against a benchmark's aggregate over other items. The reference is
built by replaying each canary ``K`` times (``detection.reference.repeats``) when the task starts
monitoring, and keeps growing from quiet runs (``burn_in_add``); each canary ``i`` has ``c_i``, the
mean of its ``K_i`` answers. Two uses:

- unpaired, the score stream's null is the reference mean minus its margin;
- paired, each answer is compared with its own canary's ``c_i``; the paired null allows the same
  margin, since pairing inherits the reference's bias ``mean_i (c_i - p_i)``.

The margin is exact: the reference mean minus a one-sided lower confidence bound from the
reference's own answers. While some canary has fewer than ``STRATIFIED_MIN_RUNS`` answers it is
Clopper-Pearson on the total for 0/1 scores and the empirical Bernstein bound of Maurer & Pontil
(2009) for bounded ones (with the observed variance, not ``p(1 - p)``). A mean of ``K`` answers on
each of ``n`` canaries is a Poisson-binomial count, whose tails the binomial's dominate
(Hoeffding 1956), so Clopper-Pearson on the total count keeps its coverage.

Those bounds charge the spread *between* canaries, which the reference's error does not have:
the canaries are fixed, and the error of ``c = mean_i c_i`` against ``p = mean_i p_i`` comes only
from each canary's own answers, ``Var(c) = sum_i s_i^2 / K_i / n^2``. With near-deterministic
canaries (temperature 0) that is a tenth of ``p(1 - p)``. Once every canary has
``STRATIFIED_MIN_RUNS`` answers the margin is therefore ``stratified_margin``: half of the error
bounds the within-canary variances from above (disjoint pairs of answers, ``(y_a - y_b)^2`` has mean
``2 s_i^2``; Hoeffding's (1963) Chernoff bound on their sum, which still holds for its average
over all pairings by Jensen's inequality), the other half is Bernstein's inequality for ``c - p``
with that variance.

Canaries from a HELM run also carry ``baseline_score`` / ``baseline_runs``: those serve as the
reference only where the plan turns the go-live reference off, and otherwise are compared with it
once, at go-live (conformance). Per-canary output-length ranges, log-cost sums and latency samples
give the verbosity, truncation, cost and latency streams.

References
----------
Clopper, C. J., Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated in the
case of the binomial. Biometrika.
Maurer, A., Pontil, M. (2009). Empirical Bernstein bounds and sample variance penalization. COLT.
Hoeffding, W. (1956). On the distribution of the number of successes in independent trials.
Annals of Mathematical Statistics.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from medmon.baselines.canary import Canary

MIN_VARIANCE = 0.0025  # floor for the bet-sizing variance of a paired x (items may look deterministic)
SAMPLES = 15  # latencies kept per canary (the slowest is the bound)
COST_CLIP = 3.0  # a call's log cost is scored in reference SDs from its canary's mean, clipped here
STRATIFIED_MIN_RUNS = 10  # from this many answers on every canary the margin uses their within-canary spread


def lower_bound(total: float, total2: float, n: int, alpha: float, binary: bool) -> float:
    """One-sided ``1 - alpha`` lower confidence bound for the mean of ``n`` answers in [0, 1].

    ``total`` and ``total2`` are the sums of the answers and of their squares. Clopper-Pearson
    when every answer is 0 or 1, else the empirical Bernstein bound (Maurer & Pontil 2009, Thm 4).

    Examples
    --------
    >>> round(lower_bound(240, 240, 300, 0.05, binary=True), 4)     # 80% of 300
    0.7582
    >>> round(lower_bound(150, 119, 200, 0.05, binary=False), 3)    # mean 0.75, SD 0.18
    0.672
    """
    if n <= 0:
        return 0.0
    if binary:
        from scipy.stats import beta

        k = int(round(total))
        return 0.0 if k <= 0 else float(beta.ppf(alpha, k, n - k + 1))
    if n < 2:
        return 0.0
    mean = total / n
    var = max(total2 / n - mean * mean, 0.0) * n / (n - 1)
    log_term = math.log(2 / alpha)
    return max(0.0, mean - math.sqrt(2 * var * log_term / n) - 7 * log_term / (3 * (n - 1)))


def kl_upper(mean: float, n: float, log_inv_alpha: float) -> float:
    """Largest ``u`` with ``n kl(mean || u) <= log(1/alpha)``: Hoeffding's (1963) Chernoff upper bound
    for the average mean of ``n`` independent variables in [0, 1] whose average is ``mean``.

    Examples
    --------
    >>> round(kl_upper(0.04, 640, math.log(1 / 0.001)), 4)
    0.0756
    """
    mean = min(max(mean, 0.0), 1.0)

    def kl(q: float) -> float:
        p = mean
        out = p * math.log(p / q) if p > 0 else 0.0
        return out + ((1 - p) * math.log((1 - p) / (1 - q)) if p < 1 else 0.0)

    lo, hi = mean, 1.0
    if mean >= 1.0 or n * kl(1 - 1e-12) <= log_inv_alpha:
        return 1.0
    for _ in range(60):  # bisection: kl(mean || u) grows with u above the mean
        mid = (lo + hi) / 2
        if n * kl(mid) > log_inv_alpha:
            hi = mid
        else:
            lo = mid
    return hi


def stratified_margin(items: Iterable[tuple[int, float, float]], alpha: float) -> float:
    """One-sided ``1 - alpha`` bound on ``mean_i c_i - mean_i p_i`` from ``(K_i, sum, sum of squares)`` per canary.

    Each canary ``i`` is answered ``K_i >= 2`` times independently, answers in [0, 1] with mean
    ``p_i`` and variance ``s_i^2``; ``c_i`` is their mean. With ``alpha / 2`` the within-canary
    variance is bounded from above (disjoint pairs, see the module docstring), with the other
    half Bernstein's inequality bounds the deviation of the mean of ``n`` canaries' ``c_i``.

    Examples
    --------
    >>> near = [(40, 39.0, 39.0)] * 25 + [(40, 1.0, 1.0)] * 7   # 32 near-deterministic canaries, 80% right
    >>> round(stratified_margin(near, 0.0125), 4)      # Clopper-Pearson on the 1,280 answers: 0.0276
    0.0194
    """
    rows = [(int(k), float(t), float(t2)) for k, t, t2 in items]
    n = len(rows)
    if n == 0 or min(k for k, _, _ in rows) < 2:
        return 0.5
    pairs = sum(k // 2 for k, _, _ in rows)
    # sum over canaries of (pairs_i) x E[(y_a - y_b)^2 | the canary's answers] = pairs_i x 2 x sample variance
    spread = sum((k // 2) * 2 * max(t2 - t * t / k, 0.0) / (k - 1) for k, t, t2 in rows)
    log_term = math.log(2 / alpha)
    upper = kl_upper(spread / pairs, pairs, log_term)  # bounds the pair-weighted mean of 2 s_i^2
    var_sum = pairs * upper / min(2 * (k // 2) * k for k, _, _ in rows)  # >= sum_i s_i^2 / K_i
    variance = var_sum / n**2
    b = 1 / (n * min(k for k, _, _ in rows))  # one answer moves mean_i c_i by at most this
    return b * log_term / 3 + math.sqrt((b * log_term / 3) ** 2 + 2 * variance * log_term)


def weighted_cp_margin(items: Iterable[tuple[int, float, float]], alpha: float, binary: bool) -> float:
    """One-sided ``1 - alpha`` bound on ``mean_i c_i - mean_i p_i`` from the pooled answers (independent draws).

    The pooled answers' mean bounds ``sum_i w_i p_i`` with ``w_i = K_i / N`` (Clopper-Pearson for 0/1
    answers, empirical Bernstein otherwise, as ``lower_bound``); ``mean_i p_i`` is at least that minus
    ``D = sum_i max(0, w_i - 1/n)`` whatever the ``p_i`` in [0, 1]. With equal answer counts ``D`` is 0.
    When each answer is an independent draw (a real model at temperature > 0) the spread within
    canaries is ``p(1 - p)`` and this is the narrower bound; for near-deterministic canaries
    ``stratified_margin`` is.

    Examples
    --------
    >>> rows = [(160, 128.0, 128.0)] * 32     # 32 canaries, each answered 160 times, 80% right
    >>> round(weighted_cp_margin(rows, 0.05 / 12, binary=True), 4)
    0.0151
    """
    rows = [(int(k), float(t), float(t2)) for k, t, t2 in items]
    n, total_n = len(rows), sum(k for k, _, _ in rows)
    if n == 0 or total_n == 0:
        return 0.5
    total, total2 = sum(t for _, t, _ in rows), sum(t2 for _, _, t2 in rows)
    spread = sum(max(0.0, k / total_n - 1 / n) for k, _, _ in rows)
    centre = sum(t / k for k, t, _ in rows if k) / n
    return centre - (lower_bound(total, total2, total_n, alpha, binary) - spread)


def stage_alpha(alpha: float, repeats: int, max_repeats: int) -> float:
    """The error allowed to the reference's margin at each of its stages.

    A reference that grows is bounded again at each doubling of its answers, from ``repeats`` to
    ``max_repeats`` per canary: ``1 + floor(log2(max_repeats / repeats))`` stages, each given an
    equal share of ``alpha``, so the margin covers at every stage at once.

    Examples
    --------
    >>> stage_alpha(0.05, 5, 40)    # stages at 5, 10, 20 and 40 answers per canary
    0.0125
    """
    stages = 1 + max(0, math.floor(math.log2(max(max_repeats, repeats) / max(repeats, 1)) + 1e-9))
    return alpha / stages


@dataclass(frozen=True)
class InstanceRef:
    """One canary's reference: mean over ``runs`` baseline runs, and what else is known."""

    mean: float
    runs: int
    var: float | None = None  # per-run variance, when the runs themselves were seen
    out_min: float | None = None  # shortest and longest output (tokens) over the runs
    out_max: float | None = None
    total2: float | None = None  # sum of squared scores, when the runs themselves were seen
    cost: tuple[float, ...] = ()  # (calls, sum, sum of squares) of log cost in dollars
    latency: tuple[float, ...] = ()  # seconds, of the first ``SAMPLES`` calls


@dataclass(frozen=True)
class References:
    """The per-instance references of a task's canaries, from one source and version."""

    source: str  # helm | burn-in
    version: int
    items: Mapping[str, InstanceRef] = field(default_factory=dict)
    stage: int = 0  # doublings of a growing go-live reference
    alpha: float | None = None  # each stage's margin error, fixed when the reference was first frozen

    def subset(self, ids: Iterable[str]) -> References:
        keep = set(ids)
        return References(
            self.source, self.version, {k: v for k, v in self.items.items() if k in keep}, self.stage, self.alpha
        )

    @property
    def answers(self) -> int:
        return sum(r.runs for r in self.items.values())

    @property
    def binary(self) -> bool:
        """Whether every reference answer was 0 or 1 (sum of squares equal to the sum)."""
        return all(r.total2 is None or abs(r.total2 - r.mean * r.runs) < 1e-9 for r in self.items.values())

    @property
    def stratified(self) -> bool:
        """Whether every canary has ``STRATIFIED_MIN_RUNS`` answers: the margin uses the within-canary spread."""
        return bool(self.items) and self.min_runs >= STRATIFIED_MIN_RUNS

    @property
    def centre(self) -> float:
        """The reference's estimate of a random canary's mean: per canary when ``stratified``, else per answer."""
        if self.stratified:
            return self.mean
        n = self.answers
        return sum(r.mean * r.runs for r in self.items.values()) / n if n else 0.0

    def exact_margin(self, alpha: float, min_margin: float = 0.0) -> float:
        """``centre`` minus its exact lower bound at ``alpha`` (see the module docstring)."""
        n = self.answers
        if n == 0:
            return 0.5
        if self.stratified:  # chosen from the data: the narrower of two bounds, each at alpha / 2
            rows = [
                (r.runs, r.mean * r.runs, r.total2 if r.total2 is not None else r.mean * r.runs)
                for r in self.items.values()
            ]
            margin = min(stratified_margin(rows, alpha / 2), weighted_cp_margin(rows, alpha / 2, self.binary))
            return min(max(min_margin, margin), 0.5)
        total = sum(r.mean * r.runs for r in self.items.values())
        total2 = sum(r.total2 if r.total2 is not None else r.mean * r.runs for r in self.items.values())
        bound = lower_bound(total, total2, n, alpha, self.binary)
        return min(max(min_margin, total / n - bound), 0.5)

    def answer_variance(self) -> float:
        """Variance of one answer on a canary drawn at random: the unpaired stream's bet sizing."""
        n = self.answers
        if n < 2:
            return 0.25
        total = sum(r.mean * r.runs for r in self.items.values())
        total2 = sum(r.total2 if r.total2 is not None else r.mean * r.runs for r in self.items.values())
        return max(total2 / n - (total / n) ** 2, 0.0)

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
        return f"{self.source}:{self.version}" + (f".{self.stage}" if self.stage else "")


def helm_references(canaries: Iterable[Canary], coverage: float = 0.9) -> References | None:
    """References from canaries that carry their HELM run's per-instance outcome, if enough do."""
    pool = [c for c in canaries if c.replayable]
    known = {
        c.id: InstanceRef(float(c.baseline_score), max(c.baseline_runs, 1))
        for c in pool
        if c.baseline_score is not None
    }
    if not pool or len(known) < coverage * len(pool):
        return None
    return References("helm", 1, known)


# The go-live reference table: each canary accumulates
# [n, sum, sum2, out_min, out_max, [calls, sum, sum2 of log cost], latencies].
BurnInTable = dict[str, list[Any]]


def burn_in_add(
    table: BurnInTable,
    canary_id: str,
    score: float,
    output_tokens: int | None,
    cost: float | None = None,
    latency: float | None = None,
) -> None:
    """Add one scored answer to the reference table (log-cost sums; the first ``SAMPLES`` latencies)."""
    row = table.setdefault(canary_id, [0, 0.0, 0.0, math.inf, -math.inf, [], []])
    if len(row) < 7:
        row.extend([[], []][: 7 - len(row)])
    row[0] += 1
    row[1] += score
    row[2] += score * score
    if output_tokens is not None:
        row[3] = min(row[3], output_tokens)
        row[4] = max(row[4], output_tokens)
    if cost is not None and cost > 0:
        if len(row[5]) != 3:
            row[5] = [0, 0.0, 0.0]
        log_cost = math.log(cost)
        row[5] = [row[5][0] + 1, row[5][1] + log_cost, row[5][2] + log_cost * log_cost]
    if latency is not None and len(row[6]) < SAMPLES:
        row[6].append(float(latency))


def answers(table: Mapping[str, list[Any]]) -> int:
    return int(sum(v[0] for v in table.values()))


def burn_in_complete(table: Mapping[str, list[float]], pool: Iterable[str], runs: int, coverage: float) -> bool:
    """Whether at least ``coverage`` of the canary pool has ``runs`` answers each."""
    ids = list(pool)
    done = sum(1 for i in ids if i in table and table[i][0] >= runs)
    return bool(ids) and done >= coverage * len(ids)


def burn_in_references(
    table: Mapping[str, list[Any]], runs: int, version: int, stage: int = 0, alpha: float | None = None
) -> References:
    """References from a completed go-live reference table: instances with at least ``runs`` answers."""
    items = {}
    for cid, row in table.items():
        n, total, total2, lo, hi = row[:5]
        if n < runs:
            continue
        mean = total / n
        var = max(total2 / n - mean * mean, 0.0) * n / (n - 1) if n > 1 else None
        costs, lats = (tuple(row[5]) if len(row[5]) == 3 else (), tuple(row[6])) if len(row) >= 7 else ((), ())
        items[cid] = InstanceRef(
            mean, int(n), var, None if math.isinf(lo) else lo, None if math.isinf(hi) else hi, total2, costs, lats
        )
    return References("burn-in", version, items, stage, alpha)


def log_cost_scale(refs: References) -> float | None:
    """Pooled within-canary SD of log cost in the reference (None without two calls on some canary)."""
    ss, dof = 0.0, 0
    for r in refs.items.values():
        if len(r.cost) == 3 and r.cost[0] >= 2:
            n, total, total2 = r.cost
            ss += max(total2 - total * total / n, 0.0)
            dof += int(n) - 1
    return math.sqrt(ss / dof) if dof > 0 and ss > 0 else None


def cost_score(log_cost: float, mean: float, scale: float) -> float:
    """A call's log cost in reference SDs from its canary's mean, clipped to ``COST_CLIP`` and mapped to [0, 1].

    Clipping bounds the heavy tail (one very long answer moves the stream by at most one clipped
    step); at the canary's mean the score is 1/2.

    Examples
    --------
    >>> cost_score(0.0, 0.0, 1.0), cost_score(10.0, 0.0, 1.0)
    (0.5, 1.0)
    """
    z = max(-COST_CLIP, min(COST_CLIP, (log_cost - mean) / scale))
    return 0.5 + z / (2 * COST_CLIP)


def cost_null(refs: References) -> float:
    """Null mean of ``cost_score``: 1/2 plus two SDs of the canaries' estimated means, on its scale.

    Under no change a call's log cost minus its canary's reference mean has mean zero (the mean
    of logs is unbiased and the call is independent of the reference); the error of those means,
    averaged over the canaries drawn, has SD ``sqrt(mean_i 1/n_i / N)`` reference SDs.
    """
    counts = [r.cost[0] for r in refs.items.values() if len(r.cost) == 3 and r.cost[0] >= 1]
    if not counts:
        return 0.6
    sd = math.sqrt(sum(1 / c for c in counts) / len(counts) / len(counts))
    return min(0.5 + 2 * sd / (2 * COST_CLIP), 0.9)


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


@dataclass(frozen=True)
class GrowthCheck:
    """The two-sample check of answers that would extend a frozen go-live reference.

    ``difference`` is the mean over the new answers of ``y - c_i`` (each answer against its own
    canary's frozen mean), ``low``/``high`` its two-sided ``1 - alpha`` interval; the answers are
    indistinguishable from the frozen reference when the interval holds 0.
    """

    difference: float
    low: float
    high: float
    n: int
    alpha: float

    @property
    def indistinguishable(self) -> bool:
        return self.low <= 0.0 <= self.high


def pending(table: Mapping[str, list[Any]], frozen: Mapping[str, list[Any]]) -> BurnInTable:
    """The answers of ``table`` not yet in the frozen reference ``frozen`` (score sums only)."""
    out: BurnInTable = {}
    for cid, row in table.items():
        base = frozen.get(cid)
        n0, t0, q0 = (base[0], base[1], base[2]) if base is not None else (0, 0.0, 0.0)
        if row[0] > n0:
            out[cid] = [row[0] - n0, row[1] - t0, row[2] - q0, math.inf, -math.inf, [], []]
    return out


def growth_check(frozen: References, new: Mapping[str, list[Any]], alpha: float) -> GrowthCheck:
    """Whether answers ``new`` (a table of score sums) may join the frozen reference ``frozen``.

    For canary ``i`` with ``m_i`` new answers and ``K_i`` frozen ones, ``d_i = ybar_i - c_i`` has
    variance ``v_i (1/m_i + 1/K_i)`` under no change, ``v_i`` the canary's within-canary variance,
    estimated from all its answers with half a pseudo-answer each way (so a canary answered
    the same way every time still counts as uncertain). The check is the normal two-sided
    interval of ``sum_i (m_i / M) d_i``. Canaries without a frozen mean are left out.

    Examples
    --------
    >>> ref = References("burn-in", 1, {f"c{i}": InstanceRef(0.8, 5, total2=4.0) for i in range(32)})
    >>> same = {f"c{i}": [5, 4.0, 4.0] for i in range(32)}
    >>> growth_check(ref, same, 0.01).indistinguishable
    True
    >>> worse = {f"c{i}": [10, 6.0, 6.0] for i in range(32)}     # 0.60 on 320 new answers
    >>> growth_check(ref, worse, 0.01).indistinguishable
    False
    """
    from statistics import NormalDist

    rows = [(cid, row) for cid, row in new.items() if cid in frozen.items and row[0] > 0]
    m_total = sum(int(row[0]) for _, row in rows)
    if m_total == 0:
        return GrowthCheck(0.0, -1.0, 1.0, 0, alpha)
    diff, var = 0.0, 0.0
    for cid, row in rows:
        ref = frozen.items[cid]
        m, k = int(row[0]), max(ref.runs, 1)
        ref_total2 = ref.total2 if ref.total2 is not None else ref.mean * ref.runs
        n = m + k
        total, total2 = row[1] + ref.mean * ref.runs + 0.5, row[2] + ref_total2 + 0.5  # + a 1/2 and a 0 answer
        mean = total / (n + 1)
        v = max(total2 / (n + 1) - mean * mean, 0.0) * (n + 1) / n
        w = m / m_total
        diff += w * (row[1] / m - ref.mean)
        var += w * w * v * (1 / m + 1 / k)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    half = z * math.sqrt(var)
    return GrowthCheck(diff, diff - half, diff + half, m_total, alpha)


def to_json(table: BurnInTable) -> dict[str, Any]:
    """JSON has no infinity: unknown output ranges are stored as null."""
    return {
        k: [v[0], v[1], v[2], None if math.isinf(v[3]) else v[3], None if math.isinf(v[4]) else v[4], *v[5:]]
        for k, v in table.items()
    }


def from_json(data: Mapping[str, Any]) -> BurnInTable:
    return {
        k: [
            v[0],
            v[1],
            v[2],
            math.inf if v[3] is None else v[3],
            -math.inf if v[4] is None else v[4],
            *([list(x) for x in v[5:7]] if len(v) >= 7 else [[], []]),
        ]
        for k, v in data.items()
    }
