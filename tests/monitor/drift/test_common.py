"""The checks every detector passes: named parameter errors, silence on the null, an alarm on a
clear drift with its evidence, JSON-round-tripping state, and updates that never raise."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from medmon.monitor.detection.drift import (
    CountSR,
    Finding,
    IdentityLogprob,
    IdentityMMD,
    JudgeAgreementSR,
    JudgeBiasSR,
    MixtureSR,
    OneShotPaired,
    PairedSR,
    PooledSR,
    PredictionPoweredSR,
    RiverDrift,
    SubgroupGapSR,
)

DETECTORS = [
    MixtureSR,
    PairedSR,
    SubgroupGapSR,
    PooledSR,
    JudgeAgreementSR,
    JudgeBiasSR,
    OneShotPaired,
    RiverDrift,
    CountSR,
    PredictionPoweredSR,
    IdentityMMD,
    IdentityLogprob,
]
CHANGE_AT = {OneShotPaired: 0}  # where each test drift stream changes; 300 unless listed
ALARMS = ("alarm", "degraded")


def make(cls: type, **overrides: Any) -> Any:
    return cls(**(cls._test_params() | overrides))


def first_alarm(det: Any, stream: list[Any]) -> tuple[int, Finding] | None:
    for i, obs in enumerate(stream):
        found = det.update(obs)
        if found is not None and found.decision in ALARMS:
            return i, found
    return None


def nan_like(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: (math.nan, *v[1:]) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return (*obs[:-1], math.nan)
    return math.nan


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_bad_parameters_raise_value_error_naming_them(cls: type) -> None:
    for kwargs, name in cls._bad_params():
        with pytest.raises(ValueError, match=name):
            make(cls, **kwargs)


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_parameters_are_kept_as_public_attributes(cls: type) -> None:
    det = make(cls)
    for name, value in cls._test_params().items():
        kept = getattr(det, name)
        assert (list(kept) if isinstance(kept, tuple) else kept) == value


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_seen_counts_the_observations_that_carried_information(cls: type) -> None:
    """``seen`` is the count a stream stores (``DetectorState.n``) and its page shows."""
    det = make(cls)
    null, _ = cls._test_streams(random.Random(1))
    informative = 0
    for obs in [*null[:40], nan_like(null[0])]:
        det.update(obs)
        informative += det.last_x is not None
    assert det.seen == informative > 0


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_silent_while_the_null_holds(cls: type) -> None:
    null, _ = cls._test_streams(random.Random(1))
    assert first_alarm(make(cls), null) is None


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_alarms_after_a_clear_drift_with_its_evidence(cls: type) -> None:
    _, drift = cls._test_streams(random.Random(2))
    hit = first_alarm(make(cls), drift)
    assert hit is not None, "no alarm on a clear drift"
    index, finding = hit
    assert index >= CHANGE_AT.get(cls, 300)
    assert finding.ci_low <= finding.estimate <= finding.ci_high
    assert finding.n >= 1
    if cls is not RiverDrift:  # river exposes no statistic of its own
        assert finding.statistic >= finding.threshold
        assert finding.severity >= 1.0


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_state_round_trips_through_json_and_decides_the_same(cls: type) -> None:
    _, drift = cls._test_streams(random.Random(3))
    half = len(drift) // 3
    a = make(cls)
    for obs in drift[:half]:
        a.update(obs)
    stored = json.loads(json.dumps(a.state.to_dict()))
    b = make(cls, state=cls.State.from_dict(stored))
    decisions_a = [(f is None, f.decision if f else None) for f in map(a.update, drift[half:])]
    decisions_b = [(f is None, f.decision if f else None) for f in map(b.update, drift[half:])]
    assert decisions_a == decisions_b
    assert math.isclose(a.statistic, b.statistic, rel_tol=1e-12)


@pytest.mark.parametrize("cls", DETECTORS, ids=lambda c: c.__name__)
def test_a_missing_observation_changes_nothing(cls: type) -> None:
    null, _ = cls._test_streams(random.Random(4))
    det = make(cls)
    for obs in null[:50]:
        det.update(obs)
    before = json.dumps(det.state.to_dict(), sort_keys=True)
    assert det.update(nan_like(null[0])) is None
    assert json.dumps(det.state.to_dict(), sort_keys=True) == before


@pytest.mark.parametrize(
    "cls",
    [c for c in DETECTORS if c not in (OneShotPaired, RiverDrift, IdentityMMD, IdentityLogprob)],
    ids=lambda c: c.__name__,
)
def test_recovery_holds_on_the_null_side_only(cls: type) -> None:
    """A degraded stream recovers on runs whose mean ``holds``: at the null, not beyond it."""
    det = make(cls)
    assert det.holds(det.null_mean) is True
    if det.direction in ("drop", "rise"):
        worse = det.null_mean - 0.1 if det.direction == "drop" else det.null_mean + 0.1
        assert det.holds(worse) is False
