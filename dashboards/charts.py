"""Plotly figures for the dashboard: every score is drawn with its interval, the baseline band
and the approval threshold, so a reader sees whether a dip is noise or a departure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

import plotly.graph_objects as go

from medmon.monitor.read import AgreementDay, CostDay, JudgeDay, RunPoint, Slice

BASELINE = "rgba(46, 125, 50, 0.18)"
BASELINE_LINE = "#2e7d32"
THRESHOLD = "#c62828"
ESTIMATE = "#1565c0"
BAND = "rgba(21, 101, 192, 0.18)"
DAY_MS = 86_400_000


def _layout(fig: go.Figure, title: str, y_title: str, *, percent: bool = False, daily: bool = False) -> go.Figure:
    if daily:
        # Left to itself plotly puts ticks every 12 hours on a short span, printing each date twice.
        days = {x for trace in fig.data for x in (trace.x or ())}
        fig.update_xaxes(type="date", tickformat="%Y-%m-%d", dtick=DAY_MS if len(days) <= 14 else None)
    fig.update_layout(title=title, height=360, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.2}, hovermode="x unified")
    fig.update_yaxes(title=y_title, tickformat=".0%" if percent else None)
    return fig


def score_chart(points: Sequence[RunPoint], *, baseline: float | None, baseline_ci: tuple[float, float] | None,
                threshold: float, alarm_line: float | None = None, title: str = "Score per probe run") -> go.Figure:
    """Run means with their 95% intervals against the baseline band and the approval threshold."""
    fig = go.Figure()
    scored = [p for p in points if p.mean is not None]
    xs = [p.at for p in scored]
    if baseline_ci is not None:
        fig.add_hrect(y0=baseline_ci[0], y1=baseline_ci[1], fillcolor=BASELINE, line_width=0)
    if baseline is not None:
        # The band is often too narrow for a label of its own: the baseline's label names it.
        band = f" (band: 95% CI {baseline_ci[0]:.2f}-{baseline_ci[1]:.2f})" if baseline_ci is not None else ""
        fig.add_hline(y=baseline, line_color=BASELINE_LINE, annotation_text=f"baseline {baseline:.2f}{band}",
                      annotation_position="top right")
    if alarm_line is not None:
        fig.add_hline(y=alarm_line, line_color="#6d4c41", line_dash="dot",
                      annotation_text=f"detector reference {alarm_line:.2f}", annotation_position="bottom right")
    fig.add_hline(y=threshold, line_color=THRESHOLD, line_dash="dash",
                  annotation_text=f"approval threshold {threshold:.2f}", annotation_position="bottom right")
    if scored:
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[p.ci_high for p in scored] + [p.ci_low for p in scored][::-1],
                                 fill="toself", fillcolor=BAND, line={"width": 0}, hoverinfo="skip",
                                 name="run 95% CI"))
        fig.add_trace(go.Scatter(x=xs, y=[p.mean for p in scored], mode="lines+markers", name="run mean",
                                 line={"color": ESTIMATE}, marker={"size": 5},
                                 customdata=[[p.n, p.purpose] for p in scored],
                                 hovertemplate="%{y:.2f} (n=%{customdata[0]}, %{customdata[1]})<extra></extra>"))
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, "score")


def cost_latency_chart(points: Sequence[RunPoint], *, budget: float | None, slo: float | None) -> go.Figure:
    """Mean cost per call and mean latency per run, against the budget and the objective."""
    fig = go.Figure()
    xs = [p.at for p in points]
    fig.add_trace(go.Scatter(x=xs, y=[p.cost_per_call for p in points], name="cost per call (USD)",
                             line={"color": "#6a1b9a"}))
    fig.add_trace(go.Scatter(x=xs, y=[p.latency_mean for p in points], name="mean latency (s)", yaxis="y2",
                             line={"color": "#ef6c00"}))
    fig.add_trace(go.Scatter(x=xs, y=[p.latency_max for p in points], name="max latency (s)", yaxis="y2",
                             line={"color": "#ef6c00", "dash": "dot"}))
    if budget is not None:
        fig.add_hline(y=budget, line_color=THRESHOLD, line_dash="dash", annotation_text=f"budget {budget:g} USD/call")
    if slo is not None:
        fig.add_trace(go.Scatter(x=[xs[0], xs[-1]] if xs else [], y=[slo, slo], yaxis="y2", mode="lines",
                                 name=f"latency objective {slo:g} s", line={"color": "#ef6c00", "dash": "dash"}))
    fig.update_layout(yaxis2={"title": "seconds", "overlaying": "y", "side": "right", "rangemode": "tozero"})
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, "Cost and latency per probe run", "USD per call")


def slices_chart(slices: Sequence[Slice], tag: str) -> go.Figure:
    """Each subgroup's recent score with its interval, beside the baseline of the same canaries."""
    rows = [s for s in slices if s.tag == tag and s.mean is not None]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=[s.value for s in rows], y=[s.mean for s in rows], name="recent",
                         marker_color=ESTIMATE,
                         error_y={"type": "data", "symmetric": False,
                                  "array": [(s.ci_high or 0) - (s.mean or 0) for s in rows],
                                  "arrayminus": [(s.mean or 0) - (s.ci_low or 0) for s in rows]},
                         customdata=[s.n for s in rows], hovertemplate="%{y:.2f} (n=%{customdata})<extra></extra>"))
    if any(s.baseline_mean is not None for s in rows):
        fig.add_trace(go.Scatter(x=[s.value for s in rows], y=[s.baseline_mean for s in rows], mode="markers",
                                 name="baseline of these canaries",
                                 marker={"symbol": "line-ew-open", "size": 28, "color": BASELINE_LINE,
                                         "line": {"width": 3}}))
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


