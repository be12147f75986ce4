"""Scheduled committee reports (plan ``reports``): written once per period, stored, announced.

When the plan's schedule has passed for a period (the month before the scheduled day), the
service's leader builds that period's committee report exactly as ``medmon report`` does,
stores its HTML (and PDF where a converter exists) in ``reports.directory``, records
``report_generated`` with the hash, and queues a notice on ``reports.route`` through the alert
outbox (retried, signed, dead-lettered like alert news). The job runs on start and then every
few minutes, so a schedule missed while the service was down is caught up when it starts.

"Once" holds across replicas and restarts: the period is the primary key of
``scheduledreport``, inserted in the same transaction as the audit entry and the notice. A
second writer's commit fails on the key and its copy of everything rolls back.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from medmon.alerts import enqueue_notice
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import Period, parse_period
from medmon.monitor.governance.reports.record import record_generated
from medmon.monitor.governance.reports.render import render_committee, to_pdf
from medmon.monitor.models import ScheduledReport
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.reports import ReportsConfig

log = logging.getLogger("medmon.reports")

ACTOR = "medmon (scheduled report)"
CHECK_EVERY_S = 300.0


def due_period(config: ReportsConfig, now: datetime) -> tuple[Period, datetime]:
    """The period whose report is due by ``now`` and the scheduled moment it fell due (UTC).

    The schedule's day falls in month M (in the schedule's timezone): the report is for M-1.

    Examples
    --------
    >>> from datetime import timezone
    >>> from medmon.monitor.plan.reports import ReportSchedule
    >>> c = ReportsConfig(schedule=ReportSchedule(day=2, time="06:00"), route="r")
    >>> period, due = due_period(c, datetime(2027, 1, 2, 6, 0, tzinfo=timezone.utc))
    >>> period.label, due.isoformat()
    ('2026-12', '2027-01-02T06:00:00+00:00')
    """
    due = config.schedule.last_due(now)
    local = due.astimezone(ZoneInfo(config.schedule.timezone))
    year, month = (local.year, local.month - 1) if local.month > 1 else (local.year - 1, 12)
    return parse_period(f"{year:04d}-{month:02d}"), due


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    pdf: Path | None


def report_directory(config: ReportsConfig, plan_path: Path | None) -> Path:
    """``reports.directory``, a relative one taken from the plan file's folder."""
    folder = config.directory
    if not folder.is_absolute() and plan_path is not None:
        folder = plan_path.resolve().parent / folder
    return folder


def notice(
    plan: Plan, period: Period, digest: str, summary: dict[str, Any], files: ReportFiles, due: datetime, now: datetime
) -> dict[str, Any]:
    """The webhook body: enough for a reader to find, check and sign the report."""
    brief = summary["digest"]
    status = (
        f"{brief['status']}: {brief['tasks_meeting']} of {brief['tasks']} task(s) meet thresholds, "
        f"{brief['critical_alerts']} critical alert(s), {brief['decisions_requested']} decision(s) requested"
    )
    return {
        "event": "report",
        "kind": "committee_report",
        "deployment": plan.deployment.name,
        "period": {"label": period.label, "start": period.start.isoformat(), "end": period.end.isoformat()},
        "sha256": digest,
        "status": brief["status"],
        "digest": brief,
        "summary": f"Committee report {period.label} for {plan.deployment.name}: {status}",
        "files": {"html": str(files.html), "pdf": str(files.pdf) if files.pdf else None},
        "dashboard_url": plan.alerts.dashboard_url,
        "sign_with": f"medmon report --period {period.label} --sign OWNER --hash {digest}",
        "due_at": due.isoformat(),
        "generated_at": now.isoformat(),
    }


def write_files(html: str, folder: Path, name: str, pdf: bool) -> ReportFiles:
    """Write the HTML (and PDF) into a private scratch folder; ``publish`` moves them into place."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".medmon-report-", dir=folder))
    target = scratch / f"{name}.html"
    target.write_text(html, "utf-8")
    printed = to_pdf(target, target.with_suffix(".pdf")) if pdf else None
    return ReportFiles(target, printed)


def publish(files: ReportFiles, folder: Path) -> ReportFiles:
    """Move the written files from their scratch folder into ``folder`` (after the record is committed)."""
    moved = ReportFiles(folder / files.html.name, folder / files.pdf.name if files.pdf else None)
    files.html.replace(moved.html)
    if files.pdf is not None and moved.pdf is not None:
        files.pdf.replace(moved.pdf)
    shutil.rmtree(files.html.parent, ignore_errors=True)
    return moved


def generate_due_report(
    engine: Engine,
    plan: Plan,
    now: datetime,
    *,
    plan_text: str | None = None,
    plan_path: Path | None = None,
    traffic: Callable[[Session, Period], Any] | None = None,
) -> ScheduledReport | None:
    """Write, record and announce the due period's report; None when there is none due or it exists."""
    config = plan.reports
    if config is None:
        return None
    period, due = due_period(config, now)
    folder = report_directory(config, plan_path)
    written: ReportFiles | None = None
    with Session(engine) as session:
        done = session.get(ScheduledReport, period.label)
        if done is not None:
            log.debug(
                "the committee report for %s was written at %s; none due", period.label, done.generated_at.isoformat()
            )
            return None
        log.info("the committee report for %s is due since %s: generating", period.label, due.isoformat())
        try:
            report = build_committee_report(
                session,
                plan,
                period,
                now=now,
                plan_text=plan_text,
                traffic=traffic(session, period) if traffic is not None else None,
            )
            written = write_files(
                render_committee(report), folder, f"medmon-report-{plan.deployment.name}-{period.label}", config.pdf
            )
            final = ReportFiles(folder / written.html.name, folder / written.pdf.name if written.pdf else None)
            summary = report.summary()
            record_generated(
                session,
                period,
                report.sha256,
                report.plan_record.get("seq") if report.plan_record else None,
                ACTOR,
                now,
            )
            sent = enqueue_notice(
                session,
                config.route,
                # the report's hash makes the webhook id unique across deployments that share a name
                f"report:{plan.deployment.name}:{period.label}:{report.sha256[:16]}",
                "report",
                notice(plan, period, report.sha256, summary, final, due, now),
                now,
            )
            row = ScheduledReport(
                period=period.label,
                due_at=due,
                generated_at=now,
                generated_by=ACTOR,
                sha256=report.sha256,
                html_path=str(final.html),
                pdf_path=str(final.pdf) if final.pdf else None,
                status=summary["digest"]["status"],
                notification_id=sent.id,
            )
            session.add(row)
            session.commit()
        except IntegrityError:
            # Another writer got there first (this period's row or notice, or a baseline the report
            # records on first use): everything this copy wrote rolls back; the next pass looks again.
            session.rollback()
            if written is not None:
                shutil.rmtree(written.html.parent, ignore_errors=True)
            log.info("the report for %s was written by another process meanwhile; this copy is dropped", period.label)
            return None
        except Exception:
            session.rollback()
            if written is not None:
                shutil.rmtree(written.html.parent, ignore_errors=True)
            raise
        publish(written, folder)
        session.refresh(row)
    log.info(
        "committee report %s written to %s (sha256 %s); notice queued on route %s",
        period.label,
        final.html,
        report.sha256[:12],
        config.route,
    )
    return row
