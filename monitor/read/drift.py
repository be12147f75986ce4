"""Stored evidently drift reports: the list, and the newest one of a task with its columns.

The report's HTML is several MB (it embeds its scripts), so these views never load it; the
task page fetches it with :func:`drift_report_html` only when someone downloads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, func, select

from medmon.monitor.models import DriftReport
from medmon.monitor.storage import select_row


@dataclass(frozen=True)
class DriftColumn:
    """One output descriptor's test: KS p-value against the threshold below which it drifted."""

    column: str
    method: str
    p_value: float | None
    threshold: float | None
    drifted: bool


@dataclass(frozen=True)
class DriftReportView:
    """A stored report's figures: when, the two windows, and each descriptor's test."""

    id: int
    task_id: str
    created_at: datetime
    reference_from: datetime | None
    reference_to: datetime | None
    current_from: datetime | None
    current_to: datetime | None
    n_reference: int
    n_current: int
    columns: list[DriftColumn]
    html_path: str
    html_available: bool  # stored in the row, or its file is still there
    notes: dict[str, str] = field(default_factory=dict)  # column -> why it was not compared, or what moved

    @property
    def drifted(self) -> list[str]:
        return [c.column for c in self.columns if c.drifted]

    @property
    def not_compared(self) -> dict[str, str]:
        """The descriptors the report could not compare, each with the reason."""
        compared = {c.column for c in self.columns}
        return {name: note for name, note in self.notes.items() if name not in compared}


_FIGURES = (
    DriftReport.id,
    DriftReport.task_id,
    DriftReport.created_at,
    DriftReport.reference_from,
    DriftReport.reference_to,
    DriftReport.current_from,
    DriftReport.current_to,
    DriftReport.n_reference,
    DriftReport.n_current,
    DriftReport.columns,
    DriftReport.drifted,
    DriftReport.summary,
    DriftReport.html_path,
    func.length(DriftReport.html),
)


def _view(row: tuple[Any, ...]) -> DriftReportView:
    (
        id_,
        task_id,
        created_at,
        ref_from,
        ref_to,
        cur_from,
        cur_to,
        n_ref,
        n_cur,
        columns,
        drifted,
        summary,
        html_path,
        html_length,
    ) = row
    cols = []
    for name in columns or []:
        s = (summary or {}).get(name, {})
        cols.append(
            DriftColumn(name, str(s.get("method") or ""), s.get("p_value"), s.get("threshold"), name in (drifted or []))
        )
    available = bool(html_length) or bool(html_path and Path(html_path).is_file())
    notes = {name: str(s["note"]) for name, s in (summary or {}).items() if isinstance(s, dict) and s.get("note")}
    return DriftReportView(
        id_,
        task_id,
        created_at,
        ref_from,
        ref_to,
        cur_from,
        cur_to,
        n_ref,
        n_cur,
        cols,
        html_path or "",
        available,
        notes,
    )


def drift_reports(
    session: Session, task_id: str | None = None, *, limit: int = 100, report_id: int | None = None
) -> list[DriftReportView]:
    """Stored reports, newest first (of one task, or just one report, when given), without their HTML."""
    query = select_row(*_FIGURES)
    if task_id is not None:
        query = query.where(DriftReport.task_id == task_id)
    if report_id is not None:
        query = query.where(DriftReport.id == report_id)
    return [_view(tuple(r)) for r in session.exec(query.order_by(col(DriftReport.id).desc()).limit(limit)).all()]


def latest_drift_report_view(session: Session, task_id: str) -> DriftReportView | None:
    """The newest stored report of a task, for the task page; None before the first one."""
    found = drift_reports(session, task_id, limit=1)
    return found[0] if found else None


def drift_report_html(session: Session, report_id: int) -> str:
    """A report's HTML, from its row or the file it was written to ('' if that file is gone)."""
    row = session.exec(select(DriftReport.html, DriftReport.html_path).where(DriftReport.id == report_id)).first()
    if row is None:
        return ""
    html, path = row
    if html:
        return str(html)
    if path and Path(path).is_file():
        return Path(path).read_text("utf-8")
    return ""
