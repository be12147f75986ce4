"""``medmon report``: the governance committee report, or the monitoring plan document.

Exit codes: 0 written, 2 bad input (plan, period, no database).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from medmon.monitor.cli.approvals import EXIT_UNPROVEN, KeyOption, prove
from medmon.monitor.cli.plan_arg import EXIT_INPUT, PlanArg, err, out
from medmon.monitor.errors import MedmonError


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    return typer.Exit(EXIT_INPUT)


def _write(html: str, out_path: Path, pdf: bool) -> tuple[Path | None, Path | None]:
    """Write the report where ``--output`` says: an ``.pdf`` name gets only the PDF (the HTML is
    printed from a temporary folder); any other name gets the HTML, and its ``.pdf`` sibling
    unless ``--no-pdf``."""
    import tempfile

    from medmon.monitor.governance.reports.render import to_pdf

    out_path.parent.mkdir(parents=True, exist_ok=True)
    if out_path.suffix.lower() == ".pdf":
        with tempfile.TemporaryDirectory(prefix="medmon-report-") as folder:
            html_path = Path(folder) / "report.html"
            html_path.write_text(html, "utf-8")
            made = to_pdf(html_path, out_path)
        if made is None:
            raise _fail(
                f"--output {out_path}: no PDF converter (Chromium or WeasyPrint) is installed; "
                "write HTML instead (--output NAME.html)"
            )
        return None, made
    out_path.write_text(html, "utf-8")
    return out_path, (to_pdf(out_path, out_path.with_suffix(".pdf")) if pdf else None)


def _deprecated_plan_flag(value: bool) -> bool:
    if value:
        err.print(
            "warning: 'medmon report --plan' is deprecated; it is spelled --plan-document (the plan "
            "itself is the first argument)",
            highlight=False,
            markup=False,
        )
    return value


def report_command(
    plan_path: PlanArg,
    period: Annotated[
        str | None, typer.Option(help="2026-11, 2026-Q4, 2026 or 2026-11-01..2026-11-15 (default: the current month).")
    ] = None,
    plan_document: Annotated[
        bool,
        typer.Option(
            "--plan-document",
            help="Write the post-deployment monitoring plan document (what is "
            "monitored, how, who answers) instead of the committee "
            "report.",
        ),
    ] = False,
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            "--out",
            help="File to write: NAME.html (and NAME.pdf beside it unless "
            "--no-pdf) or NAME.pdf. Nothing is written without it.",
        ),
    ] = None,
    pdf: Annotated[
        bool,
        typer.Option(
            "--pdf/--no-pdf", help="With an .html --output, also print a PDF beside it where a converter is available."
        ),
    ] = True,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the report's figures as JSON (writes no file unless --output is given too)."
        ),
    ] = False,
    old_plan_flag: Annotated[
        bool,
        typer.Option(
            "--plan", hidden=True, callback=_deprecated_plan_flag, help="Deprecated spelling of --plan-document."
        ),
    ] = False,
    sign_as: Annotated[
        str | None,
        typer.Option("--sign", help="Sign the report as this owner (an e-mail the plan names); needs --hash."),
    ] = None,
    expect_hash: Annotated[
        str | None, typer.Option("--hash", help="The report hash the signer read (printed on the report's first page).")
    ] = None,
    statement: Annotated[
        str, typer.Option(help="What the signer attests (kept in the audit log).")
    ] = "Reviewed and accepted by the committee",
    key: KeyOption = None,
) -> None:
    """Write the governance committee report for a period to --output (HTML, PDF where possible).

    medmon report PLAN --period 2026-11 --output report.html writes report.html and report.pdf;
    --json prints the figures instead (and writes only with --output); --plan-document makes the
    monitoring plan document rather than the committee report.

    The report is judged against the plan and baselines recorded as in force during the period,
    whatever the plan file says today (a differing file is flagged). Its figures are hashed;
    generating it is an audit entry with that hash, and --sign OWNER --hash HASH --key KEY records
    an owner's sign-off of exactly those figures, signed with a key the plan registers to the owner.
    Without --key the sign-off is recorded as unauthenticated, listed apart and not counted (exit 3).
    """
    from medmon.db import utcnow
    from medmon.monitor.governance.reports.period import parse_period
    from medmon.monitor.plan.model import load_plan

    plan_document = plan_document or old_plan_flag
    if out_path is None and not as_json:
        raise _fail("say where to write the report: --output NAME.html (or NAME.pdf), or --json to print its figures")
    try:
        plan = load_plan(plan_path)
    except MedmonError as exc:
        raise _fail(str(exc)) from None
    text = plan_path.read_text("utf-8")
    now = utcnow()
    unproven_signer = None  # a sign-off recorded as unauthenticated: the command exits 3
    if plan_document:
        from medmon.monitor.governance.reports.plan_document import build_plan_document
        from medmon.monitor.governance.reports.render import render_plan_document

        document = build_plan_document(plan, text, str(plan_path), now=now)
        html = render_plan_document(document)
        summary: dict[str, object] = {
            "document": "monitoring-plan",
            "sha256": document.sha256,
            "tasks": [t["id"] for t in document.tasks],
        }
    else:
        from sqlmodel import Session

        from medmon.monitor.cli.audit import open_database
        from medmon.monitor.errors import GovernanceError
        from medmon.monitor.governance.audit import local_actor
        from medmon.monitor.governance.identity import record_unproven
        from medmon.monitor.governance.reports.committee import build_committee_report
        from medmon.monitor.governance.reports.record import record_generated, sign, signatures, unproven_signatures
        from medmon.monitor.governance.reports.render import render_committee
        from medmon.monitor.governance.signoff import signers_of

        try:
            chosen = parse_period(period or f"{now:%Y-%m}")
        except ValueError as exc:
            raise _fail(f"--period: {exc}") from None
        try:
            engine = open_database(plan_path, None)
        except (MedmonError, typer.BadParameter) as exc:
            raise _fail(str(exc)) from None
        if (sign_as is None) != (expect_hash is None):
            raise _fail("--sign and --hash go together: sign the report whose hash you read")
        with Session(engine) as session:
            traffic = None
            if plan.traffic is not None:
                from medmon.monitor.read.traffic import traffic_summary

                traffic = traffic_summary(session, chosen.start, chosen.end)
            report = build_committee_report(session, plan, chosen, now=now, plan_text=text, traffic=traffic)
            record_generated(
                session,
                chosen,
                report.sha256,
                report.plan_record.get("seq") if report.plan_record else None,
                local_actor("medmon report"),
                now,
            )
            quoted = report.oversight.events
            if quoted:  # the report quotes each safety event's stored narrative: who read it is audited
                from medmon.monitor.governance.access import record_text_read

                record_text_read(
                    session,
                    tool="medmon report",
                    task=None,
                    what=f"safety event narratives quoted in the {chosen.label} committee report",
                    rows=len(quoted),
                    now=now,
                    details={"period": chosen.label, "safety_events": [e["id"] for e in quoted]},
                )
            if sign_as is not None and expect_hash is not None:
                if expect_hash.strip().lower() != report.sha256:
                    raise _fail(
                        f"--hash {expect_hash[:12]}... is not this report's hash ({report.sha256[:12]}...): "
                        "its figures changed since that copy was made; read the new report before signing"
                    )
                facts = {"period": chosen.label, "sha256": report.sha256, "statement": statement}
                identity = prove(
                    report.plan,
                    by=sign_as,
                    act="report_signed",
                    subject=f"report:{chosen.label}",
                    facts=facts,
                    key=key,
                    tool="medmon report --sign",
                )
                try:
                    if identity.authenticated:
                        sign(
                            session,
                            report.plan,
                            chosen,
                            report.sha256,
                            by=identity.actor,
                            statement=statement,
                            now=now,
                            details=identity.details(),
                        )
                    else:
                        allowed = signers_of(report.plan)
                        if sign_as.strip().lower() not in allowed:
                            raise GovernanceError(
                                f"{sign_as} may not sign this report; the plan names: {', '.join(allowed)}"
                            )
                        record_unproven(session, identity, "report_signed", f"report:{chosen.label}", facts, now)
                        unproven_signer = identity
                except GovernanceError as exc:
                    raise _fail(str(exc)) from None
                report.signatures = signatures(session, chosen, report.sha256)
                report.unproven_signatures = unproven_signatures(session, chosen, report.sha256)
            session.commit()  # inline or pack baselines recorded for the comparison, and the audit entries
        html = render_committee(report)
        summary = report.summary()
    html_path, pdf_path = _write(html, out_path, pdf) if out_path is not None else (None, None)
    summary["outputs"] = {"html": str(html_path) if html_path else None, "pdf": str(pdf_path) if pdf_path else None}
    if as_json:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    if summary.get("sha256"):
        out.print(f"report hash {summary['sha256']}", highlight=False)
    if html_path is not None:
        out.print(f"wrote {html_path}", highlight=False)
    if pdf_path is not None:
        out.print(f"wrote {pdf_path}", highlight=False)
    elif pdf:
        out.print("no PDF: neither Chromium nor WeasyPrint is installed (print the HTML from a browser)")
    if unproven_signer is not None:
        err.print(
            f"not counted: the sign-off for {unproven_signer.claimed_by} is recorded as unauthenticated "
            f"({unproven_signer.actor}); sign with --key (a key listed under that person's 'keys' in the plan)",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(EXIT_UNPROVEN)
