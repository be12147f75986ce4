"""The false-alarm budget: one number for the deployment, split over every stream-direction.

The plan states ``gamma``, the expected number of probes per stream between false alarms
anywhere in the deployment. A Shiryaev-Roberts stream with threshold ``A`` raises at most
``n / A`` false alarms in expectation over ``n`` observations, so giving stream ``s`` the weight
``w_s`` (``sum w_s = 1``) and the threshold ``A_s = gamma / w_s`` keeps the expected number of false
alarms over ``gamma`` probes of every stream at most 1, under any dependence between streams
(weighted Bonferroni; with ``N`` probes and ``gamma = N / alpha`` the chance of any false alarm
within ``N`` is at most ``alpha``).

The weights are split in two levels. Each *unit* (a task, a category's pooled stream, a judge's
canary stream) gets an equal share ``1 / U``; a task's share is split equally over its own
stream-directions (overall, paired, each subgroup and gap, output length, refusals...). Adding a
task therefore raises every threshold a little instead of adding false alarms, and slicing one
task by more subgroups does not cost the other tasks anything. Optionally, the operational
streams (error rate, cost over budget, latency over its objective) form a second family with a
budget of their own, so that a provider incident does not spend the model-quality budget.
"""

from __future__ import annotations

from dataclasses import dataclass

QUALITY, OPERATIONAL, INFO = "quality", "operational", "info"


@dataclass(frozen=True)
class Budget:
    """Thresholds for each family from the plan's budget and the number of units sharing it.

    Examples
    --------
    >>> b = Budget(quality_gamma=4e5, quality_units=100)
    >>> b.threshold("quality", streams_in_unit=1)      # 100 single-stream units: A = 100 * N / alpha
    40000000.0
    """

    quality_gamma: float
    quality_units: int
    operational_gamma: float | None = None
    operational_units: int = 0

    def threshold(self, family: str, streams_in_unit: int) -> float:
        """``A = gamma * units * streams_in_unit`` for a stream of ``family``."""
        if streams_in_unit < 1:
            raise ValueError(f"streams_in_unit must be at least 1, got {streams_in_unit}")
        if family == OPERATIONAL and self.operational_gamma is not None:
            return self.operational_gamma * max(self.operational_units, 1) * streams_in_unit
        if family in (QUALITY, OPERATIONAL):
            return self.quality_gamma * max(self.quality_units, 1) * streams_in_unit
        raise ValueError(f"family {family!r} has no false-alarm budget")

    @property
    def separate_operational(self) -> bool:
        return self.operational_gamma is not None
