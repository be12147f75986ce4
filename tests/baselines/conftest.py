"""Fixtures for the baselines tests: the real HELM fixture, a SQLite file, and a HELM run writer."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.baselines.helm_runs import SUITE, RunWriter

# Real output written by crfm-helm 0.5.16 (suite ``medhelm-offline-demo``), kept with the tests so
# the importer is always tested against what HELM itself writes.
HELM_OUTPUT = Path(__file__).resolve().parents[1] / "fixtures" / "helm_benchmark_output"


@pytest.fixture
def helm_output() -> Path:
    """The real crfm-helm output tree shipped in ``tests/fixtures``."""
    assert (HELM_OUTPUT / "runs" / SUITE).is_dir(), f"HELM fixture missing: {HELM_OUTPUT}/runs/{SUITE}"
    return HELM_OUTPUT


@pytest.fixture
def suite_dir(helm_output: Path) -> Path:
    return helm_output / "runs" / SUITE


@pytest.fixture
def writable_suite(suite_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the fixture suite (the shared fixture files are read-only)."""
    target = tmp_path / "benchmark_output" / "runs" / SUITE
    shutil.copytree(suite_dir, target, copy_function=shutil.copyfile)
    for root, dirs, _files in os.walk(target):
        for name in dirs:
            p = Path(root) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    target.chmod(target.stat().st_mode | stat.S_IWUSR)
    return target


@pytest.fixture
def write_run(tmp_path: Path) -> RunWriter:
    """Write synthetic HELM runs under ``tmp_path/benchmark_output/runs/synthetic``."""
    root = tmp_path / "benchmark_output" / "runs" / "synthetic"
    root.mkdir(parents=True)
    return RunWriter(root)
