"""Alerts: open incidents, grouped with the signals that are their evidence, and a model change with the
incidents that followed it on every task (one page, one timeline); acknowledge, resolve or silence several
at once with one reason; silences by label matchers; past incidents; dead letters."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlencode

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import (
    NotAllowed,
    acknowledge_incidents,
    requeue_dead_letter,
    resolve_incidents,
    silence_incidents,
    silence_matching,
)
from medmon.dashboards.auth import may_act
from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import page, when
from medmon.dashboards.tables import show_table
from medmon.dashboards.text import plain
from medmon.db import utcnow
from medmon.monitor.read import IncidentView, dead_letter_list, open_incidents_view, past_incidents_view, silences

SILENCE_FOR = {
    "1 hour": timedelta(hours=1),
    "4 hours": timedelta(hours=4),
    "1 day": timedelta(days=1),
    "1 week": timedelta(weeks=1),
}

plan, viewer, engine = page("Alerts")


def task_link(task: str, at: datetime | None) -> str:
    """The task page at the moment an incident fired (relative, so it works behind any address);
    a category's pooled detector or a judge has no task page: the overview shows them."""
    if task not in {t.id for t in plan.tasks}:
        return "./"
    query = {"task": task} | ({"at": at.isoformat(timespec="minutes")} if at is not None else {})
    return f"./task?{urlencode(query)}"


def _label(i: IncidentView) -> str:
    return f"#{i.id} · {i.severity} · {i.status} · {i.title} ({len(i.signals)} signal(s)){_family(i)}"


def _family(i: IncidentView) -> str:
    """Where the incident stands in its family: the model change it followed, or what followed it."""
    if i.parent_id is not None:
        return f" · followed model change #{i.parent_id}"
    return f" · {len(i.children)} incident(s) followed it" if i.children else ""


def families(views: list[IncidentView]) -> list[IncidentView]:
    """Each incident followed by the open incidents that followed it, so a model change and its
    aftermath read as one block; a child whose parent is not listed stands on its own."""
    shown = {i.id for i in views}
    out: list[IncidentView] = []
    for i in views:
        if i.parent_id is None or i.parent_id not in shown:
            out += [i, *(c for c in views if c.parent_id == i.id)]
    return out


def timeline_rows(i: IncidentView) -> list[dict[str, object]]:
    """The incident's timeline as a table: when, whose (a child is named by its number), what happened."""
    return [
        {
            "when": e.at,
            "incident": f"#{e.incident}" + ("" if e.incident == i.id else f" ({e.task})"),
            "what": "incident opened" if e.what == "opened" else e.what,
            "signal": e.rule,
            "by": e.actor,
            "note": e.note,
        }
        for e in i.timeline
    ]


with Session(engine) as session:
    open_now = families(open_incidents_view(session, utcnow()))

st.subheader("Act on incidents")
if not open_now:
    st.write("No open incident.")
