"""The go-live reference: replayed canaries, growth while quiet, exact margins, conformance with
HELM, and the typical cost and latency streams against each canary's go-live median."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.baselines import Canary
from medmon.monitor.detection.drift.reference import (
    STRATIFIED_MIN_RUNS,
    InstanceRef,
    References,
    burn_in_add,
    burn_in_references,
    from_json,
    lower_bound,
    stage_alpha,
    stratified_margin,
    weighted_cp_margin,
)
from medmon.monitor.detection.streams import go_live_replay
from medmon.monitor.detection.watching import task_watching
from medmon.monitor.models import BurnIn, DetectorState
from medmon.probes.models import ProbeResultBase
from tests.monitor.test_detection import (
    _task,
    answers,
    as_before,
    baseline,
    canaries,
    context,
    feed,
    first_alarm,
    right,
)

REF = {"distribution_checks": False, "reference": {"repeats": 3, "coverage": 1.0, "max_repeats": 12}}


def replayed(
    plan: Any, ctx: Any, engine: Engine, rng: random.Random, p: Callable[[Canary], float], **fields: Any
) -> list[ProbeResultBase]:
    """A run as the pipeline makes it: the go-live replay's canaries while the reference is built."""
    with Session(engine) as s:
        chosen = go_live_replay(s, plan, ctx, ctx.task.sample_size)
    if chosen is None:
        return answers(rng, ctx.canaries, ctx.task.sample_size, p, **fields)
    values = {"completion_tokens": 50, "cost_usd": 0.001, "latency_s": 1.0} | fields
    return [
        ProbeResultBase(
            task_id=ctx.task.id, canary_id=c.id, score=float(rng.random() < p(c)), tags=dict(c.tags), **values
        )
        for c in chosen
    ]


def test_the_go_live_replay_covers_every_canary_k_times_then_the_reference_grows_while_quiet(
    engine: Engine, make_plan: Callable
) -> None:
    plan = make_plan(detection=REF)
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(21)
    key = "knowledge-qa:score:drop"
    runs = []
    for i in range(3):  # 20 canaries x 3 answers, 20 per run: exactly 3 runs
        runs += feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, as_before)], start=i)
    with Session(engine) as s:
        row = s.get(BurnIn, "knowledge-qa")
        assert row.complete and row.stage == 0 and row.alpha == pytest.approx(0.05 / 3)  # stages at 3, 6, 12 answers
        assert sorted(v[0] for v in from_json(row.reference).values()) == [3] * 20
    # armed from the first run: while the reference was built the score stream tested against the baseline
    armed = [u for run in runs for u in run if u.spec.key == key]
    assert len(armed) == 3 and all(u.spec.kind == "score" and u.spec.params["reference"] == "baseline" for u in armed)
    assert armed[0].n > 0 and armed[0].spec.null_mean < 0.78
    # Quiet runs keep growing it (the replay keeps the answer counts equal); at twice its answers the
    # two-sample check lets them in: the next stage, its narrower margin, the evidence carried over
    grown = []
    for i in range(4):
        grown += feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, as_before)], start=3 + i)
    nulls = [next(u.spec.null_mean for u in run if u.spec.key == key) for run in grown]
    with Session(engine) as s:
        row, state = s.get(BurnIn, "knowledge-qa"), s.get(DetectorState, key)
        assert row.stage == 1 and sum(v[0] for v in from_json(row.reference).values()) >= 120
        assert state.segment == 2 and state.params["reference"].endswith(".1")  # one new segment: at the hand-over
        assert state.n == 4 * 20  # the evidence since the hand-over carried over the growth
    margins = [
        ref - null
        for ref, null in zip([u.spec.baseline_mean for run in grown for u in run if u.spec.key == key], nulls)
    ]
    assert margins[-1] < margins[0]  # the margin shrinks as the reference grows
    # Growth stops while a stream is degraded: a drop never becomes part of the reference
    feed(engine, plan, ctx, base, [answers(rng, pool, 20, lambda c: 0.1) for _ in range(6)], start=7)
    with Session(engine) as s:
        before = sum(v[0] for v in s.get(BurnIn, "knowledge-qa").instances.values())
    feed(engine, plan, ctx, base, [answers(rng, pool, 20, lambda c: 0.1)], start=13)
    with Session(engine) as s:
        assert s.get(DetectorState, key).status.value == "degraded"
        assert sum(v[0] for v in s.get(BurnIn, "knowledge-qa").instances.values()) == before


