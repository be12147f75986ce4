"""Production traffic: the deployed application's real calls, by task and model, from the hourly rollups."""

from __future__ import annotations

from datetime import timedelta

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.charts import traffic_daily_chart
from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import fmt, page
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.read import traffic_summary

PERIODS = {"7 days": 7, "30 days": 30, "90 days": 90}

plan, viewer, engine = page("Production traffic")
if plan.traffic is None:
    st.info(
        "The plan has no `traffic` section: medmon is not receiving the application's own calls. "
        "See the Traffic page of the documentation to send OpenTelemetry GenAI spans to `medmon serve`."
    )
    st.stop()
left, right = st.columns(2)
period = left.selectbox("Period", list(PERIODS), index=1, key="traffic_period")
task_choice = right.selectbox("Task", ["all tasks"] + [t.id for t in plan.tasks], key="traffic_task")


@st.fragment(run_every=refresh_every())
def traffic() -> None:
    now = utcnow()
    task = None if task_choice == "all tasks" else task_choice
    with Session(engine) as session:
        summary = traffic_summary(session, now - timedelta(days=PERIODS[period]), now, task=task)
    matched = [g for g in summary.groups if g.task]
    calls = sum(g.calls for g in matched)
    c = st.columns(5)
    c[0].metric("Calls", f"{calls:,}")
    c[1].metric("Spend (USD)", f"{sum(g.cost_usd for g in matched):,.2f}")
    c[2].metric("Errors", f"{sum(g.errors for g in matched) / calls:.1%}" if calls else "-")
    c[3].metric("Unmatched calls", f"{summary.unmatched:,}", help="calls no traffic route matched, counted per model")
    c[4].metric(
        "Refused spans", f"{sum(summary.refused.values()):,}", help="spans refused at the door, by reason below"
    )
    if not summary.groups:
        st.write(f"No traffic in the last {period}.")
        return
    show_table(
        [
            {
                "task": g.task or "(unmatched)",
                "model": g.model,
                "calls": g.calls,
                "spend (USD)": g.cost_usd,
                "cost per call": g.cost_per_call,
                "errors": g.error_rate,
                "truncated": g.truncation_rate,
                "refusals": g.refusal_rate,
                "p50 (s)": g.p50_s,
                "p95 (s)": g.p95_s,
                "p99 (s)": g.p99_s,
                "output tokens": g.output_tokens,
            }
            for g in summary.groups
        ],
        key="traffic_groups",
        column_config={
            "spend (USD)": st.column_config.NumberColumn(format="%.2f"),
            "cost per call": st.column_config.NumberColumn(format="%.5f"),
            "errors": st.column_config.NumberColumn(format="percent"),
            "truncated": st.column_config.NumberColumn(format="percent"),
            "refusals": st.column_config.NumberColumn(format="percent"),
            "p50 (s)": st.column_config.NumberColumn(format="%.2f"),
            "p95 (s)": st.column_config.NumberColumn(format="%.2f"),
            "p99 (s)": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    days = [d for d in summary.days if d.task]
    budget = plan.traffic.daily_budget_usd if plan.traffic is not None else None
    a, b = st.columns(2)
    a.plotly_chart(traffic_daily_chart(days, "calls", title="Calls per day", y_title="calls"), key="traffic_calls")
    b.plotly_chart(
        traffic_daily_chart(
            days,
            "cost_usd",
            title="Spend per day" + (" (dashed: budget)" if budget else ""),
            y_title="USD",
            budget=budget,
        ),
        key="traffic_spend",
    )
    a, b = st.columns(2)
    a.plotly_chart(
        traffic_daily_chart(days, "p95_s", title="95th percentile latency per day", y_title="seconds"),
        key="traffic_p95",
    )
    b.plotly_chart(
        traffic_daily_chart(days, "error_rate", title="Errors per day", y_title="share of calls", percent=True),
        key="traffic_errors",
    )
    a, b = st.columns(2)
    a.plotly_chart(
        traffic_daily_chart(
            days,
            "truncation_rate",
            title="Answers cut off at the token limit",
            y_title="share of answers",
            percent=True,
        ),
        key="traffic_truncation",
    )
    b.plotly_chart(
        traffic_daily_chart(
            [d for d in days if d.with_content],
            "refusal_rate",
            title="Refusals (calls with content)",
            y_title="share",
            percent=True,
        ),
        key="traffic_refusals",
    )
    if summary.judged:
        st.subheader("Real answers judged by the jury")
        show_table(
            [
                {
                    "day": j.day,
                    "task": j.task,
                    "judged": j.judged,
                    "mean score": fmt(j.score),
                    "agreement": fmt(j.agreement),
                }
                for j in summary.judged
            ],
            key="traffic_judged",
        )
    if summary.refused:
        with st.expander("Spans refused at the door"):
            show_table([{"reason": r, "spans": n} for r, n in sorted(summary.refused.items())], key="traffic_refused")


traffic()
