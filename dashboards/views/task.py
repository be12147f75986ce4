"""Task detail: the score over time against baseline and threshold, the detector's evidence,
cost and latency, subgroup slices, and the latest canary answers with the jury's verdicts."""

from __future__ import annotations

import math
from datetime import datetime

import pandas as pd
import streamlit as st
from sqlmodel import Session

from medmon.dashboards.auth import require_viewer
from medmon.dashboards.charts import cost_latency_chart, score_chart, slices_chart
from medmon.dashboards.data import current_plan, engine_for, refresh_every
from medmon.dashboards.layout import fmt, header, interval
from medmon.monitor.read import (
    baseline_band,
    detector_states,
    drift_report_html,
    findings,
    latest_drift_report_view,
    recent_answers,
    run_series,
    slice_gaps,
    stream_name,
    subgroup_slices,
    task_overview,
)

plan = current_plan()
viewer = require_viewer(plan)
engine = engine_for(plan)
header(plan, viewer, "Task detail")
ids = [t.id for t in plan.tasks]
wanted = st.query_params.get("task")
left, right = st.columns([3, 1])
task_id = left.selectbox("Task", ids, index=ids.index(wanted) if wanted in ids else 0, key="task")
runs = right.selectbox("Runs shown", [50, 200, 1000], index=1, key="runs")
task = plan.task(task_id)
st.query_params["task"] = task_id  # the address names the task, so it can be shared


def _progress(evidence: float, threshold: float) -> float:
    """How far a detector's evidence has come towards its alarm, on a log scale (1 = alarm)."""
    if evidence <= 1 or threshold <= 1:
        return 0.0
    return min(math.log(evidence) / math.log(threshold), 1.0)


@st.fragment(run_every=refresh_every())
def detail() -> None:
    with Session(engine) as session:
        row = task_overview(session, plan, [task_id])[0]
        band = baseline_band(session, plan, task_id)
        points = run_series(session, task_id, runs=runs, latency_slo_s=task.thresholds.latency_slo_s)
        states = detector_states(session, task_id)
        found = findings(session, task_id, limit=20)
        slices = subgroup_slices(session, task_id, task.subgroups)
        answers = recent_answers(session, task_id, limit=20)
    st.markdown(f"**{task_id}** · {row.category} › {row.subcategory or '—'} · benchmark `{task.benchmark}` · "
                f"owner {row.owner} · status **{row.status}**" + (f" ({row.reason})" if row.reason else ""))
    c = st.columns(4)
    c[0].metric("Current score", fmt(row.estimate), help="latest 200 scored answers")
    c[1].metric("95% CI", interval(row.ci_low, row.ci_high))
    c[2].metric("Baseline", fmt(band.value if band else None))
    c[3].metric("Approval threshold", fmt(task.thresholds.min_score))
    score_state = next((s for s in states if s.metric == "score" and s.direction == "drop"), None)
    st.plotly_chart(score_chart(points, baseline=band.value if band else None,
                                baseline_ci=(band.ci_low, band.ci_high) if band else None,
                                threshold=task.thresholds.min_score,
                                alarm_line=score_state.null_mean if score_state else None), key="score_chart")
    if band is not None:
        st.caption(f"Baseline: {band.source_kind} evidence for {band.model}, version {band.version}, n={band.n}. "
                   "The detector compares each run with its reference (the baseline less a tolerance for the "
                   "baseline's own sampling error) and alarms when the evidence crosses its threshold.")

    st.subheader("Detector evidence")
    if not states:
        st.write("No detector has run for this task yet.")
    else:
        st.dataframe(pd.DataFrame([{
            "stream": stream_name(s.key, task_id), "status": s.status.value,
            "evidence": s.evidence, "alarm threshold": s.threshold,
            "progress to alarm": _progress(s.evidence, s.threshold), "reference": s.null_mean,
            "baseline": s.baseline_mean, "n": s.n, "segment": s.segment, "updated": s.updated_at} for s in states]),
            hide_index=True, width="stretch", column_config={
                "evidence": st.column_config.NumberColumn(format="%.3g"),
                "alarm threshold": st.column_config.NumberColumn(format="%.3g"),
                "progress to alarm": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f"),
                "reference": st.column_config.NumberColumn(format="%.3f"),
                "baseline": st.column_config.NumberColumn(format="%.3f")}, key="detectors")
    if found:
        st.dataframe(pd.DataFrame([{
            "at": f.created_at, "kind": f.kind, "stream": f.metric, "estimate": f.estimate,
            "95% CI": interval(f.ci_low, f.ci_high), "reference": f.null_mean, "statistic": f.statistic,
            "threshold": f.threshold, "n": f.n, "summary": f.summary} for f in found]),
            hide_index=True, width="stretch", key="findings")

    st.subheader("Cost and latency")
    if points:
        cost = sum(p.cost_usd or 0.0 for p in points)
        calls = sum(p.calls for p in points)
        c = st.columns(4)
        c[0].metric("Calls shown", calls)
        c[1].metric("Cost (USD)", f"{cost:.4f}")
        c[2].metric("Errors", sum(p.errors for p in points))
        c[3].metric("Over latency objective", sum(p.over_slo for p in points))
        st.plotly_chart(cost_latency_chart(points, budget=task.thresholds.cost_budget_per_call,
                                           slo=task.thresholds.latency_slo_s), key="cost_chart")
    else:
        st.write("No probe has run yet.")

    st.subheader("Subgroup slices")
    if not task.subgroups:
        st.write("The plan names no subgroup tags for this task.")
    elif not slices:
        st.write(f"No recent answer carries the tags {', '.join(task.subgroups)}.")
    else:
        gaps = slice_gaps(slices)
        st.dataframe(pd.DataFrame([{
            "tag": g.tag, "gap now": g.gap, "gap in baseline": g.baseline_gap, "widening": g.widening,
            "worst": g.worst, "best": g.best} for g in gaps]), hide_index=True, width="stretch", key="gaps",
            column_config={k: st.column_config.NumberColumn(format="%.3f")
                           for k in ("gap now", "gap in baseline", "widening")})
        cols = st.columns(len(task.subgroups))
        for col_, tag in zip(cols, task.subgroups, strict=True):
            col_.plotly_chart(slices_chart(slices, tag), key=f"slice_{tag}")

    st.subheader("Recent canary answers")
    if not answers:
        st.write("No answers yet.")
    else:
        st.dataframe(pd.DataFrame([{
            "at": a.at, "canary": a.canary_id, "answer": (a.answer or "")[:200], "score": a.score,
            "correct": a.correct, "error": a.error_type or "", "served model": a.served_model or "",
            "tags": ", ".join(f"{k}={v}" for k, v in sorted(a.tags.items())),
            "judges": "; ".join(f"{v.judge}/{v.criterion}: {fmt(v.score, 'g') or v.parse_status}"
                                for v in a.verdicts) or "no jury verdict"} for a in answers]),
            hide_index=True, width="stretch", key="answers")


