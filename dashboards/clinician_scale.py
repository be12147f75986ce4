"""The clinician-scale section the Jury and Clinician review pages share: per task and rubric criterion, the
estimate on the clinician scale beside the jury's own mean and MedHELM's ICC 0.47, and what the review queue
needs next."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.dashboards.layout import fmt
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.plan.model import Plan
from medmon.monitor.read import ClinicianScale, clinician_scale


def rows(figures: list[ClinicianScale]) -> list[dict[str, object]]:
    """One row per criterion of one task, every figure named by its scale; the first five fit a 1,024 px page,
    the others are read by ticking a row (``show_table``)."""
    out: list[dict[str, object]] = []
    for f in figures:
        interval = "" if f.ci_low is None or f.ci_high is None else f"{f.ci_low:.2f} to {f.ci_high:.2f}"
        needed = "unreachable at this volume" if f.ratings_needed is None else str(f.ratings_needed)
        out.append(
            {
                "criterion": f.criterion,
                "clinician scale": fmt(f.clinician, ".2f"),
                "jury's opinion": fmt(f.jury, ".2f"),
                "ICC (MedHELM)": f"{fmt(f.icc, '.2f')} ({f.medhelm_icc:.2f})",
                "status": "ALARM" if f.alarm else "ok",
                "null": fmt(f.null, ".2f"),
                "95% confidence sequence": interval,
                "answers / ratings": f"{f.answers} / {f.ratings}",
                f"more ratings for ±{f.target_half_width:.2f}": needed,
                f"more rated answers for an ICC interval {f.icc_width} wide": f.icc_answers_needed,
            }
        )
    return out


def sentence(f: ClinicianScale) -> str:
    """One task's figures on one criterion as the sentence a committee member reads first."""
    if f.clinician is None:
        return f"**{f.task_id} · {f.criterion}**: no closed week of answers on the clinician scale yet."
    status = "**below the null: clinicians would see a drop**" if f.alarm else "at or above the null"
    needed = (
        "cannot be reached at this volume" if f.ratings_needed is None else f"needs {f.ratings_needed} more ratings"
    )
    return (
        f"**{f.task_id} · {f.criterion}**: clinician scale {f.clinician:.2f} "
        f"(95% {fmt(f.ci_low, '.2f')} to {fmt(f.ci_high, '.2f')}) "
        f"against the null {fmt(f.null, '.2f')}, {status}; the jury's opinion {fmt(f.jury, '.2f')}; "
        f"jury-clinician ICC {fmt(f.icc, '.2f')} (MedHELM {f.medhelm_icc:.2f}). "
        f"The queue {needed} for ±{f.target_half_width:.2f}, and {f.icc_answers_needed} more rated answers "
        f"for an ICC interval {f.icc_width} wide."
    )


def clinician_scale_section(engine: Engine, plan: Plan) -> None:
    """Render the section; says why when the plan does not draw answers with known probabilities."""
    st.subheader("On the clinician scale")
    if plan.oversight.review.selection != "active":
        st.write(
            "Not measured: the review queue draws by stratified quota (oversight.review.selection: strata), "
            "so a rating's probability of being drawn is not known per answer. Set selection: active."
        )
        return
    with Session(engine) as session:
        figures = clinician_scale(session, plan, utcnow())
    if not figures:
        st.write("No jury-scored task under review yet: the streams open once the jury has scored its answers.")
        return
    for task_id in dict.fromkeys(f.task_id for f in figures):
        mine = [f for f in figures if f.task_id == task_id]
        for f in mine:
            st.markdown(sentence(f))
        show_table(rows(mine), key=f"clinician_scale:{task_id}")
    st.caption(
        "One row per criterion of the jury's rubric, one table per task; ALARM: below the criterion's null. "
        "Clinician scale: every jury score on the criterion rectified by the clinicians' ratings of the answers "
        "drawn for review, "
        "each weighted by the probability it was drawn with (prediction-powered; anytime-valid 95% confidence "
        "sequence). The jury's mean is the jury's opinion only. Ratings needed from the estimator's variance "
        "bound; ICC answers from Bonett (2002)."
    )
