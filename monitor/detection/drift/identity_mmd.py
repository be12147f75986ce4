"""Which weights answer: an anytime-valid two-sample test on the answers themselves.

A provider can swap the weights behind an unchanged model name (a re-quantization, a
distillation, another fine-tune) and nothing in the response says so. Accuracy may not move;
the distribution of answers does. Model Equality Testing (Gao, Liang and Guestrin, ICLR 2025)
compares samples of completions with a kernel two-sample test (MMD with a Hamming string
kernel). This detector asks the same question sequentially, with a false-alarm guarantee that
holds however often it is looked at:

- the go-live sample is the first ``reference_size`` answers to each identity canary, sampled
  at temperature > 0;
- under H0 (the same weights answer), every answer to a canary, reference and later ones alike,
  is an exchangeable draw from one distribution. Each later answer gets a *conformal p-value*:
  its rank, among all answers to that canary so far, by how unlike the others it is (its mean
  Hamming-kernel similarity to them, ties broken at random). Under exchangeability these p-values
  are independent and uniform (Vovk, Nouretdinov and Gammerman 2003);
- a mixture of bets ``1 + lambda (1 - 2p)``, some on "less alike" (new strings), some on "more
  alike" (the mode grew), turns them into a test martingale. By Ville's inequality the chance that
  it ever reaches ``threshold`` under H0 is at most ``1 / threshold``: that is the stated
  false-alarm probability, over the whole segment, not per look.

The kernel reads the first ``length`` characters of an answer: ``k(a, b)`` is the share of
positions where the two (padded) strings agree, the Hamming kernel of Gao et al. on characters.

References
----------
Gao, I., Liang, P., Guestrin, C. (2025). Model equality testing: which model is this API serving? ICLR.
Vovk, V., Nouretdinov, I., Gammerman, A. (2003). Testing exchangeability on-line. ICML.
Vovk, V. (2021). Testing randomness online. Statistical Science 36(4).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.conformal_bets import ConformalBets, check_params
from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.finding import Finding, RecoveryNull

# Bets on the conformal p-value: positive ones win when later answers are unlike the rest (new
# strings), negative ones when they are more alike (one answer took over). Their mean is the statistic.
DEFAULT_BETS = (-0.8, -0.5, -0.25, 0.25, 0.5, 0.8)
PAD = "\0"


def hamming_kernel(a: str, b: str, length: int) -> float:
    """Share of the first ``length`` character positions where ``a`` and ``b`` agree (padded).

    >>> hamming_kernel("Answer: B", "Answer: C", 10)
    0.9
    >>> hamming_kernel("", "", 4)
    1.0
    """
    a, b = a[:length].ljust(length, PAD), b[:length].ljust(length, PAD)
    return sum(x == y for x, y in zip(a, b, strict=True)) / length


@dataclass
class IdentityState(DataclassState):
    """Each canary's answers (kernel view) and their summed similarity to the rest, and the bets' log-wealth."""

    bags: dict[str, list[str]] = field(default_factory=dict)
    sums: dict[str, list[float]] = field(default_factory=dict)
    log_wealth: list[float] = field(default_factory=list)
    n: int = 0  # answers tested (after the reference)
    reference: int = 0  # answers taken into the go-live sample
    p_total: float = 0.0  # sum of the conformal p-values (their mean is 0.5 under H0)
    seed: int = 0


class IdentityMMD(ConformalBets):
    """Sequential conformal two-sample test of identity answers against their go-live sample.

    Parameters
    ----------
    reference_size
        Answers per canary that form the go-live sample before any bet is placed.
    threshold
        The statistic's alarm line; the probability of any false alarm in a segment is at most ``1 / threshold``.
    length
        Characters of each answer the string kernel reads.
    max_answers
        Answers kept per canary; a canary's bag stops growing (and testing) at this size.
    bets
        The mixture's fixed bets, each in ``(-1, 1)``.
    seed
        Seeds the tie-breaking draws, so the same answers give the same decisions after a restart.
    served_model
        The model name the answers came back under: the segment's label (a new name is a new segment).

    Examples
    --------
    >>> test = IdentityMMD(reference_size=20, threshold=100.0)
    >>> same = [("c1", "Answer: " + "ABCD"[i % 4]) for i in range(20)]
    >>> [test.update(x) for x in same] == [None] * 20
    True
    >>> other = [("c1", "The patient has been") for _ in range(40)]
    >>> next(f for f in map(test.update, other) if f).decision
    'alarm'
    """

    name = "identity_mmd"
    State = IdentityState
    recovery_null: RecoveryNull | None = None  # a detected swap is a model change: the stream restarts

    def __init__(
        self,
        reference_size: int = 10,
        threshold: float = 100.0,
        length: int = 48,
        max_answers: int = 400,
        bets: tuple[float, ...] = DEFAULT_BETS,
        seed: int = 0,
        served_model: str = "",
        state: IdentityState | None = None,
    ) -> None:
        check_params(reference_size, threshold, max_answers)
        if length < 1:
            raise ValueError(f"length must be at least 1, got {length}")
        if not bets or any(not -1 < b < 1 for b in bets):
            raise ValueError(f"bets must lie in (-1, 1), got {bets}")
        self.reference_size, self.threshold, self.length = reference_size, threshold, length
        self.max_answers, self.bets, self.served_model = max_answers, tuple(bets), served_model
        self.state = state or IdentityState(log_wealth=[0.0] * len(self.bets), seed=seed)
        self.direction = "change"
        self.last_x: float | None = None

    @property
    def reference_complete(self) -> bool:
        """Every canary seen so far has its go-live sample."""
        bags = self.state.bags
        return bool(bags) and all(len(b) >= self.reference_size for b in bags.values())

    def reset(self) -> None:
        self.state = IdentityState(log_wealth=[0.0] * len(self.bets), seed=self.state.seed + 1)

    def update(self, x: tuple[str, str]) -> Finding | None:
        """Add one ``(canary id, answer)``; return a finding when the answers no longer match the go-live sample."""
        self.last_x = None
        canary, answer = x
        if not isinstance(answer, str):  # a failed call: no answer to compare
            return None
        s = self.state
        bag, sums = s.bags.setdefault(canary, []), s.sums.setdefault(canary, [])
        if len(bag) >= self.max_answers:
            return None
        text = answer[: self.length]
        sims = [hamming_kernel(text, b, self.length) for b in bag]
        for i, k in enumerate(sims):
            sums[i] += k
        bag.append(text)
        sums.append(sum(sims))
        if len(bag) <= self.reference_size:
            s.reference += 1
            return None
        p = self._p_value(sums)
        self.last_x = p
        s.n, s.p_total = s.n + 1, s.p_total + p
        statistic = self.bet(p)
        if statistic >= self.threshold:
            return self._finding(statistic)
        return None

    def _p_value(self, sums: list[float]) -> float:
        """The newest answer's conformal p-value: the share of answers at least as unlike the rest as it is."""
        mine = round(sums[-1], 9)
        rounded = [round(v, 9) for v in sums]
        stranger = sum(1 for v in rounded if v < mine)
        ties = sum(1 for v in rounded if v == mine)  # includes itself
        u = random.Random(f"{self.state.seed}:{self.state.n}").random()
        return (stranger + u * ties) / len(sums)

    def _finding(self, statistic: float) -> Finding:
        s = self.state
        mean = s.p_total / s.n
        half = 1.96 * math.sqrt(1 / 12 / s.n)  # the p-values' spread under H0
        return Finding(
            detector=self.name,
            direction="more alike" if mean > 0.5 else "less alike",
            statistic=statistic,
            threshold=self.threshold,
            estimate=mean,
            ci_low=max(0.0, mean - half),
            ci_high=min(1.0, mean + half),
            n=s.n,
            null_mean=0.5,
            change_point=0,
            quantity="mean conformal p-value",
        )

    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"reference_size": 20, "threshold": 1000.0, "length": 16, "max_answers": 1000}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"reference_size": 1}, "reference_size"),
            ({"threshold": 1.0}, "threshold"),
            ({"length": 0}, "length"),
            ({"max_answers": 5}, "max_answers"),
            ({"bets": (1.5,)}, "bets"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """Answers from one distribution over four strings; the same for 300 answers, then one favouring another."""

        def draw(weights: tuple[float, ...]) -> tuple[str, str]:
            return "c1", rng.choices(["Answer: A", "Answer: B", "Answer: C", "Yes, the"], weights)[0]

        null = [draw((4, 3, 2, 1)) for _ in range(600)]
        return null, null[:300] + [draw((1, 1, 1, 7)) for _ in range(300)]
