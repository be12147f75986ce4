"""Plotly figures for the dashboard: every score is drawn with its interval, the baseline band
and the approval threshold, so a reader sees whether a dip is noise or a departure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import plotly.graph_objects as go

from medmon.monitor.read import AgreementDay, CostDay, JudgeDay, RunPoint, Slice

BASELINE = "rgba(46, 125, 50, 0.18)"
BASELINE_LINE = "#2e7d32"
THRESHOLD = "#c62828"
ESTIMATE = "#1565c0"
BAND = "rgba(21, 101, 192, 0.18)"
DAY_MS = 86_400_000
LABEL_GAP = 0.08  # on a 0-1 score axis 360 px high, about one label's height
MIN_POINTS = 2  # a line needs two points; one point says nothing about a trend
MARKER_COLORS = {"incident": THRESHOLD, "model change": "#6d4c41"}


@dataclass(frozen=True)
class Marker:
    """A moment worth seeing on a time chart: an incident opened, the served model changed."""

    at: datetime
    kind: str  # "incident" or "model change"
    text: str


def _mark(fig: go.Figure, markers: Sequence[Marker], *, y: float) -> None:
    """A dotted vertical line per marker, and a hoverable symbol at its top saying what happened."""
    for kind in dict.fromkeys(m.kind for m in markers):
        mine = [m for m in markers if m.kind == kind]
        color = MARKER_COLORS.get(kind, "#546e7a")
        for m in mine:
            fig.add_shape(
                type="line",
                x0=m.at,
                x1=m.at,
                y0=0,
                y1=1,
                yref="paper",
                line={"color": color, "dash": "dot", "width": 1},
            )
        fig.add_trace(
            go.Scatter(
                x=[m.at for m in mine],
                y=[y] * len(mine),
                mode="markers",
                name=kind,
                marker={"symbol": "triangle-down", "size": 11, "color": color},
                text=[m.text for m in mine],
                hovertemplate="%{text}<extra></extra>",
            )
        )


def _layout(fig: go.Figure, title: str, y_title: str, *, percent: bool = False, daily: bool = False) -> go.Figure:
    if daily:
        # Left to itself plotly puts ticks every 12 hours on a short span, printing each date twice.
        days = {x for trace in fig.data for x in (trace.x or ())}
        fig.update_xaxes(type="date", tickformat="%Y-%m-%d", dtick=DAY_MS if len(days) <= 14 else None)
    fig.update_layout(
        title=title,
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.2},
        hovermode="x unified",
    )
    fig.update_yaxes(title=y_title, tickformat=".0%" if percent else None)
    return fig


def score_chart(
    points: Sequence[RunPoint],
    *,
    baseline: float | None,
    baseline_ci: tuple[float, float] | None,
    threshold: float,
    alarm_line: float | None = None,
    title: str = "Score per probe run",
    markers: Sequence[Marker] = (),
) -> go.Figure:
    """Run means with their 95% intervals against the baseline band and the minimum in force,
    with incidents and model changes marked where they happened."""
    fig = go.Figure()
    scored = [p for p in points if p.mean is not None]
    xs = [p.at for p in scored]
    if baseline_ci is not None:
        fig.add_hrect(y0=baseline_ci[0], y1=baseline_ci[1], fillcolor=BASELINE, line_width=0)
    if baseline is not None:
        # The band is often too narrow for a label of its own: the baseline's label names it.
        band = f" (band: 95% CI {baseline_ci[0]:.2f}-{baseline_ci[1]:.2f})" if baseline_ci is not None else ""
        fig.add_hline(
            y=baseline,
            line_color=BASELINE_LINE,
            annotation_text=f"baseline {baseline:.2f}{band}",
            annotation_position="top right",
        )
    if alarm_line is not None:
        fig.add_hline(
            y=alarm_line,
            line_color="#6d4c41",
            line_dash="dot",
            annotation_text=f"detector reference {alarm_line:.2f}",
            annotation_position="bottom right",
        )
    # Two labels under lines closer than a label's height would print over each other: the
    # minimum's moves to the left when the detector reference sits just above it.
    crowded = alarm_line is not None and abs(alarm_line - threshold) < LABEL_GAP
    fig.add_hline(
        y=threshold,
        line_color=THRESHOLD,
        line_dash="dash",
        annotation_text=f"minimum in force {threshold:.2f}",
        annotation_position="bottom left" if crowded else "bottom right",
    )
    if scored:
        fig.add_trace(
            go.Scatter(
                x=xs + xs[::-1],
                y=[p.ci_high for p in scored] + [p.ci_low for p in scored][::-1],
                fill="toself",
                fillcolor=BAND,
                line={"width": 0},
                hoverinfo="skip",
                name="run 95% CI",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[p.mean for p in scored],
                mode="lines+markers",
                name="run mean",
                line={"color": ESTIMATE},
                marker={"size": 5},
                customdata=[[p.n, p.purpose] for p in scored],
                hovertemplate="%{y:.2f} (n=%{customdata[0]}, %{customdata[1]})<extra></extra>",
            )
        )
    _mark(fig, markers, y=1.0)
    fig.update_yaxes(range=[0, 1.05])
    return _layout(fig, title, "score")


def cost_latency_chart(
    points: Sequence[RunPoint], *, budget: float | None, slo: float | None, markers: Sequence[Marker] = ()
) -> go.Figure:
    """Mean cost per call (top panel, USD) and latency (bottom panel, seconds) per run, against the budget
    and the objective, incidents and model changes marked ("not enough data" before two runs): two panels,
    as two scales over one area drew a cost line along the latency objective."""
    if len(points) < MIN_POINTS:
        return not_enough_data(
            "Cost and latency per probe run", f"{len(points)} probe run so far;<br>a trend needs two"
        )
    fig = go.Figure()
    xs = [p.at for p in points]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[p.cost_per_call for p in points],
            name="cost per call (USD, top)",
            line={"color": "#6a1b9a"},
            hovertemplate="%{y:.4f} USD<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[p.latency_mean for p in points],
            name="mean latency (s, bottom)",
            yaxis="y2",
            line={"color": "#ef6c00"},
            hovertemplate="%{y:.2f} s<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[p.latency_max for p in points],
            name="max latency (s, bottom)",
            yaxis="y2",
            line={"color": "#ef6c00", "dash": "dot"},
            hovertemplate="%{y:.2f} s<extra></extra>",
        )
    )
    if budget is not None:
        fig.add_hline(
            y=budget,
            line_color="#6a1b9a",
            line_dash="dash",
            annotation_text=f"budget {budget:g} USD/call",
            annotation_position="top left",
        )
    if slo is not None:  # on the seconds axis: ``add_hline`` would draw it against the cost axis
        fig.add_shape(
            type="line", xref="paper", x0=0, x1=1, yref="y2", y0=slo, y1=slo, line={"color": "#ef6c00", "dash": "dash"}
        )
        fig.add_annotation(
            xref="paper", x=1, yref="y2", y=slo, text=f"latency objective {slo:g} s", showarrow=False,
            xanchor="right", yanchor="bottom", font={"color": "#ef6c00"},
        )  # fmt: skip
    costs = [p.cost_per_call for p in points if p.cost_per_call is not None] + ([budget] if budget else [])
    _mark(fig, markers, y=max(costs, default=1.0) * 1.05)
    _layout(fig, "Cost and latency per probe run", "USD per call")
    latencies = [p.latency_max for p in points if p.latency_max is not None] + ([slo] if slo else [])
    fig.update_layout(
        height=420,
        xaxis={"anchor": "y2"},  # the time axis under the lower panel
        yaxis={"title": "USD per call", "rangemode": "tozero", "tickformat": ".4~f", "domain": [0.56, 1.0]},
        yaxis2={
            "title": "seconds",  # set after _layout, which titles every y axis alike
            "domain": [0.0, 0.44],
            "anchor": "x",
            "rangemode": "tozero",
            "range": [0, max(latencies, default=1.0) * 1.1],
            "tickmode": "auto",
            "nticks": 6,
            "tickformat": ".3~g",
        },
    )
    return fig


def slices_chart(slices: Sequence[Slice], tag: str) -> go.Figure:
    """Each subgroup's recent score with its interval, beside the baseline of the same canaries."""
    rows = [s for s in slices if s.tag == tag and s.mean is not None]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=[s.value for s in rows],
            y=[s.mean for s in rows],
            name="recent",
            marker_color=ESTIMATE,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(s.ci_high or 0) - (s.mean or 0) for s in rows],
                "arrayminus": [(s.mean or 0) - (s.ci_low or 0) for s in rows],
            },
            customdata=[s.n for s in rows],
            hovertemplate="%{y:.2f} (n=%{customdata})<extra></extra>",
        )
    )
    if any(s.baseline_mean is not None for s in rows):
        fig.add_trace(
            go.Scatter(
                x=[s.value for s in rows],
                y=[s.baseline_mean for s in rows],
                mode="markers",
                name="baseline of these canaries",
                marker={"symbol": "line-ew-open", "size": 28, "color": BASELINE_LINE, "line": {"width": 3}},
            )
        )
    fig.update_yaxes(range=[0, 1.05])
    return _layout(fig, f"Score by {tag}", "score")


