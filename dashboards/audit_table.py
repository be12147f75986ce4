"""The audit log as people read it: one row per act, what was done in words, its details as
``field: value`` phrases; the raw JSON and the hash chain stay one click away."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from medmon.dashboards.tables import show_table

DETAIL_CHARS = 240


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k.replace('_', ' ')} {_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value) or "none"
    if value is None or value == "":
        return "—"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def readable_details(details: Mapping[str, Any]) -> str:
    """An entry's details as phrases, long ones cut (the full record is in the raw view).

    >>> readable_details({"note": "checked", "min_score": 0.7, "tasks": ["qa", "dosing"], "old": None})
    'note: checked; min score: 0.7; tasks: qa, dosing; old: —'
    """
    text = "; ".join(f"{k.replace('_', ' ')}: {_value(v)}" for k, v in details.items())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def show_audit(entries: Sequence[Any]) -> None:
    """The entries (newest first, as ``audit_log`` gives them) as a readable table, then the raw records."""
    show_table(
        [
            {
                "when": e.at,
                "what": str(e.kind).replace("_", " "),
                "who": e.actor,
                "about": e.subject,
                "details": readable_details(e.details or {}),
            }
            for e in entries
        ],
        key="audit",
        column_config={"details": st.column_config.TextColumn(width="large")},
    )
    with st.expander("Raw entries as recorded (JSON and hash chain)"):
        show_table(
            [
                {
                    "seq": e.seq,
                    "kind": e.kind,
                    "details": json.dumps(e.details, sort_keys=True, default=str),
                    "hash": e.entry_hash[:16],
                }
                for e in entries
            ],
            key="audit_raw",
        )
