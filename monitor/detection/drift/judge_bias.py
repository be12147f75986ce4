"""Judge-bias e-detector: has a judge become more lenient or more severe than it was at go-live?

Agreement with the gold scores (``medmon.monitor.detection.drift.judge``) misses a judge that turns lenient: most
good answers already have the top gold score, so scoring everything higher costs little
agreement. This detector watches the *signed* error ``judge - gold`` instead, against the
judge's own level over its first ``burn_in`` verdicts (judges differ from clinicians' gold by a
stable amount; what matters is that it moves). After the burn-in it alarms when the mean error
rises above, or falls below, that reference by more than ``tolerance`` points plus two standard
errors of the reference itself.

Both directions are one-sided mixture e-SR detectors at twice the stream's threshold, so the
pair keeps the stream's false-alarm budget.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import DEFAULT_SHIFTS, MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull


@dataclass
class JudgeBiasState(DataclassState):
    """The burn-in sums, then the two directions' e-SR states (None until the burn-in ends)."""

    ref_n: int = 0
    ref_sum: float = 0.0
    ref_sum2: float = 0.0
    lenient: MixtureSRState | None = None
    severe: MixtureSRState | None = None
    total: int = 0

    @property
    def reference(self) -> tuple[float, float] | None:
        """Mean signed error of the burn-in and its standard error, once there is one."""
        if self.ref_n < 2:
            return None
        mean = self.ref_sum / self.ref_n
        var = max(self.ref_sum2 / self.ref_n - mean * mean, 0.0) * self.ref_n / (self.ref_n - 1)
        return mean, math.sqrt(var / self.ref_n)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeBiasState:
        cores = {k: MixtureSRState.from_dict(data[k]) if data.get(k) else None for k in ("lenient", "severe")}
        return cls(**{**data, **cores})


@dataclass
class _Null:
    lo: float  # lowest signed error (points) the null allows
    hi: float  # highest
    cores: dict[str, MixtureSR] = field(default_factory=dict)