def test_the_frozen_reference_never_absorbs_a_drop_its_streams_have_not_yet_seen(
    engine: Engine, make_plan: Callable
) -> None:
    """A drop right after the reference completes, before any stream is watching: the answers that
    would double the reference differ from it, so the two-sample check refuses them (a finding, not a
    silent update) and the null stays where the approved model put it. On today's main the reference
    grew with those answers and its null fell with the drop."""
    plan = make_plan(detection=REF)
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(23)
    key = "knowledge-qa:score:drop"
    for i in range(3):
        feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, as_before)], start=i)
    with Session(engine) as s:
        frozen = from_json(s.get(BurnIn, "knowledge-qa").reference)
    worse = lambda c: 0.97 * 0.6 if right(c) else 0.03  # noqa: E731  (about 0.78 -> 0.47)
    runs = []
    for i in range(3):
        runs += feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, worse)], start=3 + i)
    with Session(engine) as s:
        row, state = s.get(BurnIn, "knowledge-qa"), s.get(DetectorState, key)
        assert row.stage == 0 and from_json(row.reference) == frozen  # the frozen reference is untouched
    nulls = {round(u.spec.null_mean, 9) for run in runs for u in run if u.spec.key == key}
    assert len(nulls) == 1 and state.null_mean == pytest.approx(nulls.pop())  # its null did not move
    refused = [u for run in runs for u in run if u.kind == "reference_growth"]
    assert all(u.status.value == "ok" for run in runs for u in run if u.spec.key == key)  # nothing watching yet
    (u,) = refused  # the check, not a stream, stopped the growth
    assert u.finding.estimate < 0 and u.finding.ci_high < 0 and not u.alert
    assert "not extended" in u.summary


@pytest.mark.parametrize(
    "production,worse", [(as_before, False), (lambda c: 0.5 * as_before(c), True)], ids=["conforms", "worse_than_helm"]
)
def test_go_live_conformance_compares_the_reference_with_helm_once(
    engine: Engine, make_plan: Callable, production: Callable, worse: bool
) -> None:
    plan = make_plan(detection=REF)
    pool = canaries(20, helm=True)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(22)
    found = []
    for i in range(8):
        for u in feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, production)], start=i)[0]:
            if u.kind == "conformance":
                found.append((i, u))
    assert len(found) == 1 and found[0][0] == 2  # once, on the run that completes the reference
    u = found[0][1]
    assert u.finding.quantity == "paired difference" and u.finding.n == 20
    assert u.alert is worse and (u.finding.decision == "degraded") is worse
    assert u.finding.ci_low <= u.finding.estimate <= u.finding.ci_high
    if worse:
        assert u.finding.ci_high < 0 and "below the HELM evidence" in u.summary


