"""Mixture Shiryaev-Roberts e-detector for counts (calls per hour) against an expected count per period.

Why this detector: a period's call count is not a bounded observation, and each period has an
expected count of its own (a clinic is busy at ten in the morning and quiet at three at night), so
the bounded bets of ``MixtureSR`` do not apply. Each period's count ``c`` is tested against its null
mean ``mu0`` (the reference's expected count for that hour, margins included) with negative
binomial likelihood ratios: for an alternative ``mu1 = mu0 (1 - s)`` (drop) or ``mu0 (1 + s)``
(rise) and dispersion ``phi`` (variance ``mu + phi mu^2``; ``phi = 0`` is Poisson),

    e = NB(c; mu1, phi) / NB(c; mu0, phi).

For a drop the ratio falls as ``c`` grows, so its expectation under any negative binomial count of
mean at least ``mu0`` is at most 1 (and for a rise symmetrically): each ``e`` is an e-value under
the composite null, ``R_t - t`` is a martingale and the average run to a false alarm is at least
the threshold ``A``, as for the other e-detectors (Shin, Ramdas & Rinaldo 2024). The guarantee
rests on ``phi`` not understating the count's dispersion: the caller estimates it from the
reference with an upper margin. Each ``e`` is capped at ``A`` times the number of bets (a capped
e-value stays one), so a count of zero where a thousand were due alarms at once without overflowing.

References
----------
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors: a nonparametric framework for sequential
change detection. New England Journal of Statistics in Data Science.
Lawless, J. F. (1987). Negative binomial and mixed Poisson regression. Canadian Journal of Statistics.
"""

from __future__ import annotations

import math
import random
from typing import Any

from medmon.monitor.detection.drift.esr import MixtureSRBase, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

DROP_SHIFTS = (0.2, 0.4, 0.7, 0.95)  # down to 80%, 60%, 30% and 5% of the null: a dip to a collapse
RISE_SHIFTS = (0.25, 0.5, 1.0, 3.0)  # up to 125%, 150%, twice and four times the null: a surge
RATIO_CAP = 4.0  # the observed/expected ratio kept for the estimate and recovery lies in [0, RATIO_CAP]


def nb_log_ratio(c: float, mu1: float, mu0: float, phi: float) -> float:
    """``log NB(c; mu1, phi) - log NB(c; mu0, phi)``; Poisson when ``phi`` is 0.

    Examples
    --------
    >>> round(nb_log_ratio(500, 500, 1000, 0.0), 2)    # Poisson: 500 + 500 log(0.5)
    153.43
    >>> nb_log_ratio(1000, 1000, 1000, 0.01)
    0.0
    """
    if phi <= 0:
        return (mu0 - mu1) + c * math.log(mu1 / mu0)
    r = 1.0 / phi
    return r * math.log((r + mu0) / (r + mu1)) + c * math.log(mu1 * (r + mu0) / (mu0 * (r + mu1)))


