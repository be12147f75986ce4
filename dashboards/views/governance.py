"""Governance: the use case, its owners and thresholds, the monitoring plan as recorded, the audit log."""

from __future__ import annotations

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.actions import NotAllowed, approve_task_thresholds, note_answers_viewed, sign_report
from medmon.dashboards.audit_table import show_audit
from medmon.dashboards.auth import owner_emails
from medmon.dashboards.data import plan_path, plan_text, refresh_every
from medmon.dashboards.layout import masked_plan, page, when
from medmon.dashboards.tables import show_table
from medmon.db import utcnow
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind
from medmon.monitor.read import (
    approval_record,
    approved_plan,
    audit_chain,
    audit_log,
    effective_tasks,
    generated_reports,
    report_files,
)

plan, viewer, engine = page("Governance")


uc = plan.use_case
st.subheader("Use case")
st.markdown(f"**{uc.name}** · risk tier **{uc.risk_tier.value}**")
st.markdown(
    f"- **Intended use:** {uc.intended_use}\n"
    f"- **Intended users:** {', '.join(uc.intended_users) or 'not stated'}\n"
    f"- **Workflow:** {uc.workflow or 'not stated'}\n"
    f"- **Consequence of error:** {uc.consequence_of_error or 'not stated'}"
)
st.subheader("Owners")
st.markdown(
    f"- **Clinical owner:** {plan.owners.clinical.name} ({plan.owners.clinical.email})\n"
    f"- **Technical owner:** {plan.owners.technical.name} ({plan.owners.technical.email})\n"
    f"- **On-call route:** {plan.owners.on_call_route}"
)
st.caption("May acknowledge, resolve and silence alerts: " + ", ".join(sorted(owner_emails(plan))))

with Session(engine) as session:
    judged = effective_tasks(session, plan)  # the approved thresholds, the plan's edits beside them
    proposals = [p for e in judged for p in e.proposals if p.plan_seq is not None]  # recorded: approvable
    unrecorded = [e.task.id for e in judged if any(p.plan_seq is None for p in e.proposals)]
    reports = generated_reports(session)
st.subheader("Tasks and thresholds in force")
show_table(
    [
        {
            "task": t.id,
            "benchmark": t.benchmark,
            "owner": (t.owner or plan.owners.clinical).name,
            "approval threshold": t.thresholds.min_score,
            "tolerated drop": t.thresholds.tolerated_drop,
            "cost budget per call": t.thresholds.cost_budget_per_call,
            "latency objective (s)": t.thresholds.latency_slo_s,
            "minimum jury agreement": t.thresholds.min_jury_agreement,
            "human review": t.human_review_required,
            "schedule": t.schedule,
            "canaries per probe": t.sample_size,
            "subgroups": ", ".join(t.subgroups),
            "in force": e.in_force_words,
        }
        for e in judged
        for t in [e.task]
    ],
    key="thresholds",
)
st.caption(
    "The thresholds detection and reports use: those in force (approved by an owner, or the first recorded plan's "
    "until go-live is approved). A plan edit is a proposal until an owner approves it."
)
if unrecorded:
    st.info(
        f"The plan file edits thresholds of {', '.join(unrecorded)} that are not recorded yet: `medmon check` "
        "records them as proposals an owner can approve; they judge nothing meanwhile."
    )
if proposals:
    st.warning(
        f"{len(proposals)} threshold change(s) in the recorded plan await an owner's approval; the values "
        "in force above judge the tasks until then."
    )
    show_table(
        [
            {
                "task": p.task,
                "threshold": p.threshold,
                "in force": str(p.in_force),
                "proposed": str(p.proposed),
                "loosens": p.looser,
                "proposed by": p.proposed_by,
                "recorded": p.proposed_at,
                "plan seq": p.plan_seq,
            }
            for p in proposals
        ],
        key="threshold_proposals",
    )
    if viewer.authenticated and viewer.can_act:
        with st.container(border=True):
            st.markdown(f"**Approve a task's proposed thresholds** as {viewer.email}")
            chosen = st.selectbox("Task", sorted({p.task for p in proposals}), key="thr_task")
            why = st.text_input("Rationale (kept in the audit log)", key="thr_reason")
            committee = st.text_input(
                "Committee decision (needed to lower min_score or subgroup_min_score)", key="thr_committee"
            )
            if st.button("Approve these thresholds", key="thr_approve", type="primary"):
                try:
                    seq = approve_task_thresholds(engine, plan, viewer, chosen, why, committee, utcnow())
                except (GovernanceError, NotAllowed) as exc:
                    st.error(f"Approval refused: {exc}")
                else:
                    st.success(
                        f"Thresholds of {chosen} approved by {viewer.email} (audit seq {seq}); "
                        "'medmon serve' applies them at its next start."
                    )
    else:
        st.caption("Owners approve them here after signing in, or with `medmon approvals thresholds`.")
