"""The report's recommendation per task follows the plan's rules, and says every reason that holds."""

from __future__ import annotations

from medmon.monitor.governance.reports.recommendation import CONDITIONS, CONTINUE, SUSPEND, TaskFacts, recommend
from medmon.monitor.plan.governance import RecommendationRules


def facts(**kw: object) -> TaskFacts:
    base: dict[str, object] = dict(
        task="qa",
        n=400,
        estimate=0.84,
        ci_low=0.8,
        ci_high=0.88,
        min_score=0.7,
        passed=True,
        conclusive=True,
        drift_findings=0,
        open_incidents=(),
        open_causes=(),
        model_changes=0,
    )
    return TaskFacts(**(base | kw))  # type: ignore[arg-type]


def test_a_task_holding_its_thresholds_continues() -> None:
    assert recommend([facts()], RecommendationRules())[0].action == CONTINUE


def test_the_latest_answers_under_the_minimum_suspend_even_when_the_months_mean_is_not() -> None:
    (rec,) = recommend(
        [facts(estimate=0.74, ci_low=0.7, ci_high=0.78, passed=False, at_end=(0.6, 0.53, 0.67, 200))],
        RecommendationRules(),
    )
    assert rec.action == SUSPEND
    assert rec.reasons[0] == (
        "at the end of the period the score 0.60 (0.53-0.67, latest 200 answers) is below the minimum in force 0.70"
    )
    assert "the task does not meet the thresholds in force" in rec.reasons


def test_an_open_minimum_alarm_keeps_the_breach_until_the_estimate_is_back() -> None:
    straddling = (0.66, 0.59, 0.72, 200)
    assert recommend([facts(at_end=straddling)], RecommendationRules())[0].action == CONTINUE
    (rec,) = recommend([facts(at_end=straddling, minimum_alarm_open=True)], RecommendationRules())
    assert rec.action == SUSPEND and rec.reasons[0].endswith("the approval-minimum alert has not cleared")


def test_the_plan_decides_what_suspends() -> None:
    gap = facts(open_incidents=("qa: a subgroup fell behind",), open_causes=("subgroup_gap",))
    assert recommend([gap], RecommendationRules())[0].action == CONDITIONS
    strict = RecommendationRules(suspend_when=["below_minimum", "subgroup_gap"])
    (rec,) = recommend([gap], strict)
    assert rec.action == SUSPEND
    assert rec.reasons == (
        "a subgroup fell further behind the others than at approval",
        "open incident(s): qa: a subgroup fell behind",
    )
    assert recommend([facts(n=0, estimate=None, ci_low=None, ci_high=None, passed=None)], RecommendationRules())[
        0
    ].reasons == ("no scored answer in the period",)
