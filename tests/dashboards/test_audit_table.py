"""The Governance page shows the audit log as a table people read: when, what, who, about what,
and the details as phrases; the raw JSON and the hash chain stay one click away."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from tests.dashboards.seed import Seeded


def test_the_audit_log_reads_as_a_table_not_as_json(seeded: Seeded, open_page: Callable[..., AppTest]) -> None:
    at = open_page("governance")
    readable = [d.value for d in at.dataframe if list(d.value.columns) == ["when", "what", "who", "about", "details"]]
    assert readable, [list(d.value.columns) for d in at.dataframe]
    frame = readable[0]
    assert len(frame) > 0
    assert not frame["details"].str.contains(r'^\{|":', regex=True).any()  # no JSON braces or quoted keys
    assert not frame["what"].str.contains("_").any()  # plan_recorded reads "plan recorded"
    assert frame["when"].str.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]{3,4}$").all()  # the one date format
    raw = [d for d in at.dataframe if list(d.value.columns) == ["seq", "kind", "details", "hash"]]
    assert raw and raw[0].value["details"].str.startswith("{").all()  # the record itself, in the expander
