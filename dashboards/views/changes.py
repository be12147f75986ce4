"""Model changes: served-model and fingerprint history, with the re-evaluations each triggered."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlmodel import Session

from dashboards.auth import require_viewer
from dashboards.data import current_plan, engine_for, refresh_every
from dashboards.layout import fmt, header, interval
from monitor.read import model_changes

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, "Model changes")


@st.fragment(run_every=refresh_every())
def changes() -> None:
    with Session(engine) as session:
        history = model_changes(session)
    if not history:
        st.info("No served model recorded yet: the first probe records the model the deployment serves.")
        return
    real = [c for c in history if c.is_change]
    if real:
        st.warning(f"{len(real)} change(s) of served model or fingerprint since go-live.")
    else:
        st.success("The deployment has served the same model and fingerprint since go-live.")
    st.dataframe(pd.DataFrame([{
        "first seen": c.first_seen, "task": c.task, "served model": c.served_model,
        "fingerprint": c.system_fingerprint or "", "previous": (f"{c.previous_model} ({c.previous_fingerprint or '-'})"
                                                                if c.is_change else "go-live"),
        "re-evaluations": len(c.reevaluations), "finding": c.summary} for c in history]),
        hide_index=True, width="stretch", key="changes")
    reevals = [(c, r) for c in history for r in c.reevaluations]
    st.subheader(f"Re-evaluations ({len(reevals)})")
    if not reevals:
        st.write("No re-evaluation run yet. A change of model, fingerprint, prompt or judge calls for one.")
    else:
        st.dataframe(pd.DataFrame([{
            "run": r.run_id, "task": c.task, "after change to": c.served_model, "started": r.started_at,
            "status": r.status, "n": r.n, "score": fmt(r.mean), "95% CI": interval(r.ci_low, r.ci_high),
            "approval threshold": plan.task(c.task).thresholds.min_score if c.task in {t.id for t in plan.tasks}
            else None} for c, r in reevals]), hide_index=True, width="stretch", key="reevaluations")


changes()
