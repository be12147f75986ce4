"""Jury: agreement between judges over time, each judge's score stream, and unparsed verdicts."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st
from sqlmodel import Session

from dashboards.auth import require_viewer
from dashboards.charts import agreement_chart, judges_chart
from dashboards.data import current_plan, engine_for, refresh_every
from dashboards.layout import header
from monitor.read import agreement_series, judge_series, unparsed_verdicts, verdict_count
from monitor.storage import utcnow

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, "Jury")
days = st.selectbox("Period (days)", [7, 30, 90], index=1, key="jury_days")


@st.fragment(run_every=refresh_every())
def jury() -> None:
    since = utcnow() - timedelta(days=days)
    with Session(engine) as session:
        count = verdict_count(session)
        if count:
            scale = (plan.jury.scale_min, plan.jury.scale_max) if plan.jury else (1, 5)
            agreement = agreement_series(session, since, scale_span=float(scale[1] - scale[0]))
            judges = judge_series(session, since)
            unparsed = unparsed_verdicts(session)
    if plan.jury is None and not count:
        st.info("No jury configured: this plan scores every task without LLM judges.")
        return
    if plan.jury is not None:
        st.markdown("Judges: " + ", ".join(f"**{j.name}** ({j.model})" for j in plan.jury.judges)
                    + f" · criteria: {', '.join(plan.jury.criteria)} · scale {plan.jury.scale_min}-"
                    f"{plan.jury.scale_max}")
    if not count:
        st.write("The jury has not judged any answer yet.")
        return
    minimum = min((t.thresholds.min_jury_agreement for t in plan.tasks
                   if t.thresholds.min_jury_agreement is not None), default=None)
    st.plotly_chart(agreement_chart(agreement, minimum), key="agreement")
    st.plotly_chart(judges_chart(judges, (float(scale[0]), float(scale[1]))), key="judges")
    st.subheader(f"Unparsed or failed verdicts ({len(unparsed)})")
    if unparsed:
        st.dataframe(pd.DataFrame([{
            "at": u.at, "task": u.task, "answer": u.result_id, "judge": u.judge, "criterion": u.criterion,
            "status": u.parse_status, "what the judge wrote": u.explanation} for u in unparsed]),
            hide_index=True, width="stretch", key="unparsed")
    else:
        st.write("None: every verdict could be read.")


jury()
