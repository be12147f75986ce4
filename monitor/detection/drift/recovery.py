"""Evidence that a degraded stream is back: a mixture CUSUM betting on the null's side.

A stream that raised an alarm stays degraded until this detector, started at the alarm, finds
evidence of its own that the observations are back on the null's side of ``mu0``. It bets
``e_k = 1 + lambda_k (x - mu0)`` (for a stream watching a drop) and keeps each bet's CUSUM of log
e-values ``w_k = max(0, w_k + log e_k)``; recovery when ``mean_k exp(w_k)`` reaches the threshold
``A``. ``exp(w_k)`` never exceeds the bet's Shiryaev-Roberts statistic, so while the mean stays on
the degraded side (``E[x] <= mu0``) the expected number of observations before a false recovery
is at least ``A`` (Shin, Ramdas & Rinaldo 2024), and far more while the drop lasts: a run or two
of lucky answers is no recovery. Unlike a one-shot test from the alarm, the CUSUM floor at zero
means a long degraded spell does not bury later evidence of a real fix.

References
----------
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors: a nonparametric framework for sequential
change detection. New England Journal of Statistics in Data Science.
Page, E. S. (1954). Continuous inspection schemes. Biometrika.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import DEFAULT_SHIFTS, bet_sizes
from medmon.monitor.detection.drift.finding import RecoveryNull

OPPOSITE = {"drop": "rise", "rise": "drop"}


@dataclass
class RecoveryState(DataclassState):
    w: list[float] = field(default_factory=lambda: [0.0] * len(DEFAULT_SHIFTS))
    n: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecoveryState:
        return cls(w=list(data["w"]), n=int(data["n"]))


class Recovery:
    """Watch a degraded stream for evidence that it is back on the null's side.

    Examples
    --------
    >>> rec = Recovery(RecoveryNull(mu0=0.75, direction="drop", sigma2=0.19), threshold=1e3)
    >>> rec.update([0.0, 1.0, 1.0, 0.0] * 50)     # still at 0.5: no recovery
    False
    >>> any(rec.update([1.0] * 9 + [0.0]) for _ in range(40))   # back at 0.9
    True
    """

    def __init__(self, null: RecoveryNull, threshold: float, state: RecoveryState | None = None) -> None:
        if not threshold > 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if not null.hi > null.lo:
            raise ValueError(f"the observation range must be non-empty, got [{null.lo}, {null.hi}]")
        self.null, self.threshold = null, threshold
        span = null.hi - null.lo
        self._mu0 = min(max((null.mu0 - null.lo) / span, 1e-6), 1 - 1e-6)
        self._direction = OPPOSITE[null.direction]
        self._lambdas = bet_sizes(self._mu0, max(null.sigma2 / span**2, 1e-6), self._direction, DEFAULT_SHIFTS)
        self.state = state or RecoveryState(w=[0.0] * len(DEFAULT_SHIFTS))

    @property
    def statistic(self) -> float:
        return sum(math.exp(min(w, 700.0)) for w in self.state.w) / len(self.state.w)

    def update(self, xs: Iterable[float]) -> bool:
        """Add observations (on the stream's scale); True once the stream is shown back."""
        span = self.null.hi - self.null.lo
        for x in xs:
            if x is None or math.isnan(x):
                continue
            u = min(1.0, max(0.0, (x - self.null.lo) / span))
            gap = (u - self._mu0) if self._direction == "rise" else (self._mu0 - u)
            self.state.w = [max(0.0, w + math.log(1.0 + lam * gap)) for w, lam in zip(self.state.w, self._lambdas)]
            self.state.n += 1
            if self.statistic >= self.threshold:
                return True
        return False