@pytest.mark.slow  # Monte Carlo coverage
def test_exact_margins_cover_as_stated_where_wald_does_not() -> None:
    """One-sided 95% lower bounds over 4,000 simulated references: Clopper-Pearson (checked against
    scipy's binomial test) and empirical Bernstein keep their coverage; Wald's does not at p = 0.95."""
    rng, alpha, reps = np.random.default_rng(23), 0.05, 4000
    assert lower_bound(285, 285, 300, alpha, True) == pytest.approx(
        binomtest(285, 300).proportion_ci(confidence_level=0.90, method="exact").low
    )
    for p, n in ((0.95, 300), (0.80, 160), (0.99, 640), (0.5, 60)):
        k = rng.binomial(n, p, size=reps)
        cp = np.array([lower_bound(x, x, n, alpha, True) for x in k])
        assert (cp <= p).mean() >= 1 - alpha - 0.01, (p, n)
    k = rng.binomial(300, 0.95, size=reps)
    wald = k / 300 - 1.645 * np.sqrt(k / 300 * (1 - k / 300) / 300)
    assert (wald <= 0.95).mean() < 1 - alpha - 0.005  # the Wald bound covers less often than stated
    # bounded scores (F1, jury): Beta(6, 2) per answer, mean 0.75, with their observed variance
    for n in (60, 300):
        x = rng.beta(6, 2, size=(reps // 4, n))
        eb = np.array([lower_bound(r.sum(), (r * r).sum(), n, alpha, False) for r in x])
        assert (eb <= 0.75).mean() >= 1 - alpha
    # a go-live reference of K = 5 answers on 32 near-deterministic canaries (stratified, Poisson-binomial)
    p_items = np.where(rng.random(32) < 0.8, 0.97, 0.03)
    covered = 0
    for _ in range(reps // 4):
        counts = rng.binomial(5, p_items)
        refs = References("burn-in", 1, {f"c{i}": InstanceRef(c / 5, 5, total2=float(c)) for i, c in enumerate(counts)})
        covered += refs.mean - refs.exact_margin(alpha) <= p_items.mean()
    assert covered / (reps // 4) >= 1 - alpha
    assert stage_alpha(alpha, 3, 12) == alpha / 3 and stage_alpha(alpha, 5, 5) == alpha


def _stratified_coverage(
    rng: np.random.Generator, p_items: np.ndarray, runs: np.ndarray, alpha: float, reps: int, scores: str = "binary"
) -> float:
    """Share of simulated references whose ``centre - exact_margin`` is at most the canaries' true mean."""
    covered = 0
    for _ in range(reps):
        items = {}
        for i, (p, k) in enumerate(zip(p_items, runs)):
            if scores == "binary":
                y = (rng.random(k) < p).astype(float)
            else:  # bounded: each answer's score ~ Beta around its canary's mean
                y = rng.beta(p * 12, (1 - p) * 12, size=k)
            items[f"c{i}"] = InstanceRef(float(y.mean()), int(k), total2=float((y * y).sum()))
        refs = References("burn-in", 1, items)
        assert refs.stratified
        covered += refs.centre - refs.exact_margin(alpha) <= p_items.mean()
    return covered / reps


@pytest.mark.slow  # Monte Carlo coverage
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_the_stratified_margin_covers_as_stated_and_is_narrower_for_deterministic_canaries(alpha: float) -> None:
    """Once every canary has ``STRATIFIED_MIN_RUNS`` answers the margin counts only the spread of each
    canary's own answers; its stated coverage holds in simulation (1,000 references per design):
    near-deterministic canaries at 0.80 / 0.95 / 0.30, canaries at 0.5 (the largest spread), stochastic
    canaries, bounded scores, and unequal answer counts."""
    rng, reps = np.random.default_rng(5), 1000
    near = lambda share: np.where(np.arange(32) < round(share * 32), 0.98, 0.02)  # noqa: E731
    designs = [
        (near(0.80), np.full(32, 40), "binary"),
        (near(0.95), np.full(32, 40), "binary"),
        (near(0.30), np.full(32, 10), "binary"),
        (np.full(32, 0.5), np.full(32, 10), "binary"),
        (rng.beta(4, 1, 32), np.full(32, 20), "binary"),
        (rng.uniform(0.2, 0.95, 32), np.full(32, 20), "bounded"),
        (near(0.80), rng.integers(STRATIFIED_MIN_RUNS, 60, 32), "binary"),
        (np.full(32, 0.80), np.full(32, 160), "binary"),  # independent draws per request (a model at T > 0)
        (np.full(32, 0.80), rng.integers(150, 170, 32), "binary"),  # the same, counts a little unequal
    ]
    for p_items, runs, scores in designs:
        assert _stratified_coverage(rng, p_items, runs, alpha, reps, scores) >= 1 - alpha, (p_items.mean(), scores)
    # near-deterministic canaries at a 50-task plan's error: narrower than Clopper-Pearson on the 1,280
    # answers, which charges p(1 - p)
    rows, small = [(40, 39.0, 39.0)] * 26 + [(40, 1.0, 1.0)] * 6, alpha / 50
    total = sum(t for _, t, _ in rows)
    assert stratified_margin(rows, small) < 0.75 * (total / 1280 - lower_bound(total, total, 1280, small, True))
    # the margin is chosen from the data: for independent draws the pooled Clopper-Pearson bound is the
    # narrower (each at half the error), for near-deterministic canaries the within-canary one
    draws = [(160, 128.0, 128.0)] * 32
    assert weighted_cp_margin(draws, alpha / 2, True) < stratified_margin(draws, alpha / 2)
    assert stratified_margin(rows, alpha / 2) < weighted_cp_margin(rows, alpha / 2, True)
    independent = References("burn-in", 1, {f"c{i}": InstanceRef(0.8, 160, total2=128.0) for i in range(32)})
    assert independent.exact_margin(alpha) == pytest.approx(weighted_cp_margin(draws, alpha / 2, True))
    # below STRATIFIED_MIN_RUNS answers the margin stays Clopper-Pearson's
    few = References("burn-in", 1, {f"c{i}": InstanceRef(0.8, 5, total2=4.0) for i in range(32)})
    assert not few.stratified and few.exact_margin(alpha) == pytest.approx(
        0.8 - lower_bound(128, 128, 160, alpha, True)
    )


@pytest.mark.parametrize("name,field_name,factor", [("cost", "cost_usd", 1.5), ("latency", "latency_s", 3.0)])
def test_cost_and_latency_rise_against_each_canarys_go_live_calls(
    engine: Engine, make_plan: Callable, name: str, field_name: str, factor: float
) -> None:
    """Lognormal values whose scale differs from canary to canary: typical cost 50% higher, or
    calls three times slower, alarm; the budget or objective (set far above) never trips."""
    task = _task() | {"thresholds": {"min_score": 0.6, "cost_budget_per_call": 1.0, "latency_slo_s": 1000}}
    plan = make_plan(detection=REF, tasks=[task])
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(24)
    scale = {c.id: math.exp(rng.gauss(0, 1)) for c in pool}

    def run(factor: float, replay: bool) -> list[ProbeResultBase]:
        out = replayed(plan, ctx, engine, rng, as_before) if replay else answers(rng, pool, 20, as_before)
        for r in out:
            setattr(r, field_name, scale[r.canary_id] * factor * math.exp(rng.gauss(0, 0.6)))  # heavy right tail
        return out

    feed(engine, plan, ctx, base, [run(1.0, True) for _ in range(3)])
    key = f"knowledge-qa:{name}_typical:rise"
    quiet = feed(engine, plan, ctx, base, [run(1.0, False) for _ in range(30)], start=3)
    assert first_alarm(quiet, key) is None and any(u.spec.key == key for u in quiet[0])
    with Session(engine) as s:
        null = s.get(DetectorState, key).null_mean
    assert 0.0 < null < 0.7
    risen = feed(engine, plan, ctx, base, [run(factor, False) for _ in range(40)], start=33)
    at = first_alarm(risen, key)
    assert at is not None
    f = next(u.finding for u in risen[at] if u.spec.key == key)
    assert f.estimate > null
    assert first_alarm(risen, f"knowledge-qa:{name}:rise") is None


@pytest.mark.parametrize("min_rise_s,alarms", [(0.25, False), (0.0, True)])
def test_a_latency_rise_too_small_to_notice_is_not_a_finding(
    engine: Engine, make_plan: Callable, min_rise_s: float, alarms: bool
) -> None:
    """Calls of a few tens of milliseconds (a local endpoint on a busy host) that become three times
    slower are 40 ms slower: below ``latency_min_rise_s`` that is no finding; with no margin it is."""
    task = _task() | {"thresholds": {"min_score": 0.6}}
    plan = make_plan(detection=REF | {"latency_min_rise_s": min_rise_s}, tasks=[task])
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(25)

    def run(factor: float, replay: bool) -> list[ProbeResultBase]:
        out = replayed(plan, ctx, engine, rng, as_before) if replay else answers(rng, pool, 20, as_before)
        for r in out:
            r.latency_s = 0.02 * factor * math.exp(rng.gauss(0, 0.1))
        return out

    feed(engine, plan, ctx, base, [run(1.0, True) for _ in range(3)])
    slower = feed(engine, plan, ctx, base, [run(3.0, False) for _ in range(30)], start=3)
    assert (first_alarm(slower, "knowledge-qa:latency_typical:rise") is not None) is alarms


def test_a_reference_table_from_before_costs_were_kept_still_reads(engine: Engine) -> None:
    old = {"c1": [3, 2.0, 2.0, 40, 60], "c2": [3, 3.0, 3.0, None, None]}
    table = from_json(old)
    refs = burn_in_references(table, 3, 1)
    assert refs.items["c1"].cost == () and refs.items["c1"].out_max == 60 and math.isinf(table["c2"][3])
    burn_in_add(table, "c1", 1.0, 50, 0.002, 1.0)  # an old row takes the new fields on its next answer
    assert burn_in_references(table, 3, 1).items["c1"].cost == (
        1,
        pytest.approx(math.log(0.002)),
        pytest.approx(math.log(0.002) ** 2),
    )
    assert refs.binary and refs.answers == 6


def test_the_scheduler_can_read_whether_a_task_is_watching(engine: Engine, make_plan: Callable) -> None:
    """``task_watching`` is true exactly while some stream of the task is building evidence short of an
    alarm: what an adaptive cadence needs to probe the task sooner."""
    plan = make_plan(detection=REF)
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(24)
    seen = []
    for i in range(30):
        p = as_before if i < 6 else (lambda c: 0.6 * as_before(c))
        (run,) = feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, p)], start=i)
        with Session(engine) as s:
            seen.append((task_watching(s, "knowledge-qa"), any(u.status.value == "watching" for u in run)))
    assert seen[0] == (False, False)
    assert all(read == written for read, written in seen)
    assert any(read for read, _ in seen)  # the drop was watched before (or while) it alarmed


def test_streams_are_armed_against_the_baseline_before_the_reference_completes(
    engine: Engine, make_plan: Callable
) -> None:
    """A model broken from the first hour: while the go-live reference is still being built (12 runs
    here), the score stream tests against the imported baseline and alarms; on today's main it was
    inactive until the reference completed, and the reference then learned the broken model."""
    plan = make_plan(detection={**REF, "reference": {"repeats": 12, "coverage": 1.0, "max_repeats": 24}})
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(25)
    key = "knowledge-qa:score:drop"
    runs = []
    for i in range(12):
        runs += feed(engine, plan, ctx, base, [replayed(plan, ctx, engine, rng, lambda c: 0.2)], start=i)
    at = first_alarm(runs, key)
    assert at is not None and at < 11  # before the run that completes the reference
    f = next(u for u in runs[at] if u.spec.key == key)
    assert f.spec.kind == "score" and f.spec.params["reference"] == "baseline" and f.finding.estimate < 0.4
