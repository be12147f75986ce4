"""The baselines package's public API: sorted, importable, documented; module doctests pass."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import baselines

DOCTESTED = ["baselines.helm_files", "baselines.helm_stats", "baselines.win_rate"]


def test_all_is_sorted_and_importable() -> None:
    assert baselines.__all__ == sorted(baselines.__all__)
    assert all(hasattr(baselines, name) for name in baselines.__all__)


@pytest.mark.parametrize("name", [n for n in baselines.__all__ if inspect.isfunction(getattr(baselines, n))])
def test_public_functions_are_typed_and_documented(name: str) -> None:
    fn = getattr(baselines, name)
    assert inspect.getdoc(fn), f"{name} has no docstring"
    assert "return" in fn.__annotations__, f"{name} has no return annotation"


@pytest.mark.parametrize("module", DOCTESTED)
def test_module_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
