"""Tables on every page read a missing value as "—", never as the word "None", and a moment in one format.

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

from medmon.moments import display_time

MISSING = "—"
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


def show_table(
    data: pd.DataFrame | Sequence[Mapping[str, Any]], *, column_config: Mapping[str, Any] | None = None, **kwargs: Any
) -> Any:
    """``st.dataframe`` of ``data`` without its index, with missing values shown as "—" (see the
    module's docstring)."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    frame, config = with_dashes(frame, column_config)
    return st.dataframe(frame, column_config=config or None, hide_index=True, **kwargs)
