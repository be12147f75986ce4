"""evidently data-drift reports of output descriptors, stored for the dashboard.

The e-detectors decide *whether* a stream drifted, with a false-alarm promise; these reports
show *how* the outputs changed, column by column, between a reference window (the first
answers after go-live: the burn-in window) and the recent window: output length
(completion tokens), latency, score and cost. evidently's tests are batch tests repeated at
every report, without any false-alarm budget, so they never raise alerts here.

evidently takes seconds to import (and more on a busy machine), so it is imported inside
:func:`render_drift_report` only, with ``DO_NOT_TRACK=1`` set first (no usage telemetry).
KS tests are used for every column: evidently's defaults switch to Wasserstein or
Jensen-Shannon distances above 1,000 reference rows, which never flag a 5- or 10-point drop.

Every descriptor is accounted for: one without enough values in a window (no price set, an
endpoint that reports no token counts) is listed with the reason it was not compared, and one
constant within each window but different between them (every answer 1 token, then 401) is
drift, said in words, since that is the plainest change there is.
"""

from __future__ import annotations

import html as html_escape
import logging
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from medmon.db import session_scope
from medmon.monitor.models import DriftReport
from medmon.probes.models import ProbeResult

log = logging.getLogger("medmon.drift_reports")

DESCRIPTORS = ("output_tokens", "latency_s", "score", "cost_usd")
MIN_ROWS = 30  # fewer rows per window make a KS test meaningless


@dataclass(frozen=True)
class RenderedReport:
    html: str
    json_text: str
    columns: list[str]
    drifted: list[str]
    summary: dict[str, dict[str, Any]]
    notes: dict[str, str] = field(default_factory=dict)  # column -> a sentence: why not compared, or what moved


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def column_notes(reference: Any, current: Any) -> tuple[list[str], dict[str, str], list[str]]:
    """Which descriptors a KS test can compare, a sentence on each one it cannot or that is constant,
    and those constant within each window at different values (drift whatever a test says).

    ``reference`` and ``current`` are pandas frames of :data:`DESCRIPTORS`.
    """
    comparable: list[str] = []
    notes: dict[str, str] = {}
    stepped: list[str] = []
    for c in DESCRIPTORS:
        counts = {
            "reference": int(reference[c].notna().sum()) if c in reference else 0,
            "recent": int(current[c].notna().sum()) if c in current else 0,
        }
        short = {name: n for name, n in counts.items() if n < MIN_ROWS}
        if short:
            said = (
                "no values in either window"
                if len(short) == 2 and not any(short.values())
                else "; ".join(
                    (f"no values in the {name} window" if n == 0 else f"only {n} values in the {name} window")
                    for name, n in short.items()
                )
            )
            notes[c] = f"not compared: {said} (a KS test needs {MIN_ROWS} in each)"
            if c == "cost_usd" and not counts["reference"]:
                notes[c] += "; the plan sets no price"
            elif c == "output_tokens" and not counts["reference"]:
                notes[c] += "; the endpoint reports no token counts"
            continue
        comparable.append(c)
        ref, cur = reference[c].dropna(), current[c].dropna()
        if ref.nunique() == 1 and cur.nunique() == 1:
            before, after = float(ref.iloc[0]), float(cur.iloc[0])
            if before == after:
                notes[c] = f"constant at {_fmt(before)} in both windows: unchanged"
            else:
                notes[c] = (
                    f"constant within each window but changed between them: {_fmt(before)} → {_fmt(after)} (drift)"
                )
                stepped.append(c)
    return comparable, notes, stepped


def _notes_html(notes: dict[str, str]) -> str:
    items = "".join(f"<li><b>{html_escape.escape(c)}</b>: {html_escape.escape(n)}</li>" for c, n in notes.items())
    return (
        f'<div id="medmon-notes" style="font-family: sans-serif; margin: 1em; padding: 0.5em 1em; '
        f'border: 1px solid #c9a227; background: #fff8e1"><p><b>medmon notes on the columns</b></p>'
        f"<ul>{items}</ul></div>"
    )


def descriptor_rows(results: Sequence[ProbeResult]) -> dict[str, list[float]]:
    """Descriptor columns of successful answers; a column with a missing value keeps NaN."""
    ok = [r for r in results if r.error_type is None]
    nan = math.nan

    def val(v: float | int | None) -> float:
        return nan if v is None else float(v)

    return {
        "output_tokens": [val(r.completion_tokens) for r in ok],
        "latency_s": [val(r.latency_s) for r in ok],
        "score": [val(r.score) for r in ok],
        "cost_usd": [val(r.cost_usd) for r in ok],
    }


