"""Task: the committee's page for one task. It leads with the decision (status and every reason,
most serious first, open incidents and what to do, the owner), then the score, cost and latency
over a chosen time range with incidents marked, the subgroups, and recent answers beside their
questions; the detectors' statistics are one click away for those who want them."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import note_answers_viewed
from medmon.dashboards.charts import Marker, cost_latency_chart, score_chart, slices_chart
from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import fmt, interval, page, when
from medmon.dashboards.tables import show_table
from medmon.dashboards.text import plain
from medmon.db import utcnow
from medmon.monitor.read import (
    baseline_band,
    canary_texts,
    data_span,
    detector_states,
    drift_report_html,
    effective_task,
    findings,
    latest_drift_report_view,
    open_incidents_view,
    past_incidents_view,
    recent_answers,
    run_series,
    slice_gaps,
    stream_name,
    subgroup_slices,
    task_overview,
)

RANGES: dict[str, timedelta | None] = {"last 24 hours": timedelta(days=1), "last 7 days": timedelta(days=7)}
RANGES |= {"last 30 days": timedelta(days=30), "everything": None}
BOX = {"degraded": st.error, "watching": st.warning, "no data yet": st.info, "ok": st.success}
BOX["building the reference"] = st.info  # never green: detection is not armed yet

plan, viewer, engine = page("Task")
ids = [t.id for t in plan.tasks]
wanted = st.query_params.get("task")
left, right = st.columns([3, 1])
task_id = left.selectbox("Task", ids, index=ids.index(wanted) if wanted in ids else 0, key="task")
at_param = st.query_params.get("at")
moment: datetime | None = None
if at_param:
    try:
        moment = datetime.fromisoformat(at_param)
    except ValueError:
        st.warning(f"The address's time {at_param!r} is not an ISO date and time; showing the latest data.")
span_name = right.selectbox(
    "Time range", list(RANGES), index=1, key="range", help="A link from an incident centres the range on when it fired."
)
task = plan.task(task_id)
st.query_params["task"] = task_id  # the address names the task, so it can be shared


def _progress(evidence: float, threshold: float, degraded: bool) -> float:
    """How far a detector's evidence has come towards its alarm, on a log scale (1 = alarm)."""
    if degraded:
        return 1.0
    if evidence <= 1 or threshold <= 1:
        return 0.0
    return min(math.log(evidence) / math.log(threshold), 1.0)


def _window(last: datetime | None) -> tuple[datetime | None, datetime | None]:
    span = RANGES[span_name]
    if span is None or last is None:
        return None, None
    if moment is not None:
        return moment - span / 2, moment + span / 2
    return last - span, None


