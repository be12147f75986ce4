"""Cost and latency: per task and per day, the production model apart from the judges, against budget."""

from __future__ import annotations

from datetime import timedelta

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.charts import per_task_chart, spend_chart
from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import fmt, page
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.read import cost_by_day, cost_by_task, judge_cost_by_day, judge_cost_by_task

# A week by default: the per-day groups of a 30-day window of a large deployment (720,000 calls)
# take about 1.5 s to aggregate on SQLite (see benchmarks/dashboard_render.py).
PERIODS = {"7 days": 7, "30 days": 30, "90 days": 90}

plan, viewer, engine = page("Cost and latency")
period = st.selectbox("Period", list(PERIODS), index=0, key="period")


@st.fragment(run_every=refresh_every())
def costs() -> None:
    since = utcnow() - timedelta(days=PERIODS[period])
    with Session(engine) as session:
        days = cost_by_day(session, plan, since)
        judges = judge_cost_by_day(session, since)
        judges_by_task = judge_cost_by_task(session, since)
    tasks = cost_by_task(plan, days, judges_by_task)
    production = sum(t.cost_usd for t in tasks)
    judge_total = sum(judges.values())
    calls = sum(t.calls for t in tasks)
    c = st.columns(4)
    c[0].metric("Production model (USD)", f"{production:.4f}")
    c[1].metric("Judges (USD)", f"{judge_total:.4f}", help="the jury's own ledger, never added to the model's cost")
    c[2].metric("Calls", calls)
    c[3].metric("Tasks over budget", sum(1 for t in tasks if t.within_budget is False))
    show_table(
        [
            {
                "task": t.task,
                "calls": t.calls,
                "errors": t.errors,
                "cost (USD)": t.cost_usd,
                "cost per call": t.cost_per_call,
                "budget per call": t.budget_per_call,
                "within budget": {True: "yes", False: "NO", None: ""}[t.within_budget],
                "calls over budget": t.over_budget,
                "mean latency (s)": t.latency_mean,
                "max latency (s)": t.latency_max,
                "latency objective (s)": t.latency_slo_s,
                "calls over objective": t.over_slo,
                "judges (USD)": t.judge_cost_usd,
            }
            for t in tasks
        ],
        key="cost_table",
        column_config={
            "cost (USD)": st.column_config.NumberColumn(format="%.4f"),
            "cost per call": st.column_config.NumberColumn(format="%.5f"),
            "judges (USD)": st.column_config.NumberColumn(format="%.4f"),
            "mean latency (s)": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    if not days:
        st.write(f"No calls in the last {period}.")
        return
    st.plotly_chart(spend_chart(days, judges), key="spend")
    budgets = {t.task: t.budget_per_call for t in tasks if t.budget_per_call is not None}
    slos = {t.task: t.latency_slo_s for t in tasks if t.latency_slo_s is not None}
    left, right = st.columns(2)
    left.plotly_chart(
        per_task_chart(
            days, "cost_per_call", budgets, title="Cost per call per day (dashed: budget)", y_title="USD per call"
        ),
        key="cost_per_call",
    )
    right.plotly_chart(
        per_task_chart(days, "latency_mean", slos, title="Mean latency per day (dashed: objective)", y_title="seconds"),
        key="latency",
    )
    with st.expander("Per task and day"):
        show_table(
            [
                {
                    "day": d.day,
                    "task": d.task,
                    "calls": d.calls,
                    "errors": d.errors,
                    "cost (USD)": fmt(d.cost_usd, ".4f"),
                    "cost per call": fmt(d.cost_per_call, ".5f"),
                    "calls over budget": d.over_budget,
                    "mean latency (s)": fmt(d.latency_mean),
                    "calls over objective": d.over_slo,
                }
                for d in days
            ],
            key="cost_days",
        )


costs()
