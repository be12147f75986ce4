"""Alerts: open and past alerts; acknowledge, resolve or silence with a reason; dead letters."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import NotAllowed, acknowledge_alert, requeue_dead_letter, resolve_alert, silence_alert
from medmon.dashboards.auth import require_viewer
from medmon.dashboards.data import current_plan, engine_for, refresh_every
from medmon.dashboards.layout import header
from medmon.monitor.read import alert_events, dead_letter_list, open_alerts_view, past_alerts, silences
from medmon.db import utcnow

SILENCE_FOR = {"1 hour": timedelta(hours=1), "4 hours": timedelta(hours=4), "1 day": timedelta(days=1),
               "1 week": timedelta(weeks=1)}

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, "Alerts")

with Session(engine) as session:
    open_now = open_alerts_view(session, utcnow())

st.subheader("Act on an alert")
if not open_now:
    st.write("No open alert.")
else:
    labels = {a.id: f"#{a.id} · {a.severity} · {a.status} · {a.summary}" for a in open_now}
    chosen = st.selectbox("Alert", list(labels), format_func=lambda i: labels[i], key="alert")
    reason = st.text_input("Reason (recorded with your name in the alert's history and the audit log)",
                           key="reason")
    c1, c2, c3, c4 = st.columns(4)
    disabled = not viewer.can_act
    ack = c1.button("Acknowledge", key="ack", disabled=disabled, type="primary")
    res = c2.button("Resolve", key="resolve", disabled=disabled)
    sil = c3.button("Silence", key="silence", disabled=disabled)
    silence_for = c4.selectbox("Silence for", list(SILENCE_FOR), index=1, key="silence_for",
                               label_visibility="collapsed", disabled=disabled)
    if disabled:
        st.info(viewer.why_not)
    try:
        if ack:
            acknowledge_alert(engine, plan, viewer, chosen, reason, utcnow())
            st.success(f"Alert #{chosen} acknowledged by {viewer.actor}.")
        elif res:
            resolve_alert(engine, plan, viewer, chosen, reason, utcnow())
            st.success(f"Alert #{chosen} resolved by {viewer.actor}.")
        elif sil:
            silence_alert(engine, viewer, chosen, reason, SILENCE_FOR[silence_for], utcnow())
            st.success(f"Alert #{chosen} silenced for {silence_for} by {viewer.actor}.")
    except (NotAllowed, ValueError, LookupError) as exc:
        st.error(str(exc))
    with Session(engine) as session:
        events = alert_events(session, chosen)
    st.caption(f"History of alert #{chosen}")
    st.dataframe(pd.DataFrame([{"at": e.at, "actor": e.actor, "from": e.from_status or "", "to": e.to_status,
                                "note": e.note} for e in events]), hide_index=True, width="stretch", key="history")


@st.fragment(run_every=refresh_every())
def lists() -> None:
    now = utcnow()
    with Session(engine) as session:
        current = open_alerts_view(session, now)
        past = past_alerts(session)
        muted = silences(session, now)
        dead = dead_letter_list(session)
    st.subheader(f"Open alerts ({len(current)})")
    if current:
        st.dataframe(pd.DataFrame([{
            "id": a.id, "severity": a.severity, "status": a.status, "task": a.task, "rule": a.rule,
            "summary": a.summary, "owner": a.owner, "since": a.since, "last seen": a.last_seen,
            "acknowledged by": a.acknowledged_by or "", "note": a.note or "",
            "silenced until": a.silenced_until} for a in current]),
            hide_index=True, width="stretch", key="open_alerts")
    else:
        st.write("None.")
    st.subheader(f"Past alerts ({len(past)})")
    if past:
        st.dataframe(pd.DataFrame([{
            "id": a.id, "severity": a.severity.value, "task": a.task_id, "rule": a.rule, "summary": a.summary,
            "started": a.starts_at, "ended": a.ends_at, "resolved by": a.resolved_by or "medmon",
            "reason": a.resolve_reason or ""} for a in past]), hide_index=True, width="stretch", key="past_alerts")
    else:
        st.write("None.")
    if muted:
        st.subheader(f"Silences ({len(muted)})")
        st.dataframe(pd.DataFrame([{"id": s.id, "mutes": s.matchers, "from": s.starts_at, "until": s.ends_at,
                                    "by": s.created_by, "reason": s.reason} for s in muted]),
                     hide_index=True, width="stretch", key="silences")
    st.subheader(f"Undeliverable notifications ({len(dead)})")
    if dead:
        st.error(f"{len(dead)} notification(s) could not be delivered: check the routes, then send them again.")
        st.dataframe(pd.DataFrame([{
            "id": d.id, "alert": d.alert_id, "route": d.route, "event": d.event, "attempts": d.attempts,
            "last error": d.last_error, "created": d.created_at, "summary": d.summary} for d in dead]),
            hide_index=True, width="stretch", key="dead_letters")
    else:
        st.write("None: every notification was delivered or is still being retried.")


lists()

with Session(engine) as session:
    dead_now = dead_letter_list(session)
if dead_now and viewer.can_act:
    with st.form("requeue_form"):
        st.markdown("**Send an undeliverable notification again** (after fixing its receiver)")
        pick = st.selectbox("Notification", [d.id for d in dead_now], key="requeue_id",
                            format_func=lambda i: next(f"#{d.id} · {d.route} · {d.event} · {d.summary}"
                                                       for d in dead_now if d.id == i))
        note = st.text_input("Note", key="requeue_note")
        if st.form_submit_button("Send again"):
            try:
                requeue_dead_letter(engine, viewer, pick, note, utcnow())
                st.success(f"Notification #{pick} queued again by {viewer.actor}.")
            except (NotAllowed, ValueError, LookupError) as exc:
                st.error(str(exc))
