"""Mixture Shiryaev-Roberts e-detector for a bounded stream against a known baseline mean.

Why this detector: the baseline is known (MedHELM), so the test is one-sample, and probes run
forever, so the false-alarm promise must hold over time. Under the null ``E[x_t | past] >= mu0``
(for drops) each bet's product is an e-process and ``R_t - t`` is a martingale, hence the
average run length to a false alarm is at least the threshold ``A`` and the expected number of
false alarms in ``N`` observations is at most ``N / A`` (Shin, Ramdas & Rinaldo 2024). Mixing
several bet sizes adapts to an unknown shift size at a small cost over the oracle CUSUM that
knows it.

References
----------
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors: a nonparametric framework for sequential
change detection. New England Journal of Statistics in Data Science.
Pollak, M. (1985). Optimal detection of a change in distribution. Annals of Statistics.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

DEFAULT_SHIFTS = (0.02, 0.05, 0.10, 0.20, 0.30)
BET_CAP = 0.95  # keeps every e-value at least 0.05: one observation never wipes a bet out


@dataclass
class MixtureSRState(DataclassState):
    """Everything needed to resume a detector, as plain floats that round-trip through JSON.

    ``r`` holds each bet's Shiryaev-Roberts statistic. The Shiryaev-Roberts statistic never
    returns to zero, so each bet also keeps a CUSUM ``w`` of its log e-values: the last time it
    stood at zero estimates the change point, and ``win_*`` sum the observations since then, so
    an alarm's estimate describes the changed stream rather than the whole history.
    """

    r: list[float] = field(default_factory=list)
    w: list[float] = field(default_factory=list)
    win_n: list[int] = field(default_factory=list)
    win_sum: list[float] = field(default_factory=list)
    win_sum2: list[float] = field(default_factory=list)
    n: int = 0
    total: int = 0

    @classmethod
    def fresh(cls, k: int, total: int = 0) -> MixtureSRState:
        return cls(r=[0.0] * k, w=[0.0] * k, win_n=[0] * k, win_sum=[0.0] * k, win_sum2=[0.0] * k, total=total)

    def advance(self, evalues: Sequence[float], value: float) -> None:
        """One Shiryaev-Roberts step with one e-value per bet; ``value`` feeds the estimate window."""
        for k, e in enumerate(evalues):
            self.r[k] = (1.0 + self.r[k]) * e
            self.w[k] = max(0.0, self.w[k] + math.log(e))
            if self.w[k] == 0.0:
                self.win_n[k], self.win_sum[k], self.win_sum2[k] = 0, 0.0, 0.0
            else:
                self.win_n[k] += 1
                self.win_sum[k] += value
                self.win_sum2[k] += value * value
        self.n += 1
        self.total += 1

    @property
    def statistic(self) -> float:
        return sum(self.r) / len(self.r)

    @property
    def lead(self) -> int:
        """The bet carrying the most evidence; its window describes the change."""
        return max(range(len(self.r)), key=lambda k: self.r[k])

    def window(self) -> tuple[float, float, float, int]:
        """Mean of the lead bet's window with a 95% normal interval: (mean, low, high, n)."""
        k = self.lead
        n = self.win_n[k]
        if n == 0:
            return float("nan"), float("-inf"), float("inf"), 0
        mean = self.win_sum[k] / n
        if n < 2:
            return mean, float("-inf"), float("inf"), n
        var = max(self.win_sum2[k] / n - mean**2, 0.0)
        half = 1.96 * math.sqrt(var / n)
        return mean, mean - half, mean + half, n


def bet_sizes(mu0: float, sigma2: float, direction: str, shifts: Sequence[float]) -> list[float]:
    """Bet sizes ``lambda_k = min(shift_k / sigma2, cap)``; the cap keeps e-values positive."""
    cap = BET_CAP / (1 - mu0) if direction == "drop" else BET_CAP / mu0
    return [min(s / sigma2, cap) for s in shifts]


def validate(mu0: float, sigma2: float, threshold: float, direction: str, shifts: Sequence[float]) -> None:
    """Raise ``ValueError`` naming the first bad parameter."""
    if not 0.0 < mu0 < 1.0:
        raise ValueError(f"mu0 must be in (0, 1), got {mu0}")
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be positive, got {sigma2}")
    if not threshold > 1:
        raise ValueError(f"threshold must exceed 1, got {threshold}")
    if direction not in ("drop", "rise"):
        raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
    if not shifts or any(not 0 < s < 1 for s in shifts):
        raise ValueError(f"shifts must be a non-empty sequence of values in (0, 1), got {shifts!r}")


