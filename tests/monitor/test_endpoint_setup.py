"""Clear errors before and during a run: unset variables, URLs with a query, failures by cause, delivery.

The commands run as a user runs them (the ``medmon`` CLI) against the simulator and medmon's
signed-webhook receiver on 127.0.0.1.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from medmon.alerts.receiver import create_receiver
from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.storage import make_engine
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Fault, JudgeBehaviour, create_simulator
from tests.conftest import plan_dict
from tests.probes.test_runner import jury_plan

runner = CliRunner()
KEY = "MEDMON_SETUP_TEST_KEY"
SECRET = "setup-test-webhook-secret"


def _write(tmp_path: Path, db_url: str, base_url: str = "http://127.0.0.1:9/v1", **extra: Any) -> Path:
    data = plan_dict(storage={"url": db_url}, **extra)
    data["deployment"] = data["deployment"] | {"base_url": base_url, "api_key_env": KEY}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_base_url_with_a_query_string_is_a_plan_error_pointing_at_query() -> None:
    data = plan_dict()
    data["deployment"]["base_url"] = "https://x.openai.azure.com/openai?api-version=2024-10-21"
    with pytest.raises(PlanError) as caught:
        parse_plan(yaml.safe_dump(data))
    [issue] = caught.value.issues
    assert issue.path == "deployment.base_url" and "'query'" in issue.message
    data["deployment"] |= {"base_url": "https://x.openai.azure.com", "api_style": "azure"}
    with pytest.raises(PlanError, match="api_version"):
        parse_plan(yaml.safe_dump(data))


def test_an_unset_key_is_refused_before_any_call_and_check_reports_it(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY, raising=False)
    plan = _write(tmp_path, db_url)
    probe = runner.invoke(app, ["probe", "run", str(plan)])
    assert probe.exit_code == 2 and KEY in probe.output and "deployment.api_key_env" in probe.output
    serve = runner.invoke(app, ["serve", str(plan)])
    assert serve.exit_code == 2 and KEY in serve.output
    check = runner.invoke(app, ["check", str(plan)])
    assert check.exit_code == 0 and f"environment variable {KEY} is not set" in check.output
    strict = runner.invoke(app, ["check", str(plan), "--require-env", "--json"])
    assert strict.exit_code == 2
    issues = json.loads(strict.output)["issues"]
    assert {
        "path": "deployment.api_key_env",
        "line": issues[0]["line"],
        "message": f"environment variable {KEY} is not set",
    } in issues and issues[0]["line"]
    monkeypatch.setenv(KEY, "set-now")
    assert runner.invoke(app, ["check", str(plan), "--require-env"]).exit_code == 0


def test_probe_run_groups_failures_by_cause_and_separates_unreachable(
    tmp_path: Path, db_url: str, serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY, "k")
    sim = create_simulator(load_pack("clinical_knowledge_mcq").canaries, seed=1)
    url = serve(sim).url
    sim.state.sim.inject(Fault("status", status=503, count=1000))
    plan = _write(tmp_path, db_url, f"{url}/v1")
    down = runner.invoke(app, ["probe", "run", str(plan), "--json"])
    assert down.exit_code == 3, down.output  # every call failed to reach a working endpoint
    [run] = json.loads(down.output)["runs"]
    assert sum(run["failures"].values()) == 20
    assert any(cause.startswith("HTTP 503 server error") for cause in run["failures"])
    refused = _write(tmp_path, db_url, "http://127.0.0.1:9/v1")  # nothing listens: refused connections
    gone = runner.invoke(app, ["probe", "run", str(refused)])
    assert gone.exit_code == 3 and "x unavailable: cannot connect to http://127.0.0.1:9/v1" in gone.output


def test_probe_run_delivers_the_notifications_it_creates(
    tmp_path: Path, db_url: str, serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY, "k")
    monkeypatch.setenv("MEDMON_SETUP_SECRET", SECRET)
    sim = create_simulator(load_pack("clinical_knowledge_mcq").canaries, seed=1)
    url = serve(sim).url
    receiver = create_receiver(SECRET)
    hook = serve(receiver).url
    sim.state.sim.inject(Fault("status", status=500, count=10_000))
    routes = {
        "routes": [{"name": "hook", "url": f"{hook}/alerts", "secret_env": "MEDMON_SETUP_SECRET"}],
        "repeat_interval": "4h",
    }
    plan = _write(tmp_path, db_url, f"{url}/v1", alerts=routes)
    held = runner.invoke(app, ["probe", "run", str(plan), "--no-deliver", "--json"])
    assert held.exit_code == 3 and json.loads(held.output)["delivery"] is None
    assert receiver.state.receiver.received == []  # left in the outbox for 'medmon serve'
    result = runner.invoke(app, ["probe", "run", str(plan), "--json"])
    delivery = json.loads(result.output)["delivery"]
    assert delivery["delivered"] >= 1 and delivery["dead"] == 0
    received = receiver.state.receiver.received
    assert received and any("probes_failing" in json.dumps(r.body) for r in received)


def test_a_dead_jury_raises_the_availability_alert_as_fast_as_a_model_outage(
    tmp_path: Path, new_db_url: Any, serve: Callable[..., Any]
) -> None:
    """The error stream's usual delay: the same number of runs for a dead jury as for a dead model."""
    from tests.probes.simkit import JUDGE_MODELS, NOTES

    def runs_to_alert(break_it: Callable[[Any], None]) -> int:
        sim = create_simulator(NOTES, seed=4)
        url = serve(sim).url
        plan = jury_plan(tmp_path, url, storage={"url": new_db_url()})
        engine = make_engine(plan.storage.url)
        ctx = load_context(plan, plan.tasks[0])
        break_it(sim.state.sim)
        for i in range(1, 30):
            outcome = run_task_probe(engine, plan, ctx, rng=random.Random(i), now=lambda i=i: _stamp(i))
            if any(s.firing and s.labels.get("metric") == "error_rate" for s in outcome.signals):
                engine.dispose()
                return i
        engine.dispose()
        raise AssertionError("no availability alert in 30 runs")

    model_down = runs_to_alert(
        lambda s: s.inject(Fault("status", status=500, count=100_000, model="medmon-simulator/clinical-v1"))
    )
    jury_down = runs_to_alert(lambda s: s.judges.update({m: JudgeBehaviour(mode="prose") for m in JUDGE_MODELS}))
    assert jury_down == model_down <= 3


