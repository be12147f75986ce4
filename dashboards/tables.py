"""Tables on every page fit the page at 1,024 px, read a missing value as "—", never as the word
"None", and write a moment in one format.

Streamlit draws a missing cell as a grey "None", which a committee member reads as a value
("the minimum is None?"): a column holding a missing value is shown as text, each present value
formatted as its column config asks (``%.3f``, ``percent``, a date pattern), each missing one as "—".

A data grid wider than its frame scrolls sideways and cuts long text (issue 31: a third of a
table visible at 1,024 px, summaries cut even when scrolled). So :func:`show_table` draws only the
columns that fit the narrowest supported page whole (the caller's leading ones first), and every
other column, long text included, is detail on demand: tick rows in the grid and they are written
out in full, wrapped, under it. The data behind the grid keeps every column (its CSV download too).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from medmon.moments import display_time

MISSING = "—"
# The grid's width at a 1,024 px window (the sidebar open, ``medmon.dashboards.app``'s margins), and
# what one character of the grid's 14 px Source Sans takes at most on average, with a cell's padding
# and header icon: a column is drawn only if its widest cell fits, all drawn columns together too.
FIT_PX = 630
CHAR_PX = 7.2
CELL_PAD_PX = 30
WIDEST_COLUMN_PX = 330
_ZONE = {"tz": "UTC"}  # the plan's display zone; ``medmon.dashboards.layout.page`` sets it for each page


def set_display_zone(tz: str) -> None:
    """Write every moment on the pages in ``tz`` (the plan's ``display_timezone``)."""
    _ZONE["tz"] = tz


def shown_time(value: datetime | None) -> str:
    """A moment as every page writes it (``medmon.moments.display_time`` in the plan's zone)."""
    return display_time(value, _ZONE["tz"])


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists, dicts: present
        return False


def _formatter(config: Mapping[str, Any] | None) -> Any:
    """How to write one present value of a column, following its Streamlit column config."""
    type_config = (config or {}).get("type_config") or {}
    kind, pattern = type_config.get("type"), type_config.get("format")
    if kind in ("number", "progress") and pattern:
        if pattern == "percent":
            return lambda v: f"{float(v) * 100:.2f}%"
        if "%" in pattern:
            return lambda v: pattern % v
    if kind == "datetime":
        return lambda v: shown_time(pd.Timestamp(v).to_pydatetime())
    return lambda v: f"{v:.4g}" if isinstance(v, float) else (shown_time(v) if isinstance(v, datetime) else str(v))


def _as_text(config: Mapping[str, Any] | None) -> Any:
    """The column's config as a text column, keeping its label, help and width."""
    config = config or {}
    return st.column_config.TextColumn(config.get("label"), help=config.get("help"), width=config.get("width"))


def with_dashes(
    frame: pd.DataFrame, column_config: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``frame`` with every column that holds a missing value or a moment turned into text ("—" where
    missing, moments in the one display format), and the column config those columns need now
    (links are left alone: Streamlit draws them blank)."""
    config = dict(column_config or {})
    frame = frame.copy()
    for column in frame.columns:
        own = config.get(column)
        kind = ((own or {}).get("type_config") or {}).get("type") if isinstance(own, Mapping) else None
        moments = kind == "datetime" or pd.api.types.is_datetime64_any_dtype(frame[column])
        moments = moments or frame[column].map(lambda v: isinstance(v, datetime)).any()
        if kind == "link" or not (moments or frame[column].map(_missing).any()):
            continue
        if moments and not isinstance(own, Mapping):
            own = {"type_config": {"type": "datetime"}}
        write = _formatter(own if isinstance(own, Mapping) else None)
        frame[column] = [MISSING if _missing(v) else write(v) for v in frame[column]]
        if isinstance(own, Mapping):
            config[column] = _as_text(own)
    return frame, config


def column_px(frame: pd.DataFrame, column: str) -> float:
    """How wide ``column`` is drawn whole: its header or its longest cell, whichever is longer."""
    longest = max([len(str(column)), *(len(str(v)) for v in frame[column])])
    return longest * CHAR_PX + CELL_PAD_PX


def fitting_columns(frame: pd.DataFrame, lead: Sequence[str] = ()) -> list[str]:
    """The columns drawn in the grid: ``lead`` first, then the others in order, each while it fits whole
    and the drawn ones together fit :data:`FIT_PX`; the first column always (a row needs a name)."""
    order = [c for c in lead if c in frame.columns] + [c for c in frame.columns if c not in lead]
    drawn: list[str] = []
    used = 0.0
    for column in order:
        need = column_px(frame, column)
        if not drawn or (need <= WIDEST_COLUMN_PX and used + need <= FIT_PX):
            drawn.append(column)
            used += need
    return [c for c in order if c in drawn]


def _details(frame: pd.DataFrame, rows: Sequence[int], hidden: Sequence[str], name: str) -> None:
    """The ticked rows written out under their first column, every other column a line that wraps."""
    for position in rows:
        row = frame.iloc[position]
        lines = [f"- **{column}**: {_plain(row[column])}" for column in frame.columns if column in hidden]
        with st.container(border=True):
            st.markdown(f"**{_plain(row[name])}**\n\n" + "\n".join(lines))


def _plain(value: Any) -> str:
    """A cell as markdown text, without markdown's own marks acting on it."""
    text = str(value).replace("\n", " ")
    for mark in ("\\", "*", "_", "`", "[", "]", "#", "<", ">", "|", "$", "~"):
        text = text.replace(mark, "\\" + mark)
    return text


def show_table(
    data: pd.DataFrame | Sequence[Mapping[str, Any]],
    *,
    column_config: Mapping[str, Any] | None = None,
    lead: Sequence[str] = (),
    **kwargs: Any,
) -> Any:
    """``st.dataframe`` of ``data`` without its index, with missing values shown as "—" and only the
    columns that fit drawn, the rest on demand (see the module's docstring)."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    frame, config = with_dashes(frame, column_config)
    frame = frame.reset_index(drop=True)
    drawn = fitting_columns(frame, lead)
    hidden = [c for c in frame.columns if c not in drawn]
    if not hidden or frame.empty:
        return st.dataframe(frame, column_config=config or None, column_order=drawn, hide_index=True, **kwargs)
    key = (
        kwargs.pop("key", None)
        or "table-" + hashlib.sha256(("|".join(map(str, frame.columns)) + frame.to_csv()).encode()).hexdigest()[:16]
    )
    event = st.dataframe(
        frame,
        column_config=config or None,
        column_order=drawn,
        hide_index=True,
        on_select="rerun",
        selection_mode="multi-row",
        key=key,
        **kwargs,
    )
    ticked = list(event.selection.rows) if event is not None else []
    if ticked:
        _details(frame, ticked, hidden, drawn[0])
    else:
        st.caption(f"Tick rows at the table's left to read them in full here: {', '.join(map(str, hidden))}.")
    return event