class MixtureSRBase:
    """The Shiryaev-Roberts bookkeeping of a mixture of bets: statistic, evidence, reset, hold test and the
    estimate since the change point. ``MixtureSR`` and ``medmon.monitor.detection.drift.counts.CountSR``
    share it; each takes its own observations and sizes its own bets in ``update``."""

    name: str
    mu0: float  # the null on the observations' scale
    threshold: float
    direction: str
    shifts: tuple[float, ...]
    state: MixtureSRState
    last_x: float | None

    @property
    def null_mean(self) -> float:
        return self.mu0

    @property
    def statistic(self) -> float:
        """The mixture Shiryaev-Roberts statistic: the mean of the per-bet statistics."""
        return self.state.statistic

    @property
    def evidence(self) -> float:
        """log(statistic) / log(threshold): 0 with no evidence, 1 at the alarm line."""
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self.state.total

    def reset(self) -> None:
        self.state = MixtureSRState.fresh(len(self.shifts), self.state.total)

    def holds(self, run_mean: float) -> bool:
        """Whether a run's mean observation is back on the null's side."""
        return run_mean >= self.mu0 if self.direction == "drop" else run_mean <= self.mu0

    @property
    def mean(self) -> float:
        """Mean of the observations since the estimated change point."""
        return self.state.window()[0]

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval for that mean (normal approximation, clipped to [0, 1])."""
        _, low, high, n = self.state.window()
        return (max(0.0, low), min(1.0, high)) if n >= 2 else (0.0, 1.0)


class MixtureSR(MixtureSRBase):
    """Detect a drop (or rise) of the mean of observations in [0, 1] below (above) ``mu0``.

    Parameters
    ----------
    mu0
        Null mean bound, margin included: for a drop, H0 is ``mean >= mu0``.
    sigma2
        Null variance used to size the bets (Bernoulli: ``mu0 * (1 - mu0)``). Only power depends
        on it; the false-alarm guarantee holds for any value.
    threshold
        Alarm when the mixture statistic reaches it; expected false alarms in ``N`` observations
        are at most ``N / threshold``.
    direction
        ``"drop"`` or ``"rise"``.
    shifts
        Shift sizes the mixture bets on.

    Examples
    --------
    >>> det = MixtureSR(mu0=0.78, sigma2=0.17, threshold=1e4)
    >>> alarms = [det.update(x) for x in [1, 0, 0, 1, 0, 0, 0, 1, 0, 0] * 10]
    >>> next(i for i, f in enumerate(alarms) if f) < 60
    True
    """

    name = "mixture_sr"
    State = MixtureSRState

    def __init__(
        self,
        mu0: float,
        sigma2: float,
        threshold: float,
        direction: str = "drop",
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: MixtureSRState | None = None,
    ) -> None:
        validate(mu0, sigma2, threshold, direction, shifts)
        self.mu0 = mu0
        self.sigma2 = sigma2
        self.threshold = threshold
        self.direction = direction
        self.shifts = tuple(shifts)
        self._lambdas = bet_sizes(mu0, sigma2, direction, self.shifts)
        self.state = state or MixtureSRState.fresh(len(self.shifts))
        self.last_x: float | None = None

    @property
    def recovery_null(self) -> RecoveryNull:
        """The null a degraded stream must be shown back on (``medmon.monitor.detection.drift.recovery``)."""
        return RecoveryNull(self.mu0, self.direction, self.sigma2)

    def update(self, x: float) -> Finding | None:
        """Add one observation; return a Finding when the statistic crosses the threshold."""
        x = float(x)
        if math.isnan(x):
            self.last_x = None  # no information: the statistic is left as it was
            return None
        x = min(1.0, max(0.0, x))
        self.last_x = x
        gap = (self.mu0 - x) if self.direction == "drop" else (x - self.mu0)
        self.state.advance([1.0 + lam * gap for lam in self._lambdas], x)
        if self.statistic < self.threshold:
            return None
        finding = self._finding()
        self.reset()
        return finding

    def _finding(self) -> Finding:
        mean, low, high, n = self.state.window()
        return Finding(
            detector=self.name,
            direction=self.direction,
            statistic=self.statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(0.0, low),
            ci_high=min(1.0, high),
            n=n,
            null_mean=self.mu0,
            change_point=self.state.total - n,
        )

    # The shared detector checks (tests/monitor/drift/test_common.py) use these three hooks.
    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"mu0": 0.78, "sigma2": 0.17, "threshold": 1e4}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"mu0": 1.2}, "mu0"),
            ({"sigma2": 0.0}, "sigma2"),
            ({"threshold": 0.5}, "threshold"),
            ({"direction": "up"}, "direction"),
            ({"shifts": ()}, "shifts"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """A stream that holds the null (silent) and one with a clear drop after 300 observations."""
        null = [float(rng.random() < 0.80) for _ in range(2000)]
        drift = [float(rng.random() < 0.80) for _ in range(300)] + [float(rng.random() < 0.55) for _ in range(700)]
        return null, drift