else:
    # One box per incident, none ticked: acting on an incident is a choice made one incident at a
    # time (a multiselect offers "Select all" first, one click from acknowledging everything).
    st.markdown("**Incidents** (one reason covers every incident ticked and all their signals)")
    chosen = sorted(
        i.id
        for i in open_now
        if st.checkbox(("↳ " if i.parent_id is not None else "") + _label(i), value=False, key=f"incident_{i.id}")
    )
    still_open = {i.id for i in open_now}
    followed = [c for i in open_now if i.id in chosen for c in i.children if c in still_open]
    with_children = bool(followed) and st.checkbox(
        f"Resolving also resolves the {len(followed)} incident(s) that followed the model change",
        value=True,
        key="with_children",
        help="Untick to keep them open: each then notifies on its own.",
    )
    # With its children, a model change resolves them in one notification; ticked alone, children go first
    # (their end is news on the parent's page, which is still up).
    resolving = [c for c in chosen if not (with_children and c in followed)]
    resolving.sort(key=lambda c: (next(i.parent_id is None for i in open_now if i.id == c), c))
    reason = st.text_input(
        "Reason (recorded with your name in each incident's history and the audit log)", key="reason"
    )
    c1, c2, c3, c4 = st.columns(4)
    disabled = not viewer.can_act
    ack = c1.button("Acknowledge", key="ack", disabled=disabled, type="primary")
    res = c2.button("Resolve", key="resolve", disabled=disabled)
    sil = c3.button("Silence", key="silence", disabled=disabled)
    silence_for = c4.selectbox(
        "Silence for", list(SILENCE_FOR), index=1, key="silence_for", label_visibility="collapsed", disabled=disabled
    )
    if disabled:
        st.info(viewer.why_not)
    names = ", ".join(f"#{i}" for i in chosen)
    what = f"Incident {names}" if len(chosen) == 1 else f"Incidents {names}"
    try:
        if ack:
            acknowledge_incidents(engine, plan, viewer, chosen, reason, utcnow())
            family = f", with the {len(followed)} that followed" if followed else ""
            st.success(f"{what} acknowledged by {viewer.actor}{family}.")
        elif res:
            resolve_incidents(engine, plan, viewer, resolving, reason, utcnow(), children=with_children)
            also = f", with the {len(followed)} that followed" if with_children else ""
            st.success(f"{what} resolved by {viewer.actor}{also}.")
        elif sil:
            silence_incidents(engine, viewer, chosen, reason, SILENCE_FOR[silence_for], utcnow())
            family = f", with the {len(followed)} that followed" if followed else ""
            st.success(f"{what} silenced for {silence_for} by {viewer.actor}{family}.")
    except (NotAllowed, ValueError, LookupError) as exc:
        st.error(str(exc))


if viewer.can_act:
    with st.form("silence_form"):
        st.markdown(
            "**Silence by labels**: every alert whose labels match all the matchers, e.g. "
            "`task=knowledge-qa, cause=cost` or `cause=~cost|latency` (labels: deployment, task, cause, "
            "rule, metric, severity; `=`, `!=`, `=~`, `!~`)."
        )
        matchers = st.text_input("Matchers", key="silence_matchers")
        m1, m2 = st.columns([3, 1])
        why = m1.text_input("Reason", key="silence_reason")
        span = m2.selectbox("For", list(SILENCE_FOR), index=1, key="silence_span")
        if st.form_submit_button("Create silence"):
            try:
                made = silence_matching(engine, viewer, matchers, why, SILENCE_FOR[span], utcnow())
                st.success(f"Silence #{made.id} until {when(made.ends_at)} by {viewer.actor}.")
            except (NotAllowed, ValueError) as exc:
                st.error(str(exc))


