"""Sequential, anytime-valid drift detectors: one class per module, one ``update()`` interface.

Every detector takes its parameters in ``__init__`` (a bad one raises ``ValueError`` naming it),
returns a :class:`Finding` from ``update(x)`` when it concludes, and keeps its state in a
dataclass (``.state``) that round-trips through JSON into ``DetectorState``.
"""

from monitor.drift.esr import MixtureSR, MixtureSRState
from monitor.drift.esr_batch import MixtureSRBatch
from monitor.drift.finding import Finding
from monitor.drift.gap import GapState, SubgroupGapSR
from monitor.drift.judge import JudgeAgreementSR, judge_agreement
from monitor.drift.judge_bias import JudgeBiasSR, JudgeBiasState
from monitor.drift.oneshot import OneShotPaired, OneShotState
from monitor.drift.paired import PairedSR, paired_x
from monitor.drift.pooled import PooledSR, PooledState
from monitor.drift.river_adapter import RiverDrift, RiverState

__all__ = [
    "Finding",
    "GapState",
    "JudgeAgreementSR",
    "JudgeBiasSR",
    "JudgeBiasState",
    "MixtureSR",
    "MixtureSRBatch",
    "MixtureSRState",
    "OneShotPaired",
    "OneShotState",
    "PairedSR",
    "PooledSR",
    "PooledState",
    "RiverDrift",
    "RiverState",
    "SubgroupGapSR",
    "judge_agreement",
    "paired_x",
]
