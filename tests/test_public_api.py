"""Each package's public API is sorted, importable, typed and documented, and its doctests pass."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

PACKAGES = ["medmon.alerts", "medmon.baselines"]
DOCTESTED = [
    "medmon.alerts.dedup", "medmon.alerts.matchers", "medmon.alerts.rules", "medmon.alerts.signal", "medmon.alerts.signing",
    "medmon.baselines.helm_files", "medmon.baselines.helm_stats", "medmon.baselines.interval", "medmon.baselines.win_rate",
    "medmon.monitor.service.clock", "medmon.monitor.detection.drift.esr", "medmon.monitor.detection.drift.judge", "medmon.monitor.detection.drift.judge_bias", "medmon.monitor.plan.intervals",
    "medmon.probes.scoring", "medmon.probes.client", "medmon.probes.limits", "medmon.monitor.detection.identity",
    "medmon.monitor.runs.pipeline", "medmon.monitor.cli.simulate",
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
