"""The alerts package's public API: sorted, importable, typed and documented; doctests pass; and
alerts imports nothing of medmon's but ``monitor.storage`` and ``monitor.errors``."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
from pathlib import Path

import pytest

import alerts

PACKAGE = Path(alerts.__file__).parent
DOCTESTED = ["alerts.dedup", "alerts.matchers", "alerts.rules", "alerts.signal", "alerts.signing"]
ALLOWED = {"alerts", "monitor.storage", "monitor.errors"}
OURS = ("alerts", "baselines", "dashboards", "monitor", "probes")


def test_all_is_sorted_and_importable() -> None:
    assert alerts.__all__ == sorted(alerts.__all__)
    assert all(hasattr(alerts, name) for name in alerts.__all__)


@pytest.mark.parametrize("name", [n for n in alerts.__all__ if inspect.isfunction(getattr(alerts, n))])
def test_public_functions_are_typed_and_documented(name: str) -> None:
    fn = getattr(alerts, name)
    assert inspect.getdoc(fn), f"{name} has no docstring"
    assert "return" in fn.__annotations__, f"{name} has no return annotation"


@pytest.mark.parametrize("module", DOCTESTED)
def test_module_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_alerts_imports_only_storage_and_errors(path: Path) -> None:
    tree = ast.parse(path.read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    ours = {n for n in names if n.split(".")[0] in OURS}
    assert {n for n in ours if n.split(".")[0] != "alerts"} <= ALLOWED, ours


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 400, f"{path.name}: split it before it grows past ~400 lines"
