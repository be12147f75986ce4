"""The mixture Shiryaev-Roberts detector for many streams at once, vectorised with numpy.

Same recursion as :class:`medmon.monitor.detection.drift.esr.MixtureSR`, one row per stream: used by the benchmark
(thousands of simulated streams) and wherever many streams share one update step. It keeps only
the statistic (no estimate window), so it reports alarms as a boolean mask.

Examples
--------
>>> import numpy as np
>>> batch = MixtureSRBatch(np.full(3, 0.78), np.full(3, 0.17), 1e4)
>>> xs = np.array([[1.0, 0.0, 1.0]] * 5 + [[0.0, 0.0, 1.0]] * 5)
>>> [bool(batch.update(x).any()) for x in xs][-1]
False
>>> batch.statistic.shape
(3,)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS


class MixtureSRBatch:
    """Vectorised mixture Shiryaev-Roberts: ``update(x)`` takes one observation per stream.

    Parameters
    ----------
    mu0, sigma2
        Per-stream null mean and variance (arrays of the same length).
    threshold
        Alarm threshold ``A`` shared by every stream.
    direction
        ``"drop"`` or ``"rise"``.
    reset_on_alarm
        Restart an alarmed stream from zero (as :class:`MixtureSR` does).
    """

    def __init__(
        self,
        mu0: NDArray[np.float64],
        sigma2: NDArray[np.float64],
        threshold: float,
        direction: str = "drop",
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        reset_on_alarm: bool = True,
    ) -> None:
        mu0, sigma2 = np.asarray(mu0, dtype=float), np.asarray(sigma2, dtype=float)
        if mu0.shape != sigma2.shape or mu0.ndim != 1:
            raise ValueError(f"mu0 and sigma2 must be 1-d arrays of one shape, got {mu0.shape} and {sigma2.shape}")
        if np.any((mu0 <= 0) | (mu0 >= 1)):
            raise ValueError("mu0 must lie in (0, 1) for every stream")
        if np.any(sigma2 <= 0):
            raise ValueError("sigma2 must be positive for every stream")
        if not threshold > 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if direction not in ("drop", "rise"):
            raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
        self.mu0, self.threshold, self.direction, self.reset_on_alarm = mu0, threshold, direction, reset_on_alarm
        cap = BET_CAP / (1 - mu0) if direction == "drop" else BET_CAP / mu0
        self.lambdas = np.minimum(np.asarray(shifts)[None, :] / sigma2[:, None], cap[:, None])
        self.r = np.zeros_like(self.lambdas)

    @property
    def statistic(self) -> NDArray[np.float64]:
        return self.r.mean(axis=1)

    def update(self, x: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Add one observation per stream; return which streams alarmed (and were reset)."""
        x = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
        gap = (self.mu0 - x) if self.direction == "drop" else (x - self.mu0)
        self.r = (1.0 + self.r) * (1.0 + self.lambdas * gap[:, None])
        alarm = self.r.mean(axis=1) >= self.threshold
        if self.reset_on_alarm and alarm.any():
            self.r[alarm] = 0.0
        return alarm
