"""Judge-canary e-detector: fixed (answer, gold score) pairs re-judged on a schedule.

A judge canary is an answer whose correct verdict is known (a gold score agreed by clinicians or
by the judges at go-live). Re-judging the same answers isolates the judge: the production model
is not involved, so a drop in agreement is judge drift (a silently updated judge model, a changed
rubric or prompt), told apart from model drift. Each judge gets its own stream.

Agreement of one verdict is ``1 - |judge - gold| / (scale_max - scale_min)`` in [0, 1]; the
stream alarms when its mean falls below ``min_agreement`` (the go-live agreement minus a margin,
or the plan's minimum).
"""

from __future__ import annotations

import math
import random
from typing import Any

from medmon.monitor.detection.drift.esr import DEFAULT_SHIFTS, MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.drift.wrapped import WrappedSR


def judge_agreement(judge_score: float, gold_score: float, scale_min: float = 1.0, scale_max: float = 5.0) -> float:
    """Agreement of one verdict with its gold score, in [0, 1].

    Examples
    --------
    >>> judge_agreement(4, 4), judge_agreement(2, 4), judge_agreement(1, 5)
    (1.0, 0.5, 0.0)
    """
    span = scale_max - scale_min
    return max(0.0, 1.0 - abs(judge_score - gold_score) / span)


class JudgeAgreementSR(WrappedSR):
    """Detect a drop of a judge's agreement with the gold scores of judge canaries.

    Parameters
    ----------
    min_agreement
        Null bound: H0 is ``mean agreement >= min_agreement``.
    threshold
        Alarm threshold ``A``.
    scale_min, scale_max
        The jury's score scale (1-5 by default).
    sigma2
        Null variance of one agreement used to size the bets.

    Examples
    --------
    >>> det = JudgeAgreementSR(min_agreement=0.85, threshold=1e3)
    >>> verdicts = [(4, 4), (5, 5), (2, 4), (1, 4)]   # the judge now scores half the answers far too low
    >>> any(det.update(v) for v in verdicts * 30)
    True
    """

    name = "judge_agreement_sr"
    State = MixtureSRState

    def __init__(
        self,
        min_agreement: float,
        threshold: float,
        scale_min: float = 1.0,
        scale_max: float = 5.0,
        sigma2: float = 0.02,
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        state: MixtureSRState | None = None,
    ) -> None:
        if not scale_max > scale_min:
            raise ValueError(f"scale_max must exceed scale_min, got {scale_min}..{scale_max}")
        if not 0 < min_agreement < 1:
            raise ValueError(f"min_agreement must be in (0, 1), got {min_agreement}")
        self.min_agreement, self.scale_min, self.scale_max = min_agreement, scale_min, scale_max
        self.threshold, self.sigma2, self.direction = threshold, sigma2, "drop"
        self._core = MixtureSR(min_agreement, sigma2, threshold, "drop", shifts, state)

    def update(self, x: tuple[float, float]) -> Finding | None:
        """Add one ``(judge_score, gold_score)`` verdict."""
        judge, gold = x
        if judge is None or gold is None or math.isnan(judge) or math.isnan(gold):
            self._core.last_x = None
            return None
        found = self._core.update(judge_agreement(judge, gold, self.scale_min, self.scale_max))
        if found is None:
            return None
        return Finding(**{**found.__dict__, "detector": self.name, "quantity": "agreement"})

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"min_agreement": 0.85, "threshold": 1e4}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"scale_max": 1.0}, "scale_max"),
            ({"min_agreement": 1.5}, "min_agreement"),
            ({"threshold": 0.2}, "threshold"),
            ({"sigma2": -1.0}, "sigma2"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """A judge off by one point on 40% of canaries (agreement 0.9), then off by two on half."""

        def verdict(far: float) -> tuple[float, float]:
            gold = float(rng.randint(2, 4))
            r = rng.random()
            off = 2.0 if r < far else (1.0 if r < far + 0.4 else 0.0)
            return gold + (off if rng.random() < 0.5 else -off), gold

        return [verdict(0.0) for _ in range(2000)], [verdict(0.0) for _ in range(300)] + [
            verdict(0.5) for _ in range(700)
        ]
