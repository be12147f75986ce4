"""Paired e-detector: each answer is compared with its own canary's baseline outcome.

A canary that came from a HELM run (or from the burn-in after go-live) carries ``c``, the mean of
its baseline outcomes over ``K`` runs. For a new score ``y`` on that canary the paired
difference ``d = y - c`` lies in [-1, 1]; the detector watches ``x = (1 + d) / 2`` in [0, 1]
with the null ``E[d] >= -margin``, i.e. ``mu0 = (1 - margin) / 2``. Canaries the model answers
the same way as before give ``d = 0`` and carry almost no evidence (a sequential McNemar test),
so on near-deterministic outputs the variance, and hence the delay, is much smaller than
unpaired. The margin absorbs the bias of ``c`` (the baseline's own sampling error), which
pairing alone does not remove.

References
----------
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors: a nonparametric framework for sequential
change detection.
McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions.
"""

from __future__ import annotations

import math
import random
from typing import Any

from medmon.monitor.detection.drift.esr import DEFAULT_SHIFTS, MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.drift.wrapped import WrappedSR


def paired_x(score: float, baseline: float) -> float:
    """Map a paired difference to [0, 1]: ``(1 + score - baseline) / 2``.

    Examples
    --------
    >>> paired_x(1.0, 1.0), paired_x(0.0, 1.0), paired_x(1.0, 0.0)
    (0.5, 0.0, 1.0)
    """
    return (1.0 + min(1.0, max(0.0, score)) - min(1.0, max(0.0, baseline))) / 2.0


class PairedSR(WrappedSR):
    """Detect a drop (or rise) of scores relative to each canary's own baseline outcome.

    Parameters
    ----------
    margin
        Tolerated mean paired difference: a drop alarms only when ``E[y - c] < -margin``.
    sigma2
        Null variance of ``x`` used to size the bets; ``E[(c - y)^2] / 4`` at the baseline.
    threshold
        Alarm threshold ``A`` of the underlying mixture Shiryaev-Roberts detector.
    direction
        ``"drop"`` (alert) or ``"rise"`` (information: the model changed?).
    shifts
        Shift sizes of the mixture bets, on the ``x`` scale.

    Examples
    --------
    >>> det = PairedSR(margin=0.01, sigma2=0.02, threshold=1e4)
    >>> pairs = [(1.0, 1.0)] * 8 + [(0.0, 1.0)] * 2      # two of ten answers now wrong
    >>> any(det.update(p) for p in pairs * 20)
    True
    """

    name = "paired_sr"
    State = MixtureSRState

    def __init__(
        self,
        margin: float,
        sigma2: float,
        threshold: float,
        direction: str = "drop",
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: MixtureSRState | None = None,
    ) -> None:
        if not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be in [0, 1), got {margin}")
        self.margin = margin
        mu0 = (1.0 - margin) / 2.0 if direction == "drop" else (1.0 + margin) / 2.0
        self._core = MixtureSR(mu0, sigma2, threshold, direction, shifts, state)
        self.sigma2, self.threshold, self.direction, self.shifts = sigma2, threshold, direction, tuple(shifts)

    def update(self, x: tuple[float, float]) -> Finding | None:
        """Add one ``(score, baseline)`` pair; a Finding reports the mean paired difference."""
        score, baseline = x
        if score is None or baseline is None or math.isnan(score) or math.isnan(baseline):
            self._core.last_x = None
            return None
        found = self._core.update(paired_x(score, baseline))
        if found is None:
            return None
        # Back to the difference scale: d = 2x - 1.
        sign = -1.0 if self.direction == "drop" else 1.0
        return Finding(
            detector=self.name,
            direction=self.direction,
            statistic=found.statistic,
            threshold=found.threshold,
            estimate=2 * found.estimate - 1,
            ci_low=max(-1.0, 2 * found.ci_low - 1),
            ci_high=min(1.0, 2 * found.ci_high - 1),
            n=found.n,
            null_mean=sign * self.margin,
            change_point=found.change_point,
            quantity="paired difference",
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"margin": 0.01, "sigma2": 0.02, "threshold": 1e4}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"margin": -0.1}, "margin"),
            ({"sigma2": 0.0}, "sigma2"),
            ({"threshold": 1.0}, "threshold"),
            ({"direction": "down"}, "direction"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Near-deterministic canaries (baselines from 5 runs); the drift breaks 15% of them."""
        items = [1.0 if rng.random() < 0.8 else 0.0 for _ in range(200)]

        def draw(broken: float) -> tuple[float, float]:
            c = rng.choice(items)
            p = (0.97 if c else 0.03) * (0.0 if rng.random() < broken and c else 1.0)
            return float(rng.random() < p), c * 0.97 + (1 - c) * 0.03

        return [draw(0.0) for _ in range(2000)], [draw(0.0) for _ in range(300)] + [draw(0.15) for _ in range(700)]
