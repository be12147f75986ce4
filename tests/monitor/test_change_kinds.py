"""Every setting that changes what is measured, or how, opens a change record.

Before issue 29 none of these did: a task's decoding override, the endpoint's headers, API
version and expected models, the jury's rubric (criteria), and a canary file edited in place
(its name unchanged, so the plan text is the same). Each is checked through the user's path:
the plan recorded by `medmon check`, probes stored by the service's pipeline.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.changes import pending_changes
from medmon.monitor.plan.context import load_context, run_provenance
from medmon.monitor.plan.model import load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.jury import JURY_SCORER
from medmon.probes.models import ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

runner = CliRunner()
JUDGE = {"name": "judge-a", "base_url": "http://127.0.0.1:9/v1", "model": "judge", "api_key_env": "X"}


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("edit", "kind", "field"),
    [
        (lambda d: d["tasks"][0].update(decoding={"temperature": 0.9}), "decoding", "tasks[knowledge-qa].decoding"),
        (
            lambda d: d["tasks"][0].update(decoding={"stop_sequences": ["\n\n"]}),
            "decoding",
            "tasks[knowledge-qa].decoding",
        ),
        (lambda d: d["deployment"].update(headers={"X-Route": "v2"}), "request", "deployment.headers"),
        (lambda d: d["deployment"].update(api_version="2025-01-01"), "request", "deployment.api_version"),
        (lambda d: d["deployment"].update(expected_models=["vendor/v2"]), "model", "deployment.expected_models"),
        (lambda d: d["jury"].update(criteria=["accuracy", "safety"]), "judge", "jury"),
        (lambda d: d["jury"]["judges"].append(JUDGE | {"name": "judge-b"}), "judge", "jury"),
        (lambda d: d["tasks"][0].update(scorer="exact_match"), "scorer", "tasks[knowledge-qa].scorer"),
    ],
    ids=["decoding", "stop-sequences", "headers", "api-version", "expected-models", "rubric", "judges", "scorer"],
)
def test_a_plan_edit_of_what_is_measured_opens_a_change(
    tmp_path: Path, engine: Engine, db_url: str, edit: Callable[[dict[str, Any]], None], kind: str, field: str
) -> None:
    data = plan_dict(storage={"url": db_url}, jury={"judges": [JUDGE]})
    data["tasks"][0]["scorer"] = JURY_SCORER  # judged by the jury: its judges and rubric are part of the measure
    path = write(tmp_path / "plan.yaml", data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    edit(data)
    write(path, data)
    checked = runner.invoke(app, ["check", str(path)])
    assert checked.exit_code == 0, checked.output
    with Session(engine) as session:
        pending = pending_changes(session, "knowledge-qa")
    assert [(c.kind, c.source) for c in pending] == [(kind, "plan")]
    assert field in pending[0].details["fields"]


def test_the_prompt_hash_covers_the_task_decoding_and_the_canaries_stop_sequences(tmp_path: Path) -> None:
    data = plan_dict()
    plain = load_plan(write(tmp_path / "a.yaml", data))
    data["tasks"][0]["decoding"] = {"stop_sequences": ["###"]}
    stopped = load_plan(write(tmp_path / "b.yaml", data))
    first = run_provenance(plain, load_context(plain, plain.tasks[0]))
    second = run_provenance(stopped, load_context(stopped, stopped.tasks[0]))
    assert first["prompt_sha256"] != second["prompt_sha256"] and first["pack_sha256"] == second["pack_sha256"]


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def test_a_canary_file_edited_in_place_opens_a_detected_change(
    tmp_path: Path, engine: Engine, db_url: str, serve: Callable[..., Any]
) -> None:
    canaries = load_pack("clinical_knowledge_mcq").canaries
    sim = serve(create_simulator(canaries, [Phase(0, accuracy=0.8)], seed=2))
    lines = tmp_path / "local-canaries.jsonl"
    lines.write_text("".join(c.to_json() + "\n" for c in canaries[:8]))
    data = plan_dict(
        storage={"url": db_url},
        deployment={"base_url": f"{sim.url}/v1", "model": "medmon-simulator/clinical-v1", "api_key_env": "X"},
    )
    data["tasks"][0] |= {"canaries": {"path": str(lines)}, "sample_size": 8, "baseline": {"value": 0.8, "n": 500}}
    path = write(tmp_path / "plan.yaml", data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    clock = Clock()

    def probe() -> None:
        plan = load_plan(path)
        run_task_probe(engine, plan, load_context(plan, plan.tasks[0]), rng=random.Random(1), now=clock)

    probe()
    probe()
    with Session(engine) as session:
        assert pending_changes(session, "knowledge-qa") == []  # the same canaries: no change
    edited = json.loads(lines.read_text().splitlines()[0])
    edited["messages"][-1]["content"] += " Answer with the letter only."
    lines.write_text("\n".join([json.dumps(edited), *lines.read_text().splitlines()[1:]]) + "\n")
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # the plan text is unchanged: nothing recorded
    probe()
    with Session(engine) as session:
        pending = pending_changes(session, "knowledge-qa")
        runs = session.exec(select(ProbeRun).order_by(ProbeRun.id)).all()  # type: ignore[arg-type]
    assert [(c.kind, c.source) for c in pending] == [("canaries", "detected")]
    assert pending[0].details["field"] == "pack_sha256" and pending[0].details["previous_run"] == runs[1].id
    assert runs[1].pack_sha256 != runs[2].pack_sha256


def test_each_change_record_cites_the_change_control_entry_it_relied_on(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    """R13: the plan anticipates prompt changes with a protocol; a decoding change it does not anticipate."""
    data = plan_dict(storage={"url": db_url})
    data["governance"] = {
        "change_control": {
            "anticipated": [
                {
                    "kind": "prompt",
                    "protocol": "re-evaluate every canary 3 times; the task owner adopts",
                    "acceptance": "estimate within tolerated_drop of the baseline",
                    "max_drop": 0.05,
                    "full_review_when": "the intended use or the audience changes",
                }
            ]
        }
    }
    data["tasks"][0]["owner"] = {"name": "Dr. Owner", "email": "owner@hospital.example"}
    path = write(tmp_path / "plan.yaml", data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    data["deployment"] |= {"system_prompt": "Cite the guideline.", "temperature": 0.5}
    write(path, data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    with Session(engine) as session:
        cited = {c.kind: c.details["change_control"] for c in pending_changes(session, "knowledge-qa")}
    assert cited["prompt"]["entry"] == 0 and cited["prompt"]["full_review"] is False
    assert cited["prompt"]["acceptance"] == "estimate within tolerated_drop of the baseline"
    assert cited["decoding"] == {
        "entry": None,
        "kind": "decoding",
        "full_review": True,
        "why": "not anticipated by governance.change_control",
    }
