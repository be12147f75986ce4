"""Streams end to end through DetectorState: each stream type raises on a clear degradation,
stays quiet while its null holds, and decides the same after a restart."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from scipy.stats import binomtest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.baselines import Baseline, Canary, resolve
from medmon.db import session_scope
from medmon.monitor.detection.drift.budget import INFO
from medmon.monitor.detection.drift.layout import StreamSpec
from medmon.monitor.detection.streams import (
    QUIET_RUNS,
    RECOVERY_MIN_OBS,
    RECOVERY_RUNS,
    StreamUpdate,
    plan_budget,
    reset_task_streams,
    start_reevaluation,
    stream_thresholds,
    task_streams,
    update_judge_canaries,
    update_stream,
    update_task_streams,
)
from medmon.monitor.models import BurnIn, DetectorState, StreamStatus
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResultBase

T0 = datetime(2026, 11, 1, tzinfo=UTC)
QUIET = {"distribution_checks": False, "burn_in_runs": 0}


def canaries(n: int = 40, *, helm: bool = True, runs: int = 5, seed: int = 0) -> list[Canary]:
    """Near-deterministic canaries: 80% answered right almost always, 20% almost never."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        right = rng.random() < 0.8
        out.append(
            Canary(
                id=f"c{i:03d}",
                messages=({"role": "user", "content": f"question {i}"},),
                tags={"sex": "female" if i % 2 else "male", "age_band": "65+" if i % 3 == 0 else "18-64"},
                baseline_score=(0.97 if right else 0.03) if helm else None,
                baseline_runs=runs if helm else 0,
            )
        )
        object.__setattr__(out[-1], "provenance", "right" if right else "wrong")
    return out


def right(c: Canary) -> bool:
    return c.provenance == "right"


def baseline(value: float, n: int = 500, benchmark: str = "med_qa") -> Baseline:
    return Baseline(
        benchmark=benchmark,
        model="m",
        metric="exact_match",
        value=value,
        normalized=value,
        n=n,
        ci_low=value - 0.03,
        ci_high=value + 0.03,
    )


def context(plan: Plan, pool: Sequence[Canary], task: int = 0, scorer: str = "multiple_choice") -> TaskContext:
    t = plan.tasks[task]
    return TaskContext(task=t, canaries=tuple(pool), scorer=scorer, taxonomy=resolve(t.benchmark), pack_baseline={})


def answers(
    rng: random.Random,
    pool: Sequence[Canary],
    k: int,
    p: Callable[[Canary], float],
    task_id: str = "knowledge-qa",
    **fields: Any,
) -> list[ProbeResultBase]:
    out = []
    for _ in range(k):
        c = rng.choice(pool)
        values = {"completion_tokens": 50, "cost_usd": 0.001, "latency_s": 1.0} | fields
        out.append(
            ProbeResultBase(
                task_id=task_id,
                canary_id=c.id,
                score=float(rng.random() < p(c)),
                tags=dict(c.tags),
                baseline_score=c.baseline_score,
                **values,
            )
        )
    return out


def as_before(c: Canary) -> float:
    return 0.97 if right(c) else 0.03


def feed(
    engine: Engine, plan: Plan, ctx: TaskContext, base: Baseline, runs: Sequence[list[ProbeResultBase]], start: int = 0
) -> list[list[StreamUpdate]]:
    out = []
    for i, results in enumerate(runs):
        with session_scope(engine) as s:
            out.append(update_task_streams(s, plan, ctx, base, results, T0 + timedelta(hours=start + i)))
    return out


def first_alarm(updates: list[list[StreamUpdate]], key: str) -> int | None:
    return next((i for i, run in enumerate(updates) for u in run if u.spec.key == key and u.finding is not None), None)


