"""The committee report as files the dashboard offers for download: HTML and, where Chromium or
WeasyPrint is installed, the printed PDF (the same renderer as ``medmon report --pdf``)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlmodel import Session

from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee, to_pdf
from medmon.monitor.plan.model import Plan


@dataclass(frozen=True)
class ReportFiles:
    period: str
    sha256: str
    html: str
    pdf: bytes | None  # None when no PDF printer is installed


def report_files(session: Session, plan: Plan, period: str, now: datetime) -> ReportFiles:
    """Build the committee report for ``period`` (``2026-11``, ``2026-Q4``...) and print it (ValueError: bad period).

    The real-traffic section is left out here (the CLI's ``medmon report`` adds it), so a report
    of a plan that watches traffic has another hash than the CLI's.
    """
    found = parse_period(period)
    report = build_committee_report(session, plan, found, now=now)
    html = render_committee(report)
    with tempfile.TemporaryDirectory(prefix="medmon-report-") as folder:
        page = Path(folder) / "report.html"
        page.write_text(html, encoding="utf-8")
        printed = to_pdf(page, Path(folder) / "report.pdf")
        pdf = printed.read_bytes() if printed is not None else None
    return ReportFiles(found.label, report.sha256, html, pdf)
