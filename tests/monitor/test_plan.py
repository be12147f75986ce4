"""Plan validation: every bad plan gets a clear error with field path and line, and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.plan.model import load_plan, parse_interval
from tests.conftest import plan_dict

runner = CliRunner()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


def test_valid_plan_loads_and_checks(tmp_path: Path) -> None:
    path = write(tmp_path, yaml.safe_dump(plan_dict()))
    plan = load_plan(path)
    assert plan.tasks[0].interval is not None and plan.tasks[0].interval.total_seconds() == 3600
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert "knowledge-qa" in result.output


BAD = {
    "missing-field": (
        lambda d: d["use_case"].pop("intended_use"),
        "use_case.intended_use",
        "required field is missing",
    ),
    "wrong-type": (lambda d: d["tasks"][0].update(sample_size="many"), "tasks[0].sample_size", "valid integer"),
    "unknown-key": (lambda d: d["deployment"].update(modle="x"), "deployment.modle", "unknown field"),
    "bad-schedule": (
        lambda d: d["tasks"][0].update(schedule="hourly-ish"),
        "tasks[0].schedule",
        "expected a cron expression or an interval like '1h', got 'hourly-ish'",
    ),
    "bad-url": (lambda d: d["deployment"].update(base_url="llm.local"), "deployment.base_url", "http(s) URL"),
    "bad-correlation-window": (
        lambda d: d["alerts"].update(correlation_window="0s"),
        "alerts.correlation_window",
        "expected a duration from 1s to 30d, such as '72h', got '0s'",
    ),
    "bad-webhook": (
        lambda d: d["alerts"].update(routes=[{"name": "x", "url": "not a url"}]),
        "alerts.routes[0].url",
        "http(s) URL",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_plan_names_field_and_line(tmp_path: Path, case: str) -> None:
    mutate, path_expected, message = BAD[case]
    data = plan_dict()
    mutate(data)
    path = write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(PlanError) as info:
        load_plan(path)
    issue = next(i for i in info.value.issues if i.path.startswith(path_expected))
    assert message in issue.message
    assert issue.line is not None
    keys = [k.split("[")[0] for k in path_expected.split(".")]
    line = path.read_text().splitlines()[issue.line - 1]
    assert keys[-1] in line or (case == "missing-field" and keys[-2] in line), line
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert path_expected in result.output


def test_invalid_yaml_reports_line(tmp_path: Path) -> None:
    path = write(tmp_path, "use_case:\n  name: [unclosed\nowners: {}\n")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert "invalid YAML" in result.output and "line" in result.output


def test_every_problem_reported_at_once(tmp_path: Path) -> None:
    data = plan_dict()
    data["tasks"][0]["schedule"] = "sometimes"
    data["deployment"]["bogus"] = 1
    path = write(tmp_path, yaml.safe_dump(data))
    result = runner.invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 2
    import json

    issues = json.loads(result.output)["issues"]
    assert {i["path"] for i in issues} >= {"tasks[0].schedule", "deployment.bogus"}


def test_missing_file_is_clear(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read plan file" in result.output


def test_unknown_pack_is_reported(tmp_path: Path) -> None:
    data = plan_dict()
    data["tasks"][0]["canaries"] = {"pack": "no_such_pack"}
    result = runner.invoke(app, ["check", str(write(tmp_path, yaml.safe_dump(data)))])
    assert result.exit_code == 2
    assert "tasks[0].canaries" in result.output and "no_such_pack" in result.output


def test_starter_plan_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    assert runner.invoke(app, ["init", str(path)]).exit_code == 0
    assert runner.invoke(app, ["init", str(path)]).exit_code == 2  # no silent overwrite
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("15m", 900), ("1h", 3600), ("2d", 172800)])
def test_parse_interval(text: str, seconds: int) -> None:
    assert parse_interval(text).total_seconds() == seconds
