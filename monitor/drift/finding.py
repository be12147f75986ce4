"""What a detector concludes, with the evidence behind it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """A detector's alarm: the statistic that crossed its threshold and the estimate behind it.

    ``severity`` is ``log(statistic) / log(threshold)``: 1 at the alarm line, higher is stronger.
    ``change_point`` is the observation index after which the evidence started to accumulate.
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

    @property
    def severity(self) -> float:
        import math

        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)
