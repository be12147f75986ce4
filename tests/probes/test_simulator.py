"""The simulator: labelled as a simulator, its phases, judge role, fault injection and admin endpoints."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from medmon.probes.jury import judge_messages
from medmon.probes.simulator import SIMULATOR_MODEL, Fault, JudgeBehaviour, Phase, create_simulator
from tests.probes.simkit import MCQ, NOTES, canaries_of, sim_state


@pytest.fixture
def sim(serve: Callable) -> tuple[Any, str]:
    app = create_simulator(canaries_of(MCQ, NOTES), [Phase(accuracy=1.0)], seed=2)
    return app, serve(app).url


def chat(url: str, messages: list[dict[str, str]], model: str = SIMULATOR_MODEL, **kw: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json={"model": model, "messages": messages}, timeout=5, **kw)


def judge(url: str, answer: str, model: str = "medmon-simulator/judge-a", canary_index: int = 0) -> httpx.Response:
    return chat(url, judge_messages(NOTES[canary_index], answer, ["accuracy", "completeness", "clarity"]), model)


def test_every_answer_says_it_is_simulated(sim: tuple[Any, str]) -> None:
    _, url = sim
    r = chat(url, list(MCQ[0].messages))
    body = r.json()
    assert r.headers["X-Medmon-Simulator"] == "true" and body["simulated"] is True
    assert body["model"].startswith("medmon-simulator")
    status = httpx.get(f"{url}/_simulator").json()
    assert status["simulated"] is True and status["requests"] == 1
    verdict = judge(url, NOTES[0].references[0])
    assert verdict.json()["model"].startswith("medmon-simulator")
    assert "simulated judge" in verdict.json()["choices"][0]["message"]["content"]


def test_phases_change_accuracy_with_requests_served(serve: Callable) -> None:
    app = create_simulator(MCQ, [Phase(0, accuracy=1.0), Phase(5, accuracy=0.0, label="drop")], seed=1)
    url = serve(app).url
    answers = [chat(url, list(MCQ[0].messages)).json()["choices"][0]["message"]["content"] for _ in range(10)]
    assert answers[:4] == ["B"] * 4 and "B" not in answers[4:]  # the 5th request is the 5th served
    assert httpx.get(f"{url}/_simulator").json()["phase"] == "drop"


def test_judge_role_scores_a_matching_answer_high_and_a_wrong_one_low(sim: tuple[Any, str]) -> None:
    _, url = sim
    good = json.loads(judge(url, NOTES[0].references[0]).json()["choices"][0]["message"]["content"])
    bad = json.loads(judge(url, "Take two aspirin.").json()["choices"][0]["message"]["content"])
    assert set(good) == {"accuracy", "completeness", "clarity"}
    assert all(v["score"] == 5 for v in good.values())
    assert all(v["score"] == 2 for v in bad.values())


def test_judge_bias_and_drift_are_per_judge(serve: Callable) -> None:
    app = create_simulator(
        NOTES,
        seed=1,
        judges={
            "medmon-simulator/judge-b": JudgeBehaviour(offset=-1),
            "medmon-simulator/judge-c": JudgeBehaviour(drift_after=2, drift_offset=-2),
        },
    )
    url = serve(app).url
    answer = NOTES[0].references[0]

    def scores(model: str) -> list[int]:
        content = judge(url, answer, model).json()["choices"][0]["message"]["content"]
        return [v["score"] for v in json.loads(content).values()]

    assert scores("medmon-simulator/judge-a") == [5, 5, 5]
    assert scores("medmon-simulator/judge-b") == [4, 4, 4]
    assert [scores("medmon-simulator/judge-c") for _ in range(3)] == [[5, 5, 5], [5, 5, 5], [3, 3, 3]]


def test_judge_prose_modes(serve: Callable) -> None:
    app = create_simulator(
        NOTES,
        judges={
            "medmon-simulator/judge-p": JudgeBehaviour(mode="prose"),
            "medmon-simulator/judge-o": JudgeBehaviour(mode="prose_once"),
        },
    )
    url = serve(app).url
    first = judge_messages(NOTES[0], "x", ["accuracy"])
    again = [*first, {"role": "assistant", "content": "prose"}, {"role": "user", "content": "JSON please"}]
    text = lambda r: r.json()["choices"][0]["message"]["content"]  # noqa: E731
    assert "{" not in text(chat(url, first, "medmon-simulator/judge-p"))
    assert "{" not in text(chat(url, again, "medmon-simulator/judge-p"))
    assert "{" not in text(chat(url, first, "medmon-simulator/judge-o"))
    assert json.loads(text(chat(url, again, "medmon-simulator/judge-o")))["accuracy"]["score"] == 2


def test_a_failing_judge_answers_500(serve: Callable) -> None:
    app = create_simulator(NOTES, judges={"medmon-simulator/judge-x": JudgeBehaviour(mode="fail")})
    url = serve(app).url
    assert judge(url, "x", "medmon-simulator/judge-x").status_code == 500
    assert judge(url, "x", "medmon-simulator/judge-a").status_code == 200


@pytest.mark.parametrize(
    "fault, check",
    [
        (
            Fault("status", status=503, retry_after=2),
            lambda r: r.status_code == 503 and r.headers["Retry-After"] == "2",
        ),
        (Fault("non_json"), lambda r: r.status_code == 200 and r.text.startswith("<html>")),
        (Fault("truncated"), lambda r: r.status_code == 200 and not r.text.rstrip().endswith("}")),
        (Fault("empty"), lambda r: r.json()["choices"][0]["message"]["content"] == ""),
    ],
    ids=["status-with-retry-after", "non-json", "truncated", "empty"],
)
def test_faults_shape_the_next_response(sim: tuple[Any, str], fault: Fault, check: Callable) -> None:
    app, url = sim
    sim_state(app).inject(fault)
    assert check(chat(url, list(MCQ[0].messages)))
    assert chat(url, list(MCQ[0].messages)).json()["choices"][0]["message"]["content"] == "B"  # one request only


def test_hang_holds_the_answer_until_its_delay(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("hang", delay_s=0.3))
    started = time.monotonic()
    r = chat(url, list(MCQ[0].messages))
    assert r.status_code == 504 and time.monotonic() - started >= 0.3


def test_fault_for_one_model_spares_the_others(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=500, count=2, model="medmon-simulator/judge-b"))
    assert judge(url, "x", "medmon-simulator/judge-a").status_code == 200
    assert [judge(url, "x", "medmon-simulator/judge-b").status_code for _ in range(3)] == [500, 500, 200]
    assert sim_state(app).by_model["medmon-simulator/judge-b"] == 3


def test_judge_prose_fault(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("prose", model="medmon-simulator/judge-a"))
    assert "{" not in judge(url, "x").json()["choices"][0]["message"]["content"]
    assert "{" in judge(url, "x").json()["choices"][0]["message"]["content"]


def test_admin_endpoint_injects_lists_and_clears_faults(sim: tuple[Any, str]) -> None:
    _, url = sim
    r = httpx.post(
        f"{url}/_simulator/faults", json={"faults": [{"kind": "status", "status": 429, "count": 2, "retry_after": 1}]}
    )
    assert r.status_code == 200 and r.json()["faults"][0]["count"] == 2
    assert chat(url, list(MCQ[0].messages)).status_code == 429
    assert httpx.get(f"{url}/_simulator/faults").json()["faults"][0]["count"] == 1
    httpx.post(f"{url}/_simulator/faults", json={"kind": "empty"})
    assert len(httpx.get(f"{url}/_simulator/faults").json()["faults"]) == 2
    assert httpx.delete(f"{url}/_simulator/faults").json()["faults"] == []
    assert chat(url, list(MCQ[0].messages)).status_code == 200


@pytest.mark.parametrize(
    "body, message",
    [
        ({"kind": "explode"}, "kind: expected one of"),
        ({"kind": "status", "colour": "red"}, "unknown field(s) colour"),
        ({"kind": "status", "count": 0}, "count: expected at least 1"),
        ("not an object", "expected a JSON object"),
    ],
    ids=["unknown-kind", "unknown-field", "bad-count", "not-an-object"],
)
def test_admin_endpoint_rejects_bad_faults_with_a_reason(sim: tuple[Any, str], body: Any, message: str) -> None:
    _, url = sim
    r = httpx.post(f"{url}/_simulator/faults", json=body)
    assert r.status_code == 422 and message in r.json()["error"]["message"]
    assert httpx.get(f"{url}/_simulator/faults").json()["faults"] == []


def test_admin_endpoints_set_judges_and_latency(sim: tuple[Any, str]) -> None:
    _, url = sim
    r = httpx.post(f"{url}/_simulator/judges", json={"medmon-simulator/judge-a": {"offset": -3}})
    assert r.status_code == 200 and r.json()["judges"]["medmon-simulator/judge-a"]["offset"] == -3
    content = judge(url, NOTES[0].references[0]).json()["choices"][0]["message"]["content"]
    assert {v["score"] for v in json.loads(content).values()} == {2}
    assert httpx.post(f"{url}/_simulator/judges", json={"m": {"mode": "sing"}}).status_code == 422
    assert httpx.post(f"{url}/_simulator/latency", json={"latency_s": -1}).status_code == 422
    assert httpx.post(f"{url}/_simulator/latency", json={"latency_s": 0.2}).json()["latency_s"] == 0.2
    started = time.monotonic()
    chat(url, list(MCQ[0].messages))
    assert time.monotonic() - started >= 0.2


def test_unknown_prompts_get_a_labelled_non_answer(sim: tuple[Any, str]) -> None:
    _, url = sim
    text = chat(url, [{"role": "user", "content": "Something else"}]).json()["choices"][0]["message"]["content"]
    assert "simulated model" in text


def test_request_body_must_be_json(sim: tuple[Any, str]) -> None:
    _, url = sim
    r = httpx.post(f"{url}/v1/chat/completions", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.headers["X-Medmon-Simulator"] == "true"
