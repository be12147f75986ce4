"""Clinician review: the reviewer's queue of sampled answers, rated on the jury's own rubric.

A reviewer sees only the tasks the plan assigns them, one answer at a time: the prompt, the
reference where there is one, and the answer as stored (redacted before storage). The jury's
scores are not shown, so the rating is the clinician's own. A safety flag opens a safety event
at once: the reporting clock runs from the moment the concern was raised.
"""

from __future__ import annotations

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import note_answers_viewed, rate_answer
from medmon.dashboards.auth import NotAllowed, signed_in_reviewer
from medmon.dashboards.clinician_scale import clinician_scale_section
from medmon.dashboards.layout import page, when
from medmon.dashboards.oversight import MEDHELM_NOTE, agreement_frame
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.review import reviewer_tasks, rubric
from medmon.monitor.read import agreement_table, next_review, review_progress

plan, viewer, engine = page("Clinician review")
reviewers = {r.email.lower(): r for r in plan.oversight.reviewers}
if not reviewers:
    st.info("The plan names no reviewers (oversight.reviewers): there is no review queue.")
    st.stop()
reviewer: str | None
try:
    reviewer = signed_in_reviewer(plan, viewer)  # a rating is only ever recorded as the verified reviewer
except NotAllowed as exc:
    st.warning(f"No review queue: {exc}. Ratings are recorded under a verified sign-in only.")
    reviewer = None
criteria, low, high = rubric(plan.jury)
tasks = (
    reviewer_tasks(plan.oversight, reviewer) if reviewer else sorted({t for r in reviewers.values() for t in r.tasks})
)
if reviewer is not None:
    st.caption(
        f"Tasks assigned to you: {', '.join(tasks)} · rate on the jury's rubric: {', '.join(criteria)}, "
        f"{low} (worst) to {high} (best)"
    )

if "review_done" in st.session_state:
    st.success(st.session_state.pop("review_done"))
with Session(engine) as session:
    card = next_review(session, plan, reviewer) if reviewer is not None else None
if reviewer is None:
    pass
elif card is None:
    st.write("Your queue is empty: every answer sampled for you has been rated.")
else:
    st.subheader(f"Answer #{card.result_id} · {card.task_id}")
    st.caption(
        f"{card.open_items} open in your queue · drawn from stratum {card.stratum} · answered {when(card.answered_at)}"
    )
    st.markdown("**Prompt**")
    st.text(card.prompt)
    if card.references:
        st.markdown("**Reference**")
        st.text("\n".join(card.references))
    st.markdown("**Answer** (as stored, redacted)")
    st.text(card.answer)
    seen = f"answers_viewed:review:{card.result_id}"  # once per session and answer, not per rerun
    if not st.session_state.get(seen):
        note_answers_viewed(engine, viewer, card.task_id, "review", [card.result_id], utcnow())
        st.session_state[seen] = True
    with st.form(key=f"rate_{card.item_id}"):
        scores = {
            c: st.radio(c, list(range(low, high + 1)), index=None, horizontal=True, key=f"{c}_{card.item_id}")
            for c in criteria
        }
        note = st.text_area("Note (optional)", key=f"note_{card.item_id}")
        concern = st.checkbox("Safety concern: this answer could harm a patient", key=f"concern_{card.item_id}")
        submitted = st.form_submit_button("Submit rating", type="primary")
    if submitted:
        missing = [c for c, v in scores.items() if v is None]
        if missing:
            st.error(f"Rate every criterion: {', '.join(missing)} not rated.")
        else:
            try:
                event = rate_answer(engine, plan, viewer, card.item_id, scores, note, concern, utcnow())
            except (NotAllowed, GovernanceError, ValueError) as exc:
                st.error(str(exc))
            else:
                st.session_state["review_done"] = f"Rating of answer #{card.result_id} recorded." + (
                    f" Safety event #{event} opened; its reporting clock is running." if event else ""
                )
                st.rerun()

st.subheader("This week")
with Session(engine) as session:
    progress = [p for p in review_progress(session, plan, utcnow()) if p.task_id in tasks]
    agreement = agreement_table(session, tasks)
if progress:
    show_table(
        [
            {
                "task": p.task_id,
                "reviewed": p.done,
                "queued": p.queued,
                "weekly quota": p.quota,
                "safety flags": p.flagged,
            }
            for p in progress
        ],
        key="progress",
    )
st.subheader("Does the jury stand in for clinicians?")
if not agreement:
    st.write("No agreement figures yet: they appear once enough answers have been rated by clinicians and judges.")
else:
    st.table(agreement_frame(agreement))  # a plain table: few rows, and its text is what people quote
    st.caption(MEDHELM_NOTE)
clinician_scale_section(engine, plan)  # task-level figures only: no answer's jury score is shown
