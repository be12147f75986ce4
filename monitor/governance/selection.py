"""Active selection for the review queue: each answer offered to clinicians with a known probability.

Why: the clinician-scale estimate ``f(G) + (H - f(G)) xi / pi`` is unbiased for any inclusion
probabilities ``pi > 0``, and its variance is ``sum_i (1/pi_i - 1) E[(H_i - f(G_i))^2]`` plus what
does not depend on the draw. Under a budget ``sum_i pi_i = B`` that is smallest for
``pi_i`` proportional to the expected size of the jury's error on answer ``i`` (Neyman allocation; the
cost-optimal active evaluation of Angelopoulos, Eisenstein et al. 2025 and Zrnic & Candes 2024).
That error is not known before a clinician looks, so medmon predicts its scale from what the jury
itself says: larger where the judges disagree and where the jury's score is near the task's
null (where a wrong verdict moves the decision), never below ``min_probability``.

Each draw is reproducible: the uniform behind it is a hash of the task and the answer's id, the
scale is a fixed function of the stored answer, and the week's mean scale comes from the week
before. Every pass over the same answers therefore makes the same decisions, and the probability
stored with a queued answer is the one it was drawn with. Once the week's quota is filled, later
answers of the week are still offered, at the floor, so no answer has probability zero.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

NEAR = 0.15  # on the 0-1 score scale: how close to the null counts as near the decision


def residual_scale(agreement: float | None, score: float | None, null: float | None) -> float:
    """The predicted size of the jury's error on one answer, up to a constant.

    ``agreement`` is the judges' per-answer agreement (1 - mean pairwise gap / scale width),
    ``score`` the jury's normalised score and ``null`` the task's null on the same scale.

    >>> residual_scale(1.0, 0.9, 0.7), residual_scale(0.5, 0.9, 0.7), residual_scale(1.0, 0.7, 0.7)
    (0.5, 1.25, 1.0)
    """
    disagreement = 1.0 - agreement if agreement is not None else 0.5
    near = max(0.0, 1.0 - abs(score - null) / NEAR) if score is not None and null is not None else 0.0
    return 0.5 + 1.5 * disagreement + 0.5 * near


def uniform(task_id: str, result_id: int) -> float:
    """The reproducible uniform in [0, 1) behind one answer's draw."""
    digest = hashlib.sha256(f"{task_id}:{result_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Draw:
    """One answer's decision: its id, the probability it was offered with, and whether it was drawn."""

    result_id: int
    probability: float
    drawn: bool


def active_draw(
    task_id: str,
    answers: Sequence[tuple[int, float]],
    *,
    rate: float,
    quota: int,
    floor: float,
    mean_scale: float = 1.0,
) -> list[Draw]:
    """Decide, in arrival order, each of a week's ``(result_id, scale)`` answers.

    ``pi_i = clip(rate * scale_i / mean_scale, floor, 1)`` until ``quota`` answers are drawn, the
    floor after that, so about ``rate`` of the answers are drawn and at most ``quota`` plus a few at
    the floor.

    >>> draws = active_draw("t", [(i, 1.0) for i in range(1000)], rate=0.1, quota=500, floor=0.01)
    >>> 70 < sum(d.drawn for d in draws) < 130, {d.probability for d in draws}
    (True, {0.1})
    """
    out: list[Draw] = []
    drawn = 0
    for result_id, scale in sorted(answers):
        if drawn >= quota:
            pi = floor
        else:
            pi = min(1.0, max(floor, rate * scale / max(mean_scale, 1e-9)))
        hit = uniform(task_id, result_id) < pi
        drawn += hit
        out.append(Draw(result_id, pi, hit))
    return out


def labels_for_half_width(
    half_width: float, residual_var: float, proxy_var: float, answers: int, z: float = 1.96
) -> int | None:
    """Clinician ratings needed for a 95% half-width ``half_width`` of the clinician-scale mean.

    From the estimator's variance ``proxy_var / N + residual_var / n`` (``N`` answers judged, ``n``
    rated, the rectifier's variance dominated by its rated answers): ``n = z^2 residual_var /
    (h^2 - z^2 proxy_var / N)``; None when ``N`` answers cannot reach ``h`` whatever is rated.

    >>> labels_for_half_width(0.05, 0.04, 0.03, 10_000)
    62
    """
    room = half_width**2 - z**2 * proxy_var / max(answers, 1)
    if room <= 0:
        return None
    return int(-(-(z**2) * residual_var // room))


def labels_for_icc(icc: float, width: float, raters: int = 2, z: float = 1.96) -> int:
    """Answers rated by jury and clinician for a 95% ICC interval of full ``width`` (Bonett 2002).

    ``n = 8 z^2 (1 - rho)^2 (1 + (k - 1) rho)^2 / (k (k - 1) w^2) + 1`` with ``k`` ratings per answer.

    >>> labels_for_icc(0.47, 0.3)
    105
    """
    k, rho = raters, icc
    n = 8 * z**2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * width**2) + 1
    return int(-(-n // 1))
