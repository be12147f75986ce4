"""Each package's public API is sorted, importable, typed and documented, and the examples in the docstrings
of every module of the package run (no list of modules to keep by hand)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pkgutil
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["medmon.alerts", "medmon.baselines"]


def _modules_with_examples() -> list[str]:
    """Every module of every package the wheel ships (``[tool.setuptools] packages``) whose source has a
    ``>>>`` example; found without importing them (the dashboard pages run Streamlit when imported)."""
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["packages"]
    out = []
    for package in packages:
        modules = pkgutil.iter_modules(importlib.import_module(package).__path__, f"{package}.")
        for name in [package, *(m.name for m in modules if not m.ispkg)]:
            spec = importlib.util.find_spec(name)
            if spec and spec.origin and ">>>" in Path(spec.origin).read_text("utf-8"):
                out.append(name)
    return sorted(out)


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


def test_doctests_are_found_in_every_package() -> None:
    found = _modules_with_examples()
    assert {m.split(".")[1] for m in found} >= {"alerts", "baselines", "monitor", "probes"}, found


@pytest.mark.parametrize("module", _modules_with_examples())
def test_module_doctests(module: str) -> None:
    imported = importlib.import_module(module)
    assert any(test.examples for test in doctest.DocTestFinder().find(imported)), f"{module}: no example found"
    result = doctest.testmod(imported, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