def test_unpaired_score_stays_quiet_at_baseline_then_raises_on_a_drop(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection=QUIET)
    pool = canaries(helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(1)
    quiet = feed(engine, plan, ctx, base, [answers(rng, pool, 20, as_before) for _ in range(40)])
    assert first_alarm(quiet, "knowledge-qa:score:drop") is None
    drop = feed(engine, plan, ctx, base, [answers(rng, pool, 20, lambda c: 0.5) for _ in range(20)], start=40)
    at = first_alarm(drop, "knowledge-qa:score:drop")
    assert at is not None and at <= 8
    f = next(u.finding for u in drop[at] if u.spec.key == "knowledge-qa:score:drop")
    assert f.statistic >= f.threshold and f.ci_low <= f.estimate <= f.ci_high and f.estimate < 0.65
    # no go-live reference in this plan: the benchmark's score minus its exact (Clopper-Pearson) margin,
    # here from scipy's binomial test, one-sided at baseline_alpha = 0.05 for the plan's one task
    exact = binomtest(390, 500).proportion_ci(confidence_level=0.90, method="exact").low
    assert f.null_mean == pytest.approx(exact, abs=1e-6)
    with Session(engine) as s:
        assert s.get(DetectorState, "knowledge-qa:score:drop").status == StreamStatus.degraded


def test_paired_score_raises_sooner_than_unpaired_on_the_same_answers(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection=QUIET)
    pool = canaries(helm=True)
    ctx, rng = context(plan, pool), random.Random(2)
    base = baseline(sum(c.baseline_score for c in pool) / len(pool))
    broken = {c.id for c in pool if right(c) and rng.random() < 0.12}  # about a 10-point drop
    runs = [answers(rng, pool, 20, lambda c: 0.0 if c.id in broken else as_before(c)) for _ in range(60)]
    updates = feed(engine, plan, ctx, base, runs)
    paired, unpaired = (
        first_alarm(updates, "knowledge-qa:score_paired:drop"),
        first_alarm(updates, "knowledge-qa:score:drop"),
    )
    assert paired is not None
    assert unpaired is None or paired < unpaired
    f = next(u.finding for u in updates[paired] if u.spec.key == "knowledge-qa:score_paired:drop")
    assert f.quantity == "paired difference" and f.estimate < -0.05 and f.null_mean < 0


@pytest.mark.parametrize(
    "metric,fields,p_error",
    [("error_rate", {}, 0.3), ("cost", {"cost_usd": 0.01}, 0.0), ("latency", {"latency_s": 9.0}, 0.0)],
    ids=["error_rate", "cost_over_budget", "latency_over_objective"],
)
def test_operational_streams_raise_when_their_exceedance_rate_rises(
    engine: Engine, make_plan: Callable, metric: str, fields: dict[str, Any], p_error: float
) -> None:
    plan = make_plan(detection=QUIET)
    pool = canaries(helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(3)
    quiet = feed(engine, plan, ctx, base, [answers(rng, pool, 20, as_before) for _ in range(10)])
    assert first_alarm(quiet, f"knowledge-qa:{metric}:rise") is None
    runs = []
    for _ in range(10):
        run = answers(rng, pool, 20, as_before, **fields)
        for r in run:
            if rng.random() < p_error:
                r.error_type, r.score = "timeout", None
        runs.append(run)
    assert first_alarm(feed(engine, plan, ctx, base, runs, start=10), f"knowledge-qa:{metric}:rise") is not None


def test_gap_detector_raises_when_one_subgroup_falls_behind_while_the_average_holds(
    engine: Engine, make_plan: Callable
) -> None:
    plan = make_plan(detection=QUIET, tasks=[{**_task(), "subgroups": ["sex"]}])
    pool = canaries(60, helm=True, seed=5)
    ctx, rng = context(plan, pool), random.Random(5)
    base = baseline(sum(c.baseline_score for c in pool) / len(pool))
    women_right = [c.id for c in pool if c.tags["sex"] == "female" and right(c)]
    men_wrong = [c.id for c in pool if c.tags["sex"] == "male" and not right(c)]
    k = min(len(men_wrong), len(women_right) // 3)  # as many women's answers break as men's get fixed
    women_broken, men_fixed = set(women_right[:k]), set(men_wrong[:k])

    def p(c: Canary) -> float:
        return 0.03 if c.id in women_broken else 0.97 if c.id in men_fixed else as_before(c)

    shift = sum(p(c) - as_before(c) for c in pool) / len(pool)
    assert abs(shift) < 1e-9 and k >= 4  # the overall average holds
    updates = feed(engine, plan, ctx, base, [answers(rng, pool, 20, p) for _ in range(60)])
    assert first_alarm(updates, "knowledge-qa:gap[sex=female]:rise") is not None
    assert first_alarm(updates, "knowledge-qa:gap[sex=male]:rise") is None
    assert first_alarm(updates, "knowledge-qa:score:drop") is None


def _task(task_id: str = "knowledge-qa", benchmark: str = "med_qa", **extra: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "benchmark": benchmark,
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "sample_size": 20,
        "thresholds": {"min_score": 0.6, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
    } | extra


@pytest.mark.slow
@pytest.mark.parametrize("helm,drop", [(False, 0.08), (True, 0.06)], ids=["unpaired_members", "paired_members"])
def test_pooled_category_stream_catches_a_small_shared_drop_before_any_task_does(
    engine: Engine, make_plan: Callable, helm: bool, drop: float
) -> None:
    tasks = [_task("qa", "med_qa"), _task("head", "head_qa"), _task("calc", "medcalc_bench")]
    plan = make_plan(detection=QUIET, tasks=tasks)
    assert len({resolve(t["benchmark"]).category for t in tasks}) == 1
    pool = canaries(helm=helm)
    base, rng = baseline(sum(map(as_before, pool)) / len(pool)), random.Random(6)
    ctxs = [context(plan, pool, i) for i in range(3)]
    firsts: dict[str, int] = {}
    for round_ in range(80):
        for ctx in ctxs:
            run = answers(rng, pool, 40, lambda c: as_before(c) - drop, task_id=ctx.task.id)
            with session_scope(engine) as s:
                for u in update_task_streams(s, plan, ctx, base, run, T0 + timedelta(hours=round_)):
                    if u.finding is not None:
                        firsts.setdefault(u.spec.key, round_)
    pooled = "category:clinical-decision-support:pooled_score:drop"
    assert pooled in firsts
    singles = [r for k, r in firsts.items() if k.split(":")[1] in ("score", "score_paired")]
    assert all(firsts[pooled] < r for r in singles)


def test_judge_canaries_raise_on_judge_drift_only(engine: Engine, make_plan: Callable) -> None:
    jury = {"judges": [{"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}]}
    plan = make_plan(detection=QUIET, jury=jury)
    rng = random.Random(7)

    def verdicts(far: float) -> list[tuple[float, float]]:
        out = []
        for _ in range(50):
            gold = float(rng.randint(2, 4))
            off = 2.0 if rng.random() < far else (1.0 if rng.random() < 0.3 else 0.0)
            out.append((gold + off * rng.choice((-1, 1)), gold))
        return out

    with session_scope(engine) as s:
        steady = [u for _ in range(20) for u in update_judge_canaries(s, plan, "j1", verdicts(0.0), T0)]
    assert not any(u.finding for u in steady)
    with session_scope(engine) as s:
        drift = [update_judge_canaries(s, plan, "j1", verdicts(0.5), T0) for _ in range(10)]
    hit = next(agreement for agreement, _ in drift if agreement.finding is not None)
    assert hit.finding.quantity == "agreement" and hit.finding.estimate < 0.8
    assert not any(bias.finding for _, bias in drift)  # errors both ways: no more lenient nor severe


def test_one_shot_after_a_change_concludes_degraded_or_passed(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection=QUIET)
    pool = canaries(helm=True)
    ctx, rng = context(plan, pool), random.Random(8)
    base = baseline(sum(c.baseline_score for c in pool) / len(pool))
    with session_scope(engine) as s:
        start_reevaluation(s, plan, ctx, base, T0, reason="served model changed")
    worse = feed(engine, plan, ctx, base, [answers(rng, pool, 20, lambda c: as_before(c) * 0.7) for _ in range(15)])
    verdict = [u for run in worse for u in run if u.kind == "reevaluation" and u.finding is not None]
    assert len(verdict) == 1 and verdict[0].finding.decision == "degraded" and verdict[0].alert
    assert "re-evaluation: degraded vs baseline" in verdict[0].summary
    with session_scope(engine) as s:
        start_reevaluation(s, plan, ctx, base, T0, reason="served model changed again")
    same = feed(engine, plan, ctx, base, [answers(rng, pool, 20, as_before) for _ in range(40)], start=20)
    verdict = [u for run in same for u in run if u.kind == "reevaluation" and u.finding is not None]
    assert len(verdict) == 1 and verdict[0].finding.decision == "passed" and not verdict[0].alert
    assert verdict[0].status == StreamStatus.ok


def test_burn_in_builds_the_paired_reference_then_catches_verbosity(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection={"distribution_checks": False, "burn_in_runs": 3, "burn_in_coverage": 0.9})
    pool = canaries(20, helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(9)
    keys_by_run = []
    for i in range(12):
        with session_scope(engine) as s:
            updates = update_task_streams(
                s, plan, ctx, base, answers(rng, pool, 20, as_before), T0 + timedelta(hours=i)
            )
            keys_by_run.append({u.spec.key for u in updates})
            complete = s.get(BurnIn, "knowledge-qa").complete
        if complete:
            break
    assert complete, "burn-in did not complete"
    assert "knowledge-qa:score_paired:drop" not in keys_by_run[-1]  # not tested on the data that built it
    longer = feed(
        engine, plan, ctx, base, [answers(rng, pool, 20, as_before, completion_tokens=200) for _ in range(5)], start=20
    )
    assert "knowledge-qa:score_paired:drop" in {u.spec.key for u in longer[0]}
    assert first_alarm(longer, "knowledge-qa:verbosity:rise") is not None
    assert first_alarm(longer, "knowledge-qa:truncation:rise") is None


def test_river_reports_an_output_length_change_as_information(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection={"burn_in_runs": 0})
    pool = canaries(helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(10)
    runs = [answers(rng, pool, 20, as_before) for _ in range(20)]
    for i, run in enumerate(runs):
        for r in run:
            r.completion_tokens = (50 if i < 10 else 300) + rng.randint(-5, 5)  # answers 6x longer from run 10
    updates = feed(engine, plan, ctx, base, runs)
    hits = [u for run in updates for u in run if u.spec.key == "knowledge-qa:output_length:change" and u.finding]
    assert hits and all(i >= 10 for i, run in enumerate(updates) for u in run if u in hits)
    assert hits[0].kind == "distribution" and not hits[0].alert and hits[0].status == StreamStatus.ok
    assert hits[0].finding.estimate > hits[0].finding.null_mean


def test_same_data_after_a_restart_gives_the_same_decisions(new_db_url: Callable[[], str], make_plan: Callable) -> None:
    plan = make_plan(tasks=[{**_task(), "subgroups": ["sex"]}], detection={"burn_in_runs": 3})
    pool = canaries(helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(11)
    runs = [answers(rng, pool, 20, as_before) for _ in range(25)]
    runs += [answers(rng, pool, 20, lambda c: 0.4, completion_tokens=90) for _ in range(15)]

    def decisions(updates: list[list[StreamUpdate]]) -> list[tuple[int, str, str | None]]:
        return [
            (i, u.spec.key, u.finding.decision if u.finding else None) for i, run in enumerate(updates) for u in run
        ]

    steady, restarted_url = make_engine(new_db_url()), new_db_url()
    one_go = decisions(feed(steady, plan, ctx, base, runs))
    restarted = []
    for i, run in enumerate(runs):  # a new engine (a restarted process) for every run
        eng = make_engine(restarted_url)
        restarted += [(i, k, d) for _, k, d in decisions(feed(eng, plan, ctx, base, [run], start=i))]
        eng.dispose()
    assert one_go == restarted
    assert any(d == "alarm" for _, _, d in one_go)
    eng = make_engine(restarted_url)
    with Session(steady) as a, Session(eng) as b:
        rows_a = {r.key: r.state for r in a.exec(select(DetectorState)).all()}
        rows_b = {r.key: r.state for r in b.exec(select(DetectorState)).all()}
    assert rows_a == rows_b


def test_budget_weights_over_every_stream_sum_to_one(make_plan: Callable) -> None:
    jury = {"judges": [{"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}]}
    tasks = [
        {**_task("qa", "med_qa"), "subgroups": ["sex", "age_band"]},
        _task("head", "head_qa"),
        _task("notes", "aci_bench"),
    ]
    plan = make_plan(tasks=tasks, jury=jury)
    pool, base = canaries(helm=True), baseline(0.78)
    gamma = plan.detection.probes_between_false_alarms
    budget = plan_budget(plan)
    assert budget.quality_units == 3 + 1 + 1  # tasks, one pooled category, one judge
    weight = 0.0
    for task in plan.tasks:
        specs = task_streams(plan, task, base, pool, refs=None)
        weight += sum(gamma / a for a in stream_thresholds(plan, specs).values())
        assert all(s.key not in stream_thresholds(plan, specs) for s in specs if s.family == INFO)
    weight += 2 * gamma / budget.threshold("quality", 1)  # the pooled category and the judge
    assert weight == pytest.approx(1.0)


def test_a_separate_operational_family_keeps_its_own_budget(make_plan: Callable) -> None:
    plan = make_plan(detection={"operational_probes_between_false_alarms": 1000.0})
    specs = task_streams(plan, plan.tasks[0], baseline(0.78), canaries(helm=False))
    thresholds = stream_thresholds(plan, specs)
    operational = [s.key for s in specs if s.family == "operational"]
    assert {thresholds[k] for k in operational} == {1000.0 * len(operational)}
    quality = [s.key for s in specs if s.family == "quality"]
    assert {thresholds[k] for k in quality} == {plan.detection.probes_between_false_alarms * len(quality)}


@pytest.mark.slow
def test_pipeline_runs_the_one_shot_test_after_a_served_model_change(
    serve: Callable, make_plan: Callable, db_url: str
) -> None:
    from medmon.monitor.models import FindingRecord
    from medmon.monitor.plan.context import load_context
    from medmon.monitor.runs.pipeline import run_task_probe
    from medmon.probes.packs import load_pack
    from medmon.probes.simulator import Phase, create_simulator

    pack = load_pack("clinical_knowledge_mcq").canaries
    sim = serve(
        create_simulator(
            pack,
            [Phase(0, accuracy=0.85), Phase(200, accuracy=0.45, model="sim-v2", fingerprint="fp_2", label="swap")],
            seed=4,
        )
    )
    plan = make_plan(
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
        detection={"distribution_checks": False},
    )
    engine = make_engine(db_url)
    ctx, rng = load_context(plan, plan.tasks[0]), random.Random(2)
    clock = iter(T0 + timedelta(hours=i) for i in range(1000))
    for _ in range(16):
        run_task_probe(engine, plan, ctx, rng=rng, now=lambda: next(clock))
    with Session(engine) as s:
        records = s.exec(select(FindingRecord).order_by(FindingRecord.id)).all()
        row = s.get(DetectorState, "knowledge-qa:reevaluation:oneshot")
    kinds = [r.kind for r in records]
    assert "model_change" in kinds and "reevaluation" in kinds
    assert kinds.index("model_change") < kinds.index("reevaluation")
    verdict = next(r for r in records if r.kind == "reevaluation")
    assert "re-evaluation: degraded vs baseline" in verdict.summary
    assert verdict.estimate is not None and verdict.ci_high is not None and verdict.ci_high < 0
    assert row is not None and row.status == StreamStatus.degraded and row.params["reason"].startswith("knowledge-qa")


def _stream_runner(engine: Engine, spec: StreamSpec, threshold: float = 1e4) -> Callable[..., StreamUpdate]:
    clock = iter(T0 + timedelta(hours=i) for i in range(100_000))

    def run(*scores: float) -> StreamUpdate:
        with session_scope(engine) as s:
            results = [ProbeResultBase(task_id="t", canary_id=f"c{i}", score=x) for i, x in enumerate(scores)]
            return update_stream(s, spec, threshold, results, next(clock))

    return run


def test_an_alert_stays_up_while_the_drop_lasts_and_recovers_on_evidence(engine: Engine) -> None:
    """A lasting drop raises one alert and stays degraded through lucky runs; recovery needs
    evidence of its own, and a recovered stream returns to ok after a quiet spell."""
    spec = StreamSpec(
        "t:score:drop", "t", "score", "drop", 0.75, 0.8, lambda r: r.score, params={"mu0": 0.75, "sigma2": 0.19}
    )
    run, rng = _stream_runner(engine, spec), random.Random(12)
    degraded = [run(*(float(rng.random() < 0.68) for _ in range(20))) for _ in range(300)]  # 6,000 answers at 0.68
    first = next(i for i, u in enumerate(degraded) if u.finding is not None)
    assert sum(u.finding is not None for u in degraded) == 1
    assert all(u.status == StreamStatus.degraded for u in degraded[first:])
    lucky_runs = sum(1 for u in degraded[first:] if u.run_mean is not None and u.run_mean >= 0.75)
    assert lucky_runs >= 50  # the old rule (runs back at the null) would have recovered many times
    assert run(*[1.0] * 20).status == StreamStatus.degraded  # one perfect run is no recovery
    back = [run(*(float(rng.random() < 0.9) for _ in range(20))).status for _ in range(200)]
    at = back.index(StreamStatus.recovered)
    assert 2 <= at < 150 and set(back[:at]) == {StreamStatus.degraded}
    assert back[at + 1 : at + QUIET_RUNS] == [StreamStatus.recovered] * (QUIET_RUNS - 1)
    assert back[at + QUIET_RUNS] == StreamStatus.ok
    with Session(engine) as s:
        row = s.get(DetectorState, "t:score:drop")
        assert row is not None and row.segment == 1 and not row.recovery


def test_a_two_sided_stream_recovers_only_on_enough_observations(engine: Engine, make_plan: Callable) -> None:
    """The judge-bias stream has no one-sided recovery null: three lucky runs of four verdicts are
    no recovery; runs inside the band adding up to ``RECOVERY_MIN_OBS`` verdicts are."""
    jury = {"judges": [{"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}]}
    plan = make_plan(detection=QUIET, jury=jury)
    rng = random.Random(13)

    def bias(offset: float, k: int) -> StreamStatus:
        verdicts = [(min(5.0, gold + offset), gold) for gold in (float(rng.randint(1, 3)) for _ in range(k))]
        with session_scope(engine) as s:
            return update_judge_canaries(s, plan, "j1", verdicts, T0, canaries=4)[1].status

    statuses = [bias(0.0, 4) for _ in range(12)] + [bias(2.0, 4) for _ in range(30)]
    assert statuses[-1] == StreamStatus.degraded
    assert [bias(0.0, 4) for _ in range(RECOVERY_RUNS)] == [StreamStatus.degraded] * RECOVERY_RUNS
    back = [bias(0.0, 4) for _ in range(-(-RECOVERY_MIN_OBS // 4) - RECOVERY_RUNS)]
    assert back[-1] == StreamStatus.recovered and back[:-1] == [StreamStatus.degraded] * (len(back) - 1)


def test_pooled_category_stays_degraded_through_a_lasting_drop_and_recovers_on_its_steps(
    engine: Engine, make_plan: Callable
) -> None:
    plan = make_plan(detection=QUIET, tasks=[_task("qa", "med_qa"), _task("head", "head_qa")])
    pool = canaries(helm=False)
    base, rng = baseline(0.78), random.Random(14)
    ctxs = [context(plan, pool, i) for i in range(2)]
    key = "category:clinical-decision-support:pooled_score:drop"

    def rounds(p: Callable[[Canary], float], count: int, start: int) -> list[StreamUpdate]:
        out = []
        for i in range(count):
            for ctx in ctxs:
                with session_scope(engine) as s:
                    ups = update_task_streams(
                        s,
                        plan,
                        ctx,
                        base,
                        answers(rng, pool, 20, p, task_id=ctx.task.id),
                        T0 + timedelta(hours=start + i),
                    )
                out += [u for u in ups if u.spec.key == key]
        return out

    drop = rounds(lambda c: as_before(c) - 0.2, 60, 0)
    assert sum(u.finding is not None for u in drop) == 1
    first = next(i for i, u in enumerate(drop) if u.finding is not None)
    assert all(u.status == StreamStatus.degraded for u in drop[first:])
    assert sum(len(u.xs) for u in drop) == 20 * 60  # the pool observes its steps, not one value per run
    back = rounds(lambda c: 0.9, 60, 100)
    assert StreamStatus.recovered in [u.status for u in back]


def test_a_budget_change_keeps_the_evidence_and_a_new_null_opens_a_segment(engine: Engine, make_plan: Callable) -> None:
    detection = {"distribution_checks": False, "reference": {"repeats": 3}}
    one = make_plan(detection=detection)
    two = make_plan(
        detection={**detection, "probes_between_false_alarms": 1e6}, tasks=[_task(), _task("head", "head_qa")]
    )
    pool = canaries(20, helm=False)
    base, rng = baseline(0.78), random.Random(15)
    key = "knowledge-qa:score:drop"
    feed(engine, one, context(one, pool), base, [answers(rng, pool, 20, as_before) for _ in range(6)])
    with Session(engine) as s:
        assert s.get(BurnIn, "knowledge-qa").complete
    feed(engine, one, context(one, pool), base, [answers(rng, pool, 20, lambda c: 0.5) for _ in range(2)], start=6)
    with Session(engine) as s:
        before = s.get(DetectorState, key)
        assert before is not None and before.evidence > 0 and before.n >= 40
        segment, threshold, null, n = before.segment, before.threshold, before.null_mean, before.n
    # a second task and a new budget: every threshold moves, the null and the evidence stay
    feed(engine, two, context(two, pool), base, [answers(rng, pool, 20, lambda c: 0.5)], start=8)
    with Session(engine) as s:
        after = s.get(DetectorState, key)
        assert after is not None and (after.segment, after.n, after.null_mean) == (segment, n + 20, null)
        assert after.threshold > threshold
    # a new reference (a passed re-evaluation restarts it) is a new null: a new segment while it is built
    # (armed against the baseline meanwhile), and another once it is
    with session_scope(engine) as s:
        row = s.get(BurnIn, "knowledge-qa")
        row.version, row.instances, row.reference, row.complete = row.version + 1, {}, {}, False
        s.add(row)
    feed(engine, two, context(two, pool), base, [answers(rng, pool, 20, as_before) for _ in range(6)], start=9)
    with Session(engine) as s:
        moved = s.get(DetectorState, key)
        assert moved is not None and moved.segment == segment + 2 and moved.params["reference"] == "burn-in:2"


def test_a_model_change_opens_a_segment_for_every_stream_of_the_task(engine: Engine, make_plan: Callable) -> None:
    plan = make_plan(detection=QUIET)
    pool = canaries(helm=False)
    ctx, base, rng = context(plan, pool), baseline(0.78), random.Random(16)
    feed(engine, plan, ctx, base, [answers(rng, pool, 20, lambda c: 0.3) for _ in range(10)])
    with Session(engine) as s:
        before = {r.key: r.segment for r in s.exec(select(DetectorState)).all()}
        assert s.get(DetectorState, "knowledge-qa:score:drop").status == StreamStatus.degraded
    with session_scope(engine) as s:
        assert reset_task_streams(s, "knowledge-qa", T0 + timedelta(hours=20)) == len(before)
    with Session(engine) as s:
        rows = s.exec(select(DetectorState)).all()
        assert {r.key: r.segment for r in rows} == {k: v + 1 for k, v in before.items()}
        assert all(r.status == StreamStatus.ok and not r.state and r.evidence == 0 for r in rows)


def test_a_jury_scored_tasks_score_alarm_says_it_is_the_jurys_opinion(make_plan: Callable) -> None:
    jury = {"judges": [{"name": "j1", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}]}
    plan = make_plan(tasks=[_task("notes", "aci_bench")], jury=jury)
    pool, base = canaries(), baseline(0.78)
    judged = task_streams(plan, plan.tasks[0], base, pool, scorer="jury")
    plain = task_streams(plan, plan.tasks[0], base, pool, scorer="multiple_choice")
    scores = [s for s in judged if s.metric.startswith("score")]
    assert scores and all(s.what.endswith("(the jury's opinion, not the clinician scale)") for s in scores)
    assert not any("jury's opinion" in s.what for s in plain)  # an exact-match score is no one's opinion
    assert all("jury's opinion" not in s.what for s in judged if not s.metric.startswith("score"))
