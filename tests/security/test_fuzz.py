"""Random and mutated plans, canary lines and HELM files fed to ``medmon check`` and the importer:
only exit 0 or 2, never a traceback, and a refused import stores nothing."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func
from sqlmodel import Session, create_engine, select
from typer.testing import CliRunner

from medmon.baselines.models import Baseline
from medmon.monitor.cli.app import app
from tests.conftest import plan_dict
from tests.security.test_hostile_files import GOOD_CANARY, HELM_RUN

runner = CliRunner()
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
PLAN_TEXT = yaml.safe_dump(plan_dict(), sort_keys=False)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def mutate(text: str, data: st.DataObject) -> str:
    """Delete, duplicate or replace a slice, or splice in a hostile fragment."""
    fragments = [
        "&a [1]",
        "*a",
        "NaN",
        "\u2028",
        "\x00",
        "[" * 80,
        "9" * 5000,
        "\n- ",
        ": :",
        "!!python/tuple []",
        "{",
        "\ufeff",
        '"',
        "min_score: 0.1\n",
    ]
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 40)))
    choice = data.draw(st.integers(0, 3))
    if choice == 0:
        return text[:start] + text[end:]
    if choice == 1:
        return text[:end] + text[start:end] + text[end:]
    if choice == 2:
        return text[:start] + data.draw(st.sampled_from(fragments)) + text[end:]
    return text[:start] + data.draw(st.text(max_size=20)) + text[end:]


def assert_clean(result: Any) -> None:
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


@FUZZ
@given(data=st.data())
def test_check_on_mutated_plans(tmp_path_factory: Any, data: st.DataObject) -> None:
    folder = tmp_path_factory.mktemp("plan")
    plan = folder / "plan.yaml"
    plan.write_bytes(mutate(PLAN_TEXT, data).encode("utf-8", "surrogatepass"))
    result = runner.invoke(app, ["check", str(plan)])
    assert_clean(result)
    assert result.exit_code in (0, 2)


@FUZZ
@given(
    data=st.data(),
    extra=st.dictionaries(
        st.sampled_from(
            sorted(GOOD_CANARY) + ["baseline_score", "tolerance", "choices", "tags", "baseline_runs", "replayable"]
        ),
        json_values,
        max_size=3,
    ),
)
def test_check_on_random_canary_lines(tmp_path_factory: Any, data: st.DataObject, extra: dict[str, Any]) -> None:
    folder = tmp_path_factory.mktemp("canaries")
    line = json.dumps(GOOD_CANARY | extra, allow_nan=True)
    line = mutate(line, data) if data.draw(st.booleans()) else line
    (folder / "canaries.jsonl").write_bytes(line.encode("utf-8", "surrogatepass") + b"\n")
    task = {
        "id": "mine",
        "benchmark": "med_qa",
        "canaries": {"path": "canaries.jsonl"},
        "schedule": "1h",
        "sample_size": 5,
        "thresholds": {"min_score": 0.5},
    }
    (folder / "plan.yaml").write_text(yaml.safe_dump(plan_dict(tasks=[task])), "utf-8")
    result = runner.invoke(app, ["check", str(folder / "plan.yaml")])
    assert_clean(result)
    assert result.exit_code in (0, 2)


@pytest.mark.slow
@FUZZ
@given(
    data=st.data(),
    name=st.sampled_from(
        ["run_spec.json", "stats.json", "per_instance_stats.json", "scenario.json", "scenario_state.json"]
    ),
)
def test_import_of_mutated_helm_files(tmp_path_factory: Any, data: st.DataObject, name: str) -> None:
    folder = tmp_path_factory.mktemp("helm")
    run = folder / "runs" / "suite" / HELM_RUN.name
    shutil.copytree(HELM_RUN, run)
    text = (run / name).read_text("utf-8")
    if data.draw(st.booleans()):
        text = mutate(text, data)
    else:  # a structurally valid file with one value replaced by a random JSON value
        original = json.loads(text)
        target = original
        while isinstance(target, (list, dict)) and target:
            keys = list(range(len(target))) if isinstance(target, list) else list(target)
            key = data.draw(st.sampled_from(keys))
            if not isinstance(target[key], (list, dict)) or data.draw(st.booleans()):
                target[key] = data.draw(json_values)
                break
            target = target[key]
        text = json.dumps(original, allow_nan=True)
    (run / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    db = f"sqlite:///{folder / 'medmon.db'}"
    result = runner.invoke(app, ["baseline", "import", str(run), "--db", db])
    assert_clean(result)
    assert result.exit_code in (0, 2)
    if result.exit_code == 2 and (folder / "medmon.db").exists():
        engine = create_engine(db)
        with Session(engine) as session:
            assert session.exec(select(func.count()).select_from(Baseline)).one() == 0
        engine.dispose()
