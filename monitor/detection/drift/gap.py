"""Subgroup gap e-detector: raise when one subgroup falls further behind the rest than at baseline.

Observations are ``(in_group, d)`` pairs, where ``d`` is a paired difference (score minus the
canary's own baseline outcome, in [-1, 1]) or a raw score. Observations are buffered per side;
as soon as both sides hold at least one, the detector takes one step with
``D = mean(rest) - mean(group)``. Canaries are drawn uniformly with replacement, so given the
counts each side's mean is an unbiased estimate of that side's mean, and ``E[D | past]`` is the
current gap. With paired differences the baseline gap cancels: ``D`` estimates how much the gap
*widened* since baseline, whatever it was. The null ``E[D] <= baseline_gap + margin`` is tested by
a rising mixture Shiryaev-Roberts detector on ``x = (D + R) / (2 R)`` (``R`` = range of ``d``).

Why this design rather than two per-subgroup detectors: the overall average can hold while one
group drops and another rises; each subgroup stream alone may lack the power (fewer canaries),
but the difference isolates exactly the equity question, and one step per batch keeps it valid
under any interleaving of the groups.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import DEFAULT_SHIFTS, MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.drift.wrapped import CoreEvidence


@dataclass
class GapState(DataclassState):
    """The core detector's state plus the observations waiting for the other side."""

    core: MixtureSRState = field(default_factory=lambda: MixtureSRState.fresh(len(DEFAULT_SHIFTS)))
    n_in: int = 0
    sum_in: float = 0.0
    n_out: int = 0
    sum_out: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GapState:
        return cls(**{**data, "core": MixtureSRState.from_dict(data["core"])})


class SubgroupGapSR(CoreEvidence):
    """Detect a widening of the gap between one subgroup and the rest.

    Parameters
    ----------
    margin
        Tolerated widening beyond ``baseline_gap`` (covers the baseline's sampling error).
    sigma2
        Null variance of ``x`` used to size the bets.
    threshold
        Alarm threshold ``A``.
    baseline_gap
        The gap (rest minus group) at baseline; 0 with paired differences, where it cancels.
    value_range
        ``R``: observations lie in [-R, R] (2 for paired differences, 1 for raw scores).

    Examples
    --------
    >>> det = SubgroupGapSR(margin=0.02, sigma2=0.01, threshold=1e3)
    >>> batch = [(True, -1.0), (False, 0.0), (False, 0.0)]   # the group now fails, the rest holds
    >>> any(det.update(o) for o in batch * 30)
    True
    """

    name = "subgroup_gap_sr"
    State = GapState

    def __init__(
        self,
        margin: float,
        sigma2: float,
        threshold: float,
        baseline_gap: float = 0.0,
        value_range: float = 2.0,
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: GapState | None = None,
    ) -> None:
        if not value_range > 0:
            raise ValueError(f"value_range must be positive, got {value_range}")
        if not -value_range < baseline_gap + margin < value_range:
            raise ValueError(
                f"baseline_gap + margin must lie in (-value_range, value_range), got {baseline_gap + margin}"
            )
        if margin < 0:
            raise ValueError(f"margin must be non-negative, got {margin}")
        self.margin, self.baseline_gap, self.value_range = margin, baseline_gap, value_range
        self.sigma2, self.threshold, self.shifts = sigma2, threshold, tuple(shifts)
        mu0 = (baseline_gap + margin + value_range) / (2 * value_range)
        self.state = state or GapState(core=MixtureSRState.fresh(len(self.shifts)))
        self._core = MixtureSR(mu0, sigma2, threshold, "rise", self.shifts, self.state.core)
        self.direction = "rise"
        self.last_x: float | None = None

    @property
    def seen(self) -> int:
        return self.state.core.total

    def reset(self) -> None:
        self._core.reset()
        self.state.core = self._core.state

    def update(self, x: tuple[bool, float]) -> Finding | None:
        """Add one ``(in_group, value)`` observation; step once both sides have some."""
        in_group, value = x
        self.last_x = None
        if value is None or math.isnan(value):
            return None
        s = self.state
        if in_group:
            s.n_in, s.sum_in = s.n_in + 1, s.sum_in + value
        else:
            s.n_out, s.sum_out = s.n_out + 1, s.sum_out + value
        if not (s.n_in and s.n_out):
            return None
        gap = s.sum_out / s.n_out - s.sum_in / s.n_in
        s.n_in, s.sum_in, s.n_out, s.sum_out = 0, 0.0, 0, 0.0
        r = self.value_range
        found = self._core.update((gap + r) / (2 * r))
        self.last_x = self._core.last_x
        self.state.core = self._core.state
        if found is None:
            return None
        self.state.core = self._core.state  # reset() inside the core replaced it
        return Finding(
            detector=self.name,
            direction="rise",
            statistic=found.statistic,
            threshold=found.threshold,
            estimate=2 * r * found.estimate - r,
            ci_low=max(-r, 2 * r * found.ci_low - r),
            ci_high=min(r, 2 * r * found.ci_high - r),
            n=found.n,
            null_mean=self.baseline_gap + self.margin,
            change_point=found.change_point,
            quantity="gap",
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"margin": 0.02, "sigma2": 0.01, "threshold": 1e4}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"value_range": 0.0}, "value_range"),
            ({"margin": -0.5}, "margin"),
            ({"baseline_gap": 3.0}, "baseline_gap"),
            ({"sigma2": 0.0}, "sigma2"),
            ({"threshold": 1.0}, "threshold"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Paired differences; in the drift a third of the group's previously right answers go wrong."""

        def obs(group_broken: float) -> tuple[bool, float]:
            in_group = rng.random() < 0.3
            c = 1.0 if rng.random() < 0.8 else 0.0
            y = c if rng.random() < 0.95 else 1 - c
            if in_group and c == 1.0 and rng.random() < group_broken:
                y = 0.0
            return in_group, y - (0.95 * c + 0.05 * (1 - c))

        return [obs(0.0) for _ in range(3000)], [obs(0.0) for _ in range(300)] + [obs(0.35) for _ in range(1500)]
