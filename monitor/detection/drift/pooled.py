"""Pooled e-detector for a MedHELM category: a small drift across many tasks, caught sooner.

At each step every member stream (one task's score stream) contributes one observation ``x_i``
with its own null ``mu0_i``. For each bet size the step's e-value is the *mean* of the members'
one-step e-values ``1 + lambda_ik (mu0_i - x_i)``: a mean of e-values is an e-value under any
dependence between the members, so the Shiryaev-Roberts recursion on it keeps the same
guarantee (expected false alarms in ``N`` steps at most ``N / A``). Averaging ``n`` members
divides the variance by ``n``, so the bets are ``n`` times larger (``lambda_ik = n * shift_k /
sigma2_i``): a shift shared by all members is detected in about ``1/n`` of the steps a single
stream needs.

Tasks are probed on their own schedules, so observations wait in a queue per member; a step
takes one observation from every member once each has one, or from the members that have one
when a queue grows beyond ``max_lag`` (a slow or paused task does not stall the pool). Which
observations form a step depends only on their arrival, never on their values.

References
----------
Vovk, V., Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics (the average of e-values is an e-value).
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

# Variance of one step's mean shortfall that sizes the recovery bets, until a step has been seen.
POOLED_STEP_SIGMA2 = 0.05


@dataclass
class PooledState(DataclassState):
    """The Shiryaev-Roberts state plus each member's pending observations ``[x, mu0, sigma2]``."""

    core: MixtureSRState = field(default_factory=lambda: MixtureSRState.fresh(len(DEFAULT_SHIFTS)))
    queues: dict[str, list[list[float]]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PooledState:
        return cls(core=MixtureSRState.from_dict(data["core"]), queues={k: list(v) for k, v in data["queues"].items()})


class PooledSR:
    """Mixture Shiryaev-Roberts on the mean of member streams' e-values.

    Parameters
    ----------
    members
        Keys of the member streams (e.g. one per task of the category).
    threshold
        Alarm threshold ``A``; the pool is one member of the false-alarm family.
    direction
        ``"drop"``: members' means fall below their nulls.
    max_lag
        Pending observations one member may accumulate before a step goes ahead without the others.

    Examples
    --------
    >>> pool = PooledSR(["a", "b", "c"], threshold=1e4)
    >>> step = {"a": (0.70, 0.78, 0.17), "b": (0.70, 0.88, 0.1), "c": (0.60, 0.70, 0.2)}  # (x, mu0, sigma2)
    >>> any(pool.update(step) for _ in range(200))
    True
    """

    name = "pooled_sr"
    State = PooledState

    def __init__(
        self,
        members: Sequence[str],
        threshold: float,
        direction: str = "drop",
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        max_lag: int = 50,
        state: PooledState | None = None,
    ) -> None:
        if len(members) < 1 or len(set(members)) != len(members):
            raise ValueError(f"members must be distinct and non-empty, got {list(members)!r}")
        if not threshold > 1:
            raise ValueError(f"threshold must exceed 1, got {threshold}")
        if direction not in ("drop", "rise"):
            raise ValueError(f"direction must be 'drop' or 'rise', got {direction!r}")
        if max_lag < 1:
            raise ValueError(f"max_lag must be at least 1, got {max_lag}")
        if not shifts or any(not 0 < s < 1 for s in shifts):
            raise ValueError(f"shifts must be a non-empty sequence of values in (0, 1), got {shifts!r}")
        self.members, self.threshold, self.direction = tuple(members), threshold, direction
        self.shifts, self.max_lag = tuple(shifts), max_lag
        self.state = state or PooledState(core=MixtureSRState.fresh(len(self.shifts)))
        for m in self.members:
            self.state.queues.setdefault(m, [])
        self.last_x: float | None = None
        self.steps: list[float] = []
        self.null_mean = 0.0
        self._step_sigma2 = POOLED_STEP_SIGMA2  # members' mean null variance over their count, at the last step

    @property
    def statistic(self) -> float:
        return self.state.core.statistic

    @property
    def evidence(self) -> float:
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self.state.core.total

    def reset(self) -> None:
        self.state.core = MixtureSRState.fresh(len(self.shifts), self.state.core.total)

    def holds(self, run_mean: float) -> bool:
        """Whether the members' mean shortfall is back on the null's side."""
        return run_mean >= 0.0 if self.direction == "drop" else run_mean <= 0.0

    @property
    def recovery_null(self) -> RecoveryNull:
        """Recovery watches each step's mean shortfall (in [-1, 1]) come back above zero."""
        return RecoveryNull(0.0, self.direction, self._step_sigma2, -1.0, 1.0)

    def push(self, member: str, xs: Sequence[float], mu0: float, sigma2: float) -> Finding | None:
        """Queue a member's observations and take every step that is ready; return the last alarm.

        ``steps`` then holds the mean shortfall of every step taken, the pool's observations.
        """
        self.steps = []
        if member not in self.state.queues:
            return None  # not a member of this pool
        self.state.queues[member].extend([float(x), mu0, sigma2] for x in xs if not math.isnan(x))
        finding = None
        while True:
            ready = {m: q for m, q in self.state.queues.items() if q}
            if not ready or (len(ready) < len(self.members) and max(len(q) for q in ready.values()) <= self.max_lag):
                return finding
            step = {m: (q[0][0], q[0][1], q[0][2]) for m, q in ready.items()}
            for q in ready.values():
                q.pop(0)
            finding = self.update(step) or finding
            if self.last_x is not None:
                self.steps.append(self.last_x)

    def update(self, x: Mapping[str, tuple[float, float, float]]) -> Finding | None:
        """One step from ``{member: (x, mu0, sigma2)}``; the e-value is the members' mean."""
        self.last_x = None
        items = [(min(1.0, max(0.0, v)), mu0, s2) for v, mu0, s2 in x.values() if not math.isnan(v)]
        if not items:
            return None
        n = len(items)
        evalues = []
        for shift in self.shifts:
            total = 0.0
            for v, mu0, s2 in items:
                cap = BET_CAP / (1 - mu0) if self.direction == "drop" else BET_CAP / mu0
                gap = (mu0 - v) if self.direction == "drop" else (v - mu0)
                total += 1.0 + min(n * shift / max(s2, 1e-6), cap) * gap
            evalues.append(total / n)
        shortfall = sum(v - mu0 for v, mu0, _ in items) / n
        self._step_sigma2 = max(sum(s2 for _, _, s2 in items) / n / n, 1e-4)
        self.last_x = shortfall
        core = self.state.core
        core.advance(evalues, shortfall)
        if core.statistic < self.threshold:
            return None
        mean, low, high, count = core.window()
        finding = Finding(
            detector=self.name,
            direction=self.direction,
            statistic=core.statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(-1.0, low),
            ci_high=min(1.0, high),
            n=count,
            null_mean=0.0,
            change_point=core.total - count,
            quantity="mean shortfall",
        )
        self.reset()
        return finding

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"members": ["a", "b", "c", "d"], "threshold": 1e4}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"members": []}, "members"),
            ({"members": ["a", "a"]}, "members"),
            ({"threshold": 1.0}, "threshold"),
            ({"direction": "sideways"}, "direction"),
            ({"max_lag": 0}, "max_lag"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Four tasks at their nulls; in the drift every task loses 4 points, too little for one stream alone."""
        base = {"a": 0.80, "b": 0.90, "c": 0.70, "d": 0.85}

        def step(drop: float) -> dict[str, tuple[float, float, float]]:
            return {m: (float(rng.random() < p - drop), p - 0.01, p * (1 - p)) for m, p in base.items()}

        return [step(0.0) for _ in range(2000)], [step(0.0) for _ in range(300)] + [step(0.04) for _ in range(2500)]
