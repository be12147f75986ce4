"""The Overview's first block: per task, the recommendation, the figure, what changed, the ask,
and a form to record the committee's decision (the report's page 1, on screen)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine

from medmon.dashboards.actions import NotAllowed
from medmon.dashboards.auth import Viewer
from medmon.dashboards.decide import record_committee_decision
from medmon.db import utcnow
from medmon.monitor.plan.model import Plan
from medmon.monitor.read import CURRENT_SCORE_NAME, DECISIONS, DecisionRow

BOX = {"suspend": st.error, "restrict": st.error, "continue with conditions": st.warning}


def _box(row: DecisionRow) -> Callable[..., Any]:
    if row.action in BOX:
        return BOX[row.action]
    return st.info if row.building else st.success


def decision_block(plan: Plan, viewer: Viewer, engine: Engine, rows: list[DecisionRow]) -> None:
    """Every task's decision, the most serious recommendation first, with the way to record one."""
    st.subheader("What the committee decides")
    for row in rows:
        lines = [f"**{row.task}: recommendation {row.action.upper()}**", f"{row.figure}."]
        if row.served_model != plan.deployment.model:
            lines.append(f"Served model now: **{row.served_model}** (approved: {plan.deployment.model}).")
        if row.building:
            lines.append(f"The {row.building}.")
        _box(row)("\n\n".join(lines))
        if row.changed:
            st.markdown("**What changed**\n\n" + "\n".join(f"- {c}" for c in row.changed))
        with st.expander(f"Why {row.action}, and the decisions requested ({len(row.requested)})"):
            st.markdown("\n".join(f"- {w[:1].upper()}{w[1:]}" for w in row.reasons))
            if row.requested:
                st.markdown("**Decisions requested**\n\n" + "\n".join(f"1. {d}" for d in row.requested))
        st.markdown(f"**Decision recorded:** {row.decided.sentence if row.decided else 'none yet.'}")
        _form(plan, viewer, engine, row)
    st.caption(f"Score now: the {CURRENT_SCORE_NAME}. Recommendation: by the plan's rules, as in the report.")


def _form(plan: Plan, viewer: Viewer, engine: Engine, row: DecisionRow) -> None:
    with st.expander(f"Record the committee's decision on {row.task}"):
        if not viewer.can_act:
            st.caption(viewer.why_not or "Read-only: sign in as an owner named in the plan to record a decision.")
            return
        with st.form(f"decide-{row.task}", clear_on_submit=True):
            decision = st.radio("Decision", DECISIONS, index=None, horizontal=True, key=f"decision-{row.task}")
            terms = st.text_input(
                "Conditions or restriction (required for 'continue with conditions' and 'restrict')",
                key=f"terms-{row.task}",
            )
            why = st.text_area("Why (kept in the audit log and shown in the next report)", key=f"why-{row.task}")
            st.caption(f"Recorded as {viewer.actor} at the time you submit, in the audit log.")
            if st.form_submit_button("Record decision"):
                try:
                    done = record_committee_decision(
                        engine,
                        plan,
                        viewer,
                        task=row.task,
                        decision=decision or "",
                        why=why,
                        terms=terms,
                        recommendation=row.action,
                        now=utcnow(),
                    )
                except (NotAllowed, ValueError) as exc:
                    st.error(str(exc))
                else:
                    st.success(f"Recorded (audit seq {done.seq}): {done.sentence}")
