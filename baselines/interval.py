"""95% intervals for baseline figures."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; sane at p near 0 or 1 and small n.

    Examples
    --------
    >>> lo, hi = wilson_interval(0.8, 500)
    >>> round(lo, 3), round(hi, 3)
    (0.763, 0.833)
    """
    if n <= 0:
        return (0.0, 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(mean: float, sd: float, n: int, lo: float = 0.0, hi: float = 1.0) -> tuple[float, float]:
    """Normal interval for the mean of bounded scores, clipped to the scale."""
    if n <= 1:
        return (lo, hi)
    half = Z95 * sd / math.sqrt(n)
    return (max(lo, mean - half), min(hi, mean + half))
