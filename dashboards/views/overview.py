"""Overview: is anything wrong? Every task against its baseline and threshold, worst first."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st
from sqlmodel import Session

from medmon.dashboards.auth import require_viewer
from medmon.dashboards.data import current_plan, engine_for, refresh_every
from medmon.dashboards.decision_block import decision_block
from medmon.dashboards.layout import header, interval, when
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.read import (
    CURRENT_SCORE_NAME,
    category_streams,
    decision_overview,
    open_incidents_view,
    service_pulse,
    task_overview,
)

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, f"medmon · {plan.use_case.name}", engine)
with Session(engine) as _session:
    # Outside the refreshing fragment: a decision being typed is not lost at the next refresh.
    decision_rows = decision_overview(_session, plan, utcnow())
decision_block(plan, viewer, engine, decision_rows)


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 1440} d" if minutes >= 1440 else f"{minutes // 60} h" if minutes >= 60 else f"{minutes} min"


@st.fragment(run_every=refresh_every())
def overview() -> None:
    with Session(engine) as session:
        rows = task_overview(session, plan)
        incidents = open_incidents_view(session, utcnow())
        pooled = category_streams(session)
        pulse = service_pulse(session, plan)
    now = utcnow()
    if pulse.beat_at is None:
        st.info("The monitor service has not run against this database yet (`medmon serve plan.yaml`).")
    elif not pulse.alive(now):
        st.error(f"The monitor service last beat {_ago(now - pulse.beat_at)} ago: nothing below is current.")
    elif pulse.beat_at > now:
        # An accelerated clock (the demo, a soak) writes simulated times ahead of the wall clock.
        st.caption(f"Monitor service on an accelerated clock: last heartbeat at simulated {when(pulse.beat_at)}.")
    else:
        st.caption(f"Monitor service alive: last heartbeat {_ago(now - pulse.beat_at)} ago.")
    degraded = [r for r in rows if r.status == "degraded"]
    watching = [r for r in rows if r.status == "watching"]
    no_data = [r for r in rows if r.status == "no data yet"]
    building = [r for r in rows if r.reference is not None]
    if degraded:
        st.error(f"{len(degraded)} task(s) degraded: {', '.join(r.task for r in degraded)}")
    elif watching:
        st.warning(f"{len(watching)} task(s) under watch: {', '.join(r.task for r in watching)}")
    elif no_data:
        st.info(
            f"No data yet for {len(no_data)} of {len(rows)} task(s): {', '.join(r.task for r in no_data)}. "
            "Nothing can be said about a task before its first probe (`medmon probe run` or `medmon serve`)."
        )
    elif building:
        st.info(
            f"Building the go-live reference for {len(building)} of {len(rows)} task(s): drift detection is not "
            "armed yet, so no task can be called fine.\n\n"
            + "\n".join(f"- {r.task}: {r.reference.sentence(now)}" for r in building if r.reference)
        )
    else:
        st.success("Every task holds its baseline.")
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric("Tasks", len(rows))
    c2.metric("Degraded", len(degraded))
    c3.metric("Watching", len(watching))
    c4.metric(
        "Building reference",
        len(building),
        help="tasks whose go-live reference is still being built: detection not armed yet",
    )
    c5.metric("Open incidents", len(incidents))
    # Left to right, what a committee needs first: the status, the figures behind it, who owns it, and why.
    table = pd.DataFrame(
        [
            {
                "task": r.task,
                "status": r.status,
                "score now": r.estimate,
                "95% CI": interval(r.ci_low, r.ci_high),
                "minimum in force": r.min_score,
                "baseline": r.baseline,
                "owner": r.owner,
                "why": r.reason,
                **({"proposed minimum": r.proposed_min_score} if any(x.proposals for x in rows) else {}),
                "open incidents": r.open_incidents,
                "last probe": r.last_probe,
                "answers": r.n,
                "risk tier": r.risk_tier,
                "category": r.category,
                "subcategory": r.subcategory,
            }
            for r in rows
        ]
    )
    # The figures come first; what does not fit at 1,024 px (owner, why...) is shown on demand.
    lead = ["task", "status", "score now", "95% CI", "minimum in force", "baseline"]
    lead += ["proposed minimum"] if "proposed minimum" in table.columns else []
    config = {
        "why": st.column_config.TextColumn(width="large", help="every reason, most serious first"),
        "baseline": st.column_config.NumberColumn(
            format="%.2f",
            help="the baseline in force (pinned at the first probe or approved by an owner: see the Task page)",
        ),
        "score now": st.column_config.NumberColumn(format="%.2f", help=CURRENT_SCORE_NAME),
        "minimum in force": st.column_config.NumberColumn(
            format="%.2f", help="approved by an owner, or the first recorded plan's minimum until go-live is approved"
        ),
        "proposed minimum": st.column_config.NumberColumn(
            format="%.2f", help="a plan edit no owner has approved yet: it judges nothing until approved"
        ),
        "last probe": st.column_config.DatetimeColumn(format="D MMM YYYY HH:mm"),
    }
    show_table(table, column_config=config, lead=lead, key="overview_tasks")
    proposals = [p for r in rows for p in r.proposals]
    if proposals:
        st.warning(
            "Threshold edits await an owner's approval (Governance page); the values in force judge "
            "meanwhile:\n\n" + "\n".join(f"- {p}" for p in proposals)
        )
    st.caption(
        "Status: degraded when a drift detector has alarmed or the recent interval lies under the minimum in "
        "force; watching while evidence builds up or an incident is open; building the reference until the "
        "go-live reference is complete (detection not armed); no data yet before the first probe. "
        f"Score now: the {CURRENT_SCORE_NAME}; baseline: the baseline evidence in force."
    )
    for r in rows[:12]:
        if r.reasons and r.status != "ok":
            with st.container(border=True):
                st.markdown(f"**{r.task}: {r.status}**, owner {r.owner}\n\n" + "\n".join(f"- {x}" for x in r.reasons))
                st.page_link(
                    "views/task.py", label="Open the task: what to do, charts, answers", query_params={"task": r.task}
                )
        else:
            st.page_link("views/task.py", label=f"{r.task}: {r.status} — open the task", query_params={"task": r.task})
    if pooled:
        st.subheader("Category detectors")
        st.caption("Each pools the tasks of one MedHELM category, so a small drop shared by several tasks shows.")
        show_table(
            [{"category": p.category, "status": p.status, "what it means": p.meaning, "answers": p.n} for p in pooled]
        )
    st.subheader(f"Open incidents ({len(incidents)})")
    if not incidents:
        st.write("None.")
    else:
        # What each incident is comes first (a row of severities says nothing), and a model change's
        # children follow it, marked ↳, as on the Alerts page: one family, one problem.
        shown = {i.id for i in incidents}
        ordered = [
            x
            for i in incidents
            if i.parent_id is None or i.parent_id not in shown
            for x in [i, *(c for c in incidents if c.parent_id == i.id)]
        ]
        show_table(
            [
                {
                    "incident": ("↳ " if i.parent_id in shown else "") + f"#{i.id} {i.title}",
                    "severity": i.severity,
                    "status": i.status,
                    "since": i.opened_at,
                    "signals": len(i.signals),
                }  # owner and the signals' summaries: on the Alerts page
                for i in ordered
            ],
            lead=("incident", "severity", "status"),
            column_config={"since": st.column_config.DatetimeColumn(format="D MMM HH:mm")},
        )
        st.page_link("views/alerts.py", label="Acknowledge, resolve or silence on the Alerts page")


overview()