class JudgeBiasSR:
    """Detect a judge drifting lenient (scores rising against gold) or severe (falling).

    Parameters
    ----------
    threshold
        Alarm threshold ``A`` of the stream; each direction uses ``2 A``.
    burn_in
        Verdicts that set the judge's reference signed error.
    tolerance
        Shift of the mean signed error, in score points, that is not yet drift.
    scale_min, scale_max
        The jury's score scale (1-5 by default).
    sigma2
        Null variance of one observation (on the [0, 1] scale) used to size the bets.

    Examples
    --------
    >>> det = JudgeBiasSR(threshold=1e3, burn_in=40)
    >>> honest = [(5, 5), (4, 4), (2, 1), (3, 3)]       # a judge one point generous on one answer in four
    >>> lenient = [(5, 5), (5, 4), (4, 1), (5, 3)]      # then scores up to three points higher
    >>> any(det.update(v) for v in honest * 10)
    False
    >>> found = next(f for v in lenient * 30 if (f := det.update(v)) is not None)
    >>> found.direction, round(found.estimate, 1)   # mean signed error since the change, in points
    ('rise', 1.5)
    >>> round(found.null_mean, 2)   # the burn-in's 0.25, plus 0.25 tolerance, plus two standard errors
    0.64
    """

    name = "judge_bias_sr"
    State = JudgeBiasState
    recovery_null: RecoveryNull | None = None  # two-sided: it recovers on runs back inside the band (``holds``)

    def __init__(
        self,
        threshold: float,
        burn_in: int = 48,
        tolerance: float = 0.25,
        scale_min: float = 1.0,
        scale_max: float = 5.0,
        sigma2: float = 0.02,
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: JudgeBiasState | None = None,
    ) -> None:
        if not scale_max > scale_min:
            raise ValueError(f"scale_max must exceed scale_min, got {scale_min}..{scale_max}")
        if burn_in < 2:
            raise ValueError(f"burn_in must be at least 2 verdicts, got {burn_in}")
        if not 0 <= tolerance < scale_max - scale_min:
            raise ValueError(f"tolerance must be in [0, {scale_max - scale_min}) points, got {tolerance}")
        if threshold <= 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if sigma2 <= 0:
            raise ValueError(f"sigma2 must be positive, got {sigma2}")
        self.threshold, self.burn_in, self.tolerance, self.sigma2 = threshold, burn_in, tolerance, sigma2
        self.scale_min, self.scale_max, self.shifts = scale_min, scale_max, tuple(shifts)
        self.direction = "both"
        self.state = state or JudgeBiasState()
        self.last_x: float | None = None
        self._null: _Null | None = None
        if self.state.ref_n >= burn_in:
            self._start()

    # The signed error (judge - gold) in points maps to [0, 1], 0.5 meaning no error.
    def _x(self, error: float) -> float:
        return 0.5 + error / (2 * (self.scale_max - self.scale_min))

    def _points(self, x: float) -> float:
        return (x - 0.5) * 2 * (self.scale_max - self.scale_min)

    def _start(self) -> None:
        ref = self.state.reference
        assert ref is not None
        mean, se = ref
        margin = self.tolerance + 2 * se
        null = _Null(mean - margin, mean + margin)
        for key, direction, bound in (("lenient", "rise", null.hi), ("severe", "drop", null.lo)):
            mu0 = min(1.0 - 1e-6, max(1e-6, self._x(bound)))
            null.cores[key] = MixtureSR(
                mu0, self.sigma2, 2 * self.threshold, direction, self.shifts, getattr(self.state, key)
            )
            setattr(self.state, key, null.cores[key].state)
        self._null = null

    @property
    def null_mean(self) -> float:
        """The reference signed error (points); 0 during the burn-in."""
        ref = self.state.reference
        return ref[0] if ref is not None and self._null is not None else 0.0

    def holds(self, run_mean: float) -> bool:
        """Whether a run's mean observation lies inside the null band (for recovery)."""
        if self._null is None:
            return True
        return self._null.lo <= self._points(run_mean) <= self._null.hi

    @property
    def statistic(self) -> float:
        """The larger direction's statistic, on the stream's scale (halved: each runs at ``2 A``)."""
        if self._null is None:
            return 0.0
        return max(core.statistic for core in self._null.cores.values()) / 2

    @property
    def evidence(self) -> float:
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self.state.total

    def reset(self) -> None:
        """Forget the evidence, keep the reference (a recovered judge is watched against it again)."""
        if self._null is not None:
            for key, core in self._null.cores.items():
                core.reset()
                setattr(self.state, key, core.state)

    def update(self, x: tuple[float, float]) -> Finding | None:
        """Add one ``(judge_score, gold_score)`` verdict."""
        judge, gold = x
        if judge is None or gold is None or math.isnan(judge) or math.isnan(gold):
            self.last_x = None
            return None
        error = float(judge) - float(gold)
        self.last_x = self._x(error)
        st = self.state
        st.total += 1
        if self._null is None:
            st.ref_n, st.ref_sum, st.ref_sum2 = st.ref_n + 1, st.ref_sum + error, st.ref_sum2 + error * error
            if st.ref_n >= self.burn_in:
                self._start()
            return None
        found = None
        for key, core in self._null.cores.items():
            found = core.update(self.last_x) or found
            setattr(st, key, core.state)
        if found is None:
            return None
        return Finding(
            detector=self.name,
            direction=found.direction,
            statistic=found.statistic / 2,
            threshold=self.threshold,
            estimate=self._points(found.estimate),
            ci_low=self._points(found.ci_low),
            ci_high=self._points(found.ci_high),
            n=found.n,
            null_mean=self._null.hi if found.direction == "rise" else self._null.lo,
            change_point=found.change_point,
            quantity="signed error (points)",
        )

    # The shared detector checks (tests/monitor/drift/test_common.py) use these three hooks.
    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"threshold": 1e4, "burn_in": 200}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"scale_max": 1.0}, "scale_max"),
            ({"burn_in": 1}, "burn_in"),
            ({"tolerance": -1.0}, "tolerance"),
            ({"threshold": 0.2}, "threshold"),
            ({"sigma2": -1.0}, "sigma2"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """A judge one point off either way on 40% of canaries, then one point generous on 60% more."""

        def verdict(generous: float) -> tuple[float, float]:
            gold = float(rng.randint(1, 4))
            r = rng.random()
            off = 1.0 if r < generous else (rng.choice((-1.0, 1.0)) if r < generous + 0.4 else 0.0)
            return gold + off, gold

        return [verdict(0.0) for _ in range(2000)], [verdict(0.0) for _ in range(300)] + [
            verdict(0.6) for _ in range(700)
        ]
