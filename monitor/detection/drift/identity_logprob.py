"""Which weights answer, read from the log-probabilities: an anytime-valid test on a temperature-0 fingerprint.

Sampled answers of a base model are long, varied strings; weights re-quantized from the same
checkpoint (Q4_K_M to Q8_0) move each token's probability by a few hundredths of a nat, far too
little for a test on a few dozen sampled strings to see. Where the server returns
``top_logprobs`` (the OpenAI API's field; llama.cpp's and vLLM's servers do), the same question
can be asked of the numbers themselves. Each identity canary is asked at temperature 0; its
*fingerprint* is the top-k log-probabilities at each of its first generated tokens. The same
weights give the same numbers (measured: identical to the printed digits across calls and
restarts of llama.cpp's server); other weights shift them.

The test is a conformal test martingale, the construction of ``identity_mmd.py`` on another
score, so its false-alarm guarantee does not rest on the numbers being exactly repeatable:

- a canary's first fingerprint is its *anchor*; every later one is scored by its distance to the
  anchor (``fingerprint_distance``);
- under H0 (the same weights answer; whatever numerical noise the server has is the same from
  run to run) the fingerprints after the anchor are exchangeable, so are their scores, and each
  score's smoothed sequential rank (the share of scores so far at least as large, ties broken at
  random) is an independent uniform p-value (Vovk, Nouretdinov and Gammerman 2003);
- the first ``reference_size - 1`` scores after the anchor are the go-live calibration, never bet
  on; later p-values are bet on with ``1 + lambda (1 - 2p)``, lambda > 0 (a larger distance is
  the only direction that means other weights). By Ville's inequality the chance that the mean
  wealth ever reaches ``threshold`` under H0 is at most ``1 / threshold``, over the whole segment.

When the fingerprints are exactly repeatable every go-live score is 0, the first fingerprint of
other weights ranks above all of them, and each canary contributes a p-value below
``1 / reference_size`` in every run after the swap.

References
----------
Gao, I., Liang, P., Guestrin, C. (2025). Model equality testing: which model is this API serving? ICLR.
Vovk, V., Nouretdinov, I., Gammerman, A. (2003). Testing exchangeability on-line. ICML.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.conformal_bets import ConformalBets, check_params
from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

DEFAULT_BETS = (0.5, 0.9, 0.99)  # all on "farther from the anchor": the only direction other weights take
Fingerprint = Sequence[Sequence[Sequence[Any]]]  # per position: [(token digest, logprob), ...], the chosen first


def fingerprint_distance(a: Fingerprint, b: Fingerprint) -> float:
    """How far two fingerprints lie apart: mean over positions of the largest log-probability shift.

    Positions are compared up to and including the first where the chosen tokens differ (after
    that the two continuations condition on different text). At a position, every token in either
    top list is compared; a token missing from the other list is given that list's lowest
    log-probability (it is at most that likely there). A different number of positions adds 1.

    >>> fp = [[["a", -0.1], ["b", -2.5]]]
    >>> fingerprint_distance(fp, fp)
    0.0
    >>> round(fingerprint_distance(fp, [[["a", -0.2], ["b", -2.0]]]), 3)
    0.5
    """
    shifts: list[float] = []
    for pa, pb in zip(a, b, strict=False):
        da, db = {str(t): float(v) for t, v in pa}, {str(t): float(v) for t, v in pb}
        if not da or not db:
            break
        floor_a, floor_b = min(da.values()), min(db.values())
        shifts.append(max(abs(da.get(t, floor_a) - db.get(t, floor_b)) for t in da.keys() | db.keys()))
        if str(pa[0][0]) != str(pb[0][0]):
            break
    else:
        if len(a) != len(b):
            shifts.append(1.0)
    return sum(shifts) / len(shifts) if shifts else (0.0 if len(a) == len(b) else 1.0)


@dataclass
class LogprobState(DataclassState):
    """Each canary's anchor fingerprint and its later scores, and the bets' log-wealth."""

    anchors: dict[str, list[Any]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    log_wealth: list[float] = field(default_factory=list)
    n: int = 0  # fingerprints tested (after the go-live sample)
    reference: int = 0  # fingerprints taken into the go-live sample (anchors and calibration)
    p_total: float = 0.0
    distance_total: float = 0.0  # of the tested fingerprints: their mean is the estimate
    distance_squares: float = 0.0
    seed: int = 0


class IdentityLogprob(ConformalBets):
    """Sequential conformal test of temperature-0 log-probability fingerprints against their go-live anchors.

    Parameters
    ----------
    reference_size
        Fingerprints per canary in the go-live sample: the anchor and ``reference_size - 1`` calibration scores.
    threshold
        The alarm line; the probability of any false alarm in a segment is at most ``1 / threshold``.
    max_answers
        Fingerprints kept per canary; a canary stops testing at this many.
    bets
        The mixture's bets, each in ``(0, 1)``.
    seed
        Seeds the tie-breaking draws, so the same fingerprints give the same decisions after a restart.
    served_model
        The model name the answers came back under: the segment's label.

    Examples
    --------
    >>> test = IdentityLogprob(reference_size=3, threshold=20.0)
    >>> same = [[["a", -0.1], ["b", -2.5]]]
    >>> [test.update((c, same)) for _ in range(3) for c in "wxyz"] == [None] * 12
    True
    >>> other = [[["a", -0.12], ["b", -2.4]]]
    >>> next(f for f in (test.update((c, other)) for _ in range(3) for c in "wxyz") if f).decision
    'alarm'
    """

    name = "identity_logprob"
    State = LogprobState
    recovery_null: RecoveryNull | None = None  # a detected swap is a model change: the stream restarts

    def __init__(
        self,
        reference_size: int = 3,
        threshold: float = 100.0,
        max_answers: int = 400,
        bets: tuple[float, ...] = DEFAULT_BETS,
        seed: int = 0,
        served_model: str = "",
        state: LogprobState | None = None,
    ) -> None:
        check_params(reference_size, threshold, max_answers)
        if not bets or any(not 0 < b < 1 for b in bets):
            raise ValueError(f"bets must lie in (0, 1), got {bets}")
        self.reference_size, self.threshold, self.max_answers = reference_size, threshold, max_answers
        self.bets, self.served_model = tuple(bets), served_model
        self.state = state or LogprobState(log_wealth=[0.0] * len(self.bets), seed=seed)
        self.direction = "change"
        self.last_x: float | None = None

    @property
    def reference_complete(self) -> bool:
        """Every canary seen so far has its go-live sample."""
        s = self.state
        return bool(s.anchors) and all(len(s.scores.get(c, [])) >= self.reference_size - 1 for c in s.anchors)

    def reset(self) -> None:
        self.state = LogprobState(log_wealth=[0.0] * len(self.bets), seed=self.state.seed + 1)

    def update(self, x: tuple[str, Fingerprint]) -> Finding | None:
        """Add one ``(canary id, fingerprint)``; return a finding when it no longer matches the go-live sample."""
        self.last_x = None
        canary, fingerprint = x
        if not isinstance(fingerprint, list | tuple) or not fingerprint:  # no log-probabilities: nothing to compare
            return None
        s = self.state
        if canary not in s.anchors:
            s.anchors[canary] = [[list(t) for t in position] for position in fingerprint]
            s.reference += 1
            return None
        scores = s.scores.setdefault(canary, [])
        if len(scores) + 1 >= self.max_answers:
            return None
        distance = round(fingerprint_distance(fingerprint, s.anchors[canary]), 9)
        scores.append(distance)
        p = self._p_value(scores)
        if len(scores) < self.reference_size:  # the go-live calibration: ranked, never bet on
            s.reference += 1
            return None
        self.last_x = p
        s.n, s.p_total, s.distance_total = s.n + 1, s.p_total + p, s.distance_total + distance
        s.distance_squares += distance * distance
        statistic = self.bet(p)
        return self._finding(statistic) if statistic >= self.threshold else None

    def _p_value(self, scores: list[float]) -> float:
        """The newest score's smoothed rank: the share of scores so far at least as far from the anchor."""
        mine = scores[-1]
        farther = sum(1 for v in scores if v > mine)
        ties = sum(1 for v in scores if v == mine)  # includes itself
        u = random.Random(f"{self.state.seed}:{self.state.reference}:{self.state.n}").random()
        return (farther + u * ties) / len(scores)

    def _finding(self, statistic: float) -> Finding:
        s = self.state
        mean = s.distance_total / s.n
        spread = math.sqrt(max(s.distance_squares / s.n - mean * mean, 0.0))
        half = 1.96 * spread / math.sqrt(s.n)
        return Finding(
            detector=self.name,
            direction="farther",
            statistic=statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(0.0, mean - half),
            ci_high=mean + half,
            n=s.n,
            null_mean=0.0,
            change_point=0,
            quantity="mean log-probability shift from the go-live fingerprint (nats)",
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"reference_size": 5, "threshold": 1000.0, "max_answers": 2000}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"reference_size": 1}, "reference_size"),
            ({"threshold": 1.0}, "threshold"),
            ({"max_answers": 3}, "max_answers"),
            ({"bets": (-0.5,)}, "bets"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Fingerprints with small numerical noise; the same for 300, then shifted by a few hundredths of a nat."""

        def draw(shift: float) -> tuple[str, Fingerprint]:
            noise = [rng.gauss(0, 0.002) for _ in range(3)]
            return "c1", [[["a", -0.3 + shift + noise[0]], ["b", -2.0 + noise[1]], ["c", -3.1 - shift + noise[2]]]]

        null = [draw(0.0) for _ in range(600)]
        return null, null[:300] + [draw(0.05) for _ in range(300)]
