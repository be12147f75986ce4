"""The read API is sorted, typed and documented; pages read through ``medmon.monitor.read`` and act
through ``medmon.dashboards.actions`` (which calls ``alerts`` and the audit log), with no SQL of their own."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import medmon.monitor.read as read

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "dashboards").rglob("*.py"))
VIEWS = sorted((ROOT / "dashboards" / "views").glob("*.py"))
READ = sorted((ROOT / "monitor" / "read").glob("*.py"))
# medmon.monitor.plan.routing turns the plan into the alerts package's notification policy for an action.
# medmon.monitor.plan.privacy masks plan text exactly as the committee report does.
# Human oversight records people's decisions (ratings, safety events, suspensions) through the
# governance functions that check and audit them, and reads its rubric and MedHELM's figures from the plan.
DASHBOARD_MAY_IMPORT = {
    "medmon.monitor.read",
    "medmon.monitor.plan.model",
    "medmon.monitor.storage",
    "medmon.db",
    "medmon.moments",  # the one date format (the lowest layer, like medmon.db)
    "medmon.monitor.governance.audit",
    "medmon.monitor.plan.routing",
    "medmon.monitor.plan.privacy",
    "medmon.alerts",
    "medmon.monitor.governance.review",
    "medmon.monitor.governance.safety",
    # Sign-off and threshold approvals: checked and audited by their governance functions.
    "medmon.monitor.governance.signoff",
    "medmon.monitor.governance.thresholds",
    "medmon.monitor.governance.decisions",  # the committee's decision: checked and audited there
    "medmon.monitor.governance.roles",  # who may take which act on which task, checked before any write
    "medmon.monitor.governance",
    "medmon.monitor.plan.oversight",
    "medmon.monitor.errors",
    "medmon.monitor.plan.masking",  # the plan text as it may be shown (route URLs masked)
    "medmon.scrub",
}  # the dashboard process's log lines, secrets masked


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    return names


def test_all_is_sorted_and_importable() -> None:
    assert read.__all__ == sorted(read.__all__, key=lambda n: (n[0].islower(), n))
    assert all(hasattr(read, name) for name in read.__all__)


@pytest.mark.parametrize("name", [n for n in read.__all__ if inspect.isfunction(getattr(read, n))])
def test_read_functions_are_typed_and_documented(name: str) -> None:
    fn = getattr(read, name)
    assert inspect.getdoc(fn), f"{name} has no docstring"
    assert "return" in fn.__annotations__, f"{name} has no return annotation"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_dashboards_import_only_read_functions_and_actions(path: Path) -> None:
    ours = {n for n in _imports(path) if n.startswith("medmon.") and not n.startswith("medmon.dashboards")}
    assert ours <= DASHBOARD_MAY_IMPORT, ours


@pytest.mark.parametrize("path", VIEWS, ids=lambda p: p.name)
def test_pages_write_no_sql(path: Path) -> None:
    tree = ast.parse(path.read_text())
    imported = {
        a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module in ("sqlmodel", "sqlalchemy")
        for a in n.names
    }
    assert imported <= {"Session"}, imported
    assert not {n for n in _imports(path) if n.startswith("sqlalchemy")}


@pytest.mark.parametrize("path", DASHBOARDS + READ, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 400, f"{path.name}: split it before it grows past ~400 lines"
