"""The alerts package keeps its boundary: it imports nothing of medmon's but the lowest layer,
``medmon.db``, ``medmon.errors`` and ``medmon.moments``, and its modules stay small. (Its public API is checked in
tests/test_public_api.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import medmon.alerts

PACKAGE = Path(medmon.alerts.__file__).parent
ALLOWED = {"medmon.db", "medmon.errors", "medmon.moments"}  # moments: the one date format


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_alerts_imports_only_storage_and_errors(path: Path) -> None:
    tree = ast.parse(path.read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    ours = {n for n in names if n.startswith("medmon.")}
    assert {n for n in ours if not n.startswith("medmon.alerts")} <= ALLOWED, ours


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 400, f"{path.name}: split it before it grows past ~400 lines"
