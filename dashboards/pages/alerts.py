"""Alerts: open and past alerts; acknowledge, resolve or silence with a reason; dead letters."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st
from sqlmodel import Session

from dashboards.actions import (
    NotAllowed,
    acknowledge_alert,
    audit_enabled,
    resolve_alert,
    silence_alert,
    silence_available,
)
from dashboards.auth import require_viewer
from dashboards.data import current_plan, engine_for, refresh_every
from dashboards.layout import header
from monitor.read import alert_events, alerts_list, dead_letter_list, past_alerts
from monitor.storage import utcnow

SILENCE_FOR = {"1 hour": timedelta(hours=1), "4 hours": timedelta(hours=4), "1 day": timedelta(days=1),
               "1 week": timedelta(weeks=1)}

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, "Alerts")

with Session(engine) as session:
    open_now = alerts_list(session, open_only=True)

st.subheader("Act on an alert")
if not open_now:
    st.write("No open alert.")
else:
    labels = {a.id: f"#{a.id} · {a.severity.value} · {a.status.value} · {a.summary}" for a in open_now}
    chosen = st.selectbox("Alert", list(labels), format_func=lambda i: labels[i], key="alert")
    reason = st.text_input("Reason or note (recorded with your name)", key="reason")
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1])
    silence_for = c4.selectbox("Silence for", list(SILENCE_FOR), index=1, key="silence_for",
                               disabled=not silence_available())
    disabled = not viewer.can_act
    ack = c1.button("Acknowledge", key="ack", disabled=disabled, type="primary")
    res = c2.button("Resolve", key="resolve", disabled=disabled)
    sil = c3.button("Silence", key="silence", disabled=disabled or not silence_available())
    if disabled:
        st.info(viewer.why_not)
    if not silence_available():
        st.caption("Silences are not available in this installation's alerts package.")
    if not audit_enabled():
        st.caption("Decisions are recorded in each alert's history (the audit log is not installed).")
    try:
        if ack:
            acknowledge_alert(engine, viewer, chosen, reason, utcnow())
            st.success(f"Alert #{chosen} acknowledged by {viewer.actor}.")
        elif res:
            resolve_alert(engine, plan, viewer, chosen, reason, utcnow())
            st.success(f"Alert #{chosen} resolved by {viewer.actor}.")
        elif sil:
            silence_alert(engine, viewer, chosen, reason, SILENCE_FOR[silence_for], utcnow())
            st.success(f"Alert #{chosen} silenced for {silence_for} by {viewer.actor}.")
    except (NotAllowed, ValueError, LookupError, RuntimeError) as exc:
        st.error(str(exc))
    with Session(engine) as session:
        events = alert_events(session, chosen)
    st.caption(f"History of alert #{chosen}")
    st.dataframe(pd.DataFrame([{"at": e.at, "actor": e.actor, "from": e.from_status or "", "to": e.to_status,
                                "note": e.note} for e in events]), hide_index=True, width="stretch", key="history")


@st.fragment(run_every=refresh_every())
def lists() -> None:
    with Session(engine) as session:
        current = alerts_list(session, open_only=True)
        past = past_alerts(session)
        dead = dead_letter_list(session)
    st.subheader(f"Open alerts ({len(current)})")
    if current:
        st.dataframe(pd.DataFrame([{
            "id": a.id, "severity": a.severity.value, "status": a.status.value, "task": a.task_id, "rule": a.rule,
            "summary": a.summary, "owner": a.owner, "since": a.starts_at, "last seen": a.last_seen_at,
            "acknowledged by": a.acknowledged_by or "", "note": a.ack_note or ""} for a in current]),
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
    st.subheader(f"Undeliverable notifications ({len(dead)})")
    if dead:
        st.error(f"{len(dead)} notification(s) could not be delivered: check the routes below.")
        st.dataframe(pd.DataFrame([{
            "id": d.id, "alert": d.alert_id, "route": d.route, "event": d.event, "attempts": d.attempts,
            "last error": d.last_error, "created": d.created_at, "summary": d.summary} for d in dead]),
            hide_index=True, width="stretch", key="dead_letters")
    else:
        st.write("None: every notification was delivered or is still being retried.")


lists()
