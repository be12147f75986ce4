"""The score chart shows what a committee compares each run with: the baseline and its band,
the detector's reference, and the minimum in force, each labelled where it can be read; incidents
and model changes are marked where they happened; cost and latency each keep their own axis."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from medmon.dashboards.charts import Marker, agreement_chart, cost_latency_chart, score_chart
from medmon.monitor.read import AgreementDay, RunPoint

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _point(i: int, mean: float) -> RunPoint:
    return RunPoint(
        run_id=i,
        at=T0 + timedelta(hours=i),
        purpose="scheduled",
        calls=20,
        n=20,
        mean=mean,
        ci_low=mean - 0.1,
        ci_high=min(1.0, mean + 0.1),
        errors=0,
        cost_usd=0.01,
        cost_per_call=0.0005,
        latency_mean=0.2,
        latency_max=0.4,
        over_slo=0,
    )


def test_score_chart_draws_baseline_band_reference_and_threshold_with_labels() -> None:
    fig = score_chart(
        [_point(0, 0.9), _point(1, 0.5)], baseline=0.85, baseline_ci=(0.82, 0.87), threshold=0.7, alarm_line=0.81
    )
    (band,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (band.y0, band.y1) == (0.82, 0.87)
    labels = {a.text: a.yanchor for a in fig.layout.annotations}
    assert labels == {
        "baseline 0.85 (band: 95% CI 0.82-0.87)": "bottom",  # above its line
        "detector reference 0.81": "top",  # below its line, away from the baseline's label
        "minimum in force 0.70": "top",
    }
    lines = sorted(s.y0 for s in fig.layout.shapes if s.type == "line")
    assert lines == [0.7, 0.81, 0.85]
    assert [t.name for t in fig.data] == ["run 95% CI", "run mean"]


def test_without_a_baseline_interval_the_baseline_label_stands_alone() -> None:
    fig = score_chart([_point(0, 0.9)], baseline=0.85, baseline_ci=None, threshold=0.7)
    assert {a.text for a in fig.layout.annotations} == {"baseline 0.85", "minimum in force 0.70"}
    assert not [s for s in fig.layout.shapes if s.type == "rect"]


def test_daily_charts_tick_once_a_day_on_short_spans() -> None:
    days = [AgreementDay(day=date(2026, 11, d), items=20, agreement=0.9, unanimous=0.6) for d in (28, 29)]
    axis = agreement_chart(days, minimum=0.8).layout.xaxis
    assert (axis.type, axis.tickformat, axis.dtick) == ("date", "%Y-%m-%d", 86_400_000)
    month = [
        AgreementDay(day=date(2026, 10, 1) + timedelta(days=i), items=20, agreement=0.9, unanimous=0.6)
        for i in range(60)
    ]
    assert agreement_chart(month, minimum=0.8).layout.xaxis.dtick is None  # plotly spaces the ticks itself
    one = agreement_chart(days[:1], minimum=0.8)  # one day is one point: said, not drawn
    assert not one.data and one.layout.annotations[0].text.startswith("<b>Not enough data yet</b><br>1 day of")


def test_incidents_and_model_changes_are_marked_on_the_score_and_cost_charts() -> None:
    points = [_point(i, 0.9 if i < 3 else 0.5) for i in range(6)]
    markers = [
        Marker(T0 + timedelta(hours=3), "incident", "#2 dosing: accuracy"),
        Marker(T0 + timedelta(hours=5), "model change", "#4 dosing: model change"),
    ]
    for fig in (
        score_chart(points, baseline=0.85, baseline_ci=None, threshold=0.7, markers=markers),
        cost_latency_chart(points, budget=0.002, slo=5.0, markers=markers),
    ):
        marked = {t.name: (list(t.x), list(t.text)) for t in fig.data if t.name in ("incident", "model change")}
        assert marked == {
            "incident": ([T0 + timedelta(hours=3)], ["#2 dosing: accuracy"]),
            "model change": ([T0 + timedelta(hours=5)], ["#4 dosing: model change"]),
        }
        verticals = [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1 and s.yref == "paper"]
        assert verticals == [T0 + timedelta(hours=3), T0 + timedelta(hours=5)]


def test_cost_and_latency_keep_their_own_axis_titles() -> None:
    fig = cost_latency_chart([_point(i, 0.9) for i in range(3)], budget=0.002, slo=5.0)
    assert fig.layout.yaxis.title.text == "USD per call"
    assert fig.layout.yaxis2.title.text == "seconds" and fig.layout.yaxis2.overlaying is None
    # Two panels, not two scales over one area: no cost line can run along the latency objective.
    cost, seconds = fig.layout.yaxis.domain, fig.layout.yaxis2.domain
    assert seconds[1] < cost[0]
    assert fig.layout.yaxis2.range[1] >= 5.0  # the objective is on the chart
    assert [t.yaxis for t in fig.data if t.name.startswith(("mean latency", "max latency"))] == ["y2", "y2"]


def test_one_point_says_not_enough_data_instead_of_a_made_up_axis() -> None:
    from medmon.dashboards.charts import traffic_daily_chart
    from medmon.monitor.read.traffic import TrafficDay

    def day(d: int, calls: int, errors: int) -> TrafficDay:
        return TrafficDay(calls, errors, 0.01, 10, 10, 1.0, 0.5, 0, 0, 0, (), day=date(2026, 11, d), task="qa")

    one = traffic_daily_chart([day(1, 5, 0)], "error_rate", title="Errors per day", y_title="share", percent=True)
    (said,) = [a.text for a in one.layout.annotations]
    assert said == "<b>Not enough data yet</b><br>1 day of traffic so far;<br>a trend needs two"
    assert not one.data
    assert "Not enough data" in cost_latency_chart([_point(0, 0.9)], budget=0.002, slo=5.0).layout.annotations[0].text
    two = traffic_daily_chart([day(1, 5, 0), day(2, 8, 0)], "error_rate", title="Errors", y_title="share", percent=True)
    low, high = two.layout.yaxis.range
    assert low == 0 and 0 < high <= 1.0  # no -100% to 100% around a row of zeros
    calls = traffic_daily_chart([day(1, 5, 0), day(2, 8, 1)], "calls", title="Calls", y_title="calls")
    assert calls.layout.yaxis.range[0] == 0 and calls.layout.yaxis.range[1] >= 8


def test_the_latency_objective_is_drawn_on_the_seconds_axis_not_the_cost_axis() -> None:
    fig = cost_latency_chart([_point(i, 0.9) for i in range(3)], budget=0.002, slo=5.0)
    (objective,) = [s for s in fig.layout.shapes if s.y0 == 5.0]
    assert objective.yref == "y2"
    (label,) = [a for a in fig.layout.annotations if a.text == "latency objective 5 s"]
    assert label.yref == "y2"
    (budget,) = [s for s in fig.layout.shapes if s.y0 == 0.002]
    assert budget.yref in (None, "y")


def test_labels_of_lines_close_together_do_not_print_over_each_other() -> None:
    fig = score_chart([_point(0, 0.9), _point(1, 0.5)], baseline=0.9, baseline_ci=None, threshold=0.70, alarm_line=0.72)
    where = {a.text: (a.xanchor, a.yanchor) for a in fig.layout.annotations}
    assert where["detector reference 0.72"][0] != where["minimum in force 0.70"][0]  # opposite ends of the chart
