"""Hostile or broken files get exit 2 and a message naming the file and line, fast, with nothing
stored: each case below was a hang, a traceback or a silent acceptance before."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from tests.conftest import plan_dict

runner = CliRunner(env={"COLUMNS": "300"})
HELM_RUN = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "helm_benchmark_output"
    / "runs"
    / "medhelm-offline-demo"
    / "shc_ptbm_med:model=simple_model1"
)
GOOD_CANARY = {
    "id": "c1",
    "messages": [{"role": "user", "content": "2+2?"}],
    "references": ["4"],
    "scorer": "exact_match",
}


def check(plan: Path) -> Any:
    return runner.invoke(app, ["check", str(plan)])


def write_plan(folder: Path, **overrides: Any) -> Path:
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(**overrides)), "utf-8")
    return path


def canary_plan(folder: Path, lines: list[str] | bytes) -> Path:
    canaries = folder / "canaries.jsonl"
    if isinstance(lines, bytes):
        canaries.write_bytes(lines)
    else:
        canaries.write_text("\n".join(lines) + "\n", "utf-8")
    task = {
        "id": "mine",
        "benchmark": "med_qa",
        "canaries": {"path": "canaries.jsonl"},
        "schedule": "1h",
        "sample_size": 5,
        "thresholds": {"min_score": 0.5},
    }
    return write_plan(folder, tasks=[task])


def test_a_yaml_alias_bomb_is_refused_at_once_without_echoing_its_expansion(tmp_path: Path) -> None:
    rows = ['x: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(plan_dict()) + "\n".join(rows) + "\n", "utf-8")
    assert plan.stat().st_size < 4096
    started = time.monotonic()
    result = check(plan)
    assert time.monotonic() - started < 10
    assert result.exit_code == 2 and "alias" in result.output
    assert result.output.count("lol") < 3


def test_duplicate_keys_are_refused_with_both_lines(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    text = yaml.safe_dump(plan_dict(), sort_keys=False).replace(
        "    min_score: 0.7\n", "    min_score: 0.7\n    min_score: 0.1\n"
    )
    plan.write_text(text, "utf-8")
    first = text.splitlines().index("    min_score: 0.7") + 1
    result = check(plan)
    assert result.exit_code == 2
    assert f"duplicate key 'min_score' at lines {first} and {first + 1}" in result.output


def test_an_oversized_plan_is_refused_quickly(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(plan_dict()) + "# " + "x" * (2 << 20) + "\n", "utf-8")
    started = time.monotonic()
    result = check(plan)
    assert time.monotonic() - started < 10
    assert result.exit_code == 2 and "the limit is 1,048,576" in result.output


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"id": "c1", "messages": [{"role": "user", "content": "q"}], "baseline_score": NaN}',
            "NaN is not a JSON number",
        ),
        ('{"id": "c1", "messages": [{"role": "user", "content": "q"}], "baseline_score": Infinity}', "Infinity"),
        (
            '{"id": "c1", "messages": [{"role": "user", "content": "q"}], "tolerance": {"lower": "a", "upper": 2}}',
            "field 'tolerance'",
        ),
        (
            '{"id": "c1", "messages": [{"role": "user", "content": "q"}], "tolerance": {"lower": 3, "upper": 2}}',
            "lower <= upper",
        ),
        ('{"id": "c1", "messages": [{"role": "user", "content": "q"}], "baseline_runs": "many"}', "baseline_runs"),
        ('{"id": "c1", "messages": [{"role": "user", "content": "q"}], "choices": "ABCD"}', "field 'choices'"),
        ('{"id": "c1", "messages": [{"role": "user", "content": "q"}], "scorer": 5}', "field 'scorer'"),
        (
            '{"id": "c1", "messages": [{"role": "user", "content": "q"}], "baseline_score": ' + "9" * 5000 + "}",
            "too many digits",
        ),
        ('{"id": "c1", "messages": ' + "[" * 2000 + "]" * 2000 + "}", "nested too deeply"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_canary_values_are_refused_at_check_naming_the_line(tmp_path: Path, line: str, expected: str) -> None:
    result = check(canary_plan(tmp_path, [json.dumps(GOOD_CANARY), line]))
    assert result.exit_code == 2, result.output
    assert "canaries.jsonl:2" in result.output and expected in result.output
    assert "Traceback" not in result.output


def test_non_utf8_files_name_the_line(tmp_path: Path) -> None:
    result = check(canary_plan(tmp_path, json.dumps(GOOD_CANARY).encode() + b'\n{"id": "\xff"}\n'))
    assert result.exit_code == 2 and "canaries.jsonl:2" in result.output and "not UTF-8" in result.output
    plan = tmp_path / "plan2.yaml"
    plan.write_bytes(yaml.safe_dump(plan_dict()).encode() + b"# caf\xe9\n")
    result = check(plan)
    assert result.exit_code == 2 and "not UTF-8" in result.output and "line" in result.output


def test_a_line_separator_inside_a_canary_string_is_text(tmp_path: Path) -> None:
    canary = GOOD_CANARY | {"messages": [{"role": "user", "content": "first\u2028second"}]}
    line = json.dumps(canary, ensure_ascii=False)
    assert "\u2028" in line
    result = check(canary_plan(tmp_path, [line]))
    assert "invalid JSON" not in result.output
    assert "canaries.jsonl" not in result.output or result.exit_code != 2, result.output


def import_run(run: Path, db: str) -> Any:
    return runner.invoke(app, ["baseline", "import", str(run), "--db", db])


def copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "suite" / HELM_RUN.name
    shutil.copytree(HELM_RUN, run)
    return run


def test_a_helm_file_symlinked_from_outside_the_run_is_refused(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    outside = tmp_path / "elsewhere.json"
    shutil.move(run / "stats.json", outside)
    (run / "stats.json").symlink_to(outside)
    result = import_run(run, db_url)
    assert result.exit_code == 2 and "outside the run directory" in result.output
    assert runner.invoke(app, ["baseline", "list", "--db", db_url, "--json"]).stdout.strip() in ("[]", "")


def test_a_helm_run_directory_symlinked_from_outside_the_suite_is_refused(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    outside = tmp_path / "elsewhere-run"
    shutil.move(run, outside)
    run.symlink_to(outside, target_is_directory=True)  # the run's files are inside the run, the run is not
    result = runner.invoke(app, ["baseline", "import", str(run.parent), "--db", db_url])
    assert result.exit_code == 2 and "outside the suite" in result.output, result.output
    assert runner.invoke(app, ["baseline", "list", "--db", db_url, "--json"]).stdout.strip() in ("[]", "")


def _edit_stat(run: Path, name: str, **values: Any) -> None:
    stats = json.loads((run / "stats.json").read_text())
    for stat in stats:
        if stat["name"]["name"] == name and "perturbation" not in stat["name"]:
            stat.update(values)
    (run / "stats.json").write_text(json.dumps(stats))


def _line_of(path: Path, fragment: str) -> int:
    """The 1-based line of the only line of ``path`` holding ``fragment`` (the test's own oracle)."""
    [line] = [i for i, text in enumerate(path.read_text().splitlines(), 1) if fragment in text]
    return line


def _edit_json(path: Path, edit: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2, allow_nan=True))


