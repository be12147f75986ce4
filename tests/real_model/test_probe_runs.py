"""The real model probed as a user probes it: ``medmon probe run`` against Gemma 3 behind llama.cpp's server.

The few-shot pack (``probes/packs/base_model/fewshot_clinical_mcq``) is the one a base model can
answer; its baseline (3 of 12 at temperature 0) was measured by medmon on this model. Unchanged,
the model must hold that baseline: the same twelve letters, every answer read, every call timed
and stored under the alias the server reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.changes import pending_changes
from medmon.probes.models import ProbeResult, ProbeRun
from tests.conftest import plan_dict
from tests.real_model.conftest import ALIAS, Gemma

pytestmark = pytest.mark.process  # a real server started as a process

PACK = Path(__file__).resolve().parents[2] / "probes" / "packs" / "base_model" / "fewshot_clinical_mcq.jsonl"


def _plan_data(gemma: Gemma, db_url: str) -> dict[str, Any]:
    """A plan with one task, the few-shot pack, on the real server."""
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {
        "base_url": gemma.base_url,
        "model": ALIAS,
        "api_key_env": "MEDMON_TEST_KEY",
        "price": {"input_per_mtok": 0, "output_per_mtok": 0},
        "timeout_s": 120,
        "max_retries": 1,
    }
    data["tasks"] = [
        {
            "id": "fewshot-mcq",
            "benchmark": "med_qa",
            "canaries": {"path": str(PACK)},
            "schedule": "1h",
            "sample_size": 12,
            "baseline": {"value": 0.25, "n": 12},  # as fewshot_clinical_mcq.yaml states it
            "decoding": {"temperature": 0, "max_tokens": 3},
            "thresholds": {"min_score": 0.2, "latency_slo_s": 60},
        }
    ]
    return data


def _written(gemma: Gemma, db_url: str, tmp_path: Path) -> tuple[dict[str, Any], Path, CliRunner]:
    """The plan written where the CLI reads it, and a runner with the endpoint's key in its environment."""
    data = _plan_data(gemma, db_url)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return data, path, CliRunner(env={"COLUMNS": "220", "MEDMON_TEST_KEY": "sk-local-0123456789"})


def test_probe_runs_on_the_real_model_are_read_scored_stored_and_hold_the_baseline(
    gemma: Gemma, tmp_path: Path, db_url: str, engine: Engine
) -> None:
    data, path, runner = _written(gemma, db_url, tmp_path)
    for _ in range(2):  # unchanged weights, temperature 0: the same answers twice
        done = runner.invoke(app, ["probe", "run", str(path), "--no-deliver", "--json"])
        assert done.exit_code == 0, (done.output, done.exception)
        assert json.loads(done.stdout)
    with Session(engine) as s:
        runs = s.exec(select(ProbeRun).where(ProbeRun.task_id == "fewshot-mcq")).all()
        assert len(runs) == 2
        results = s.exec(select(ProbeResult)).all()
    assert len(results) == 24 and not [r for r in results if r.error_type]
    assert {r.served_model for r in results} == {ALIAS}  # the alias is all the server says about its weights
    assert all(r.latency_s is not None and r.latency_s > 0 for r in results)
    assert all(r.completion_tokens for r in results)
    assert all(r.parsed for r in results), [r.answer for r in results if not r.parsed]  # every answer read
    first, second = (sorted((r.canary_id, r.extracted) for r in results if r.run_id == run.id) for run in runs)
    assert first == second  # deterministic at temperature 0
    right = sum(1 for r in results if r.run_id == runs[0].id and r.score == 1.0)
    assert right == 3  # the baseline medmon measured on this model (fewshot_clinical_mcq.yaml): 3 of 12


def test_a_system_prompt_added_to_the_real_model_is_a_recorded_change_and_its_runs_say_what_was_sent(
    gemma: Gemma, tmp_path: Path, db_url: str, engine: Engine
) -> None:
    data, path, runner = _written(gemma, db_url, tmp_path)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # the plan as recorded
    assert runner.invoke(app, ["probe", "run", str(path), "--no-deliver", "--json"]).exit_code == 0
    data["deployment"]["system_prompt"] = "You are a clinical assistant. Reply with the letter of the best option."
    path.write_text(yaml.safe_dump(data))
    checked = runner.invoke(app, ["check", str(path)])
    assert checked.exit_code == 0, checked.output
    with Session(engine) as s:
        pending = pending_changes(s, "fewshot-mcq")
    assert [c.kind for c in pending] == ["prompt"]  # what the model is sent changed: owed a re-evaluation
    done = runner.invoke(app, ["probe", "run", str(path), "--no-deliver", "--json"])
    assert done.exit_code == 0, (done.output, done.exception)
    with Session(engine) as s:
        runs = s.exec(select(ProbeRun).where(ProbeRun.task_id == "fewshot-mcq").order_by(ProbeRun.id)).all()  # type: ignore[arg-type]
        results = s.exec(select(ProbeResult)).all()
    before, after = runs[0], runs[-1]
    assert before.prompt_sha256 and after.prompt_sha256 and before.prompt_sha256 != after.prompt_sha256
    assert all(r.error_type is None for r in results)  # the real server took the system prompt
