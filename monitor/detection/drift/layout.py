"""Which streams a task has, what each observes, and its null hypothesis.

Score streams are tested against the go-live reference (``reference``): what the approved
model did on these canaries. The benchmark's aggregate is approval evidence; it is the null only
where the plan turns the go-live reference off (``detection.reference.repeats`` 0).

The layout depends only on the plan, the task's canaries and its baseline, never on what has
been observed so far: a stream that needs per-instance references (paired, subgroups, gaps,
output-length exceedances) exists from the start, inactive until the references do, so the
false-alarm budget and every threshold stay fixed as the burn-in completes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any, Generic, TypeVar

from medmon.alerts import KINDS, stream_kind
from medmon.baselines import Baseline, Canary
from medmon.monitor.detection.drift.reference import (
    References,
    cost_null,
    cost_score,
    exceedance_null,
    log_cost_scale,
    lower_bound,
    stage_alpha,
)
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.models import ProbeResultBase
from medmon.probes.scoring import READING_SCORERS

ERROR_NULL = 0.05  # tolerated share of failed calls before availability is in question
EXCEEDANCE_NULL = 0.10  # tolerated share of calls over the cost budget or latency objective
REFUSAL_NULL = 0.05  # tolerated share of refusals
FORMAT_NULL = 0.05  # tolerated share of answers the scorer cannot read
COST_SIGMA2 = 1 / 36  # variance of a clipped log-cost score near the null: (1 SD / (2 x 3 SD))^2
MIN_SUBGROUP_CANARIES = 3  # a subgroup value needs this many canaries to be a stream of its own
BINARY_SCORERS = frozenset({"exact_match", "quasi_exact_match", "multiple_choice", "numeric_tolerance", "yes_no_maybe"})
Observe = Callable[[ProbeResultBase], Any]
Item = TypeVar("Item")  # what a stream observes: a probe result, a traffic span, an hour's count, a verdict


@dataclass(frozen=True)
class StreamSpec(Generic[Item]):
    """One stream-direction: what it observes, its detector and parameters, and its ``kind`` in the catalogue
    (``medmon.alerts.KINDS``; default: its metric's), which gives its ``family`` and ``what`` unless set here."""

    key: str
    task_id: str
    metric: str  # alert label: streams with the same metric raise the same alert
    direction: str
    null_mean: float
    baseline_mean: float
    observe: Callable[[Item], Any]
    detector: str = "mixture_sr"
    params: dict[str, Any] = field(default_factory=dict)
    family: str = ""
    what: str = ""  # what an alarm means, for the alert summary
    active: bool = True  # False until the references it needs exist
    primary: bool = False  # the task's member of its category's pooled stream
    kind: str = ""

    def __post_init__(self) -> None:
        kind = KINDS[self.kind] if self.kind else stream_kind(self.metric, self.direction, self.detector)
        if stream_kind(self.metric, self.direction).rule is not kind.rule:
            raise ValueError(f"stream {self.key}: metric {self.metric!r} is not of kind {kind.name!r}")
        sub = self.metric.partition("[")[2].removesuffix("]")
        object.__setattr__(self, "kind", kind.name)
        object.__setattr__(self, "family", self.family or kind.family)
        object.__setattr__(self, "what", self.what or kind.words(sub=sub))


JURY_SCORER = "jury"  # a task scored by the LLM jury (its pack's scorer)
JURYS_OPINION = "the jury's opinion, not the clinician scale"


def baseline_margin(p: float, n: int, min_margin: float, z: float = 2.0) -> float:
    """Tolerance for the baseline's own sampling error: ``z`` standard errors, at least ``min_margin``.

    Without it a detector eventually 'detects' the error of a baseline measured on a finite
    benchmark (a 500-item baseline used as exact gave a 32% false-alarm rate in simulation).

    Examples
    --------
    >>> round(baseline_margin(0.8, 500, 0.01), 4)
    0.0358
    """
    se = math.sqrt(max(p * (1 - p), 1e-6) / max(n, 1))
    return max(min_margin, z * se)


def margin_z(plan: Plan) -> float:
    """How many standard errors of its baseline a task's null sits below it.

    The margin is a one-time bet that the baseline is not optimistic by more than ``z`` SE; with
    many tasks, each with its own baseline, one of them will be (the benchmark: 100 streams with
    500-item baselines and 2 SE gave a 46% family false-alarm share). So the plan's
    ``baseline_alpha`` is split over the tasks: ``z = max(2, Phi^-1(1 - baseline_alpha / tasks))``.
    A task's streams share its baseline and count once.

    Examples
    --------
    >>> from statistics import NormalDist
    >>> round(max(2.0, NormalDist().inv_cdf(1 - 0.05 / 100)), 2)
    3.29
    """
    return max(2.0, NormalDist().inv_cdf(1 - plan.detection.baseline_alpha / max(len(plan.tasks), 1)))


def reference_alpha(plan: Plan) -> float:
    """Chance allowed to one task's reference being optimistic beyond its margin: ``baseline_alpha / tasks``."""
    return plan.detection.baseline_alpha / max(len(plan.tasks), 1)


def exact_baseline_margin(p: float, n: int, alpha: float, min_margin: float) -> float:
    """``p`` minus its Clopper-Pearson lower bound on ``n`` items (a 0/1 benchmark score), at least ``min_margin``.

    Examples
    --------
    >>> round(exact_baseline_margin(0.95, 300, 0.05, 0.0), 4)     # Wald's 2 SE would say 0.0252
    0.0259
    """
    return max(min_margin, p - lower_bound(p * n, p * n, n, alpha, binary=True))


def _ok(r: ProbeResultBase) -> bool:
    return r.error_type is None and r.score is not None


def _paired(refs: References | None, tag: str | None = None, value: str | None = None) -> Observe:
    def observe(r: ProbeResultBase) -> Any:
        if refs is None or not _ok(r) or r.canary_id not in refs.items:
            return None
        if tag is not None and (r.tags or {}).get(tag) != value:
            return None
        return (r.score, refs.items[r.canary_id].mean)

    return observe


def _gap(refs: References | None, tag: str, value: str) -> Observe:
    def observe(r: ProbeResultBase) -> Any:
        got = (r.tags or {}).get(tag)
        if refs is None or not _ok(r) or r.score is None or got is None or r.canary_id not in refs.items:
            return None
        return (got == value, float(r.score) - refs.items[r.canary_id].mean)

    return observe


def _exceeds(refs: References | None, longer: bool) -> Observe:
    def observe(r: ProbeResultBase) -> Any:
        ref = refs.items.get(r.canary_id) if refs is not None else None
        if ref is None or r.error_type is not None or r.completion_tokens is None:
            return None
        bound = ref.out_max if longer else ref.out_min
        if bound is None:
            return None
        return float(r.completion_tokens > bound) if longer else float(r.completion_tokens < bound)

    return observe


def _unparsed(r: ProbeResultBase) -> float | None:
    """1 for an answer the scorer could not read; refusals and failed calls have streams of their own."""
    if r.error_type is not None or r.refused or r.parsed is None:
        return None
    return float(not r.parsed)


def _cost_vs_reference(refs: References | None, scale: float | None) -> Observe:
    """A call's log cost against its canary's go-live mean, in clipped reference SDs (``cost_score``)."""

    def observe(r: ProbeResultBase) -> Any:
        ref = refs.items.get(r.canary_id) if refs is not None else None
        if ref is None or scale is None or r.error_type is not None or not r.cost_usd or len(ref.cost) != 3:
            return None
        return cost_score(math.log(r.cost_usd), ref.cost[1] / ref.cost[0], scale)

    return observe


def _slower_than_reference(refs: References | None, min_rise_s: float) -> Observe:
    """``1{latency > the canary's slowest go-live call + min_rise_s}``: exact under exchangeability
    (the margin only makes it conservative), robust to jitter, blind to rises nobody would notice."""

    def observe(r: ProbeResultBase) -> Any:
        ref = refs.items.get(r.canary_id) if refs is not None else None
        if ref is None or r.error_type is not None or r.latency_s is None or not ref.latency:
            return None
        return float(r.latency_s > max(ref.latency) + min_rise_s)

    return observe


def _sigma2(p: float) -> float:
    return max(p * (1 - p), 0.01)


def subgroup_values(task: Task, canaries: Sequence[Canary]) -> list[tuple[str, str, list[str]]]:
    """``(tag, value, canary ids)`` for each subgroup value with enough canaries to be a stream."""
    pool = [c for c in canaries if c.replayable]
    out = []
    for tag in task.subgroups:
        counts = Counter(c.tags[tag] for c in pool if tag in c.tags)
        eligible = sorted(v for v, n in counts.items() if n >= MIN_SUBGROUP_CANARIES)
        if len(eligible) >= 2:
            out += [(tag, v, [c.id for c in pool if c.tags.get(tag) == v]) for v in eligible]
    return out


def _judge_failed(name: str) -> Observe:
    """1 when the judge gave no usable verdict on a judged answer, 0 when it did, None when not judged."""

    def observe(r: ProbeResultBase) -> float | None:
        outcome = getattr(r, "jury", None)
        for verdict in getattr(outcome, "verdicts", ()):
            if verdict.judge == name:
                return 0.0 if verdict.valid else 1.0
        return None

    return observe


def _rise(
    task_id: str, metric: str, null: float, observe: Observe, baseline: float = 0.0, **kw: Any
) -> StreamSpec[ProbeResultBase]:
    """A stream of 0/1 observations (failed, refused, over budget, ...) watched for a rise of their share."""
    return StreamSpec(
        f"{task_id}:{metric}:rise",
        task_id,
        metric,
        "rise",
        null,
        baseline,
        observe,
        params={"mu0": null, "sigma2": _sigma2(null), "direction": "rise"},
        **kw,
    )


def _reader_agrees(r: ProbeResultBase) -> float | None:
    """1 when the reader model read what the rules read, 0 when not; None unless both read it."""
    agrees: bool | None = getattr(r, "reader_agrees", None)
    return None if agrees is None else float(agrees)


def task_streams(
    plan: Plan,
    task: Task,
    baseline: Baseline,
    canaries: Sequence[Canary] = (),
    *,
    refs: References | None = None,
    burn_in: References | None = None,
    scorer: str = "",
) -> list[StreamSpec[ProbeResultBase]]:
    """The streams monitored for one task, with their null hypotheses.

    ``refs`` are the per-instance references for paired streams (HELM's, or the burn-in's once
    complete); ``burn_in`` the completed burn-in, which also gives the output-length ranges.
    """
    det = plan.detection
    t = task.id
    p0 = baseline.detector_normalized
    alpha = reference_alpha(plan)
    z = margin_z(plan)
    go_live = det.reference.repeats >= 1
    if go_live and burn_in is not None:  # the approved model's own answers on these canaries
        # fixed when the reference completed: adding a task later does not move this null
        alpha = burn_in.alpha or stage_alpha(alpha, det.reference.repeats, det.reference.max_repeats)
        margin = burn_in.exact_margin(alpha, det.min_margin)
        ref_mean = burn_in.centre  # what the margin bounds
        mu0 = min(max(ref_mean - margin, 0.01), 0.99)
        sigma2 = max(burn_in.answer_variance(), 0.005)  # observed, not p(1 - p)
        score: StreamSpec[ProbeResultBase] = StreamSpec(
            f"{t}:score:drop",
            t,
            "score",
            "drop",
            mu0,
            ref_mean,
            lambda r: r.score if _ok(r) else None,
            params={"mu0": mu0, "sigma2": sigma2, "reference": burn_in.key()},
            primary=True,
            kind="golive_score",
        )
    elif go_live:  # the reference is being built: armed against the imported baseline, with its wider margin
        margin = exact_baseline_margin(p0, baseline.n, alpha, det.min_margin)
        mu0 = min(max(p0 - margin, 0.01), 0.99)
        score = StreamSpec(
            f"{t}:score:drop",
            t,
            "score",
            "drop",
            mu0,
            p0,
            lambda r: r.score if _ok(r) else None,
            params={"mu0": mu0, "sigma2": _sigma2(p0), "reference": "baseline"},
            primary=True,
            kind="score",
        )
    else:  # no go-live reference: the benchmark's score, with an exact margin
        margin = exact_baseline_margin(p0, baseline.n, alpha, det.min_margin)
        mu0 = min(max(p0 - margin, 0.01), 0.99)
        bounded = scorer not in BINARY_SCORERS and refs is not None and refs.source == "helm"
        sigma2 = _sigma2(p0)
        if bounded and refs is not None:  # per-item baseline variance, where the items are known
            means = [r.mean for r in refs.items.values()]
            between = sum((m - refs.mean) ** 2 for m in means) / max(len(means), 1)
            within = sum(refs.run_variance(r) for r in refs.items.values()) / max(len(means), 1)
            sigma2 = max(between + within, 0.005)
        score = StreamSpec(
            f"{t}:score:drop",
            t,
            "score",
            "drop",
            mu0,
            p0,
            lambda r: r.score if _ok(r) else None,
            params={"mu0": mu0, "sigma2": sigma2},
            primary=not (refs is not None and refs.source == "helm"),
        )
    specs = [score]
    paired_ready = refs is not None
    paired_possible = paired_ready or go_live

    def paired_params(sub: References | None) -> tuple[dict[str, Any], float]:
        if sub is None or not sub.items:
            return {"margin": det.min_margin, "sigma2": 0.05}, -det.min_margin
        if sub.source == "helm":  # HELM's per-instance means (no go-live reference): a normal bound on their bias
            m = sub.margin(det.min_margin, z)
        else:
            m = sub.exact_margin(
                sub.alpha or stage_alpha(alpha, det.reference.repeats, det.reference.max_repeats), det.min_margin
            )
        return {"margin": m, "sigma2": sub.sigma2_x(), "reference": sub.key()}, -m

    if paired_possible:
        params, null = paired_params(refs)
        specs.append(
            StreamSpec(
                f"{t}:score_paired:drop",
                t,
                "score",
                "drop",
                null,
                0.0,
                _paired(refs),
                "paired_sr",
                params,
                active=paired_ready,
                primary=not go_live and refs is not None and refs.source == "helm",
            )
        )
        for tag, value, ids in subgroup_values(task, canaries):
            sub = refs.subset(ids) if refs is not None else None
            rest = refs.subset(set(refs.items) - set(ids)) if refs is not None else None
            params, null = paired_params(sub)
            label = f"{tag}={value}"
            specs.append(
                StreamSpec(
                    f"{t}:score[{label}]:drop",
                    t,
                    f"score[{label}]",
                    "drop",
                    null,
                    0.0,
                    _paired(refs, tag, value),
                    "paired_sr",
                    params,
                    active=paired_ready,
                )
            )
            gap_margin = max(
                det.min_margin,
                z * math.hypot(sub.bias_sd(), rest.bias_sd())
                if sub is not None and rest is not None and rest.items
                else 0.0,
            )
            gap_sigma2 = max(params["sigma2"] / 2, 0.001)
            specs.append(
                StreamSpec(
                    f"{t}:gap[{label}]:rise",
                    t,
                    f"gap[{label}]",
                    "rise",
                    gap_margin,
                    0.0,
                    _gap(refs, tag, value),
                    "subgroup_gap_sr",
                    {"margin": gap_margin, "sigma2": gap_sigma2, "value_range": 2.0},
                    active=paired_ready,
                )
            )
    if go_live:
        k = burn_in.min_runs if burn_in is not None else det.reference.repeats
        n_items = len(burn_in.items) if burn_in is not None else len(canaries)
        q = exceedance_null(k, n_items)
        for name, longer in (("verbosity", True), ("truncation", False)):
            specs.append(_rise(t, name, q, _exceeds(burn_in, longer), 1 / (k + 1), active=burn_in is not None))
    specs.append(_rise(t, "refusal", REFUSAL_NULL, lambda r: float(r.refused) if r.error_type is None else None))
    if scorer in READING_SCORERS:
        specs.append(_rise(t, "format", FORMAT_NULL, _unparsed))
    agreement = task.thresholds.min_jury_agreement
    if agreement is not None and plan.jury is not None:
        a0 = min(max(agreement, 0.01), 0.99)
        specs.append(
            StreamSpec(
                f"{t}:jury_agreement:drop",
                t,
                "jury_agreement",
                "drop",
                a0,
                a0,
                lambda r: r.jury_agreement if r.error_type is None else None,
                params={"mu0": a0, "sigma2": 0.02},
            )
        )
    reader = plan.reader_model
    if reader is not None and reader.enabled and scorer in READING_SCORERS:
        # the reader model's agreement with the rules on the replies both read, held to its floor
        # exactly as the judges' agreement is (a reader that drifts is caught like a judge)
        f0 = min(max(reader.agreement_floor, 0.01), 0.99)
        specs.append(
            StreamSpec(
                f"{t}:reader_agreement:drop",
                t,
                "reader_agreement",
                "drop",
                f0,
                f0,
                _reader_agrees,
                params={"mu0": f0, "sigma2": 0.02},
            )
        )
    specs.append(_rise(t, "error_rate", ERROR_NULL, lambda r: 1.0 if r.error_type else 0.0))
    if scorer == "jury" and plan.jury is not None:
        specs += [_rise(t, f"judge_failures[{j.name}]", ERROR_NULL, _judge_failed(j.name)) for j in plan.jury.judges]
    if go_live:  # cost and latency against each canary's go-live calls; the budget and SLO are rules below
        n_items = len(burn_in.items) if burn_in is not None else len(canaries)
        scale = log_cost_scale(burn_in) if burn_in is not None else None
        q = cost_null(burn_in) if burn_in is not None else 0.6
        specs.append(
            StreamSpec(
                f"{t}:cost_typical:rise",
                t,
                "cost_typical",
                "rise",
                q,
                0.5,
                _cost_vs_reference(burn_in, scale),
                params={"mu0": q, "sigma2": COST_SIGMA2, "direction": "rise"},
                active=scale is not None,
            )
        )
        counts = [len(r.latency) for r in burn_in.items.values() if r.latency] if burn_in is not None else []
        q = exceedance_null(min(counts) if counts else det.reference.repeats, n_items)
        specs.append(
            _rise(
                t,
                "latency_typical",
                q,
                _slower_than_reference(burn_in, det.latency_min_rise_s),
                what=KINDS["latency_typical"].words(min_rise_s=f"{det.latency_min_rise_s:g}"),
                active=bool(counts),
            )
        )
    budget = task.thresholds.cost_budget_per_call
    if budget is not None:
        specs.append(
            _rise(t, "cost", EXCEEDANCE_NULL, lambda r: None if r.cost_usd is None else float(r.cost_usd > budget))
        )
    slo = task.thresholds.latency_slo_s
    if slo is not None:
        specs.append(
            _rise(t, "latency", EXCEEDANCE_NULL, lambda r: None if r.latency_s is None else float(r.latency_s > slo))
        )
    if det.distribution_checks:
        specs.append(
            StreamSpec(
                f"{t}:output_length:change",
                t,
                "output_length",
                "change",
                0.0,
                0.0,
                lambda r: None if r.error_type or r.completion_tokens is None else float(r.completion_tokens),
                "river",
                {"kind": "adwin", "params": {"delta": 1e-5}},
            )
        )
        specs.append(
            StreamSpec(
                f"{t}:latency_distribution:change",
                t,
                "latency_distribution",
                "change",
                0.0,
                0.0,
                lambda r: None if r.error_type or r.latency_s is None else float(r.latency_s),
                "river",
                {"kind": "kswin", "params": {"alpha": 1e-4, "seed": 7}},
            )
        )
    if scorer == JURY_SCORER:  # what these streams watch is the jury's opinion; the clinician scale is its own stream
        specs = [replace(s, what=f"{s.what} ({JURYS_OPINION})") if s.metric.startswith("score") else s for s in specs]
    return specs