st.markdown(
    f"False-alarm budget: one false alarm in **{plan.detection.probes_between_false_alarms:,.0f}** probes "
    f"across the deployment · alert routes: "
    + (", ".join(f"{r.name} ({r.type})" for r in plan.alerts.routes) or "none")
    + f" · repeat interval {plan.alerts.repeat_interval}"
)
gov = plan.governance
st.subheader("Approval and evidence")
with Session(engine) as session:
    go_live = approval_record(session, plan).go_live
(st.success if go_live.approved and not go_live.plan_changed_since else st.warning)(
    go_live.words[:1].upper() + go_live.words[1:]
)
if gov is None:
    st.info("The plan has no governance section: no approval, evidence or controls are recorded in it.")
else:
    if gov.approval is not None:
        a = gov.approval
        st.markdown(
            f"The plan's text names **{a.approved_by.name}** ({a.approved_by.email}) as go-live approver on "
            f"**{a.approved_on:%Y-%m-%d}**"
            + (f" · {a.committee}" if a.committee else "")
            + (f" · reference {a.reference}" if a.reference else "")
            + " (a statement in the file, not a recorded act)"
        )
    mapped = gov.medhelm
    lines = [
        f"- **MedHELM mapping:** {', '.join(mapped.categories + mapped.subcategories + mapped.benchmarks)}"
        if (mapped.categories or mapped.subcategories or mapped.benchmarks)
        else "- **MedHELM mapping:** from the tasks' benchmarks (see Baselines)"
    ]
    if gov.evidence.summary:
        lines.append(f"- **Evidence:** {gov.evidence.summary}")
    lines += [f"- **Known limitation:** {text}" for text in gov.evidence.limitations]
    if gov.local_validation is not None:
        lv = gov.local_validation
        lines.append(
            f"- **Local validation:** {lv.description}"
            + (f" (n={lv.n})" if lv.n else "")
            + (f": {lv.result}" if lv.result else "")
        )
    c = gov.controls
    if c.decision_criteria:
        lines.append(f"- **Decision criteria:** {c.decision_criteria}")
    if c.human_review:
        lines.append(f"- **Human review:** {c.human_review}")
    if c.escalation:
        lines.append(f"- **Escalation:** {c.escalation}")
    lines.append(
        "- **Longest gap between probes by risk tier:** "
        + ", ".join(f"{tier} {every}" for tier, every in c.max_probe_interval.items())
    )
    lines.append(
        f"- **After a change of model, prompt or judge:** "
        f"{'re-evaluate at once' if c.reevaluation.on_detected_change else 're-evaluate when declared'}, "
        f"replaying every canary {c.reevaluation.repeats} time(s)"
    )
    st.markdown("\n".join(lines))
    if gov.evidence.sources:
        show_table(
            [
                {
                    "benchmark": e.benchmark,
                    "source": e.source,
                    "metric": e.metric or "",
                    "value": e.value,
                    "n": e.n,
                    "data access": e.data_access or "",
                    "notes": e.notes,
                }
                for e in gov.evidence.sources
            ]
        )

with Session(engine) as session:
    approved = approved_plan(session)
current_text = plan_text()
st.subheader("Monitoring plan as recorded")
if approved is None:
    st.warning("No plan has been recorded in the audit log yet (the service records it when it starts).")
    with st.expander(f"{plan_path()} as it is now (route URLs masked)"):
        st.code(masked_plan(current_text, plan), language="yaml", wrap_lines=True)  # no sideways scroll at 1,024 px
