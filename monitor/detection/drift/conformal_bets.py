"""The test martingale both identity tests share: bets on conformal p-values, their mean wealth the statistic.

``identity_mmd`` (answers, a string kernel) and ``identity_logprob`` (temperature-0
log-probabilities) differ in what they score; from the p-value on they are one construction.
Each p-value is bet on by every bet ``lambda`` of the mixture with ``1 + lambda (1 - 2p)``; under
H0 (exchangeable, hence uniform, p-values) each bet's wealth is a test martingale and so is their
mean, and by Ville's inequality it ever reaches ``threshold`` with probability at most
``1 / threshold``. A detected swap is a model change, never "recovered": the stream restarts on
the new weights.
"""

from __future__ import annotations

import math
from typing import Protocol


class BetState(Protocol):
    """What the bets keep in a test's state: one log-wealth per bet, and how many p-values were bet on."""

    log_wealth: list[float]
    n: int


def check_params(reference_size: int, threshold: float, max_answers: int) -> None:
    """The parameters both tests share, checked with an error naming the one that is wrong."""
    if reference_size < 2:
        raise ValueError(f"reference_size must be at least 2, got {reference_size}")
    if not threshold > 1:
        raise ValueError(f"threshold must exceed 1, got {threshold}")
    if max_answers <= reference_size:
        raise ValueError(f"max_answers must exceed reference_size ({reference_size}), got {max_answers}")


class ConformalBets:
    """The mixture of bets on conformal p-values, for a detector whose ``state`` is a :class:`BetState`."""

    threshold: float
    bets: tuple[float, ...]

    @property
    def _bet_state(self) -> BetState:
        return self.state  # type: ignore[attr-defined,no-any-return]

    @property
    def statistic(self) -> float:
        """The mixture martingale: the mean wealth of the bets (1 at the start)."""
        logs = self._bet_state.log_wealth
        top = max(logs)
        return math.exp(top) * sum(math.exp(v - top) for v in logs) / len(logs)

    @property
    def evidence(self) -> float:
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self._bet_state.n

    def holds(self, run_mean: float) -> bool:  # a swap is never "recovered": the stream restarts on the new weights
        return False

    def bet(self, p: float) -> float:
        """Bet every stake on the p-value ``p``; return the statistic after it."""
        logs = self._bet_state.log_wealth
        for k, lam in enumerate(self.bets):
            logs[k] += math.log(1 + lam * (1 - 2 * p))
        return self.statistic
