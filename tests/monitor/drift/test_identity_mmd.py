"""The identity test's promises: at most ``1 / threshold`` false alarms over a whole segment of
unchanged answers, and an alarm when the answers come from another distribution over the same strings."""

from __future__ import annotations

import random

from medmon.monitor.detection.drift import IdentityMMD
from medmon.monitor.detection.drift.identity_mmd import hamming_kernel

ANSWERS = ["Answer: A", "Answer: B", "Answer: C", "Answer: D", "Question: What is", "The patient"]
BEFORE = (5, 4, 3, 2, 1, 1)
AFTER = (2, 2, 2, 2, 5, 5)  # the same strings, other frequencies


def _stream(rng: random.Random, weights: tuple[int, ...], n: int, canaries: int = 3) -> list[tuple[str, str]]:
    return [(f"c{i % canaries}", rng.choices(ANSWERS, weights)[0]) for i in range(n)]


def test_the_kernel_counts_agreeing_positions() -> None:
    assert hamming_kernel("abc", "abd", 4) == 0.75  # a, b and the padding agree; c and d do not
    assert hamming_kernel("abc", "xyz", 3) == 0.0


def test_false_alarms_stay_under_one_over_the_threshold_however_long_it_watches() -> None:
    threshold, trials = 20.0, 200
    alarms = 0
    for t in range(trials):
        rng = random.Random(t)
        test = IdentityMMD(reference_size=10, threshold=threshold, seed=t)
        alarms += any(test.update(x) for x in _stream(rng, BEFORE, 30 + 3 * 60))
    assert alarms / trials <= 1 / threshold + 0.03  # Ville's bound (5%), with binomial slack for 200 trials


def test_a_change_of_frequencies_alone_is_found_in_most_trials() -> None:
    found = 0
    for t in range(40):
        rng = random.Random(1000 + t)
        test = IdentityMMD(reference_size=20, threshold=100.0, seed=t)
        for x in _stream(rng, BEFORE, 60):
            assert test.update(x) is None  # the go-live sample: no bet yet
        found += any(test.update(x) for x in _stream(rng, AFTER, 3 * 80))
    assert found >= 30
