"""Each package's public API is sorted, importable, typed and documented, and its doctests pass."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

PACKAGES = ["alerts", "baselines"]
DOCTESTED = [
    "alerts.dedup", "alerts.matchers", "alerts.rules", "alerts.signal", "alerts.signing",
    "baselines.helm_files", "baselines.helm_stats", "baselines.interval", "baselines.win_rate",
    "monitor.clock", "monitor.drift.esr", "monitor.drift.judge", "monitor.drift.judge_bias", "monitor.intervals",
    "probes.scoring",
]


def _public_functions() -> list[tuple[str, str]]:
    out = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        out += [(package, n) for n in module.__all__ if inspect.isfunction(getattr(module, n))]
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)


@pytest.mark.parametrize("package,name", _public_functions())
def test_public_functions_are_typed_and_documented(package: str, name: str) -> None:
    fn = getattr(importlib.import_module(package), name)
    assert inspect.getdoc(fn), f"{package}.{name} has no docstring"
    assert "return" in fn.__annotations__, f"{package}.{name} has no return annotation"


@pytest.mark.parametrize("module", DOCTESTED)
def test_module_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
