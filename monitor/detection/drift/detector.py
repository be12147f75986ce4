"""What the streams need of a detector, declared once so the type checker checks every caller.

Each detector class in this package satisfies :class:`Detector` structurally (no base class):
the streams (``medmon.monitor.detection.streams``) rebuild one from its stored parameters and
``State``, feed it observations, store ``state.to_dict()``, and settle the stream's status from
``evidence``, ``seen`` and, once degraded, ``recovery_null`` (a detector without one says None and
recovers on runs its ``holds`` accepts).

>>> from medmon.monitor.detection.drift import JudgeBiasSR, MixtureSR
>>> detector: Detector = MixtureSR(0.8, 0.16, threshold=100.0)
>>> detector.recovery_null is not None, JudgeBiasSR(threshold=100.0).recovery_null
(True, None)
"""

from __future__ import annotations

from typing import Any, Protocol, Self

from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

__all__ = ["Detector", "DetectorStateData"]


class DetectorStateData(Protocol):
    """A detector's state: a dataclass that round-trips through JSON into ``DetectorState``."""

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self: ...


class Detector(Protocol):
    """One stream's sequential detector, as the streams use it."""

    name: str  # the key stored in ``DetectorState.detector``
    # The state's class: ``State.from_dict`` restores ``state``. Any, as a protocol attribute is invariant and
    # each detector has its own dataclass.
    State: Any

    def __init__(self, *args: Any, state: Any = None, **params: Any) -> None:
        """Parameters as stored in ``DetectorState.params``, and the state to resume from (None: fresh)."""

    @property
    def state(self) -> DetectorStateData: ...

    @property
    def evidence(self) -> float:
        """log(statistic) / log(threshold): 1 at the alarm threshold."""

    @property
    def last_x(self) -> float | None:
        """The last observation on the detector's scale, None when it carried no information."""

    @property
    def seen(self) -> int:
        """Observations taken over the detector's life (a ``reset`` keeps the count)."""

    @property
    def recovery_null(self) -> RecoveryNull | None:
        """The null a degraded stream's recovery is tested against; None to recover on runs (``holds``)."""

    def update(self, x: Any) -> Finding | None: ...

    def holds(self, run_mean: float) -> bool:
        """Whether one run's mean observation lies back inside the null."""

    def reset(self) -> None:
        """Drop the evidence (after a recovery), keeping the observation count."""
