"""The statistical promise itself: on seeded no-change streams the false-alarm share stays within
the budget (with a binomial tolerance), including when the baseline or the per-canary reference is
itself estimated and only the margin stands between its error and an alarm."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import numpy as np
import pytest

from medmon.monitor.detection.drift import MixtureSR, MixtureSRBatch
from medmon.monitor.detection.drift.layout import baseline_margin
from medmon.monitor.detection.drift.reference import InstanceRef, References


def binomial_ceiling(n: int, p: float, z: float = 3.0) -> float:
    """A generous upper bound on Binomial(n, p): mean plus ``z`` standard deviations."""
    return n * p + z * math.sqrt(n * p * (1 - p)) + 1


def families_with_alarm(
    mu0: np.ndarray, sigma2: np.ndarray, threshold: float, draw, steps: int, family: int
) -> tuple[int, int]:
    batch = MixtureSRBatch(mu0, sigma2, threshold, reset_on_alarm=False)
    alarmed = np.zeros(mu0.size, dtype=bool)
    for t in range(steps):
        alarmed |= batch.update(draw(t))
    return int(alarmed.reshape(-1, family).any(axis=1).sum()), int(alarmed.sum())


def test_batch_detector_agrees_with_the_scalar_one() -> None:
    rng = random.Random(5)
    mu0 = np.array([0.7, 0.78, 0.85, 0.9])
    s2 = mu0 * (1 - mu0)
    batch = MixtureSRBatch(mu0, s2, 200.0)
    scalars = [MixtureSR(m, s, 200.0) for m, s in zip(mu0, s2, strict=True)]
    for _ in range(600):
        x = np.array([float(rng.random() < 0.72) for _ in mu0])
        alarms = batch.update(x)
        assert list(alarms) == [det.update(v) is not None for det, v in zip(scalars, x, strict=True)]
        assert np.allclose(batch.statistic, [d.statistic for d in scalars], rtol=1e-9)


@pytest.mark.slow
def test_scalar_detector_false_alarm_share_within_its_bound() -> None:
    streams, steps, alpha = 200, 4000, 0.1
    alarms = 0
    for seed in range(streams):
        rng = random.Random(seed)
        det = MixtureSR(0.80, 0.16, steps / alpha)
        alarms += any(det.update(float(rng.random() < 0.80)) for _ in range(steps))
    assert alarms <= binomial_ceiling(streams, alpha)


@pytest.mark.slow
def test_family_of_estimated_baselines_keeps_the_deployment_promise() -> None:
    """100 streams, each against its own 500-item baseline, share alpha = 0.05 over N probes."""
    families, m, steps, alpha = 20, 100, 20_000, 0.05

    def hits(z: float) -> int:
        rng = np.random.default_rng(11)
        n = families * m
        phat = rng.binomial(500, 0.80, size=n) / 500
        mu0 = phat - np.array([baseline_margin(p, 500, 0.0, z) for p in phat])
        return families_with_alarm(
            mu0, mu0 * (1 - mu0), m * steps / alpha, lambda t: (rng.random(n) < 0.80).astype(float), steps, m
        )[0]

    assert hits(max(2.0, NormalDist().inv_cdf(1 - alpha / m))) <= binomial_ceiling(families, alpha)  # margin_z
    assert hits(2.0) > binomial_ceiling(families, alpha)  # why: two SE per baseline is not enough for 100


@pytest.mark.slow
def test_paired_streams_with_replicated_references_stay_within_budget() -> None:
    """Stochastic canaries, references from K = 5 runs, margin from the reference's bias."""
    rng = np.random.default_rng(12)
    streams, items, k, steps, alpha = 300, 200, 5, 4000, 0.1
    p = rng.beta(4.0, 1.0, size=(streams, items))
    cbar = rng.binomial(k, p) / k
    margin, s2 = np.empty(streams), np.empty(streams)
    for s in range(streams):
        refs = References("helm", 1, {str(i): InstanceRef(float(c), k) for i, c in enumerate(cbar[s])})
        margin[s], s2[s] = refs.margin(0.01), refs.sigma2_x()
    rows = np.arange(streams)

    def draw(t: int) -> np.ndarray:
        idx = rng.integers(items, size=streams)
        y = (rng.random(streams) < p[rows, idx]).astype(float)
        return (1 + y - cbar[rows, idx]) / 2

    _, alarmed = families_with_alarm((1 - margin) / 2, s2, steps / alpha, draw, steps, 1)
    assert alarmed <= binomial_ceiling(streams, alpha)
    _, unprotected = families_with_alarm(np.full(streams, 0.5), s2, steps / alpha, draw, steps, 1)
    assert unprotected > binomial_ceiling(streams, alpha)  # why: pairing alone inherits the reference's bias
