"""Mixture Shiryaev-Roberts: silent on stationary streams, quick on clear drops, resumable."""

from __future__ import annotations

import json
import random

import pytest

from medmon.monitor.detection.drift import MixtureSR, MixtureSRState


def bernoulli(p: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [1.0 if rng.random() < p else 0.0 for _ in range(n)]


def first_alarm(det: MixtureSR, xs: list[float]) -> int | None:
    for i, x in enumerate(xs):
        if det.update(x) is not None:
            return i
    return None


def test_silent_when_mean_holds_at_null() -> None:
    alarms = sum(first_alarm(MixtureSR(0.78, 0.17, 1e5), bernoulli(0.80, 5000, seed)) is not None for seed in range(20))
    assert alarms == 0


def test_detects_clear_drop_and_reports_evidence() -> None:
    det = MixtureSR(0.78, 0.17, 1e5)
    xs = bernoulli(0.80, 500, 1) + bernoulli(0.55, 500, 2)
    alarm_at = None
    for i, x in enumerate(xs):
        finding = det.update(x)
        if finding:
            alarm_at = i
            break
    assert alarm_at is not None and 500 <= alarm_at < 700
    assert finding.statistic >= finding.threshold == 1e5
    assert finding.ci_low <= finding.estimate <= finding.ci_high
    assert finding.estimate < 0.7  # the window since the change, not the whole history
    assert finding.change_point is not None and abs(finding.change_point - 500) < 150


def test_rise_direction() -> None:
    det = MixtureSR(0.10, 0.09, 1e5, direction="rise")
    assert first_alarm(det, bernoulli(0.5, 500, 4)) is not None


def test_state_round_trips_through_json() -> None:
    xs = bernoulli(0.6, 300, 9)
    a = MixtureSR(0.78, 0.17, 1e9)
    for x in xs[:150]:
        a.update(x)
    b = MixtureSR(0.78, 0.17, 1e9, state=MixtureSRState.from_dict(json.loads(json.dumps(a.state.to_dict()))))
    for x in xs[150:]:
        a.update(x)
        b.update(x)
    assert a.statistic == pytest.approx(b.statistic)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"mu0": 1.2}, "mu0"),
        ({"sigma2": 0}, "sigma2"),
        ({"threshold": 0.5}, "threshold"),
        ({"direction": "up"}, "direction"),
    ],
)
def test_bad_parameters_name_themselves(kwargs: dict, name: str) -> None:
    params = {"mu0": 0.8, "sigma2": 0.16, "threshold": 100.0} | kwargs
    with pytest.raises(ValueError, match=name):
        MixtureSR(**params)