def render_drift_report(
    reference: dict[str, list[float]], current: dict[str, list[float]], threshold: float = 0.05
) -> RenderedReport:
    """Run evidently's data-drift preset (KS on every column) on two windows of descriptors.

    The columns it could not compare, and constant ones, are noted (``notes``) in the summary and
    at the top of the HTML; a column constant in each window at different values is drifted.
    """
    os.environ.setdefault("DO_NOT_TRACK", "1")
    import pandas as pd
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    ref, cur = pd.DataFrame(reference), pd.DataFrame(current)
    columns, notes, stepped = column_notes(ref, cur)
    if not columns:
        raise ValueError(f"no descriptor has {MIN_ROWS} values in both windows ({'; '.join(notes.values())})")
    definition = DataDefinition(numerical_columns=columns)
    datasets = [Dataset.from_pandas(frame[columns], data_definition=definition) for frame in (cur, ref)]
    preset = DataDriftPreset(columns=columns, num_method="ks", num_threshold=threshold)
    with warnings.catch_warnings():  # correlations of a constant column divide by zero; the KS test is sound
        warnings.simplefilter("ignore", RuntimeWarning)
        snapshot = Report([preset], include_tests=True).run(datasets[0], datasets[1])  # current first
        page = snapshot.get_html_str(as_iframe=False)
    summary: dict[str, dict[str, Any]] = {}
    for metric in snapshot.dict()["metrics"]:
        config = metric.get("config", {})
        if config.get("type", "").endswith("ValueDrift") and config.get("column") in columns:
            p_value = float(metric["value"])
            summary[config["column"]] = {
                "method": config.get("method"),
                "p_value": p_value,
                "threshold": float(config.get("threshold", threshold)),
                "drift": p_value < float(config.get("threshold", threshold)),
            }
    for c, note in notes.items():
        summary.setdefault(c, {"compared": False})["note"] = note
        if c in stepped:
            summary[c]["drift"] = True
    drifted = [c for c in columns if summary.get(c, {}).get("drift")]
    if notes:
        page = page.replace("<body>", "<body>" + _notes_html(notes), 1)
    return RenderedReport(page, snapshot.json(), columns, drifted, summary, notes)


def store_drift_report(
    session: Session,
    task_id: str,
    now: datetime,
    *,
    window: int = 200,
    reports_dir: Path | None = None,
    render: Callable[[dict[str, list[float]], dict[str, list[float]]], RenderedReport] | None = None,
) -> DriftReport | None:
    """Compare a task's first ``window`` answers with its latest ``window`` and store the report.

    Returns None while the task has fewer than two non-overlapping windows of answers. The HTML
    (several MB: it embeds its scripts) goes to ``reports_dir`` when given, else into the row.
    """
    base = select(ProbeResult).where(ProbeResult.task_id == task_id, col(ProbeResult.error_type).is_(None))
    first = list(session.exec(base.order_by(col(ProbeResult.id)).limit(window)).all())
    last = list(session.exec(base.order_by(col(ProbeResult.id).desc()).limit(window)).all())[::-1]
    if len(first) < MIN_ROWS or not last or last[0].id is None or first[-1].id is None or last[0].id <= first[-1].id:
        return None
    rendered = (render or render_drift_report)(descriptor_rows(first), descriptor_rows(last))
    row = DriftReport(
        task_id=task_id,
        created_at=now,
        reference_from=first[0].created_at,
        reference_to=first[-1].created_at,
        current_from=last[0].created_at,
        current_to=last[-1].created_at,
        n_reference=len(first),
        n_current=len(last),
        columns=rendered.columns,
        drifted=rendered.drifted,
        summary=rendered.summary,
        json_text=rendered.json_text,
    )
    if reports_dir is not None:
        reports_dir.mkdir(parents=True, exist_ok=True)
        path = reports_dir / f"drift-{task_id}-{now:%Y%m%dT%H%M%S}.html"
        path.write_text(rendered.html, "utf-8")
        row.html_path = str(path)
    else:
        row.html = rendered.html
    session.add(row)
    session.flush()
    return row


def report_shortfall(session: Session, task_id: str, window: int) -> str | None:
    """Why no report of ``task_id`` can be made with this ``window`` yet, or None when one can.

    A report compares two windows that do not overlap, each of at least ``MIN_ROWS`` answers, so
    a task needs ``2 * window`` successful answers; the message says how many it has.
    """
    if window < MIN_ROWS:
        return f"window {window} is too small: a KS test needs at least {MIN_ROWS} answers per window"
    have = session.exec(
        select(func.count())
        .select_from(ProbeResult)
        .where(ProbeResult.task_id == task_id, col(ProbeResult.error_type).is_(None))
    ).one()
    if have < 2 * window:
        return (
            f"task {task_id!r} has {have} successful answers; a report with window {window} needs "
            f"{2 * window} (a reference and a recent window that do not overlap)"
        )
    return None


def store_due_reports(
    engine: Engine, task_ids: Sequence[str], now: datetime, *, window: int = 200
) -> dict[str, int | None]:
    """Store one report per task, each in its own transaction; a task with too few answers is skipped.

    Returns the stored report's id per task (None: skipped). One task whose descriptors cannot be
    compared (e.g. every value constant) is logged and skipped, never stops the others.
    """
    done: dict[str, int | None] = {}
    for task_id in task_ids:
        with session_scope(engine) as session:
            if report_shortfall(session, task_id, window) is not None:
                done[task_id] = None
                continue
            try:
                row = store_drift_report(session, task_id, now, window=window)
            except ValueError as exc:
                log.warning("no drift report for task %s: %s", task_id, exc)
                done[task_id] = None
                continue
            done[task_id] = None if row is None else row.id
    return done
