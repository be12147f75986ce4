"""Mixture Shiryaev-Roberts e-detector for a bounded stream against a known baseline mean.

Why this detector: the baseline is known (MedHELM), so the test is one-sample, and probes run
forever, so the false-alarm promise must hold over time. Under the null ``E[x_t | past] >= mu0``
(for drops) each bet's product is an e-process and ``R_t - t`` is a martingale, hence the
average run length to a false alarm is at least the threshold ``A`` (Shin, Ramdas & Rinaldo
2024). Mixing several bet sizes adapts to an unknown shift size at a small cost over the oracle
CUSUM that knows it.

References
----------
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors: a nonparametric framework for sequential
change detection. New England Journal of Statistics in Data Science.
Pollak, M. (1985). Optimal detection of a change in distribution. Annals of Statistics.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from monitor.drift.finding import Finding

DEFAULT_SHIFTS = (0.02, 0.05, 0.10, 0.20, 0.30)


@dataclass
class MixtureSRState:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MixtureSRState:
        return cls(**data)


class MixtureSR:
    """Detect a drop (or rise) of the mean of observations in [0, 1] below (above) ``mu0``.

    Parameters
    ----------
    mu0
        Null mean bound, margin included: for a drop, H0 is ``mean >= mu0``.
    sigma2
        Null variance used to size the bets (Bernoulli: ``mu0 * (1 - mu0)``).
    threshold
        Alarm when the mixture statistic reaches it; ARL to false alarm >= threshold.
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

    def __init__(self, mu0: float, sigma2: float, threshold: float, direction: str = "drop",
                 shifts: tuple[float, ...] = DEFAULT_SHIFTS, state: MixtureSRState | None = None) -> None:
        if not 0.0 < mu0 < 1.0:
            raise ValueError(f"mu0 must be in (0, 1), got {mu0}")
        if sigma2 <= 0:
            raise ValueError(f"sigma2 must be positive, got {sigma2}")
        if threshold <= 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if direction not in ("drop", "rise"):
            raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
        self.mu0 = mu0
        self.sigma2 = sigma2
        self.threshold = threshold
        self.direction = direction
        self.shifts = tuple(shifts)
        cap = 0.95 / (1 - mu0) if direction == "drop" else 0.95 / mu0
        self._lambdas = [min(s / sigma2, cap) for s in self.shifts]
        self.state = state or MixtureSRState.fresh(len(self.shifts))

    @property
    def statistic(self) -> float:
        """The mixture Shiryaev-Roberts statistic: the mean of the per-bet statistics."""
        return sum(self.state.r) / len(self.state.r)

    @property
    def evidence(self) -> float:
        """log(statistic) / log(threshold): 0 with no evidence, 1 at the alarm line."""
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    def reset(self) -> None:
        self.state = MixtureSRState.fresh(len(self.shifts), self.state.total)

    def update(self, x: float) -> Finding | None:
        """Add one observation; return a Finding when the statistic crosses the threshold."""
        x = min(1.0, max(0.0, float(x)))
        gap = (self.mu0 - x) if self.direction == "drop" else (x - self.mu0)
        s = self.state
        for k, lam in enumerate(self._lambdas):
            e = 1.0 + lam * gap
            s.r[k] = (1.0 + s.r[k]) * e
            s.w[k] = max(0.0, s.w[k] + math.log(e))
            if s.w[k] == 0.0:
                s.win_n[k], s.win_sum[k], s.win_sum2[k] = 0, 0.0, 0.0
            else:
                s.win_n[k] += 1
                s.win_sum[k] += x
                s.win_sum2[k] += x * x
        s.n += 1
        s.total += 1
        if self.statistic < self.threshold:
            return None
        low, high = self.interval
        finding = Finding(
            detector="mixture_sr", direction=self.direction, statistic=self.statistic,
            threshold=self.threshold, estimate=self.mean, ci_low=low, ci_high=high,
            n=self.state.win_n[self._lead], null_mean=self.mu0, change_point=s.total - self.state.win_n[self._lead],
        )
        self.reset()
        return finding

    @property
    def _lead(self) -> int:
        """The bet carrying the most evidence; its window describes the change."""
        return max(range(len(self.state.r)), key=lambda k: self.state.r[k])

    @property
    def mean(self) -> float:
        """Mean of the observations since the estimated change point."""
        k = self._lead
        n = self.state.win_n[k]
        return self.state.win_sum[k] / n if n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval for that mean (normal approximation, clipped to [0, 1])."""
        k = self._lead
        n = self.state.win_n[k]
        if n < 2:
            return (0.0, 1.0)
        mean = self.state.win_sum[k] / n
        var = max(self.state.win_sum2[k] / n - mean**2, 0.0)
        half = 1.96 * math.sqrt(var / n)
        return (max(0.0, mean - half), min(1.0, mean + half))
