"""Safety: events and their reporting clocks, corrective actions, near misses, suspend and resume.

Owners open a safety event (from an open alert or on their own account), re-grade it, record the
report to the authority and the decision; reviewers' safety flags arrive here already opened.
Suspending a task calls the plan's suspend route; for a high-risk task a second owner confirms.
Resuming is refused without a passing re-evaluation since the suspension or a committee decision.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import note_answers_viewed
from medmon.dashboards.auth import NotAllowed, may_act, require_role, signed_in_owner
from medmon.dashboards.layout import page, when
from medmon.dashboards.tables import show_table
from medmon.db import session_scope, utcnow
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance import safety, suspension
from medmon.monitor.governance.review import reviewer_tasks
from medmon.monitor.plan.oversight import SEVERITIES
from medmon.monitor.read import near_misses, safety_events, suspended_tasks, suspensions

plan, viewer, engine = page("Safety")
task_ids = [t.id for t in plan.tasks]
# Every record here names a person: a verified owner's sign-in (a verified reviewer's for near
# misses on their tasks); --allow-local-actions does not reach this page.
is_owner = may_act(viewer, "record safety decisions")
may_record = is_owner or (viewer.verified and bool(reviewer_tasks(plan.oversight, viewer.email)))


def act(what: str, fn: Callable[[Session], object], *, task: str, role_act: str = "record safety decisions") -> None:
    """Run one recorded action in its own transaction, after the sign-in and role check for this
    task (``medmon.monitor.governance.roles``); say what happened, or why it was refused."""
    try:
        if role_act != "record near misses" or not may_record:
            signed_in_owner(viewer, role_act)
        require_role(viewer, role_act, task)
        with session_scope(engine) as session:
            fn(session)
    except (NotAllowed, GovernanceError, ValueError) as exc:
        st.error(f"{what} refused: {exc}")
    else:
        st.session_state["safety_done"] = f"{what}: recorded."
        st.rerun()


if "safety_done" in st.session_state:
    st.success(st.session_state.pop("safety_done"))
now = utcnow()
with Session(engine) as session:
    events = safety_events(session, plan, now)
    misses = near_misses(session)
    held = suspended_tasks(session)
    history = suspensions(session)
if (events or misses) and not st.session_state.get("answers_viewed:safety"):  # narratives: once per session
    note_answers_viewed(
        engine,
        viewer,
        None,
        "safety",
        [],
        now,
        what="safety event narratives, near misses",
        rows=len(events) + len(misses),
    )
    st.session_state["answers_viewed:safety"] = True

st.subheader(f"Safety events ({sum(1 for e in events if e.event.status != 'closed')} open)")
st.caption(
    f"Reporting clocks: {plan.oversight.safety.jurisdiction}, {plan.oversight.safety.device_status}; "
    + ", ".join(f"{k} {v}" for k, v in plan.oversight.safety.clocks.items())
    + f"; alerted {plan.oversight.safety.warn_before} before the deadline."
)
if events:
    show_table(
        [
            {
                "event": f"#{e.event.id}",
                "task": e.event.task_id,
                "severity": e.event.severity,
                "status": e.event.status,
                "opened": when(e.event.opened_at),
                "source": e.event.source_ref or e.event.source,
                "due": when(e.clock.due_at) if e.clock.due_at else "",
                "clock": e.clock.label,
                "actions open": sum(1 for a in e.actions if a.status != "closed"),
                "what happened": e.event.what_happened,
            }
            for e in events
        ],
        key="events",
    )
    ids = [e.event.id for e in events if e.event.id is not None]  # stored rows: every one has its id
    chosen = st.selectbox("Event", ids, format_func=lambda i: f"#{i}", key="event_pick")
    row = next(e for e in events if e.event.id == chosen)
    event_task = row.event.task_id
    with Session(engine) as session:
        document = safety.event_document(session, plan, row.event.id or 0, now)
    st.download_button(
        "Export for the incident system (JSON)",
        json.dumps(document, indent=2, default=str),
        file_name=f"safety-event-{chosen}.json",
        mime="application/json",
        key="export_json",
    )
    if row.actions:
        show_table(
            [
                {
                    "action": f"#{a.id}",
                    "description": a.description,
                    "owner": a.owner,
                    "due": f"{a.due_at:%Y-%m-%d}",
                    "status": a.status,
                    "effectiveness check": f"re-evaluation #{a.check_reevaluation_id}"
                    if a.check_reevaluation_id
                    else "",
                }
                for a in row.actions
            ],
            key="actions",
        )
    if is_owner:
        with st.expander("Record on this event"):
            ref = st.text_input("Report reference (authority or incident system)", key="report_ref")
            if st.button("Mark reported", key="mark_reported"):
                act("Report", lambda s: safety.mark_reported(s, chosen, ref, viewer.actor, utcnow()), task=event_task)
            grade = st.selectbox(
                "Re-grade severity", SEVERITIES, index=SEVERITIES.index(row.event.severity), key="regrade"
            )
            why = st.text_input("Reason for re-grading", key="regrade_reason")
            if st.button("Re-grade", key="do_regrade"):
                act(
                    "Re-grade",
                    lambda s: safety.regrade(s, plan, chosen, grade, why, viewer.actor, utcnow()),
                    task=event_task,
                )
            text = st.text_area("Decision", key="decision")
            close = st.checkbox("Close the event (needs every corrective action closed)", key="close_event")
            if st.button("Record decision", key="do_decide"):
                act(
                    "Decision",
                    lambda s: safety.decide(s, chosen, text, viewer.actor, utcnow(), close=close),
                    task=event_task,
                )
            what = st.text_input("Corrective action", key="action_text")
            owner = st.text_input("Action owner", key="action_owner")
            due = st.date_input("Due", key="action_due")
            if st.button("Add corrective action", key="do_action"):
                from datetime import datetime

                due_at = datetime(due.year, due.month, due.day, tzinfo=UTC)
                act(
                    "Corrective action",
                    lambda s: safety.add_action(s, chosen, what, owner, due_at, viewer.actor, utcnow()),
                    task=event_task,
                )
            open_actions = [a.id for a in row.actions if a.status != "closed" and a.id is not None]
            if open_actions:
                target = st.selectbox("Close action", open_actions, format_func=lambda i: f"#{i}", key="close_pick")
                check = st.number_input(
                    "by re-evaluation # (its effectiveness check)", min_value=1, step=1, key="check_id"
                )
                if st.button("Close by its check", key="do_close"):
                    act(
                        "Effectiveness check",
                        lambda s: safety.close_action(s, target, int(check), viewer.actor, utcnow()),
                        task=event_task,
                    )
else:
    st.write("No safety event has been opened.")

if is_owner:
    with st.expander("Open a safety event"):
        task = st.selectbox("Task", task_ids, key="event_task")
        severity = st.selectbox("Severity", SEVERITIES, index=SEVERITIES.index("serious"), key="event_severity")
        what = st.text_area("What happened", key="event_what")
        source_ref = st.text_input("From an incident or alert (e.g. incident:3, alert:7; optional)", key="event_ref")
        answers = st.text_input("Answers involved (ids, comma-separated; optional)", key="event_answers")
        if st.button("Open safety event", key="open_event"):
            ids = [int(x) for x in answers.replace(" ", "").split(",") if x.isdigit()]
            source = source_ref.split(":", 1)[0] if source_ref.split(":", 1)[0] in ("incident", "alert") else "person"
            act(
                "Safety event",
                lambda s: safety.open_event(
                    s,
                    plan,
                    task_id=task,
                    severity=severity,
                    what_happened=what,
                    source=source,
                    source_ref=source_ref.strip(),
                    actor=viewer.actor,
                    now=utcnow(),
                    result_ids=ids,
                ),
                task=task,
            )

st.subheader("Suspension")
if plan.oversight.suspend is None:
    st.write("The plan has no suspend route (oversight.suspend).")
else:
    show_table(
        [
            {
                "task": t,
                "state": held[t].status if t in held else "in use",
                "since": when(held[t].suspended_at or held[t].requested_at) if t in held else "",
                "reason": held[t].reason if t in held else "",
            }
            for t in task_ids
        ],
        key="suspension_state",
    )
    if is_owner:
        task = st.selectbox("Task to suspend or resume", task_ids, key="suspend_task")
        reason = st.text_input("Reason", key="suspend_reason")
        current = held.get(task)
        if current is None and st.button("Suspend", key="do_suspend"):
            act(
                "Suspension",
                lambda s: suspension.request(s, plan, task, reason, viewer.actor, utcnow()),
                task=task,
                role_act="suspend",
            )
        if (
            current is not None
            and current.status == "pending"
            and st.button("Confirm suspension (second owner)", key="do_confirm")
        ):
            pending = current.id or 0
            act(
                "Confirmation",
                lambda s: suspension.confirm(s, plan, pending, viewer.actor, utcnow()),
                task=task,
                role_act="suspend",
            )
        if current is not None and current.status == "suspended":
            decision = st.text_input("Committee decision (only without a passing re-evaluation)", key="resume_dec")
            reference = st.text_input("Decision reference", key="resume_ref")
            if st.button("Resume", key="do_resume"):
                act(
                    "Resume",
                    lambda s: suspension.resume(
                        s, plan, task, viewer.actor, utcnow(), decision=decision, reference=reference
                    ),
                    task=task,
                    role_act="resume",
                )
    latest = {s.task_id: s for s in reversed(history)}  # history is newest first: the newest per task wins
    failed = [s for s in latest.values() if s.status == "failed"]
    if failed:
        st.error(
            "The suspend route failed, so these tasks are NOT suspended: "
            + "; ".join(f"#{s.id} {s.task_id}: {s.route_error}" for s in failed[:3])
        )
        if is_owner and st.button(
            f"Call the route again for #{failed[0].id} ({failed[0].task_id})", key="retry_suspend"
        ):
            act(
                "Suspension",
                lambda s: suspension.confirm(s, plan, failed[0].id or 0, viewer.actor, utcnow()),
                task=failed[0].task_id,
                role_act="suspend",
            )

st.subheader(f"Near misses ({len(misses)})")
if misses:
    show_table(
        [{"at": when(m.created_at), "task": m.task_id, "what": m.what, "by": m.recorded_by} for m in misses],
        key="misses",
    )
if may_record:
    with st.expander("Record a near miss (no harm)"):
        miss_task = st.selectbox("Task", task_ids, key="miss_task")
        miss_what = st.text_area("What nearly happened", key="miss_what")
        if st.button("Record near miss", key="do_miss"):
            act(
                "Near miss",
                lambda s: safety.record_near_miss(s, plan, miss_task, miss_what, viewer.actor, utcnow()),
                task=miss_task,
                role_act="record near misses",
            )
