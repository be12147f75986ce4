"""What the streams need of a detector, declared once so the type checker checks every caller.

Each detector class in this package satisfies :class:`Detector` structurally (no base class): the
streams (``medmon.monitor.detection.streams``) rebuild one from its stored parameters and ``State``,
feed it observations, store ``state.to_dict()``, and settle the stream's status from ``evidence``,
``seen`` and, once degraded, ``recovery_null`` (a detector without one says None and recovers on
runs its ``holds`` accepts).

>>> from medmon.monitor.detection.drift import JudgeBiasSR, MixtureSR
>>> detector: Detector = MixtureSR(0.8, 0.16, threshold=100.0)
>>> detector.recovery_null is not None, JudgeBiasSR(threshold=100.0).recovery_null
(True, None)
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol, Self, cast

from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

__all__ = ["DataclassState", "Detector", "DetectorStateData"]


class DataclassState:
    """A dataclass state's JSON round trip, field by field; a state that holds nested states (a
    ``MixtureSRState`` core) overrides ``from_dict`` to rebuild them."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast(Any, self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cast(Self, cast(Any, cls)(**data))


class DetectorStateData(Protocol):
    """A detector's state: a dataclass that round-trips through JSON into ``DetectorState``."""

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self: ...


class Detector(Protocol):
    """One stream's sequential detector, as the streams use it."""

    name: str  # the key stored in ``DetectorState.detector``
    State: Any  # the state's class (each detector has its own; a protocol attribute's type is invariant)

    def __init__(self, *args: Any, state: Any = None, **params: Any) -> None: ...  # the stored params and state

    @property
    def state(self) -> DetectorStateData: ...

    @property
    def last_x(self) -> float | None: ...  # the last observation on the detector's scale; None: no information

    @property
    def evidence(self) -> float: ...  # log(statistic) / log(threshold): 1 at the alarm threshold

    @property
    def seen(self) -> int: ...  # observations taken, stored as ``DetectorState.n``

    @property
    def recovery_null(self) -> RecoveryNull | None: ...  # what a recovery is tested against; None: ``holds``

    def update(self, x: Any) -> Finding | None: ...

    def holds(self, run_mean: float) -> bool: ...  # whether one run's mean lies back inside the null

    def reset(self) -> None: ...  # drop the evidence after a recovery
