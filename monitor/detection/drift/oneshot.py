"""One-shot anytime-valid paired test from a known change event (model, fingerprint, prompt, judge).

When the served model changes, the moment of change is known, so no change *detector* is needed:
a one-shot sequential test from that moment needs only ``log(1/alpha)`` nats of evidence instead
of the ``log(A)`` a detector needs to keep its false-alarm rate over an endless horizon (about
twice as fast). Two discrete-mixture tests (mSPRT) run side by side on paired observations
``x = (1 + y - c) / 2``:

- *degraded*: H0 ``E[y - c] >= -margin``; rejected when the mixture martingale reaches
  ``1/alpha``: the new model is worse than its baseline;
- *passed*: H0 ``E[y - c] <= -tolerance``; rejected at ``1/alpha``: the new model is within the
  tolerated drop of its baseline.

Each conclusion is wrong with probability at most ``alpha`` (Ville's inequality), however long
the test runs. After ``max_n`` observations without a conclusion the test stops as
inconclusive. Unpaired data fit the same test with ``c`` set to the baseline mean.

References
----------
Robbins, H. (1970). Statistical methods related to the law of the iterated logarithm.
Johari, R., Koomen, P., Pekelis, L., Walsh, D. (2017). Peeking at A/B tests. KDD.
Waudby-Smith, I., Ramdas, A. (2024). Estimating means of bounded random variables by betting. JRSS-B.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull
from medmon.monitor.detection.drift.paired import paired_x


@dataclass
class OneShotState(DataclassState):
    """Log-wealth of each bet for both tests, running sums of the differences, and the verdict."""

    log_worse: list[float] = field(default_factory=lambda: [0.0] * len(DEFAULT_SHIFTS))
    log_fine: list[float] = field(default_factory=lambda: [0.0] * len(DEFAULT_SHIFTS))
    n: int = 0
    total: float = 0.0
    total2: float = 0.0
    decision: str = ""  # "" while running, then degraded | passed | inconclusive


def _mixture(logs: list[float]) -> float:
    top = max(logs)
    return math.exp(top) * sum(math.exp(v - top) for v in logs) / len(logs)


class OneShotPaired:
    """Sequential paired test of a new model against its baseline, started at a known change.

    Parameters
    ----------
    margin
        Tolerance for the baseline's own error: "degraded" needs ``E[y - c] < -margin``.
    tolerance
        The tolerated drop: "passed" means ``E[y - c] > -tolerance``. Must exceed ``margin``.
    alpha
        Error probability of each conclusion; the threshold is ``1 / alpha``.
    sigma2
        Variance of ``x`` used to size the bets.
    max_n
        Observations after which the test stops as inconclusive.

    Examples
    --------
    >>> test = OneShotPaired(margin=0.01, tolerance=0.05, alpha=0.05, sigma2=0.02)
    >>> pairs = ([(1.0, 1.0)] * 7 + [(0.0, 1.0)] * 3) * 20    # 30% of answers now wrong
    >>> next(f for f in map(test.update, pairs) if f).decision
    'degraded'
    """

    name = "oneshot_paired"
    State = OneShotState
    recovery_null: RecoveryNull | None = None

    def __init__(
        self,
        margin: float,
        tolerance: float,
        alpha: float = 0.05,
        sigma2: float = 0.05,
        max_n: int = 1000,
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: OneShotState | None = None,
    ) -> None:
        if not 0 <= margin < 1:
            raise ValueError(f"margin must be in [0, 1), got {margin}")
        if not margin < tolerance < 1:
            raise ValueError(f"tolerance must lie between margin ({margin}) and 1, got {tolerance}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if not sigma2 > 0:
            raise ValueError(f"sigma2 must be positive, got {sigma2}")
        if max_n < 1:
            raise ValueError(f"max_n must be at least 1, got {max_n}")
        self.margin, self.tolerance, self.alpha, self.sigma2, self.max_n = margin, tolerance, alpha, sigma2, max_n
        self.shifts = tuple(shifts)
        self.threshold = 1.0 / alpha
        self.mu_ok, self.mu_bad = (1 - margin) / 2, (1 - tolerance) / 2
        self._lam_worse = [min(s / sigma2, BET_CAP / (1 - self.mu_ok)) for s in self.shifts]
        self._lam_fine = [min(s / sigma2, BET_CAP / self.mu_bad) for s in self.shifts]
        self.state = state or OneShotState(log_worse=[0.0] * len(self.shifts), log_fine=[0.0] * len(self.shifts))
        self.direction = "drop"
        self.null_mean = self.mu_ok
        self.last_x: float | None = None

    @property
    def done(self) -> bool:
        return bool(self.state.decision)

    @property
    def statistic(self) -> float:
        """The larger of the two tests' mixture martingales."""
        return max(_mixture(self.state.log_worse), _mixture(self.state.log_fine))

    @property
    def evidence(self) -> float:
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self.state.n

    def holds(self, run_mean: float) -> bool:  # a one-shot test ends in a verdict, never in a recovery
        return False

    def reset(self) -> None:
        self.state = OneShotState(log_worse=[0.0] * len(self.shifts), log_fine=[0.0] * len(self.shifts))

    def update(self, x: tuple[float, float]) -> Finding | None:
        """Add one ``(score, baseline)`` pair; return the verdict once one is reached."""
        self.last_x = None
        if self.done:
            return None
        score, baseline = x
        if score is None or baseline is None or math.isnan(score) or math.isnan(baseline):
            return None
        v = paired_x(score, baseline)
        self.last_x = v
        s = self.state
        for k in range(len(self.shifts)):
            s.log_worse[k] += math.log(1 + self._lam_worse[k] * (self.mu_ok - v))
            s.log_fine[k] += math.log(1 + self._lam_fine[k] * (v - self.mu_bad))
        d = 2 * v - 1
        s.n, s.total, s.total2 = s.n + 1, s.total + d, s.total2 + d * d
        worse, fine = _mixture(s.log_worse), _mixture(s.log_fine)
        if worse >= self.threshold:
            return self._verdict("degraded", worse, -self.margin)
        if fine >= self.threshold:
            return self._verdict("passed", fine, -self.tolerance)
        if s.n >= self.max_n:
            return self._verdict("inconclusive", max(worse, fine), -self.margin)
        return None

    def _verdict(self, decision: str, statistic: float, null: float) -> Finding:
        s = self.state
        s.decision = decision
        mean = s.total / s.n
        half = 1.96 * math.sqrt(max(s.total2 / s.n - mean * mean, 0.0) / s.n) if s.n > 1 else 2.0
        return Finding(
            detector=self.name,
            direction="drop" if decision == "degraded" else "rise",
            statistic=statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(-1.0, mean - half),
            ci_high=min(1.0, mean + half),
            n=s.n,
            null_mean=null,
            change_point=0,
            quantity="paired difference",
            decision=decision,
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"margin": 0.01, "tolerance": 0.05, "alpha": 0.001, "sigma2": 0.05, "max_n": 100_000}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"margin": 1.5}, "margin"),
            ({"tolerance": 0.005}, "tolerance"),
            ({"alpha": 0.0}, "alpha"),
            ({"sigma2": 0.0}, "sigma2"),
            ({"max_n": 0}, "max_n"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """The new model equal to its baseline (silent until 'passed'), then one 15 points worse."""

        def pair(p: float) -> tuple[float, float]:
            return float(rng.random() < p), 0.8

        return [pair(0.8) for _ in range(2000)], [pair(0.65) for _ in range(1000)]
