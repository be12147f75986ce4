"""The identity job over HTTP: log-probability fingerprints read from the response, compared with the go-live
sample, and a shift handled as a changed model string is (finding, incident, change record, re-evaluation).

The server here is a small OpenAI-compatible app whose log-probabilities can be shifted; the real
model (a re-quantization of Gemma 3 behind llama.cpp's server) is in ``tests/real_model``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from medmon.alerts.models import Alert, Incident
from medmon.monitor.models import ChangeRecord, DetectorState, FindingRecord
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.runs.identity import run_identity_probe
from medmon.probes.client import read_logprobs, token_digest
from medmon.probes.models import ProbeResult
from tests.conftest import plan_dict


class Weights:
    """What the app serves: a shift of every log-probability (0: the go-live weights), and the requests seen."""

    def __init__(self) -> None:
        self.shift = 0.0
        self.returns_logprobs = True  # False: a server that ignores the request for log-probabilities
        self.requests: list[dict[str, Any]] = []


def _app(weights: Weights) -> Starlette:
    async def chat(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        weights.requests.append(body)
        prompt = body["messages"][-1]["content"]
        base = -0.2 - (len(prompt) % 7) / 10 + weights.shift
        content = [
            {
                "token": tok,
                "logprob": base,
                "top_logprobs": [{"token": tok, "logprob": base}, {"token": "x", "logprob": -2.5 - weights.shift}],
            }
            for tok in ("The", " answer", " is")
        ][: body.get("max_tokens", 3)]
        return JSONResponse(
            {
                "id": "c1",
                "model": "gemma-clinical",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {"role": "assistant", "content": "The answer is"},
                        "logprobs": {"content": content} if body.get("logprobs") and weights.returns_logprobs else None,
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(minutes=1)
        return self.t


def _plan(url: str, db_url: str, **identity: Any) -> Plan:
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {"base_url": f"{url}/v1", "model": "gemma-clinical", "timeout_s": 5, "max_retries": 0}
    data["identity"] = {"false_alarm": 0.01, **identity}
    return parse_plan(yaml.safe_dump(data))


def test_the_fingerprint_is_read_as_digests_and_numbers() -> None:
    choice = {
        "logprobs": {
            "content": [
                {
                    "token": "A",
                    "logprob": -0.1,
                    "top_logprobs": [
                        {"token": "B", "logprob": -3.0},
                        {"token": "A", "logprob": -0.1},
                        {"token": "C", "logprob": -2.0},
                    ],
                }
            ]
        }
    }
    assert read_logprobs(choice) == (((token_digest("A"), -0.1), (token_digest("C"), -2.0), (token_digest("B"), -3.0)),)
    assert read_logprobs({"logprobs": None}) == () and read_logprobs({}) == ()


def test_a_shift_of_the_log_probabilities_is_a_model_change_and_a_restart_on_the_same_weights_is_not(
    serve: Callable[[object], Any], engine: Engine, db_url: str
) -> None:
    weights = Weights()
    server = serve(_app(weights))
    plan, clock = _plan(server.url, db_url), Clock()
    for _ in range(4):  # the go-live sample (3 runs), then one more on the same weights
        outcome = run_identity_probe(engine, plan, now=clock)
        assert not outcome.changed and outcome.missing_logprobs == 0 and outcome.answers == 10
    asked = weights.requests[0]
    assert asked["temperature"] == 0 and asked["logprobs"] is True and asked["top_logprobs"] == 5
    assert asked["max_tokens"] == 3 and "seed" not in asked
    weights.shift = 0.02  # a few hundredths of a nat, as a re-quantization moves them
    outcomes = [run_identity_probe(engine, plan, now=clock) for _ in range(2)]
    assert any(o.changed for o in outcomes)
    with Session(engine) as s:
        stored = s.exec(select(ProbeResult)).first()
        assert stored is not None and stored.tags["logprobs"][0][0][0] == token_digest("The")
        assert "The" not in json.dumps(stored.tags)  # tokens only as digests
        found = s.exec(select(FindingRecord).where(FindingRecord.kind == "model_change")).all()
        assert {f.task_id for f in found} == {"served_identity", "knowledge-qa"}
        identity = next(f for f in found if f.task_id == "served_identity")
        assert identity.evidence is not None and identity.statistic is not None and identity.statistic >= 100
        changes = s.exec(select(ChangeRecord)).all()
        assert [(c.kind, c.source) for c in changes] == [("model", "detected")]
        assert s.get(DetectorState, "knowledge-qa:reevaluation") is not None or any(
            "oneshot" in d.detector for d in s.exec(select(DetectorState)).all()
        )  # the one-shot re-evaluation test is started
        alerts = s.exec(select(Alert)).all()
        assert alerts and all(a.rule == "model_change" for a in alerts) and s.exec(select(Incident)).all()


def test_answers_are_sampled_with_a_fresh_seed_each_call(
    serve: Callable[[object], Any], engine: Engine, db_url: str
) -> None:
    weights = Weights()
    server = serve(_app(weights))
    outcome = run_identity_probe(engine, _plan(server.url, db_url, method="answers", samples=3), now=Clock())
    assert outcome.answers == 30 and not outcome.changed
    seeds = [r["seed"] for r in weights.requests]
    assert len(set(seeds)) == len(seeds) and all(
        r["temperature"] == 0.7 and "logprobs" not in r for r in weights.requests
    )


def test_a_server_without_log_probabilities_is_named_not_silently_unwatched(
    serve: Callable[[object], Any], engine: Engine, db_url: str
) -> None:
    weights = Weights()
    weights.returns_logprobs = False
    server = serve(_app(weights))
    outcome = run_identity_probe(engine, _plan(server.url, db_url), now=Clock())
    assert outcome.missing_logprobs == 10 and not outcome.changed


def test_the_identity_probe_runs_from_the_command_line(
    serve: Callable[[object], Any], tmp_path: Any, db_url: str
) -> None:
    from typer.testing import CliRunner

    from medmon.monitor.cli.app import app

    weights = Weights()
    server = serve(_app(weights))
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {"base_url": f"{server.url}/v1", "model": "gemma-clinical", "timeout_s": 5, "max_retries": 0}
    data["identity"] = {"false_alarm": 0.01}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    runner = CliRunner(env={"COLUMNS": "220", "OPENAI_API_KEY": "sk-test-0123456789"})
    rows = []
    for shift in (0.0, 0.0, 0.0, 0.05, 0.05):
        weights.shift = shift
        done = runner.invoke(app, ["probe", "identity", str(path), "--json"])
        assert done.output.lstrip().startswith("{"), (done.exit_code, done.output, done.exception)
        rows.append(json.loads(done.output))
        assert done.exit_code == (1 if rows[-1]["model_change"] else 0), done.output
    assert [r["model_change"] for r in rows[:3]] == [False] * 3 and rows[0]["answers"] == 10
    assert any(r["model_change"] for r in rows[3:]) and any(r["alerts"] for r in rows[3:])


def test_the_service_schedules_the_identity_job_on_the_plans_schedule_and_its_runs_find_a_shift(
    serve: Callable[[object], Any], engine: Engine, db_url: str
) -> None:
    from medmon.monitor.service.scheduler import build_service_scheduler

    weights = Weights()
    server = serve(_app(weights))
    plan, clock = _plan(server.url, db_url, schedule="6h"), Clock()
    scheduler = build_service_scheduler(engine, plan, "identity-test", {}, now=clock)
    try:
        job = scheduler.get_job("served-identity", jobstore="local")
        assert job is not None and job.trigger.interval == timedelta(hours=6)
        fired = []
        for shift in (0.0, 0.0, 0.0, 0.02, 0.02):
            weights.shift = shift
            job.func(*job.args)  # as the scheduler fires it
            with Session(engine) as s:
                fired.append(len(s.exec(select(FindingRecord).where(FindingRecord.kind == "model_change")).all()))
    finally:
        scheduler.shutdown(wait=False)
    assert fired[:3] == [0, 0, 0] and fired[-1] > 0  # quiet over the go-live sample, then the shift is found
    without = parse_plan(yaml.safe_dump({k: v for k, v in plan.model_dump(mode="json").items() if k != "identity"}))
    bare = build_service_scheduler(engine, without, "identity-test-2", {}, now=clock)
    try:
        assert bare.get_job("served-identity", jobstore="local") is None  # opt-in: no section, no calls
    finally:
        bare.shutdown(wait=False)