class CountSR(MixtureSRBase):
    """Detect a drop (or rise) of counts below (above) their per-period null means.

    The Shiryaev-Roberts bookkeeping (statistic, evidence, reset) is ``MixtureSR``'s (``MixtureSRBase``); the
    bets are negative binomial likelihood ratios instead of bounded ones.

    Observations are ``(count, mu0, expected)``: the period's count, its null mean (margins
    included) and the reference's expected count, whose ratio ``count / expected`` is the
    observation the estimate and the recovery read (1.0: as in the reference).

    Parameters
    ----------
    phi
        Dispersion of a period's count (variance ``mu + phi mu^2``), an upper estimate.
    threshold
        Alarm when the mixture statistic reaches it; expected false alarms in ``N`` periods
        are at most ``N / threshold``.
    direction
        ``"drop"`` or ``"rise"``.
    null_ratio
        The null on the ratio scale (for instance 0.8: a drop below 80% of the reference), for
        the recovery and the finding.

    Examples
    --------
    >>> det = CountSR(phi=0.01, threshold=1e6, direction="drop", null_ratio=0.8)
    >>> [det.update((c, 800.0, 1000.0)) is not None for c in (1010, 980, 0)]
    [False, False, True]
    """

    name = "count_sr"
    State = MixtureSRState

    def __init__(
        self,
        phi: float,
        threshold: float,
        direction: str = "drop",
        null_ratio: float = 1.0,
        state: MixtureSRState | None = None,
    ) -> None:
        if not phi >= 0 or math.isinf(phi):
            raise ValueError(f"phi must be a finite number >= 0, got {phi}")
        if not threshold > 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if direction not in ("drop", "rise"):
            raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
        if not 0 < null_ratio < RATIO_CAP:
            raise ValueError(f"null_ratio must be in (0, {RATIO_CAP}), got {null_ratio}")
        self.phi, self.threshold, self.direction, self.null_ratio = phi, threshold, direction, null_ratio
        self.mu0 = null_ratio  # the null on the ratio scale: what ``holds`` and ``null_mean`` read
        self.shifts = DROP_SHIFTS if direction == "drop" else RISE_SHIFTS
        self._factors = [1 - s for s in self.shifts] if direction == "drop" else [1 + s for s in self.shifts]
        self.state = state or MixtureSRState.fresh(len(self._factors))
        self.last_x: float | None = None

    @property
    def recovery_null(self) -> RecoveryNull:
        """Back when the observed/expected ratio is shown on the null's side (ratio scale [0, RATIO_CAP])."""
        return RecoveryNull(self.null_ratio, self.direction, max(self.phi, 0.01), 0.0, RATIO_CAP)

    def update(self, obs: tuple[float, float, float]) -> Finding | None:
        """Add one period ``(count, mu0, expected)``; a Finding when the statistic crosses the threshold."""
        c, mu0, expected = (float(v) for v in obs)
        if math.isnan(c) or not mu0 > 0 or not expected > 0 or c < 0:
            self.last_x = None  # no information (a period too quiet to test): the statistic stays
            return None
        x = min(c / expected, RATIO_CAP)
        self.last_x = x
        cap = math.log(self.threshold * len(self._factors))  # one bet at its cap alarms the mixture
        self.state.advance(
            [math.exp(max(min(nb_log_ratio(c, mu0 * f, mu0, self.phi), cap), -700.0)) for f in self._factors], x
        )
        if self.statistic < self.threshold:
            return None
        mean, low, high, n = self.state.window()
        finding = Finding(
            detector=self.name,
            direction=self.direction,
            statistic=self.statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(0.0, low),
            ci_high=min(RATIO_CAP, high),
            n=n,
            null_mean=self.null_ratio,
            change_point=self.state.total - n,
            quantity="calls / reference's calls",
        )
        self.reset()
        return finding

    # The shared detector checks (tests/monitor/drift/test_common.py) use these three hooks.
    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"phi": 0.01, "threshold": 1e4, "direction": "drop", "null_ratio": 0.8}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"phi": -1.0}, "phi"),
            ({"threshold": 0.5}, "threshold"),
            ({"direction": "up"}, "direction"),
            ({"null_ratio": 0.0}, "null_ratio"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Hourly counts with a day-night cycle at the null's 80% of expected, then (drift) halved from hour 300."""

        def count(mean: float) -> float:
            return float(sum(1 for _ in range(int(mean * 2)) if rng.random() < 0.5))  # binomial: under-dispersed

        def hour(t: int, factor: float) -> tuple[float, float, float]:
            expected = 20 + 180 * max(0.0, math.sin(math.pi * (t % 24) / 24))
            return count(expected * factor), 0.8 * expected, expected

        null = [hour(t, 0.8) for t in range(600)]
        drift = [hour(t, 0.8 if t < 300 else 0.4) for t in range(600)]
        return null, drift