@st.fragment(run_every=refresh_every())
def detail() -> None:
    now = utcnow()
    with Session(engine) as session:
        effective = effective_task(session, plan, task_id)
        judged = effective.thresholds  # the approved ones; an edit awaiting approval is shown as proposed
        row = task_overview(session, plan, [task_id])[0]
        band = baseline_band(session, plan, task_id, effective)
        first, last = data_span(session, task_id)
        since, until = _window(last)
        points = run_series(session, task_id, runs=2000, latency_slo_s=judged.latency_slo_s, since=since, until=until)
        states = detector_states(session, task_id)
        found = findings(session, task_id, limit=20)
        slices = subgroup_slices(session, task_id, task.subgroups)
        answers = recent_answers(session, task_id, limit=20)
        incidents = open_incidents_view(session, now, task_id=task_id)
        past = past_incidents_view(session, now, task_id=task_id, limit=50)

    lines = "\n".join(f"- {r}" for r in row.reasons) or "- Every detector holds its reference."
    BOX[row.status](f"**{task_id}: {row.status}**\n\n{lines}")
    if row.reference is not None:
        st.progress(row.reference.share, text=f"Go-live reference {row.reference.share:.0%} built")
    owner = task.owner or plan.owners.clinical
    st.markdown(
        f"Owner **{owner.name}** ({owner.email}) · {row.category} › {row.subcategory or '-'} · benchmark "
        f"`{task.benchmark}` · risk tier {plan.use_case.risk_tier.value} · last probe {when(row.last_probe)}"
    )

    if incidents:
        st.subheader("What to do")
        for inc in incidents:
            with st.container(border=True):
                st.markdown(
                    f"**#{inc.id} {inc.title}** · {inc.severity} · {inc.status} since {when(inc.opened_at)} · "
                    f"{len(inc.signals)} signal(s) agree"
                )
                st.write(inc.runbook)
                if task.runbook_url:
                    st.markdown(f"Local procedure for this task: [{task.runbook_url}]({task.runbook_url})")
        st.page_link("views/alerts.py", label="Acknowledge, resolve or silence these incidents on the Alerts page")

    c = st.columns(4)
    c[0].metric("Score now", fmt(row.estimate), help=f"mean of the latest {row.n} scored answers")
    c[1].metric("95% CI", interval(row.ci_low, row.ci_high), help=effective.interval_method)
    c[2].metric("Baseline in force", fmt(band.value if band else None), help="the baseline the task is compared with")
    c[3].metric(
        "Minimum in force",
        fmt(judged.min_score),
        help=f"in force: {effective.in_force_words}",
        delta=f"proposed {row.proposed_min_score:.2f}, not approved" if row.proposed_min_score is not None else None,
        delta_color="off",
    )
    for sentence in row.proposals:
        st.warning(sentence[:1].upper() + sentence[1:])

    markers = [
        Marker(
            i.opened_at, "model change" if i.cause == "model_change" else "incident", f"#{i.id} {i.title}: {i.summary}"
        )
        for i in [*incidents, *past]
        if i.opened_at is not None
    ]
    if points:
        shown = f"{when(points[0].at)} to {when(points[-1].at)}" if points[0].at and points[-1].at else ""
        st.caption(
            f"{len(points)} probe runs, {shown}"
            + (f" (centred on {when(moment)})" if moment else "")
            + f"; data from {when(first)} to {when(last)}."
        )
        score_state = next((s for s in states if s.metric == "score" and s.direction == "drop"), None)
        st.plotly_chart(
            score_chart(
                points,
                baseline=band.value if band else None,
                baseline_ci=(band.ci_low, band.ci_high) if band else None,
                threshold=judged.min_score,
                alarm_line=score_state.null_mean if score_state else None,
                markers=markers,
            ),
            key="score_chart",
        )
        if band is not None:
            st.caption(
                f"Baseline in force: {band.source_kind} evidence for {plain(band.model)}, "
                f"version {plain(band.version)}, "
                f"n={band.n}. The drift detectors compare each run with the go-live reference and alarm when "
                "their evidence crosses a threshold set by the plan's false-alarm budget. Go-live reference: "
                f"{effective.go_live.text}."
            )
    elif last is not None:
        st.info(f"No probe run in the {span_name} shown; data runs from {when(first)} to {when(last)}.")
    else:
        st.info("No probe has run for this task yet: there is nothing to chart.")

    st.subheader("Cost and latency")
    if points:
        cost = sum(p.cost_usd or 0.0 for p in points)
        calls = sum(p.calls for p in points)
        c = st.columns(4)
        c[0].metric("Calls shown", calls)
        c[1].metric("Cost (USD)", f"{cost:.4f}")
        c[2].metric("Errors", sum(p.errors for p in points))
        c[3].metric("Over latency objective", sum(p.over_slo for p in points))
        st.plotly_chart(
            cost_latency_chart(points, budget=judged.cost_budget_per_call, slo=judged.latency_slo_s, markers=markers),
            key="cost_chart",
        )
    else:
        st.write("No probe run to show.")

    st.subheader("Subgroup slices")
    if not task.subgroups:
        st.write("The plan names no subgroup tags for this task.")
    elif not slices:
        st.write(f"No recent answer carries the tags {', '.join(task.subgroups)}.")
    else:
        gaps = slice_gaps(slices)
        st.caption(
            "A subgroup is a problem of its own when its gap to the others widens beyond the gap at "
            "approval; when every subgroup falls with the whole, the accuracy incident covers it."
        )
        show_table(
            [
                {
                    "tag": g.tag,
                    "gap now": g.gap,
                    "gap at baseline": g.baseline_gap,
                    "widening": g.widening,
                    "worst": g.worst,
                    "best": g.best,
                }
                for g in gaps
            ],
            key="gaps",
            column_config={
                k: st.column_config.NumberColumn(format="%.3f") for k in ("gap now", "gap at baseline", "widening")
            },
        )
        cols = st.columns(len(task.subgroups))
        for col_, tag in zip(cols, task.subgroups, strict=True):
            col_.plotly_chart(slices_chart(slices, tag), key=f"slice_{tag}")

    st.subheader("Recent answers, beside their questions")
    if not answers:
        st.write("No answers yet.")
    else:
        seen = f"answers_viewed:{task_id}"  # audited once per session and task, not on every refresh
        if not st.session_state.get(seen):
            note_answers_viewed(engine, viewer, task_id, "task", [a.result_id for a in answers], now)
            st.session_state[seen] = True
        texts = canary_texts(plan, task_id)
        show_table(
            [
                {
                    "at": a.at,
                    "canary": a.canary_id,
                    "question": (texts[a.canary_id].prompt if a.canary_id in texts else "")[:300],
                    "reference": " | ".join(texts[a.canary_id].references) if a.canary_id in texts else "",
                    "answer": (a.answer or "")[:300],
                    "scorer read": ("unreadable" if a.parsed is False else a.extracted or ""),
                    "read by": a.read_path or "",
                    "score": a.score,
                    "correct": a.correct,
                    "error": a.error_type or "",
                    "served model": a.served_model or "",
                    "tags": ", ".join(f"{k}={v}" for k, v in sorted(a.tags.items())),
                    "judges": "; ".join(
                        f"{v.judge}/{v.criterion}: {fmt(v.score, 'g') if v.score is not None else v.parse_status}"
                        for v in a.verdicts
                    )
                    or "no jury verdict",
                }
                for a in answers
            ],
            key="answers",
            column_config={
                "question": st.column_config.TextColumn(width="large"),
                "answer": st.column_config.TextColumn(width="medium"),
                "at": st.column_config.DatetimeColumn(format="D MMM HH:mm"),
            },
        )
        st.caption(
            "Questions and references as stored in the canary pack (imported canaries were redacted on "
            "import); answers as stored after the plan's redactor."
        )

    with st.expander("Statistics: detector evidence, findings and past incidents"):
        if not states:
            st.write("No detector has run for this task yet.")
        else:
            show_table(
                [
                    {
                        "stream": stream_name(s.key, task_id),
                        "status": s.status.value,
                        "progress to alarm": _progress(s.evidence, s.threshold, s.status.value == "degraded"),
                        "evidence": s.evidence,
                        "alarm threshold": s.threshold,
                        "reference": s.null_mean,
                        "baseline": s.baseline_mean,
                        "n": s.n,
                        "segment": s.segment,
                        "updated": s.updated_at,
                    }
                    for s in states
                ],
                column_config={
                    "evidence": st.column_config.NumberColumn(
                        format="%.3g", help="the detector's e-value or statistic; it alarms at the threshold"
                    ),
                    "alarm threshold": st.column_config.NumberColumn(format="%.3g"),
                    "progress to alarm": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f"),
                    "reference": st.column_config.NumberColumn(format="%.3f"),
                    "baseline": st.column_config.NumberColumn(format="%.3f"),
                },
                key="detectors",
            )
        if found:
            show_table(
                [
                    {
                        "at": f.created_at,
                        "kind": f.kind,
                        "stream": f.metric,
                        "estimate": f.estimate,
                        "95% CI": interval(f.ci_low, f.ci_high),
                        "reference": f.null_mean,
                        "statistic": f.statistic,
                        "threshold": f.threshold,
                        "n": f.n,
                        "summary": f.summary,
                    }
                    for f in found
                ],
                key="findings",
            )
        if past:
            show_table(
                [
                    {
                        "incident": f"#{i.id} {i.title}",
                        "opened": i.opened_at,
                        "closed": i.closed_at,
                        "resolved by": i.resolved_by or "",
                        "reason": i.resolve_reason or "",
                        "signals": len(i.signals),
                    }
                    for i in past
                ],
                key="past_incidents",
            )


