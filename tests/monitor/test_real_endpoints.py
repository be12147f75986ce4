"""medmon against OpenAI-compatible servers nobody on the project wrote, started on 127.0.0.1.

- llmock (chaos): a burst of 500s as wide as the concurrency, 429 with a real Retry-After, a 401
  that echoes the key; its journal and its own verdict on the client's retries are the oracle.
- fakellm: rule-matched answers, hot-reloaded mid-run to make them wrong (an accuracy drop);
  it sends no ``system_fingerprint``.
- LiteLLM's proxy: two backends balanced under one model name (a pool), its own cost header;
  one backend replaced by a new model.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.monitor.models import ChangeRecord, ModelIdentity, Reevaluation
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from tests.conftest import plan_dict
from tests.monitor.third_party import fakellm, litellm, llmock

pytestmark = pytest.mark.process  # servers, workers or builds started as processes

PACK = load_pack("clinical_knowledge_mcq")
KEY_ENV = "MEDMON_REAL_ENDPOINT_KEY"
MEDMON = [sys.executable, "-m", "medmon"]


class StepClock:
    def __init__(self, step: timedelta = timedelta(hours=1)) -> None:
        self.t, self.step = datetime(2026, 11, 2, tzinfo=UTC), step

    def __call__(self) -> datetime:
        return self.t

    def tick(self) -> None:
        self.t += self.step


def _plan(
    base_url: str,
    db_url: str,
    *,
    model: str = "clinical",
    sample_size: int = 20,
    governance: bool = False,
    **deployment: Any,
) -> Plan:
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {"base_url": base_url, "model": model, "api_key_env": KEY_ENV} | deployment
    data["tasks"][0]["sample_size"] = sample_size
    data["tasks"][0]["baseline"] = {"value": 0.85, "n": 500}
    if governance:
        data["governance"] = {"controls": {"reevaluation": {"on_detected_change": True, "repeats": 1}}}
    return parse_plan(yaml.safe_dump(data))


def _probe(engine: Engine, plan: Plan, clock: StepClock, seed: int = 0) -> Any:
    outcome = run_task_probe(engine, plan, load_context(plan, plan.tasks[0]), rng=random.Random(seed), now=clock)
    clock.tick()
    return outcome


def _script(base: str, *behaviors: dict[str, Any]) -> None:
    httpx.post(f"{base}/_llmock/scenario", json={"behaviors": list(behaviors)}).raise_for_status()


def _journal(base: str) -> list[dict[str, Any]]:
    return httpx.get(f"{base}/_llmock/requests", timeout=10).json()["requests"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-live-0123456789abcdef")


# --- llmock: bursts, 429, 401 ------------------------------------------------------------------


@pytest.mark.slow
def test_a_burst_of_500s_as_wide_as_the_concurrency_loses_no_result(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    with llmock(tmp_path) as base:
        plan = _plan(f"{base}/v1", db_url)  # the defaults: max_concurrency 8, breaker_failures 5, 2 retries
        assert plan.deployment.max_concurrency == 8 and plan.deployment.breaker_failures == 5
        _script(base, {"type": "fail", "status": 500, "times": 8})
        outcome = _probe(engine, plan, StepClock())
        journal = _journal(base)
    assert outcome.results == 20 and outcome.errors == 0, outcome.causes
    assert len(journal) == 28 and sum(1 for r in journal if r["status"] == 500) == 8
    with Session(engine) as s:
        rows = s.exec(select(ProbeResult)).all()
    retried = [r for r in rows if r.attempts == 2]
    assert len(retried) == 8 and all(r.error_type is None for r in rows)
    # Stored latency is the call's wall time: the failed attempt and the backoff (at least 0.375 s) included.
    assert all(r.latency_s >= r.attempt_latency_s + 0.375 for r in retried)


@pytest.mark.slow
def test_429_with_retry_after_is_waited_as_asked(tmp_path: Path, engine: Engine, db_url: str) -> None:
    with llmock(tmp_path) as base:
        plan = _plan(f"{base}/v1", db_url, sample_size=1)
        _script(base, {"type": "fail", "status": 429, "retry_after": 1.5, "times": 1})
        outcome = _probe(engine, plan, StepClock())
        verdict = httpx.get(f"{base}/_llmock/verdict", timeout=10).json()
        journal = _journal(base)
    assert outcome.errors == 0
    assert [r["status"] for r in journal] == [429, 200]
    assert journal[1]["started_at"] - journal[0]["ended_at"] >= 1.5  # llmock's own clock
    assert verdict["passed"] is True and verdict["errors"] == 0, verdict  # llmock judges the retry sound
    with Session(engine) as s:
        row = s.exec(select(ProbeResult)).one()
    assert row.attempts == 2 and row.latency_s >= 1.5


@pytest.mark.slow
def test_a_401_is_reported_by_cause_with_its_own_exit_code_and_no_key(tmp_path: Path, db_url: str) -> None:
    key = os.environ[KEY_ENV]
    with llmock(tmp_path) as base:
        _script(
            base,
            {
                "type": "fail",
                "status": 401,
                "times": None,
                "code": "invalid_api_key",
                "message": f"Incorrect API key provided: {key}. You can find your API key in your account.",
            },
        )
        plan_path = tmp_path / "plan.yaml"
        data = plan_dict(storage={"url": db_url})
        data["deployment"] = {"base_url": f"{base}/v1", "model": "clinical", "api_key_env": KEY_ENV}
        plan_path.write_text(yaml.safe_dump(data))
        as_json = subprocess.run(
            [*MEDMON, "probe", "run", str(plan_path), "--json"],
            capture_output=True,
            text=True,
            env=os.environ | {"DO_NOT_TRACK": "1"},
            timeout=300,
        )
        text = subprocess.run(
            [*MEDMON, "probe", "run", str(plan_path)],
            capture_output=True,
            text=True,
            env=os.environ | {"DO_NOT_TRACK": "1"},
            timeout=300,
        )
        journal = _journal(base)
    assert as_json.returncode == 4, as_json.stderr  # refused by the endpoint, not unreachable (3)
    [run] = json.loads(as_json.stdout)["runs"]
    cause = "HTTP 401 Incorrect API key provided: ***. You can find your API key in your account."
    assert run["errors"] == 20 and run["failures"] == {cause: 20}
    assert text.returncode == 4 and f"20 x {cause}" in text.stdout
    assert len(journal) == 40  # a refusal is not retried
    from medmon.monitor.storage import make_engine

    eng = make_engine(db_url)
    with Session(eng) as s:
        rows = s.exec(select(ProbeResult)).all()
    eng.dispose()
    assert {(r.error_type, r.http_status) for r in rows} == {("refused", 401)}
    assert key not in as_json.stdout + text.stdout + text.stderr and all(key not in (r.error or "") for r in rows)


# --- fakellm: an accuracy drop, no fingerprint --------------------------------------------------


def _rules(path: Path, correct: bool) -> None:
    """One rule per canary, matched on its question; the answer right or wrong."""
    rules = []
    for c in PACK.canaries:
        letter = c.references[0] if correct else "ABCD"[("ABCD".index(c.references[0]) + 1) % 4]
        rules.append(
            {
                "name": c.id,
                "when": {"messages_contain": c.prompt.split("\n")[0][:80]},
                "respond": {"content": f"The answer is {letter}."},
            }
        )
    path.write_text(yaml.safe_dump({"version": 1, "defaults": {"fallback": "deterministic_echo"}, "rules": rules}))


@pytest.mark.slow
def test_an_accuracy_drop_behind_fakellm_alerts_and_no_fingerprint_is_no_change(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    rules = tmp_path / "fakellm.yaml"
    _rules(rules, correct=True)
    clock = StepClock()
    with fakellm(tmp_path, rules) as base:
        plan = _plan(f"{base}/v1", db_url, model="gpt-4o-mini")
        before = [_probe(engine, plan, clock, seed) for seed in range(3)]
        _rules(rules, correct=False)  # the model behind the endpoint gets worse; nothing else changes
        httpx.post(f"{base}/_fakellm/reload", timeout=10)
        after = [_probe(engine, plan, clock, seed) for seed in range(3, 6)]
    assert all(o.errors == 0 and o.mean_score == 1.0 for o in before)
    assert all(o.errors == 0 and o.mean_score == 0.0 for o in after)
    fired = [s for o in after for s in o.signals if s.firing]
    assert any("score" in s.summary for s in fired), [s.summary for s in fired]
    with Session(engine) as s:
        rows = s.exec(select(ProbeResult)).all()
        assert not s.exec(select(ChangeRecord)).all()
        identities = s.exec(select(ModelIdentity)).all()
    assert {(r.served_model, r.system_fingerprint) for r in rows} == {("gpt-4o-mini", None)}
    assert [(i.served_model, i.system_fingerprint) for i in identities] == [("gpt-4o-mini", None)]


# --- LiteLLM: a pool of two backends, one replaced ----------------------------------------------


def _litellm_config(path: Path, backends: list[str]) -> Path:
    models = [
        {
            "model_name": "clinical",
            "litellm_params": {
                "model": f"openai/{b}",
                "api_key": "none",
                "api_base": "http://127.0.0.1:9/v1",
                "mock_response": "The answer is B.",
                "input_cost_per_token": 0.000002,
                "output_cost_per_token": 0.000008,
            },
        }
        for b in backends
    ]
    path.write_text(
        yaml.safe_dump(
            {
                "model_list": models,
                "router_settings": {"routing_strategy": "simple-shuffle"},
                "general_settings": {"master_key": os.environ[KEY_ENV]},
            }
        )
    )
    return path


@pytest.mark.slow
def test_a_two_backend_pool_is_no_change_and_a_replaced_backend_is_exactly_one(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    clock = StepClock(timedelta(minutes=20))
    port = None
    with litellm(tmp_path, _litellm_config(tmp_path / "pool.yaml", ["backend-a", "backend-b"])) as base:
        port = int(base.rsplit(":", 1)[1])
        plan = _plan(f"{base}/v1", db_url, sample_size=8, governance=True, cost_header="x-litellm-response-cost")
        pool = [_probe(engine, plan, clock, seed) for seed in range(50)]
    with Session(engine) as s:
        assert not s.exec(select(ChangeRecord)).all() and not s.exec(select(Reevaluation)).all()
        served = {r.served_model for r in s.exec(select(ProbeResult)).all()}
        rows = s.exec(select(ProbeResult)).all()
    assert all(o.errors == 0 and not any(s.firing and "model" in s.summary for s in o.signals) for o in pool)
    assert served == {"backend-a", "backend-b"}
    # LiteLLM's own cost header is trusted over the (empty) price table: 2e-6 and 8e-6 a token.
    assert all(r.cost_usd == pytest.approx(r.prompt_tokens * 2e-6 + r.completion_tokens * 8e-6) for r in rows)

    with litellm(tmp_path, _litellm_config(tmp_path / "replaced.yaml", ["backend-a", "backend-c"]), port) as base:
        replaced = [_probe(engine, plan, clock, seed) for seed in range(100, 115)]
    with Session(engine) as s:
        changes = s.exec(select(ChangeRecord)).all()
        reevaluations = s.exec(select(Reevaluation)).all()
        current = s.exec(select(ModelIdentity).where(ModelIdentity.retired_at == None)).all()  # noqa: E711
    assert [(c.kind, c.details["served_model"]) for c in changes] == [("model", "backend-c")]
    assert len(reevaluations) == 1 and sum(1 for o in replaced if o.reevaluation_id) == 1
    assert {i.served_model for i in current} == {"backend-a", "backend-c"}  # backend-b retired, silently