else:
    st.caption(
        f"Recorded as audit entry {approved.seq} on {when(approved.at)} by {approved.actor} · "
        f"SHA-256 {approved.sha256[:16]}… · route URLs are masked"
    )
    if approved.text != current_text:
        st.warning(
            f"The plan file {plan_path()} differs from the plan as recorded: the change is recorded "
            "when the service next starts."
        )
    with st.expander("The plan text (route URLs masked)"):
        st.code(masked_plan(approved.text, plan), language="yaml", wrap_lines=True)


st.subheader("Committee reports and sign-off")
if not reports:
    st.write("No committee report has been generated yet (`medmon report`, or the plan's `reports` schedule).")
else:
    show_table(
        [
            {
                "period": r.period,
                "signed by": ", ".join(r.signed_by) or "not signed",
                "report hash": r.sha256,
                "generated": r.first_generated,
                "generated by": r.generated_by,
            }
            for r in reports
        ],
        key="reports",
    )
    if viewer.authenticated and viewer.can_act:
        with st.container(border=True):
            st.markdown(
                f"**Sign a report** as {viewer.email}: you attest to exactly the figures with this hash "
                "(printed on the report's first page)."
            )
            labels = {f"{r.period} · {r.sha256}": r for r in reports}
            picked = labels[st.selectbox("Report", list(labels), key="sign_report")]
            statement = st.text_input("Statement", value="Reviewed and accepted by the committee", key="sign_statement")
            if st.button("Sign this report", key="sign_do", type="primary"):
                try:
                    seq = sign_report(engine, plan, viewer, picked.period, picked.sha256, statement, utcnow())
                except (GovernanceError, NotAllowed) as exc:
                    st.error(f"Sign-off refused: {exc}")
                else:
                    st.success(
                        f"Report {picked.period} ({picked.sha256[:12]}…) signed by {viewer.email} (audit seq {seq})."
                    )
    else:
        st.caption("Owners sign here after signing in (the signature carries the identity the sign-in verified).")

with st.expander("Download a committee report (PDF and HTML)"):
    wanted = st.text_input("Period", value=f"{utcnow():%Y-%m}", help="2026-11, 2026-Q4, 2026 or 2026-11-01..2026-11-15")
    if st.button("Build the report", key="report_build"):
        try:
            with Session(engine) as s:
                files = report_files(s, plan, wanted, utcnow())
        except ValueError as exc:
            st.error(f"Cannot build the report: {exc}")
        else:
            st.caption(f"Report {files.period}, hash {files.sha256}.")
            if files.pdf is not None:
                st.download_button("Download PDF", files.pdf, f"report-{files.period}.pdf", "application/pdf")
            else:
                st.caption("No PDF printer (Chromium or WeasyPrint) is installed here: download the HTML and print it.")
            st.download_button("Download HTML", files.html, f"report-{files.period}.html", "text/html")


# Verifying walks the whole chain; past this many entries it runs when asked, not on every refresh.
VERIFY_ALWAYS_UP_TO = 10_000


@st.fragment(run_every=refresh_every())
def audit_section() -> None:
    st.subheader("Audit log")
    with Session(engine) as session:
        entries = audit_log(session)
        size = entries[0].seq if entries else 0
        verify = size <= VERIFY_ALWAYS_UP_TO or st.button("Verify the hash chain", key="verify")
        chain = audit_chain(session) if verify else None
    if chain is None:
        st.info(f"{size:,} entries: press the button to verify the whole hash chain (as `medmon audit verify`).")
    elif chain.ok:
        st.success(
            f"Hash chain verified: {chain.entries} entries, head seq {chain.head_seq} ({chain.head_hash[:16]}…)."
        )
    else:
        st.error("The audit log's hash chain does not hold: " + "; ".join(chain.problems))
    if not entries:
        st.write("No audit entry yet.")
    else:
        quoted = [e.seq for e in entries if e.kind in (AuditKind.clinician_review.value, AuditKind.near_miss.value)]
        if quoted and not st.session_state.get("answers_viewed:governance"):  # reviewers' notes: audited once
            note_answers_viewed(
                engine, viewer, None, "governance", [], utcnow(), what="reviewers' notes, near misses", rows=len(quoted)
            )
            st.session_state["answers_viewed:governance"] = True
        show_audit(entries)


audit_section()