def _at(value: datetime | None) -> str:
    return "?" if value is None else when(value)


def drift_report() -> None:
    """The newest evidently report: which output descriptors moved between the reference window
    (the first answers) and the recent one. Outside the refreshing fragment, and its HTML (several
    MB) is read only when downloaded; it is never embedded in the page, so none of it runs here."""
    st.subheader("Output drift report")
    with Session(engine) as session:
        report = latest_drift_report_view(session, task_id)
    if report is None:
        st.write(
            "No drift report yet. The service stores one per `detection.drift_report_every`; "
            f"make one now with `medmon drift report PLAN --task {task_id}`."
        )
        return
    st.caption(
        f"Report {report.id} of {when(report.created_at)}: the first {report.n_reference} "
        f"answers ({_at(report.reference_from)} to {_at(report.reference_to)}) against the latest "
        f"{report.n_current} ({_at(report.current_from)} to {_at(report.current_to)}). "
        "KS tests without a false-alarm budget: a description of how outputs changed, never an alert."
    )
    if report.drifted:
        st.warning(f"Drifted: {', '.join(report.drifted)}")
    else:
        st.info("No output descriptor drifted.")
    show_table(
        [
            {
                "column": c.column,
                "method": c.method,
                "p-value": c.p_value,
                "threshold": c.threshold,
                "drifted": c.drifted,
            }
            for c in report.columns
        ],
        key="drift_columns",
        column_config={"p-value": st.column_config.NumberColumn(format="%.3g")},
    )
    for name, note in report.notes.items():
        st.caption(f"**{name}**: {note}")
    if not report.html_available:
        st.write(f"The report's HTML is missing ({report.html_path or 'not stored'}).")
        return
    report_id = report.id

    def html() -> str:
        with Session(engine) as session:
            return drift_report_html(session, report_id)

    st.download_button(
        "Download the full report (HTML)",
        html,
        file_name=f"drift-{task_id}-{report_id}.html",
        mime="text/html",
        key="drift_download",
    )


detail()
drift_report()
