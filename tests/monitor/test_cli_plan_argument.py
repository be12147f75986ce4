"""Every command is given its plan the same way, and ``medmon report`` writes only where told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.reports.render import find_chromium
from tests.conftest import plan_dict

runner = CliRunner()


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every leaf command under ``group`` (typer's click groups and commands, by their attributes)."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found += _commands(command, (*prefix, name))
        else:
            found.append(((*prefix, name), command))
    return found


def test_every_command_that_reads_a_plan_takes_it_as_its_first_argument() -> None:
    commands = _commands(typer.main.get_command(app))  # type: ignore[arg-type]
    reading = {
        path: command for path, command in commands if any(p.name in ("plan_path", "plan") for p in command.params)
    }
    # The commands the committee and operators use daily all read a plan.
    for must in [
        ("check",),
        ("serve",),
        ("report",),
        ("probe", "run"),
        ("dashboard",),
        ("audit", "verify"),
        ("audit", "list"),
        ("change", "record"),
        ("change", "list"),
        ("baseline", "approve"),
        ("drift", "report"),
        ("oversight", "pass"),
        ("traffic", "import"),
        ("worker",),
    ]:
        assert must in reading, must
    for path, command in reading.items():
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        plan = next(p for p in command.params if p.name in ("plan_path", "plan"))
        assert plan.param_type_name == "argument" and arguments[0] is plan, f"medmon {' '.join(path)}"
        options = [o for p in command.params if p.param_type_name == "option" and not p.hidden for o in p.opts]
        assert "--plan" not in options, f"medmon {' '.join(path)} still shows --plan"
        assert "MEDMON_PLAN" in (plan.envvar or ""), f"medmon {' '.join(path)}"


def test_help_explains_how_the_plan_is_given() -> None:
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert "first argument" in top.stdout and "MEDMON_PLAN" in top.stdout and "--plan" in top.stdout
    change = runner.invoke(app, ["change", "record", "--help"], env={"COLUMNS": "100"})
    assert "PLAN" in change.stdout and "deprecated" in change.stdout
    report = runner.invoke(app, ["report", "--help"], env={"COLUMNS": "100"})
    assert "--plan-document" in report.stdout and "--output" in report.stdout


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    """A plan and its SQLite database in their own folder (the test's working folder is another one)."""
    folder = tmp_path / "deployment"
    folder.mkdir()
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": f"sqlite:///{folder / 'medmon.db'}"})))
    return path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("MEDMON_PLAN", raising=False)
    return cwd


def test_the_old_plan_option_still_works_with_a_deprecation_warning(plan_file: Path, workdir: Path) -> None:
    new = runner.invoke(app, ["change", "list", str(plan_file), "--json"])
    assert new.exit_code == 0, new.output
    assert json.loads(new.stdout) == [] and "deprecated" not in new.stderr
    old = runner.invoke(app, ["change", "list", "--plan", str(plan_file), "--json"])
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout) == []
    assert "'--plan' is deprecated" in old.stderr and f"medmon change list {plan_file}" in old.stderr
    audit = runner.invoke(app, ["audit", "verify", "--plan", str(plan_file), "--json"])
    assert audit.exit_code == 0, audit.output
    assert json.loads(audit.stdout)["ok"] is True and "deprecated" in audit.stderr
    assert runner.invoke(app, ["audit", "verify", str(plan_file), "--json"]).exit_code == 0
    proposals = runner.invoke(app, ["baseline", "proposals", "--plan", str(plan_file), "--json"])
    assert proposals.exit_code == 0 and json.loads(proposals.stdout) == [] and "deprecated" in proposals.stderr
    other = plan_file.with_name("other.yaml")
    twice = runner.invoke(app, ["change", "list", str(plan_file), "--plan", str(other)])
    assert twice.exit_code == 2 and "given twice" in twice.stderr
    missing = runner.invoke(app, ["change", "list"])
    assert missing.exit_code == 2 and "missing the plan" in missing.stderr
    from_env = runner.invoke(app, ["change", "list", "--json"], env={"MEDMON_PLAN": str(plan_file)})
    assert from_env.exit_code == 0 and json.loads(from_env.stdout) == []
    assert sorted(p.name for p in workdir.iterdir()) == []


def test_report_json_prints_and_writes_nothing(plan_file: Path, workdir: Path) -> None:
    assert runner.invoke(app, ["change", "list", str(plan_file)]).exit_code == 0  # creates the database
    committee = runner.invoke(app, ["report", str(plan_file), "--period", "2026-11", "--json"])
    assert committee.exit_code == 0, committee.output
    figures = json.loads(committee.stdout)
    assert figures["outputs"] == {"html": None, "pdf": None} and len(figures["sha256"]) == 64
    document = runner.invoke(app, ["report", str(plan_file), "--plan-document", "--json"])
    assert document.exit_code == 0, document.output
    assert json.loads(document.stdout)["document"] == "monitoring-plan"
    unasked = runner.invoke(app, ["report", str(plan_file), "--period", "2026-11"])
    assert unasked.exit_code == 2 and "--output" in unasked.stderr
    assert sorted(p.name for p in workdir.iterdir()) == []  # nothing stray in the working folder
    assert not [p.name for p in plan_file.parent.iterdir() if p.suffix in (".html", ".pdf")]


def test_report_writes_exactly_where_told(plan_file: Path, workdir: Path) -> None:
    assert runner.invoke(app, ["change", "list", str(plan_file)]).exit_code == 0
    made = runner.invoke(app, ["report", str(plan_file), "--period", "2026-11", "--output", "out/nov.html", "--no-pdf"])
    assert made.exit_code == 0, made.output
    assert "wrote out/nov.html" in made.stdout
    assert [str(p.relative_to(workdir)) for p in sorted(workdir.rglob("*"))] == ["out", "out/nov.html"]
    page = (workdir / "out" / "nov.html").read_text()
    assert "Recommendation" in page and ">None<" not in page  # an empty database: no cell reads "None"
    old_flag = runner.invoke(app, ["report", str(plan_file), "--plan", "-o", "plan.html", "--no-pdf", "--json"])
    assert old_flag.exit_code == 0, old_flag.output
    assert json.loads(old_flag.stdout)["outputs"]["html"] == "plan.html"
    assert "--plan-document" in old_flag.stderr and "deprecated" in old_flag.stderr
    assert "Step 1. Intended use" in (workdir / "plan.html").read_text()
    assert sorted(p.name for p in workdir.iterdir()) == ["out", "plan.html"]


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium to print a PDF with")
def test_report_to_a_pdf_name_writes_only_that_pdf(plan_file: Path, workdir: Path) -> None:
    assert runner.invoke(app, ["change", "list", str(plan_file)]).exit_code == 0
    made = runner.invoke(app, ["report", str(plan_file), "--period", "2026-11", "--output", "nov.pdf", "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["outputs"] == {"html": None, "pdf": "nov.pdf"}
    assert [p.name for p in workdir.iterdir()] == ["nov.pdf"]
    assert (workdir / "nov.pdf").read_bytes()[:5] == b"%PDF-"