def spend_chart(days: Sequence[CostDay], judge_by_day: Mapping[date, float]) -> go.Figure:
    """Daily spend: the production model and, as its own ledger, the judges."""
    totals: dict[date, float] = {}
    for d in days:
        totals[d.day] = totals.get(d.day, 0.0) + d.cost_usd
    xs = sorted(set(totals) | set(judge_by_day))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=xs, y=[totals.get(x, 0.0) for x in xs], name="production model", marker_color=ESTIMATE))
    fig.add_trace(go.Bar(x=xs, y=[judge_by_day.get(x, 0.0) for x in xs], name="judges", marker_color="#8d6e63"))
    fig.update_layout(barmode="group")
    return _layout(fig, "Spend per day", "USD", daily=True)


def per_task_chart(
    days: Sequence[CostDay], metric: str, limits: Mapping[str, float], *, title: str, y_title: str
) -> go.Figure:
    """One line per task for a per-day metric, with each task's limit as a dashed line ("not enough
    data" before two days)."""
    if len({d.day for d in days}) < MIN_POINTS:
        return not_enough_data(title, _days_so_far(len({d.day for d in days}), "probe runs"))
    fig = go.Figure()
    for task in dict.fromkeys(d.task for d in days):
        mine = [d for d in days if d.task == task]
        fig.add_trace(
            go.Scatter(x=[d.day for d in mine], y=[getattr(d, metric) for d in mine], mode="lines+markers", name=task)
        )
        if task in limits and mine:
            fig.add_trace(
                go.Scatter(
                    x=[mine[0].day, mine[-1].day],
                    y=[limits[task]] * 2,
                    mode="lines",
                    name=f"{task} limit",
                    line={"dash": "dash", "color": THRESHOLD},
                    showlegend=False,
                    hovertemplate=f"{task} limit %{{y}}<extra></extra>",
                )
            )
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, y_title, daily=True)