def _stamp(i: int) -> Any:
    from datetime import datetime, timedelta

    return datetime(2026, 11, 3, tzinfo=UTC) + timedelta(hours=i)


@pytest.mark.slow
@pytest.mark.process
def test_medmon_simulate_serves_a_plan_without_a_model(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medmon",
            "simulate",
            "--port",
            "0",
            "--json",
            "--fault",
            "status:2:503",
            "--phase",
            "0:1.0",
            "--pack",
            "clinical_knowledge_mcq",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while not (lines and lines[-1].startswith("}")) and time.monotonic() < deadline:
            lines.append(proc.stdout.readline())  # type: ignore[union-attr]
        info = json.loads("".join(lines))
        canary = load_pack("clinical_knowledge_mcq").canaries[0]
        body = {"model": info["model"], "messages": list(canary.messages)}
        statuses = [httpx.post(f"{info['base_url']}/chat/completions", json=body).status_code for _ in range(3)]
        answer = httpx.post(f"{info['base_url']}/chat/completions", json=body).json()
    finally:
        proc.terminate()
        proc.wait(10)
    assert statuses == [503, 503, 200]  # the queued fault, then answers
    assert answer["choices"][0]["message"]["content"].strip().startswith(canary.references[0])
    assert info["packs"] == ["clinical_knowledge_mcq"]
