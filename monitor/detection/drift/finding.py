"""What a detector concludes, with the evidence behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """A detector's conclusion: the statistic that crossed its threshold and the estimate behind it.

    ``estimate``, ``ci_low``/``ci_high`` (95%) and ``null_mean`` are on the scale named by
    ``quantity``: ``"mean"`` (the stream's own values), ``"paired difference"`` (score minus the
    instance's baseline), ``"gap"`` (rest minus subgroup, beyond the baseline gap),
    ``"mean shortfall"`` (pooled: mean over member streams of value minus null) or
    ``"distribution"`` (a baseline-free river detector). ``n`` counts the observations behind the
    estimate; ``change_point`` is the observation index after which the evidence accumulated.
    ``decision`` is ``"alarm"`` for change detectors and ``"degraded"`` or ``"passed"`` for the
    one-shot re-evaluation test.
    """

    detector: str
    direction: str
    statistic: float
    threshold: float
    estimate: float
    ci_low: float
    ci_high: float
    n: int
    null_mean: float
    change_point: int | None = None
    quantity: str = "mean"
    decision: str = "alarm"

    @property
    def severity(self) -> float:
        """``log(statistic) / log(threshold)``: 1 at the alarm line, higher is stronger."""
        if self.threshold <= 1:
            return 1.0
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    def evidence(self) -> dict[str, object]:
        """The finding as plain JSON-able values, for storage and alert payloads."""
        return {
            "detector": self.detector,
            "direction": self.direction,
            "statistic": self.statistic,
            "threshold": self.threshold,
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": self.n,
            "null_mean": self.null_mean,
            "change_point": self.change_point,
            "quantity": self.quantity,
            "decision": self.decision,
        }


@dataclass(frozen=True)
class RecoveryNull:
    """Where a stream's null lies on the scale of its observations ``[lo, hi]``, and its direction."""

    mu0: float
    direction: str  # the stream's: drop (alarm below mu0) or rise (above)
    sigma2: float
    lo: float = 0.0
    hi: float = 1.0