def test_a_negative_instance_count_is_refused_naming_file_line_and_field(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    _edit_stat(run, "num_instances", mean=-5.0)
    _edit_json(run / "stats.json", lambda _: None)  # one value per line, as HELM writes it
    result = import_run(run, db_url)
    line = _line_of(run / "stats.json", '"mean": -5.0')
    assert result.exit_code == 2 and "expected a positive number of instances" in result.output, result.output
    assert f"stats.json: line {line}: num_instances (split test).mean: -5;" in result.output, result.output


def _model(spec: dict[str, Any], value: Any) -> None:
    spec["adapter_spec"]["model"] = value


def _no_model(spec: dict[str, Any]) -> None:
    del spec["adapter_spec"]["model"]


def _groups(spec: dict[str, Any]) -> None:
    spec["groups"] = "shc_ptbm_med"


@pytest.mark.parametrize(
    ("edit", "fragment", "expected"),
    [
        (lambda spec: _model(spec, 42), '"model": 42', "adapter_spec.model: expected str, got int"),
        (
            lambda spec: _model(spec, float("nan")),
            '"model": NaN',
            "adapter_spec.model: expected str, got a non-finite number",
        ),
        (_no_model, '"adapter_spec": {', "adapter_spec.model: key missing"),
        (_groups, '"groups": "shc_ptbm_med"', "groups: expected a list of group names"),
    ],
)
def test_wrong_types_and_missing_fields_in_a_run_spec_name_the_line(
    tmp_path: Path, db_url: str, edit: Callable[[Any], None], fragment: str, expected: str
) -> None:
    run = copy_run(tmp_path)
    _edit_json(run / "run_spec.json", edit)
    result = import_run(run, db_url)
    line = _line_of(run / "run_spec.json", fragment)
    assert result.exit_code == 2, result.output
    assert f"run_spec.json: line {line}: {expected}" in result.output, result.output
    assert "Traceback" not in result.output


def _instance(entries: list[dict[str, Any]], **values: Any) -> None:
    entries[3].update(values)


@pytest.mark.parametrize(
    ("values", "fragment", "expected"),
    [
        ({"instance_id": 7}, '"instance_id": 7', "[3].instance_id: key missing or not a string"),
        (
            {"train_trial_index": "first"},
            '"train_trial_index": "first"',
            "[3].train_trial_index: expected an integer, got str",
        ),
        ({"stats": {"accuracy": 1}}, '"stats": {', "[3].stats: expected a list of stat objects"),
    ],
)
def test_wrong_types_in_per_instance_stats_name_the_line(
    tmp_path: Path, db_url: str, values: dict[str, Any], fragment: str, expected: str
) -> None:
    run = copy_run(tmp_path)
    _edit_json(run / "per_instance_stats.json", lambda entries: _instance(entries, **values))
    result = import_run(run, db_url)
    line = _line_of(run / "per_instance_stats.json", fragment)
    assert result.exit_code == 2, result.output
    assert f"per_instance_stats.json: line {line}: {expected}" in result.output, result.output


def test_a_main_metric_outside_its_scale_names_the_line(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    stats = json.loads((run / "stats.json").read_text())
    main = next(
        s
        for s in stats
        if s["name"]["name"] in ("exact_match", "accuracy")
        and "perturbation" not in s["name"]
        and s["name"].get("split") == "test"
    )
    main["mean"] = 7.5
    (run / "stats.json").write_text(json.dumps(stats, indent=2))
    result = import_run(run, db_url)
    line = _line_of(run / "stats.json", '"mean": 7.5')
    assert result.exit_code == 2, result.output
    assert f"stats.json: line {line}: {main['name']['name']}.mean: value 7.5 outside" in result.output, result.output


def test_a_non_finite_main_metric_names_the_line_not_a_missing_metric(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    _edit_stat(run, "exact_match", mean=float("inf"))
    _edit_json(run / "stats.json", lambda _: None)
    result = import_run(run, db_url)
    line = _line_of(run / "stats.json", '"mean": Infinity')
    assert result.exit_code == 2, result.output
    assert f"stats.json: line {line}: exact_match (split test).mean: expected a finite number" in result.output


def test_a_request_state_of_an_unforeseen_shape_names_its_line(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)

    def edit(state: dict[str, Any]) -> None:
        state["request_states"][1]["instance"]["input"] = 5

    _edit_json(run / "scenario_state.json", edit)
    lines = (run / "scenario_state.json").read_text().splitlines()
    # The oracle: written with indent=2, the states of the top-level "request_states" list open at 4 spaces.
    assert lines[1].startswith('  "') and any(t == '  "request_states": [' for t in lines)
    line = [i for i, t in enumerate(lines, 1) if t == "    {"][1]
    result = import_run(run, db_url)
    assert result.exit_code == 2, result.output
    assert f"scenario_state.json: line {line}: request_states[1]: unexpected value" in result.output, result.output


def test_a_yaml_integer_too_long_to_convert_names_the_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    text = yaml.safe_dump(plan_dict(), sort_keys=False).replace(
        "sample_size: 20\n", "sample_size: " + "9" * 5000 + "\n"
    )
    plan.write_text(text, "utf-8")
    line = _line_of(plan, "sample_size: 999")
    result = check(plan)
    assert result.exit_code == 2, result.output
    assert f"line {line}" in result.output and "an integer with too many digits" in result.output, result.output
    assert "99999" not in result.output  # the value itself is not echoed


def test_a_non_numeric_instance_count_counts_as_absent_and_says_so(tmp_path: Path, db_url: str) -> None:
    run = copy_run(tmp_path)
    _edit_stat(run, "num_instances", mean="five", count="x")
    result = import_run(run, db_url)
    assert result.exit_code == 0 and "no num_instances stat; n = 8 instances with per-instance scores" in result.output


@pytest.mark.parametrize(
    "text",
    [
        '{"adapter_spec": {"model": NaN}}',
        "[" * 3000 + "]" * 3000,
        '{"adapter_spec": {"model": "m", "max_tokens": ' + "7" * 6000 + "}}",
    ],
)
def test_hostile_helm_json_exits_2(tmp_path: Path, db_url: str, text: str) -> None:
    run = copy_run(tmp_path)
    (run / "run_spec.json").write_text(text)
    result = import_run(run, db_url)
    assert result.exit_code == 2 and "run_spec.json" in result.output, result.output


def test_a_served_model_name_cannot_become_a_link_in_a_teams_card() -> None:
    from pydantic import SecretStr

    from medmon.alerts.channels import TeamsChannel, TeamsConfig
    from tests.alerts.test_channels import sample_notification

    note = sample_notification()
    note["alerts"][0]["summary"] = "served model changed to [Update here](https://evil.example/login)"
    card = TeamsChannel(TeamsConfig(name="t", url=SecretStr("http://127.0.0.1:9/"))).render(note)
    text = json.dumps(card)
    assert "[Update here](" not in text and "https://evil.example" not in text
