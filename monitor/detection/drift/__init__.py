"""Sequential, anytime-valid drift detectors: one class per module, one ``update()`` interface.

Every detector takes its parameters in ``__init__`` (a bad one raises ``ValueError`` naming it),
returns a :class:`Finding` from ``update(x)`` when it concludes, and keeps its state in a
dataclass (``.state``) that round-trips through JSON into ``DetectorState``. What the streams use
of one is the ``Detector`` protocol (``detector.py``), which every class here satisfies.
"""

from medmon.monitor.detection.drift.counts import CountSR
from medmon.monitor.detection.drift.esr import MixtureSR, MixtureSRState
from medmon.monitor.detection.drift.esr_batch import MixtureSRBatch
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.drift.gap import GapState, SubgroupGapSR
from medmon.monitor.detection.drift.identity_logprob import IdentityLogprob, LogprobState
from medmon.monitor.detection.drift.identity_mmd import IdentityMMD, IdentityState
from medmon.monitor.detection.drift.judge import JudgeAgreementSR, judge_agreement
from medmon.monitor.detection.drift.judge_bias import JudgeBiasSR, JudgeBiasState
from medmon.monitor.detection.drift.oneshot import OneShotPaired, OneShotState
from medmon.monitor.detection.drift.paired import PairedSR, paired_x
from medmon.monitor.detection.drift.pooled import PooledSR, PooledState
from medmon.monitor.detection.drift.prediction_powered import PredictionPoweredSR, PredictionPoweredState
from medmon.monitor.detection.drift.river_adapter import RiverDrift, RiverState

__all__ = [
    "CountSR",
    "Finding",
    "GapState",
    "IdentityLogprob",
    "IdentityMMD",
    "IdentityState",
    "JudgeAgreementSR",
    "JudgeBiasSR",
    "JudgeBiasState",
    "LogprobState",
    "MixtureSR",
    "MixtureSRBatch",
    "MixtureSRState",
    "OneShotPaired",
    "OneShotState",
    "PairedSR",
    "PooledSR",
    "PooledState",
    "PredictionPoweredSR",
    "PredictionPoweredState",
    "RiverDrift",
    "RiverState",
    "SubgroupGapSR",
    "judge_agreement",
    "paired_x",
]
