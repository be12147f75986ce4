"""Detectors that transform each observation and hand it to one mixture e-SR."""

from __future__ import annotations

from medmon.monitor.detection.drift.esr import MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.finding import RecoveryNull


class CoreEvidence:
    """Forwards the evidence of the composed ``MixtureSR`` held in ``_core`` (its null, statistic,
    hold test and recovery null), for a detector that keeps its own state around the core."""

    _core: MixtureSR

    @property
    def null_mean(self) -> float:
        return self._core.mu0

    @property
    def statistic(self) -> float:
        return self._core.statistic

    @property
    def evidence(self) -> float:
        return self._core.evidence

    def holds(self, run_mean: float) -> bool:
        return self._core.holds(run_mean)

    @property
    def recovery_null(self) -> RecoveryNull:
        return self._core.recovery_null


class WrappedSR(CoreEvidence):
    """Forwards the state and evidence of the composed ``MixtureSR`` held in ``_core``.

    Subclasses only map their own observation to [0, 1] in ``update`` and translate the
    finding back to their scale, so the betting logic lives in one place.
    """

    @property
    def state(self) -> MixtureSRState:
        return self._core.state

    @property
    def last_x(self) -> float | None:
        return self._core.last_x

    @property
    def seen(self) -> int:
        return self._core.seen

    def reset(self) -> None:
        self._core.reset()