def per_task_chart(days: Sequence[CostDay], metric: str, limits: Mapping[str, float], *, title: str,
                   y_title: str) -> go.Figure:
    """One line per task for a per-day metric, with each task's limit as a dashed line."""
    fig = go.Figure()
    for task in dict.fromkeys(d.task for d in days):
        mine = [d for d in days if d.task == task]
        fig.add_trace(go.Scatter(x=[d.day for d in mine], y=[getattr(d, metric) for d in mine],
                                 mode="lines+markers", name=task))
        if task in limits and mine:
            fig.add_trace(go.Scatter(x=[mine[0].day, mine[-1].day], y=[limits[task]] * 2, mode="lines",
                                     name=f"{task} limit", line={"dash": "dash", "color": THRESHOLD},
                                     showlegend=False, hovertemplate=f"{task} limit %{{y}}<extra></extra>"))
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, y_title, daily=True)


def agreement_chart(days: Sequence[AgreementDay], minimum: float | None) -> go.Figure:
    """Daily agreement between judges against the plan's minimum."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[d.day for d in days], y=[d.agreement for d in days], mode="lines+markers",
                             name="agreement (1 - mean pairwise gap)", line={"color": ESTIMATE}))
    fig.add_trace(go.Scatter(x=[d.day for d in days], y=[d.unanimous for d in days], mode="lines",
                             name="share of judge pairs in exact agreement", line={"dash": "dot", "color": "#546e7a"}))
    if minimum is not None:
        fig.add_hline(y=minimum, line_color=THRESHOLD, line_dash="dash", annotation_text=f"minimum {minimum:.2f}")
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, "Jury agreement per day", "agreement", daily=True)


def judges_chart(days: Sequence[JudgeDay], scale: tuple[float, float]) -> go.Figure:
    """Each judge's daily mean score: one judge drifting away from the others stands out."""
    fig = go.Figure()
    for judge in dict.fromkeys(d.judge for d in days):
        mine = [d for d in days if d.judge == judge]
        fig.add_trace(go.Scatter(x=[d.day for d in mine], y=[d.mean for d in mine], mode="lines+markers", name=judge))
    fig.update_yaxes(range=[scale[0], scale[1] + 0.05])
    return _layout(fig, "Each judge's mean score per day", "score", daily=True)


def traffic_daily_chart(days: Sequence[Any], value: str, *, title: str, y_title: str, percent: bool = False,
                        budget: float | None = None) -> go.Figure:
    """One line per task of a daily traffic figure (``value`` names a ``TrafficDay`` field or property)."""
    fig = go.Figure()
    tasks = sorted({d.task for d in days})
    for task in tasks:
        mine = [d for d in days if d.task == task]
        fig.add_trace(go.Scatter(x=[d.day for d in mine], y=[getattr(d, value) for d in mine], mode="lines+markers",
                                 name=task or "(unmatched)"))
    if budget is not None:
        fig.add_hline(y=budget, line_color=THRESHOLD, line_dash="dash", annotation_text=f"daily budget {budget:g}",
                      annotation_position="top left")
    return _layout(fig, title, y_title, percent=percent, daily=True)
