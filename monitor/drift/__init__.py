"""Sequential, anytime-valid drift detectors: one class per module, one ``update()`` interface."""

from monitor.drift.esr import MixtureSR, MixtureSRState
from monitor.drift.finding import Finding

__all__ = ["Finding", "MixtureSR", "MixtureSRState"]