@st.fragment(run_every=refresh_every())
def lists() -> None:
    now = utcnow()
    with Session(engine) as session:
        current = families(open_incidents_view(session, now))
        past = past_incidents_view(session, now)
        muted = silences(session, now)
        dead = dead_letter_list(session)
    st.subheader(f"Open incidents ({len(current)})")
    if current:
        show_table(
            [
                {
                    # What it is first (with its number; a child of a model change marked ↳ under its
                    # parent), then how bad and where it stands: the columns that show at 1,024 px.
                    "incident": ("↳ " if i.parent_id is not None else "") + f"#{i.id} {i.title}",
                    "severity": i.severity,
                    "status": i.status,
                    "task page": task_link(i.task, i.opened_at),  # the action first: in view at 1,024 px
                    "part of": f"#{i.parent_id}" if i.parent_id is not None else "",
                    "followed by": ", ".join(f"#{c}" for c in i.children),
                    "owner": i.owner,
                    "since": i.opened_at,
                    "signals": len(i.signals),
                    "acknowledged by": i.acknowledged_by or "",
                    "silenced until": i.silenced_until,
                    "summary": i.summary,
                    "note": i.ack_note or "",
                    "id": i.id,  # already in the incident's name: drawn last, kept to look a row up by
                }
                for i in current
            ],
            key="open_incidents",
            lead=("incident", "severity", "status", "task page"),  # what it is and how bad, at 1,024 px
            column_config={
                "task page": st.column_config.LinkColumn(
                    display_text="open the task", help="the task page at the moment the incident fired"
                ),
                "since": st.column_config.DatetimeColumn(format="D MMM HH:mm"),
                "silenced until": st.column_config.DatetimeColumn(format="D MMM HH:mm"),
            },
        )
        for i in current:
            with st.expander(f"#{i.id} {plain(i.title)}: {len(i.signals)} signal(s), what to do{_family(i)}"):
                st.write(i.runbook)
                if i.children:
                    st.markdown(
                        f"**Followed this model change:** {', '.join(f'#{c}' for c in i.children)}. They page as "
                        "updates of this incident; the timeline below holds their signals too."
                    )
                elif i.parent_id is not None:
                    st.markdown(f"**Followed model change #{i.parent_id}**: notified as an update of its page.")
                show_table(
                    [
                        {
                            "alert": m.alert_id,
                            "rule": m.rule,
                            "stream": m.metric,
                            "status": m.status,
                            "severity": m.severity,
                            "since": m.since,
                            "summary": m.summary,
                        }
                        for m in i.signals
                    ],
                    key=f"signals_{i.id}",
                    column_config={"since": st.column_config.DatetimeColumn(format="D MMM HH:mm")},
                )
                st.markdown("**Timeline**" + (" (this incident and those that followed it)" if i.children else ""))
                show_table(
                    timeline_rows(i),
                    key=f"timeline_{i.id}",
                    column_config={"when": st.column_config.DatetimeColumn(format="D MMM HH:mm")},
                )
    else:
        st.write("None.")
    st.subheader(f"Past incidents ({len(past)})")
    if past:
        show_table(
            [
                {
                    "id": i.id,
                    "severity": i.severity,
                    "incident": i.title,
                    "part of": f"#{i.parent_id}" if i.parent_id is not None else "",
                    "followed by": ", ".join(f"#{c}" for c in i.children),
                    "opened": i.opened_at,
                    "closed": i.closed_at,
                    "resolved by": i.resolved_by or "medmon",
                    "reason": i.resolve_reason or "",
                    "signals": len(i.signals),
                    "task page": task_link(i.task, i.opened_at),
                    "summary": i.summary,
                }
                for i in past
            ],
            key="past_incidents",
            column_config={
                "task page": st.column_config.LinkColumn(display_text="open the task"),
                "opened": st.column_config.DatetimeColumn(format="D MMM HH:mm"),
                "closed": st.column_config.DatetimeColumn(format="D MMM HH:mm"),
            },
        )
    else:
        st.write("None.")
    if muted:
        st.subheader(f"Silences ({len(muted)})")
        show_table(
            [
                {
                    "id": s.id,
                    "mutes": s.matchers,
                    "from": s.starts_at,
                    "until": s.ends_at,
                    "by": s.created_by,
                    "reason": s.reason,
                }
                for s in muted
            ],
            key="silences",
        )
    st.subheader(f"Undeliverable notifications ({len(dead)})")
    if dead:
        st.error(f"{len(dead)} notification(s) could not be delivered: check the routes, then send them again.")
        show_table(
            [
                {
                    "id": d.id,
                    "alert": d.alert_id,
                    "route": d.route,
                    "event": d.event,
                    "attempts": d.attempts,
                    "last error": d.last_error,
                    "created": d.created_at,
                    "summary": d.summary,
                }
                for d in dead
            ],
            key="dead_letters",
        )
    else:
        st.write("None: every notification was delivered or is still being retried.")


lists()

with Session(engine) as session:
    dead_now = dead_letter_list(session)
if dead_now and may_act(viewer, "requeue notifications"):  # needs a verified sign-in
    with st.form("requeue_form"):
        st.markdown("**Send an undeliverable notification again** (after fixing its receiver)")
        pick = st.selectbox(
            "Notification",
            [d.id for d in dead_now],
            key="requeue_id",
            format_func=lambda i: next(f"#{d.id} · {d.route} · {d.event} · {d.summary}" for d in dead_now if d.id == i),
        )
        note = st.text_input("Note", key="requeue_note")
        if st.form_submit_button("Send again"):
            try:
                requeue_dead_letter(engine, viewer, pick, note, utcnow())
                st.success(f"Notification #{pick} queued again by {viewer.actor}.")
            except (NotAllowed, ValueError, LookupError) as exc:
                st.error(str(exc))