def _at(value: datetime | None) -> str:
    return "?" if value is None else f"{value:%Y-%m-%d %H:%M}"


def drift_report() -> None:
    """The newest evidently report: which output descriptors moved between the reference window
    (the first answers) and the recent one. Outside the refreshing fragment, and its HTML (several
    MB) is read only when downloaded; it is never embedded in the page, so none of it runs here."""
    st.subheader("Output drift report")
    with Session(engine) as session:
        report = latest_drift_report_view(session, task_id)
    if report is None:
        st.write("No drift report yet. The service stores one per `detection.drift_report_every`; "
                 f"make one now with `medmon drift report PLAN --task {task_id}`.")
        return
    st.caption(f"Report {report.id} of {report.created_at:%Y-%m-%d %H:%M} UTC: the first {report.n_reference} "
               f"answers ({_at(report.reference_from)} to {_at(report.reference_to)}) against the latest "
               f"{report.n_current} ({_at(report.current_from)} to {_at(report.current_to)}). "
               "KS tests without a false-alarm budget: a description of how outputs changed, never an alert.")
    if report.drifted:
        st.warning(f"Drifted: {', '.join(report.drifted)}")
    else:
        st.info("No output descriptor drifted.")
    st.dataframe(pd.DataFrame([{"column": c.column, "method": c.method, "p-value": c.p_value,
                                "threshold": c.threshold, "drifted": c.drifted} for c in report.columns]),
                 hide_index=True, width="stretch", key="drift_columns",
                 column_config={"p-value": st.column_config.NumberColumn(format="%.3g")})
    if not report.html_available:
        st.write(f"The report's HTML is missing ({report.html_path or 'not stored'}).")
        return
    report_id = report.id

    def html() -> str:
        with Session(engine) as session:
            return drift_report_html(session, report_id)

    st.download_button("Download the full report (HTML)", html, file_name=f"drift-{task_id}-{report_id}.html",
                       mime="text/html", key="drift_download")


detail()
drift_report()
