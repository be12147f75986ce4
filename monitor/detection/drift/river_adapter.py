"""river's baseline-free drift detectors behind medmon's detector interface.

Some streams have no baseline to test against: output length (completion tokens) and the
latency distribution. river's ADWIN (adaptive windowing, two-sided change in mean) and KSWIN
(Kolmogorov-Smirnov on a sliding window: change in distribution) watch them. They are not
anytime-valid and carry no false-alarm budget, so their findings are information for the
dashboard (a distribution change worth a look), never pages. ``river.drift`` takes about 1.6 s
to import, so it is imported on first use only. The river object is pickled into the state
(base64 text), so the state still round-trips through JSON into ``DetectorState``; the database
is medmon's own, which is what makes unpickling it acceptable.

References
----------
Bifet, A., Gavalda, R. (2007). Learning from time-changing data with adaptive windowing. SDM.
Raab, C., Heusinger, M., Schleif, F.-M. (2020). Reactive soft prototype computing for concept
drift streams. Neurocomputing (KSWIN).
"""

from __future__ import annotations

import base64
import math
import pickle
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

KINDS = {"adwin": "ADWIN", "kswin": "KSWIN", "page_hinkley": "PageHinkley"}
_SENSITIVITY = {"adwin": ("delta", 0.002), "kswin": ("alpha", 0.005), "page_hinkley": ("threshold", 50.0)}


@dataclass
class RiverState(DataclassState):
    """The pickled river detector plus running sums for the evidence of a finding."""

    blob: str = ""
    n: int = 0
    seg_n: int = 0
    seg_sum: float = 0.0
    seg_sum2: float = 0.0
    recent: list[float] = field(default_factory=list)


def _build(kind: str, params: dict[str, Any]) -> Any:
    from river import drift  # lazy: ~1.6 s

    return getattr(drift, KINDS[kind])(**params)


class RiverDrift:
    """Adapter: ``update(x) -> Finding | None`` around a river drift detector.

    Parameters
    ----------
    kind
        ``"adwin"``, ``"kswin"`` or ``"page_hinkley"``.
    params
        Keyword arguments for the river class (e.g. ``{"delta": 1e-4}`` for ADWIN).
    window
        Recent observations kept to describe the stream after a change.

    Examples
    --------
    >>> det = RiverDrift("adwin", {"delta": 0.002})
    >>> alarms = [det.update(v) for v in [10.0] * 300 + [40.0] * 300]
    >>> f = next(a for a in alarms if a)
    >>> f.estimate > f.null_mean
    True
    """

    name = "river"
    State = RiverState
    recovery_null: RecoveryNull | None = None

    def __init__(
        self, kind: str, params: dict[str, Any] | None = None, window: int = 100, state: RiverState | None = None
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        if window < 2:
            raise ValueError(f"window must be at least 2, got {window}")
        self.kind, self.params, self.window = kind, dict(params or {}), window
        self._state = state or RiverState()
        if self._state.blob:
            self._river = pickle.loads(base64.b64decode(self._state.blob))
        else:
            try:
                self._river = _build(kind, self.params)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"params for river {KINDS[kind]} rejected: {exc}") from None
        self.threshold = float(self.params.get(*_SENSITIVITY[kind]))
        self.direction = "change"
        self.null_mean = float("nan")
        self.last_x: float | None = None
        self.statistic = 0.0
        self.evidence = 0.0

    @property
    def state(self) -> RiverState:
        """The state with the river detector pickled in (pickled on access, not on every update)."""
        self._state.blob = base64.b64encode(pickle.dumps(self._river)).decode("ascii")
        return self._state

    @property
    def seen(self) -> int:
        return self._state.n

    def holds(self, run_mean: float) -> bool:  # information only: never degraded, so never recovers
        return False

    def reset(self) -> None:
        self._river = _build(self.kind, self.params)
        self._state = RiverState(n=self._state.n)

    def update(self, x: float) -> Finding | None:
        """Add one observation; a Finding describes the recent window against the earlier one."""
        self.last_x = None
        if x is None or math.isnan(x) or math.isinf(x):
            return None
        x = float(x)
        self.last_x = x
        s = self._state
        self._river.update(x)
        s.n += 1
        s.recent.append(x)
        if len(s.recent) > self.window:
            old = s.recent.pop(0)
            s.seg_n, s.seg_sum, s.seg_sum2 = s.seg_n + 1, s.seg_sum + old, s.seg_sum2 + old * old
        finding = self._finding() if self._river.drift_detected else None
        if finding is not None:
            # The recent window becomes the reference for the next change.
            s.seg_n, s.seg_sum, s.seg_sum2 = 0, 0.0, 0.0
        return finding

    def _finding(self) -> Finding:
        s = self._state
        n = len(s.recent)
        mean = sum(s.recent) / n
        var = sum((v - mean) ** 2 for v in s.recent) / max(n - 1, 1)
        half = 1.96 * math.sqrt(var / n)
        before = s.seg_sum / s.seg_n if s.seg_n else mean
        statistic = float(getattr(self._river, "p_value", abs(mean - before)))
        return Finding(
            detector=f"river_{self.kind}",
            direction="rise" if mean > before else "drop",
            statistic=statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=mean - half,
            ci_high=mean + half,
            n=n,
            null_mean=before,
            change_point=s.n - n,
            quantity="distribution",
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"kind": "adwin", "params": {"delta": 1e-5}}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"kind": "ddm"}, "kind"),
            ({"window": 1}, "window"),
            ({"params": {"delta": 0.1, "nonsense": 1}}, "params"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Output lengths around 60 tokens; the drift makes answers 4x longer."""
        return (
            [rng.gauss(60, 8) for _ in range(1500)],
            [rng.gauss(60, 8) for _ in range(300)] + [rng.gauss(240, 30) for _ in range(500)],
        )
