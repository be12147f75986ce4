"""Jury: agreement between judges over time, each judge's score stream, and unread verdicts."""

from __future__ import annotations

from datetime import timedelta

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.charts import agreement_chart, judges_chart
from medmon.dashboards.clinician_scale import clinician_scale_section
from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import fmt, page
from medmon.dashboards.oversight import MEDHELM_NOTE, agreement_frame
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.read import (
    agreement_series,
    agreement_table,
    effective_tasks,
    judge_series,
    unread_verdicts,
    verdict_count,
    window_alphas,
)

plan, viewer, engine = page("Jury")
days = st.selectbox("Period (days)", [7, 30, 90], index=1, key="jury_days")
scale = (plan.jury.scale_min, plan.jury.scale_max) if plan.jury else (1, 5)


@st.fragment(run_every=refresh_every())
def jury() -> None:
    since = utcnow() - timedelta(days=days)
    with Session(engine) as session:
        calls = verdict_count(session)
        if calls:
            agreement = agreement_series(session, since)
            judges = judge_series(session, since)
            unread = unread_verdicts(session)
            alphas = window_alphas(session, [t.id for t in plan.tasks], scale_min=scale[0], scale_max=scale[1])
            clinicians = agreement_table(session)
            in_force = effective_tasks(session, plan)  # the approved floors, not an edit awaiting approval
    if plan.jury is None and not calls:
        st.info("No jury configured: this plan scores every task without LLM judges.")
        return
    if plan.jury is not None:
        st.markdown(
            "Judges: "
            + ", ".join(f"**{j.name}** ({j.model})" for j in plan.jury.judges)
            + f" · criteria: {', '.join(plan.jury.criteria)} · scale {scale[0]}-{scale[1]}"
        )
    if not calls:
        st.write("The jury has not judged any answer yet.")
        return
    judged = [a for a in alphas if a.results]
    if judged:
        show_table(
            [
                {
                    "task": a.task_id,
                    "Krippendorff's alpha (ordinal)": (fmt(a.alpha, ".3f") if a.alpha is not None else a.reason or "—"),
                    "answers": a.results,
                    "judges": a.judges,
                    "items scored by 2+ judges": a.units,
                    "scores outside the scale (excluded)": a.out_of_scale,
                }
                for a in judged
            ],
            key="alphas",
        )
        st.caption(
            "Alpha over each task's latest 200 judged answers discounts agreement expected by chance; "
            "MedHELM reports LLM-jury agreement with clinicians as moderate (ICC 0.47)."
        )
    st.subheader("Against clinicians")
    if clinicians:
        st.table(agreement_frame(clinicians))
    else:
        st.write("No clinician reviews rated by the jury yet (see Clinician review).")
    st.caption(MEDHELM_NOTE + " Floors in the plan's oversight.agreement raise 'jury_not_validated'.")
    clinician_scale_section(engine, plan)
    minimum = min(
        (e.thresholds.min_jury_agreement for e in in_force if e.thresholds.min_jury_agreement is not None), default=None
    )
    st.plotly_chart(agreement_chart(agreement, minimum), key="agreement")
    st.plotly_chart(judges_chart(judges, (float(scale[0]), float(scale[1]))), key="judges")
    st.subheader(f"Unparsed or failed verdicts ({len(unread)})")
    if unread:
        show_table(
            [
                {
                    "at": u.at,
                    "task": u.task,
                    "answer": u.result_id,
                    "judge": u.judge,
                    "model": u.model,
                    "status": u.parse_status,
                    "asked": u.asks,
                    "error": u.error,
                }
                for u in unread
            ],
            key="unread",
        )
    else:
        st.write("None: every verdict could be read.")


jury()
