"""Prediction-powered e-detector: an alarm on the clinician scale from every jury score plus a few ratings.

Why this detector: the jury scores every answer, clinicians rate a sampled few, and what the committee
needs to know is whether answers got worse *for clinicians*, not whether the jury's opinion moved.
Each answer ``t`` gives the jury's score ``G_t``, and, when it was drawn for review (``xi_t = 1``,
with a known inclusion probability ``pi_t > 0``), a clinician's rating ``H_t``. The rectified value

    x_t = f(G_t) + (H_t - f(G_t)) * xi_t / pi_t

has ``E[x_t | past] = E[H_t | past]`` for any prediction ``f`` fixed before the answer is seen (the
prediction-powered / active-inference estimator of Angelopoulos et al. 2023 and Zrnic & Candes 2024;
used inside e-values by Csillag, Struchiner & Goedert, ICML 2025, and for risk monitoring by Zhang,
Cai, Yu & Simeone 2026). So a bet ``1 + lambda * (mu0 - x_t)`` on ``x_t`` is an e-value for the
clinician-scale null ``E[H_t | past] >= mu0`` whatever the jury's bias or noise, and the mixture
Shiryaev-Roberts bookkeeping of ``medmon.monitor.detection.drift.esr`` keeps its promise: at most
``N / threshold`` false alarms in expectation over ``N`` answers. A biased jury costs power, never
validity.

Two families of bets share the mixture (the average of per-bet Shiryaev-Roberts statistics, itself
valid): ``jury`` bets predict with a running linear calibration of clinicians on the jury (fitted on
past pairs only, clipped to ``[mu0 - reach, mu0 + reach]``), and ``clinicians`` bets predict the
null ``mu0`` itself, which is the clinician-only detector written on the same scale. The alarm thus
comes about as fast as the better of the two, at a cost of ``log 2`` evidence.

Bets are capped so that an e-value stays positive for the worst rectified value an answer drawn
with probability ``pi_min`` can give: ``x_t`` lies in ``[hi (1 - 1/pi_min), lo + (1 - lo)/pi_min]``
for a prediction in ``[lo, hi]``. An answer offered with ``pi_t < pi_min`` carries no information
here (the review queue never draws below its floor).

The estimate since the last reset (the mean of ``x_t``) comes with an asymptotic confidence
sequence (Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2024, the normal-mixture boundary), valid
uniformly over time as the answers accumulate.

References
----------
Csillag, D., Struchiner, C. J., Goedert, G. T. (2025). Prediction-powered e-values. ICML.
Zhang, Cai, Yu, Simeone (2026). Prediction-powered risk monitoring. arXiv:2602.02229.
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., Zrnic, T. (2023). Prediction-powered
inference. Science.
Zrnic, T., Candes, E. J. (2024). Active statistical inference. ICML.
Shin, J., Ramdas, A., Rinaldo, A. (2024). E-detectors. NEJSDS.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from medmon.monitor.detection.drift.detector import DataclassState
from medmon.monitor.detection.drift.esr import BET_CAP, DEFAULT_SHIFTS, MixtureSRState, validate
from medmon.monitor.detection.drift.finding import Finding

FAMILIES = ("jury", "clinicians")
MIN_PAIRS = 5.0  # weighted clinician-jury pairs before the calibration replaces the raw jury score


@dataclass
class PredictionPoweredState(DataclassState):
    """The mixture's state, the running calibration and the running estimate, as plain JSON values.

    ``cal`` holds exponentially weighted sums over past (jury, clinician) pairs:
    weight, sum G, sum H, sum G^2, sum G H. ``est`` holds the count, sum and sum of squares of the
    rectified values since the last reset; ``labels`` counts the clinician ratings among them.
    """

    core: MixtureSRState = field(default_factory=MixtureSRState)
    cal: list[float] = field(default_factory=lambda: [0.0] * 5)
    est: list[float] = field(default_factory=lambda: [0.0] * 3)
    labels: int = 0

    @classmethod
    def fresh(cls, k: int) -> PredictionPoweredState:
        return cls(core=MixtureSRState.fresh(k))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PredictionPoweredState:
        return cls(
            core=MixtureSRState.from_dict(data["core"]),
            cal=list(data["cal"]),
            est=list(data["est"]),
            labels=int(data["labels"]),
        )


def rectified(prediction: float, rating: float | None, pi: float) -> float:
    """``f + (H - f) * xi / pi``: the unbiased per-answer estimate of the clinician's rating.

    >>> rectified(0.8, None, 0.1), round(rectified(0.8, 0.6, 0.1), 6)
    (0.8, -1.2)
    """
    if rating is None:
        return prediction
    return prediction + (rating - prediction) / pi


def confidence_sequence(
    n: float, total: float, total2: float, alpha: float = 0.05, rho2: float = 0.1
) -> tuple[float, float]:
    """Asymptotic (1 - alpha) confidence sequence for the mean of ``n`` values (normal mixture boundary).

    The half-width ``sqrt(2 (n s2 rho2 + 1) / (n^2 rho2) * log(sqrt(n s2 rho2 + 1) / alpha))`` holds
    uniformly over ``n`` (Waudby-Smith et al. 2024); ``rho2`` tunes where it is tightest.

    >>> low, high = confidence_sequence(400, 300.0, 240.0)
    >>> round(low, 3), round(high, 3)
    (0.717, 0.783)
    """
    if n < 2:
        return -math.inf, math.inf
    mean = total / n
    var = max(total2 / n - mean * mean, 1e-12)
    v = n * var * rho2 + 1.0
    half = math.sqrt(2.0 * v / (n * n * rho2) * math.log(math.sqrt(v) / alpha))
    return mean - half, mean + half


class PredictionPoweredSR:
    """Detect a drop (or rise) of the clinicians' mean rating below (above) ``mu0``, from jury scores
    on every answer and clinicians' ratings on the sampled ones.

    Parameters
    ----------
    mu0
        Null bound on the clinician scale, normalised to [0, 1]: for a drop, H0 is ``E[H] >= mu0``.
    sigma2
        Variance of a clinician's rating used to size the bets; power depends on it, validity not.
    threshold
        Alarm threshold ``A`` (its share of the false-alarm budget: at most ``N / A`` false alarms
        in expectation over ``N`` answers).
    direction
        ``"drop"`` or ``"rise"``.
    shifts
        Shift sizes each family bets on.
    pi_min
        The smallest inclusion probability an answer is drawn with (the queue's floor); caps the bets.
    reach
        How far from ``mu0`` the calibrated jury prediction may go; a wider reach uses the jury more
        but caps the jury bets lower.
    halflife
        Clinician ratings after which a past pair weighs half in the calibration (adapts to drift).

    An observation is ``(jury, clinician, pi)``: the jury's mean score and the clinicians' mean
    rating, both normalised to [0, 1], with ``clinician`` NaN (or None) for an answer not drawn for
    review, and ``pi`` the probability it was offered for review with. A NaN jury score or ``pi``
    carries no information.

    Examples
    --------
    >>> rng = random.Random(0)
    >>> det = PredictionPoweredSR(mu0=0.7, sigma2=0.04, threshold=1e3, pi_min=0.1)
    >>> def answer(h):  # a jury fooled by the drop: it keeps scoring 0.8
    ...     drawn = rng.random() < 0.2
    ...     return (0.8, h if drawn else None, 0.2)
    >>> alarms = [det.update(answer(0.75)) for _ in range(300)] + [det.update(answer(0.45)) for _ in range(900)]
    >>> first = next(i for i, f in enumerate(alarms) if f)
    >>> 300 < first < 1200
    True
    """

    name = "prediction_powered_sr"
    State = PredictionPoweredState

    def __init__(
        self,
        mu0: float,
        sigma2: float,
        threshold: float,
        direction: str = "drop",
        shifts: tuple[float, ...] = DEFAULT_SHIFTS,
        pi_min: float = 0.01,
        reach: float = 0.3,
        halflife: float = 50.0,
        state: PredictionPoweredState | None = None,
    ) -> None:
        validate(mu0, sigma2, threshold, direction, shifts)
        if not 0.0 < pi_min <= 1.0:
            raise ValueError(f"pi_min must be in (0, 1], got {pi_min}")
        if not 0.0 <= reach <= 1.0:
            raise ValueError(f"reach must be in [0, 1], got {reach}")
        if not halflife > 0:
            raise ValueError(f"halflife must be positive, got {halflife}")
        self.mu0, self.sigma2, self.threshold, self.direction = mu0, sigma2, threshold, direction
        self.shifts, self.pi_min, self.reach, self.halflife = tuple(shifts), pi_min, reach, halflife
        self.lo, self.hi = max(0.0, mu0 - reach), min(1.0, mu0 + reach)
        self._lambdas = [min(s / sigma2, self._cap(family)) for family in FAMILIES for s in self.shifts]
        self.state = state or PredictionPoweredState.fresh(len(self._lambdas))
        self.last_x: float | None = None

    def _cap(self, family: str) -> float:
        """The largest bet whose e-value stays positive for every rectified value the family can give."""
        lo, hi = (self.lo, self.hi) if family == "jury" else (self.mu0, self.mu0)
        if self.direction == "drop":
            return BET_CAP / (lo + (1.0 - lo) / self.pi_min - self.mu0)
        return BET_CAP / (self.mu0 - hi * (1.0 - 1.0 / self.pi_min))

    def prediction(self, jury: float) -> float:
        """The calibrated jury prediction of the clinicians' rating, from past pairs only."""
        w, sg, sh, sgg, sgh = self.state.cal
        if w < MIN_PAIRS:
            guess = jury
        else:
            mg, mh = sg / w, sh / w
            var = sgg / w - mg * mg
            slope = (sgh / w - mg * mh) / var if var > 1e-9 else 0.0
            guess = mh + slope * (jury - mg)
        return min(self.hi, max(self.lo, guess))

    def update(self, x: tuple[float, float | None, float]) -> Finding | None:
        """Add one answer ``(jury, clinician or None/NaN, pi)``; a Finding when the statistic crosses."""
        jury, rating, pi = x
        if jury is None or pi is None or math.isnan(jury) or math.isnan(pi) or pi < self.pi_min or pi > 1:
            self.last_x = None
            return None
        jury = min(1.0, max(0.0, float(jury)))
        drawn = rating is not None and not math.isnan(rating)
        h = min(1.0, max(0.0, float(rating))) if drawn and rating is not None else None
        values = [rectified(self.prediction(jury), h, pi), rectified(self.mu0, h, pi)]
        sign = -1.0 if self.direction == "drop" else 1.0
        k = len(self.shifts)
        evalues = [1.0 + lam * sign * (values[i // k] - self.mu0) for i, lam in enumerate(self._lambdas)]
        estimate = values[0]
        self.state.core.advance(evalues, estimate)
        n, s, s2 = self.state.est
        self.state.est = [n + 1, s + estimate, s2 + estimate * estimate]
        if h is not None:
            self.state.labels += 1
            decay = 0.5 ** (1.0 / self.halflife)
            w, sg, sh, sgg, sgh = (v * decay for v in self.state.cal)
            self.state.cal = [w + 1, sg + jury, sh + h, sgg + jury * jury, sgh + jury * h]
        self.last_x = estimate
        if self.statistic < self.threshold:
            return None
        finding = self._finding()
        self.reset()
        return finding

    @property
    def null_mean(self) -> float:
        return self.mu0

    @property
    def statistic(self) -> float:
        return self.state.core.statistic

    @property
    def evidence(self) -> float:
        return math.log(max(self.statistic, 1.0)) / math.log(self.threshold)

    @property
    def seen(self) -> int:
        return self.state.core.total

    @property
    def recovery_null(self) -> None:
        return None  # a rectified value is not bounded to [0, 1]: recovery goes by ``holds``

    def holds(self, run_mean: float) -> bool:
        return run_mean >= self.mu0 if self.direction == "drop" else run_mean <= self.mu0

    def reset(self) -> None:
        """Drop the evidence and the running estimate; the calibration is kept."""
        total = self.state.core.total
        self.state.core = MixtureSRState.fresh(len(self._lambdas), total)
        self.state.est = [0.0, 0.0, 0.0]
        self.state.labels = 0

    def estimate(self) -> tuple[float, float, float, int]:
        """The clinician-scale mean since the last reset with its 95% confidence sequence: (mean, low, high, n)."""
        n, s, s2 = self.state.est
        if n == 0:
            return math.nan, 0.0, 1.0, 0
        low, high = confidence_sequence(n, s, s2)
        return s / n, max(0.0, low), min(1.0, high), int(n)

    def _finding(self) -> Finding:
        mean, low, high, n = self.state.core.window()
        return Finding(
            detector=self.name,
            direction=self.direction,
            statistic=self.statistic,
            threshold=self.threshold,
            estimate=min(1.0, max(0.0, mean)),
            ci_low=max(0.0, min(low, mean)),
            ci_high=min(1.0, max(high, mean)),
            n=n,
            null_mean=self.mu0,
            change_point=self.state.core.total - n,
            quantity="clinician-scale mean",
        )

    # The shared detector checks (tests/monitor/drift/test_common.py) use these three hooks.
    @classmethod
    def _test_params(cls) -> dict[str, Any]:
        return {"mu0": 0.7, "sigma2": 0.04, "threshold": 1e4, "pi_min": 0.1}

    @classmethod
    def _bad_params(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"mu0": 1.2}, "mu0"),
            ({"sigma2": 0.0}, "sigma2"),
            ({"threshold": 0.5}, "threshold"),
            ({"direction": "up"}, "direction"),
            ({"shifts": ()}, "shifts"),
            ({"pi_min": 0.0}, "pi_min"),
            ({"reach": 2.0}, "reach"),
            ({"halflife": 0.0}, "halflife"),
        ]

    @classmethod
    def _test_streams(cls, rng: random.Random) -> tuple[list[Any], list[Any]]:
        """A jury biased 0.1 high; clinicians at 0.75 (null holds), then at 0.45 with the jury fooled."""

        def answer(h_mean: float, g_mean: float) -> tuple[float, float | None, float]:
            h = min(1.0, max(0.0, rng.gauss(h_mean, 0.15)))
            g = min(1.0, max(0.0, rng.gauss(g_mean, 0.1)))
            drawn = rng.random() < 0.2
            return g, (h if drawn else None), 0.2

        null = [answer(0.75, 0.85) for _ in range(2000)]
        drift = [answer(0.75, 0.85) for _ in range(300)] + [answer(0.45, 0.85) for _ in range(1200)]
        return null, drift
