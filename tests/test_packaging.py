"""What `pip install medmon` installs: one import name, every bundled file, the layering kept.

The wheel is built once from this checkout (``uv build``), then:
- its only top-level import name is ``medmon``, and every module and data file of the five
  folders (packs, taxonomy, report templates, migrations) is inside it;
- installed into a fresh virtual environment it runs ``medmon --version`` and imports every
  module from there, not from this checkout;
- the import contracts in ``pyproject.toml`` hold on it (import-linter reads the built tree,
  where every folder sits under ``medmon/``), and a forbidden import does break them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import medmon

pytestmark = pytest.mark.process  # servers, workers or builds started as processes

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "monitor": "medmon/monitor",
    "probes": "medmon/probes",
    "baselines": "medmon/baselines",
    "alerts": "medmon/alerts",
    "dashboards": "medmon/dashboards",
    "medmon": "medmon",
}
DATA_SUFFIXES = {".json", ".jsonl", ".yaml", ".j2", ".mako", ".typed", ""}


def _tracked(folder: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "--wheel", "--quiet", "-o", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (found,) = out.glob("medmon-*.whl")
    return found


@pytest.fixture(scope="module")
def unpacked(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("unpacked")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def test_the_wheel_installs_one_import_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
        entry_points = next(zf.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert tops == {"medmon"}
    assert "medmon = medmon.monitor.cli.app:main" in entry_points


def test_every_module_and_data_file_is_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        inside = set(zf.namelist())
    expected = set()
    for folder, target in FOLDERS.items():
        for rel in _tracked(folder):
            path = Path(rel)
            if path.suffix == ".py" or path.suffix in DATA_SUFFIXES:
                expected.add(target + rel[len(folder) :])
    missing = sorted(expected - inside)
    assert not missing, f"not in the wheel (add them to [tool.setuptools] in pyproject.toml): {missing}"
    for bundled in [
        "medmon/probes/packs/clinical_knowledge_mcq.jsonl",
        "medmon/baselines/data/medhelm_taxonomy.json",
        "medmon/monitor/governance/reports/templates/committee.html.j2",
        "medmon/monitor/storage/migrations/env.py",
        "medmon/monitor/storage/migrations/script.py.mako",
    ]:
        assert bundled in inside


def test_a_fresh_environment_runs_the_installed_package(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "uv", "venv", "--quiet", "--python", sys.executable, str(env_dir)],
        check=True,
        timeout=120,
    )
    # The dependencies come from the test environment's site-packages (a path, not an install: no
    # editable medmon rides along); medmon itself comes only from the wheel.
    purelib = Path(sysconfig.get_paths()["purelib"])
    (site,) = env_dir.glob("lib/python*/site-packages")
    (site / "medmon_test_deps.pth").write_text(f"{purelib}\n")
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--no-deps", "--python", str(python), str(wheel)],
        check=True,
        timeout=120,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    version = subprocess.run(
        [str(env_dir / "bin" / "medmon"), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"medmon {medmon.__version__}"
    script = (
        "import importlib, pkgutil, medmon\n"
        "mods = [m.name for m in pkgutil.walk_packages(medmon.__path__, 'medmon.')\n"
        "        if m.name not in ('medmon.__main__', 'medmon.dashboards.app') and '.views.' not in m.name]\n"
        "for m in mods: importlib.import_module(m)\n"
        "from medmon.probes.packs import load_pack\n"
        "from medmon.monitor.storage.migrate import head_revision\n"
        "print(medmon.__file__, len(mods), len(load_pack('clinical_knowledge_mcq').canaries), head_revision())\n"
    )
    run = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr
    where, count, canaries, head = run.stdout.split()
    assert Path(where).is_relative_to(env_dir), where
    assert int(count) > 100 and int(canaries) > 0 and head


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "500"}  # one line per contract
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    return subprocess.run(
        [lint, "--no-cache", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        timeout=300,
    )


def test_import_contracts_hold(unpacked: Path) -> None:
    result = _lint(unpacked)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    "module,imports,contract",
    [
        ("medmon/alerts/_leak.py", "medmon.monitor.service.scheduler", "Packages:"),
        ("medmon/monitor/plan/_leak.py", "medmon.monitor.governance.audit", "Monitor rooms:"),
        ("medmon/dashboards/_leak.py", "medmon.probes.models", "Dashboards reach data"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(
    unpacked: Path, tmp_path: Path, module: str, imports: str, contract: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(unpacked / "medmon", tree / "medmon")
    (tree / module).write_text(f"import {imports}  # deliberately against the layering\n")
    result = _lint(tree)
    assert result.returncode == 1
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(line.startswith(contract) for line in broken), result.stdout