def agreement_chart(days: Sequence[AgreementDay], minimum: float | None) -> go.Figure:
    """Daily agreement between judges against the plan's minimum ("not enough data" before two days)."""
    if len(days) < MIN_POINTS:
        return not_enough_data("Jury agreement per day", _days_so_far(len(days), "judged answers"))
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[d.day for d in days],
            y=[d.agreement for d in days],
            mode="lines+markers",
            name="agreement (1 - mean pairwise gap)",
            line={"color": ESTIMATE},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[d.day for d in days],
            y=[d.unanimous for d in days],
            mode="lines",
            name="share of judge pairs in exact agreement",
            line={"dash": "dot", "color": "#546e7a"},
        )
    )
    if minimum is not None:
        fig.add_hline(y=minimum, line_color=THRESHOLD, line_dash="dash", annotation_text=f"minimum {minimum:.2f}")
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, "Jury agreement per day", "agreement", daily=True)


def judges_chart(days: Sequence[JudgeDay], scale: tuple[float, float]) -> go.Figure:
    """Each judge's daily mean score: one judge drifting away from the others stands out (from two days)."""
    if len({d.day for d in days}) < MIN_POINTS:
        return not_enough_data("Each judge's mean score per day", _days_so_far(len({d.day for d in days}), "verdicts"))
    fig = go.Figure()
    for judge in dict.fromkeys(d.judge for d in days):
        mine = [d for d in days if d.judge == judge]
        fig.add_trace(go.Scatter(x=[d.day for d in mine], y=[d.mean for d in mine], mode="lines+markers", name=judge))
    fig.update_yaxes(range=[scale[0], scale[1] + 0.05])
    return _layout(fig, "Each judge's mean score per day", "score", daily=True)


def traffic_daily_chart(
    days: Sequence[Any], value: str, *, title: str, y_title: str, percent: bool = False, budget: float | None = None
) -> go.Figure:
    """One line per task of a daily traffic figure (``value`` names a ``TrafficDay`` field or property).

    Fewer than two days say "not enough data" instead of one dot; the axis starts at zero (calls,
    seconds, dollars and shares are never negative) and a share never runs past 100%."""
    if len({d.day for d in days}) < MIN_POINTS:
        return not_enough_data(title, _days_so_far(len({d.day for d in days}), "traffic"))
    fig = go.Figure()
    tasks = sorted({d.task for d in days})
    for task in tasks:
        mine = [d for d in days if d.task == task]
        fig.add_trace(
            go.Scatter(
                x=[d.day for d in mine],
                y=[getattr(d, value) for d in mine],
                mode="lines+markers",
                name=task or "(unmatched)",
            )
        )
    if budget is not None:
        fig.add_hline(
            y=budget,
            line_color=THRESHOLD,
            line_dash="dash",
            annotation_text=f"daily budget {budget:g}",
            annotation_position="top left",
        )
    _layout(fig, title, y_title, percent=percent, daily=True)
    values = [float(v) for d in days if (v := getattr(d, value)) is not None] + ([budget] if budget else [])
    top = max(values, default=0.0) * 1.15 or (0.05 if percent else 1.0)
    fig.update_yaxes(range=[0, min(top, 1.0) if percent else top])
    return fig


def _days_so_far(n: int, what: str) -> str:
    return f"{n} day{'' if n == 1 else 's'} of {what} so far;<br>a trend needs two"


def not_enough_data(title: str, why: str) -> go.Figure:
    """An empty chart that says why it is empty, in place of a single point on a made-up axis."""
    fig = go.Figure()
    fig.add_annotation(
        text=f"<b>Not enough data yet</b><br>{why}",  # short lines: a half-width chart cuts a long one
        xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
        font={"size": 14, "color": "#555"},
    )  # fmt: skip
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=title, height=200, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
