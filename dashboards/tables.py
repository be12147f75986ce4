"""Tables on every page read a missing value as "—", never as the word "None".

Streamlit draws a missing cell as a grey "None", which a committee member reads as a value
("the minimum is None?"). :func:`show_table` is ``st.dataframe`` with that one difference: a
column holding a missing value is shown as text, each present value formatted as its column
config asks (``%.3f``, ``percent``, a date pattern), each missing one as "—".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

MISSING = "—"

# The moment.js patterns the pages use for dates, as strftime patterns.
_DATE_PATTERNS = {
    "D MMM HH:mm": "%-d %b %H:%M",
    "D MMM YYYY HH:mm": "%-d %b %Y %H:%M",
    "YYYY-MM-DD HH:mm": "%Y-%m-%d %H:%M",
    "YYYY-MM-DD": "%Y-%m-%d",
}


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
    if kind == "datetime" and pattern in _DATE_PATTERNS:
        return lambda v: pd.Timestamp(v).strftime(_DATE_PATTERNS[pattern])
    return lambda v: (
        f"{v:.4g}" if isinstance(v, float) else (f"{v:%Y-%m-%d %H:%M}" if isinstance(v, datetime) else str(v))
    )


def _as_text(config: Mapping[str, Any] | None) -> Any:
    """The column's config as a text column, keeping its label, help and width."""
    config = config or {}
    return st.column_config.TextColumn(config.get("label"), help=config.get("help"), width=config.get("width"))


def with_dashes(
    frame: pd.DataFrame, column_config: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``frame`` with every column that holds a missing value turned into text ("—" where missing),
    and the column config those columns need now (links are left alone: Streamlit draws them blank)."""
    config = dict(column_config or {})
    frame = frame.copy()
    for column in frame.columns:
        own = config.get(column)
        kind = ((own or {}).get("type_config") or {}).get("type") if isinstance(own, Mapping) else None
        if kind == "link" or not frame[column].map(_missing).any():
            continue
        write = _formatter(own if isinstance(own, Mapping) else None)
        frame[column] = [MISSING if _missing(v) else write(v) for v in frame[column]]
        if isinstance(own, Mapping):
            config[column] = _as_text(own)
    return frame, config


def show_table(
    data: pd.DataFrame | Sequence[Mapping[str, Any]], *, column_config: Mapping[str, Any] | None = None, **kwargs: Any
) -> Any:
    """``st.dataframe`` of ``data`` without its index, with missing values shown as "—" (see the
    module's docstring)."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    frame, config = with_dashes(frame, column_config)
    return st.dataframe(frame, column_config=config or None, hide_index=True, **kwargs)
