"""Overview: is anything wrong? Every task against its baseline, worst first."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlmodel import Session

from dashboards.data import current_plan, engine_for
from monitor.read import alerts_list, task_overview

plan = current_plan()
engine = engine_for(plan)
st.title(f"medmon · {plan.use_case.name}")
st.caption("Unauthenticated: bound to 127.0.0.1. " + ("The deployment is a SIMULATED model."
           if "simulator" in plan.deployment.model else f"Deployment: {plan.deployment.model}"))


@st.fragment(run_every="5s")
def overview() -> None:
    with Session(engine) as session:
        rows = task_overview(session, plan)
        alerts = alerts_list(session, open_only=True)
    degraded = [r for r in rows if r.status == "degraded"]
    if degraded:
        st.error(f"{len(degraded)} task(s) degraded: {', '.join(r.task for r in degraded)}")
    else:
        st.success("Every task holds its baseline.")
    table = pd.DataFrame([{
        "task": r.task, "status": r.status, "category": r.category, "subcategory": r.subcategory,
        "baseline": r.baseline, "current": r.estimate,
        "95% CI": f"{r.ci_low:.2f}-{r.ci_high:.2f}" if r.estimate is not None else "",
        "n": r.n, "owner": r.owner, "risk tier": r.risk_tier, "last probe": r.last_probe,
        "open alerts": r.open_alerts} for r in rows])
    st.dataframe(table, hide_index=True, use_container_width=True)
    st.subheader("Open alerts")
    if not alerts:
        st.write("None.")
    for a in alerts:
        st.warning(f"**{a.severity.value}** · {a.status.value} · {a.summary} · owner: {a.owner}")


overview()
