"""The production client against the simulator over real HTTP on 127.0.0.1.

Each fault the simulator injects has a test: the error kind recorded, how many requests the
simulator saw (retries), and that a failed call never yields a completion to score.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest

from medmon.probes.client import (
    ModelClient,
    ModelSettings,
    estimate_tokens,
    price_tokens,
    read_completion,
    retry_after_s,
)
from medmon.probes.errors import ModelCallError
from medmon.probes.limits import BreakerState, CallGuard
from medmon.probes.simulator import Fault, Phase, create_simulator
from tests.probes.simkit import MCQ, FakeClock, RecordingSleep, run, settings, sim_state

MESSAGES = list(MCQ[0].messages)


@pytest.fixture
def sim(serve: Callable) -> tuple[Any, str]:
    app = create_simulator(
        MCQ,
        [
            Phase(
                accuracy=1.0,
                model="medmon-simulator/clinical-v1-0612",
                fingerprint="fp_test_42",
                extra_completion_tokens=40,
            )
        ],
        seed=1,
    )
    return app, serve(app).url


def call(
    s: ModelSettings,
    *,
    sleep: RecordingSleep | None = None,
    guard: CallGuard | None = None,
    messages: list[dict[str, str]] | None = None,
    rng: random.Random | None = None,
) -> Any:
    """One completion, or the ModelCallError it raised."""

    async def go() -> Any:
        async with ModelClient(s, sleep=sleep or RecordingSleep(), guard=guard, rng=rng) as client:
            try:
                return await client.complete(messages or MESSAGES)
            except ModelCallError as exc:
                return exc

    return run(go())


def test_success_records_tokens_latency_finish_reason_model_fingerprint_and_cost(sim: tuple[Any, str]) -> None:
    app, url = sim
    s = settings(url, system_prompt="You answer clinicians' questions.", temperature=0.3, max_tokens=77)
    completion = call(s)
    # What the endpoint itself reports for the same request, read without medmon.
    sent = sim_state(app).recent[-1]
    raw = httpx.post(f"{url}/v1/chat/completions", json=sent).json()
    assert completion.text == "B"
    assert completion.prompt_tokens == raw["usage"]["prompt_tokens"]
    assert completion.completion_tokens == raw["usage"]["completion_tokens"] == 41
    assert completion.cost_usd == pytest.approx((completion.prompt_tokens * 5 + 41 * 15) / 1e6)
    assert completion.served_model == "medmon-simulator/clinical-v1-0612"  # differs from the requested name
    assert completion.system_fingerprint == "fp_test_42"
    assert completion.finish_reason == "stop"
    assert 0 < completion.latency_s < 2
    assert completion.attempts == 1
    assert sent["model"] == "medmon-simulator/clinical-v1"
    assert sent["temperature"] == 0.3 and sent["max_tokens"] == 77
    assert sent["messages"][0] == {"role": "system", "content": "You answer clinicians' questions."}


def test_a_canary_with_its_own_system_message_keeps_it(sim: tuple[Any, str]) -> None:
    app, url = sim
    own = [{"role": "system", "content": "Canary system."}, *MESSAGES]
    call(settings(url, system_prompt="Plan system."), messages=own)
    assert [m["content"] for m in sim_state(app).recent[-1]["messages"] if m["role"] == "system"] == ["Canary system."]


def test_price_table_is_per_million_tokens() -> None:
    s = settings("http://127.0.0.1:9", input_per_mtok=2.5, output_per_mtok=10)
    assert price_tokens(1_000_000, 0, s) == 2.5
    assert price_tokens(200, 100, s) == pytest.approx(0.0015)
    assert price_tokens(None, 100, s) is None


def test_500s_are_retried_with_backoff_then_succeed(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=500, count=2))
    sleep = RecordingSleep()
    completion = call(
        settings(url, max_retries=2, backoff_base_s=0.5, backoff_max_s=8), sleep=sleep, rng=random.Random(7)
    )
    assert completion.text == "B" and completion.attempts == 3
    assert sim_state(app).requests == 3
    jitter = random.Random(7)
    assert sleep.waits == pytest.approx([0.5 * (1 - 0.25 * jitter.random()), 1.0 * (1 - 0.25 * jitter.random())])


def test_persistent_500s_are_an_unavailable_error_after_the_retries(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=503, count=10))
    err = call(settings(url, max_retries=2))
    assert isinstance(err, ModelCallError) and err.kind == "unavailable" and err.attempts == 3
    assert "503" in str(err)
    assert sim_state(app).requests == 3


def test_429_storm_honours_retry_after(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=429, count=3, retry_after=0.25))
    sleep = RecordingSleep()
    err = call(settings(url, max_retries=2), sleep=sleep)
    assert isinstance(err, ModelCallError) and err.kind == "rate_limited" and err.attempts == 3
    assert sleep.waits == [0.25, 0.25]  # what the server asked for, not the client's backoff
    assert sim_state(app).requests == 3


def test_429_storm_that_ends_succeeds_after_real_waits(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=429, count=2, retry_after=0.1))
    started = time.monotonic()

    async def go() -> Any:
        async with ModelClient(settings(url, max_retries=3)) as client:  # the real asyncio.sleep
            return await client.complete(MESSAGES)

    completion = run(go())
    assert completion.attempts == 3 and time.monotonic() - started >= 0.2


def test_retry_after_beyond_the_cap_gives_up_at_once(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=429, count=1, retry_after=600))
    sleep = RecordingSleep()
    err = call(settings(url, max_retries=3, max_retry_after_s=60), sleep=sleep)
    assert isinstance(err, ModelCallError) and err.kind == "rate_limited" and err.attempts == 1
    assert "exceeds" in str(err) and sleep.waits == []
    assert sim_state(app).requests == 1


def test_hang_is_a_timeout_and_retries_are_bounded(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("hang", count=5, delay_s=10))
    started = time.monotonic()
    err = call(settings(url, timeout_s=0.3, max_retries=1))
    assert isinstance(err, ModelCallError) and err.kind == "timeout" and err.attempts == 2
    assert time.monotonic() - started < 3
    assert sim_state(app).requests == 2


@pytest.mark.parametrize(
    "kind, expected",
    [("truncated", "bad_response"), ("non_json", "bad_response")],
    ids=["truncated-body", "non-json-body"],
)
def test_unusable_bodies_are_bad_responses_and_not_retried(sim: tuple[Any, str], kind: str, expected: str) -> None:
    app, url = sim
    sim_state(app).inject(Fault(kind))
    err = call(settings(url, max_retries=2))
    assert isinstance(err, ModelCallError) and err.kind == expected and err.attempts == 1
    assert err.completion is None
    assert sim_state(app).requests == 1


def test_empty_completion_is_an_error_that_still_reports_its_tokens_and_cost(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("empty"))
    err = call(settings(url))
    assert isinstance(err, ModelCallError) and err.kind == "empty_completion" and err.attempts == 1
    spent = err.completion
    assert spent is not None and spent.text == "" and spent.completion_tokens == 40  # reasoning tokens only
    assert spent.cost_usd == pytest.approx((spent.prompt_tokens * 5 + 40 * 15) / 1e6)
    assert sim_state(app).requests == 1


def test_client_errors_are_not_retried(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=400))
    err = call(settings(url, max_retries=3))
    assert isinstance(err, ModelCallError) and err.kind == "refused" and "HTTP 400" in str(err)
    assert sim_state(app).requests == 1


def test_connection_refused_is_unavailable() -> None:
    err = call(settings("http://127.0.0.1:9", max_retries=1))
    assert isinstance(err, ModelCallError) and err.kind == "unavailable" and err.attempts == 2


def test_the_api_key_never_reaches_errors_or_repr(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=401))
    s = settings(url, max_retries=0)
    err = call(s)
    assert "sk-test-secret-value" not in str(err) and "sk-test-secret-value" not in repr(s)


def test_from_endpoint_takes_the_key_from_the_named_variable(make_plan: Callable) -> None:
    plan = make_plan()
    s = ModelSettings.from_endpoint(plan.deployment, environ={"MEDMON_TEST_KEY": "k-from-env"})
    assert s.api_key == "k-from-env" and s.input_per_mtok == 5 and s.output_per_mtok == 15
    assert s.breaker_failures == 5 and s.requests_per_minute is None


def test_circuit_breaker_fails_fast_during_an_outage_and_recovers(sim: tuple[Any, str]) -> None:
    app, url = sim
    state = sim_state(app)
    state.inject(Fault("status", status=500, count=1000))
    clock = FakeClock()
    guard = CallGuard.build(failure_threshold=3, cooldown_s=30, clock=clock)
    s = settings(url, max_retries=0)
    kinds = [call(s, guard=guard).kind for _ in range(10)]
    assert kinds == ["unavailable"] * 3 + ["circuit_open"] * 7
    assert state.requests == 3  # the outage did not become a flood
    assert guard.breaker.state == BreakerState.open

    clock.advance(30)
    state.faults.clear()
    assert call(s, guard=guard).text == "B"  # the half-open trial succeeds
    assert guard.breaker.state == BreakerState.closed and state.requests == 4


def test_a_call_counts_once_against_the_breaker_after_its_retries(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=502, count=100))
    guard = CallGuard.build(failure_threshold=2, cooldown_s=60, clock=FakeClock())
    err = call(settings(url, max_retries=5), guard=guard)
    assert isinstance(err, ModelCallError) and err.kind == "unavailable" and err.attempts == 6
    assert err.status == 502 and "HTTP 502" in str(err)
    assert sim_state(app).requests == 6 and guard.breaker.state == BreakerState.closed
    err = call(settings(url, max_retries=5), guard=guard)  # the second failed call opens it
    assert guard.breaker.state == BreakerState.open and err.kind == "unavailable"
    err = call(settings(url, max_retries=5), guard=guard)
    assert err.kind == "circuit_open" and err.attempts == 0 and sim_state(app).requests == 12


def test_rate_limits_do_not_open_the_breaker(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=429, count=6, retry_after=0.01))
    guard = CallGuard.build(failure_threshold=2, cooldown_s=60, clock=FakeClock())
    for _ in range(3):
        assert call(settings(url, max_retries=1), guard=guard).kind == "rate_limited"
    assert guard.breaker.state == BreakerState.closed


def test_requests_per_minute_limit_paces_calls(sim: tuple[Any, str]) -> None:
    app, url = sim
    clock = FakeClock()
    sleep = RecordingSleep(clock)
    guard = CallGuard.build(requests_per_minute=30, clock=clock, sleep=sleep)  # one every 2 s

    async def go() -> None:
        async with ModelClient(settings(url), guard=guard) as client:
            for _ in range(4):
                await client.complete(MESSAGES)

    run(go())
    assert sum(sleep.waits) == pytest.approx(6.0) and sim_state(app).requests == 4


def test_tokens_per_minute_limit_reserves_an_estimate(sim: tuple[Any, str]) -> None:
    app, url = sim
    clock = FakeClock()
    sleep = RecordingSleep(clock)
    s = settings(url, max_tokens=100)
    reserve = estimate_tokens(MESSAGES, 100)
    guard = CallGuard.build(tokens_per_minute=60 * reserve, clock=clock, sleep=sleep)  # one call's worth a second

    async def go() -> list[int]:
        async with ModelClient(s, guard=guard) as client:
            return [
                sum(filter(None, [(c := await client.complete(MESSAGES)).prompt_tokens, c.completion_tokens]))
                for _ in range(3)
            ]

    used = run(go())
    assert sim_state(app).requests == 3
    # The first call runs at once; later calls wait only for what earlier calls really used.
    assert 0 < sum(sleep.waits) < 2.0
    assert all(u < reserve for u in used)


def test_concurrency_is_bounded(serve: Callable) -> None:
    app = create_simulator(MCQ, [Phase(accuracy=1.0, latency_s=0.05)])
    url = serve(app).url

    async def go() -> None:
        import asyncio

        async with ModelClient(settings(url, max_concurrency=3)) as client:
            await asyncio.gather(*(client.complete(list(c.messages)) for c in MCQ))

    run(go())
    assert sim_state(app).max_in_flight == 3


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "200", "retry-after": "9"}, 0.2),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
    ids=["seconds", "milliseconds-first", "garbage-ignored", "absent"],
)
def test_retry_after_header_parsing(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_s(headers) == expected


def test_retry_after_http_date() -> None:
    from email.utils import formatdate

    value = retry_after_s({"retry-after": formatdate(time.time() + 30, usegmt=True)})
    assert value is not None and 25 < value <= 30


@pytest.mark.parametrize(
    "body",
    [{"error": {"message": "upstream overloaded"}}, {"choices": []}, {"choices": ["B"]}, ["not", "an", "object"], None],
    ids=["error-object-with-200", "no-choices", "choice-not-an-object", "json-list", "json-null"],
)
def test_bodies_without_a_choice_are_bad_responses(body: Any) -> None:
    with pytest.raises(ModelCallError, match="no choices") as info:
        read_completion(body, latency_s=0.1, attempts=1, settings=settings("http://127.0.0.1:9"))
    assert info.value.kind == "bad_response"


def test_missing_usage_means_unknown_tokens_and_cost_not_zero() -> None:
    got = read_completion(
        {"model": "m", "choices": [{"message": {"content": "B"}, "finish_reason": "length"}]},
        latency_s=0.1,
        attempts=2,
        settings=settings("http://127.0.0.1:9"),
    )
    assert got.text == "B" and got.finish_reason == "length" and got.attempts == 2
    assert got.prompt_tokens is None and got.cost_usd is None and got.system_fingerprint is None


def test_null_content_reads_as_empty_text() -> None:
    got = read_completion(
        {
            "choices": [{"message": {"content": None, "tool_calls": []}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": True},
        },
        latency_s=0.1,
        attempts=1,
        settings=settings("http://127.0.0.1:9"),
    )
    assert got.text == "" and got.prompt_tokens == 3 and got.completion_tokens is None


def test_clients_of_one_endpoint_share_its_limits_and_breaker(sim: tuple[Any, str]) -> None:
    """Tasks probing one endpoint at once share its quota, and an outage one meets, all see."""
    app, url = sim
    state = sim_state(app)
    s = settings(url, max_retries=0, breaker_failures=2, breaker_cooldown_s=60)
    assert s.guard() is replace(s, temperature=0.7).guard()  # same endpoint, model and key
    assert (
        s.guard()
        is not settings(url, max_retries=0, breaker_failures=2, breaker_cooldown_s=60, api_key="another-key").guard()
    )
    state.inject(Fault("status", status=500, count=100))
    assert [call(s).kind for _ in range(2)] == ["unavailable", "unavailable"]  # two runs meet the outage
    assert call(s).kind == "circuit_open" and state.requests == 2  # a third run fails fast


def test_half_open_lets_one_trial_through_while_the_others_wait_for_it(sim: tuple[Any, str]) -> None:
    app, url = sim
    state = sim_state(app)
    clock = FakeClock()
    guard = CallGuard.build(failure_threshold=1, cooldown_s=30, clock=clock)
    s = settings(url, max_retries=0)
    state.inject(Fault("status", status=503))
    assert call(s, guard=guard).kind == "unavailable" and guard.breaker.state == BreakerState.open
    clock.advance(30)  # the endpoint recovered: five calls arrive together while the breaker tests it
    state.inject(Fault("empty", delay_s=0.3))

    async def together() -> list[Any]:
        async with ModelClient(s, guard=guard, sleep=RecordingSleep()) as client:

            async def one() -> Any:
                try:
                    return await client.complete(MESSAGES)
                except ModelCallError as exc:
                    return exc

            return list(await asyncio.gather(*(one() for _ in range(5))))

    outcomes = run(together())
    kinds = sorted(getattr(o, "kind", "ok") for o in outcomes)
    # The trial (a slow, empty answer: the endpoint is up) closes the breaker; the four that
    # waited for it then go through. Before, they failed at once as circuit_open with 0 attempts.
    assert kinds == ["empty_completion", "ok", "ok", "ok", "ok"] and guard.breaker.state == BreakerState.closed
    assert state.requests == 6


def test_a_call_refused_by_the_breaker_mid_retry_reports_its_real_error(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=503, count=100))
    guard = CallGuard.build(failure_threshold=1, cooldown_s=60, clock=FakeClock())

    class Sleep(RecordingSleep):
        async def __call__(self, seconds: float) -> None:
            guard.breaker.record_failure()  # while this call backs off, another call's failure opens the breaker
            await super().__call__(seconds)

    err = call(settings(url, max_retries=3), guard=guard, sleep=Sleep())
    assert isinstance(err, ModelCallError) and err.kind == "unavailable" and err.status == 503
    assert "HTTP 503" in str(err) and "circuit open" in str(err) and err.attempts == 1


def test_latency_is_the_whole_call_and_the_last_attempt_is_kept_apart(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=500, delay_s=0.4))
    completion = call(settings(url, max_retries=1, timeout_s=5))
    assert completion.attempts == 2
    assert completion.latency_s >= 0.4 > completion.attempt_latency_s


REASONING_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "o3-mini-2025-01-31",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "B"}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 300, "completion_tokens_details": {"reasoning_tokens": 250}},
}


def _sent(httpserver: Any) -> tuple[Any, dict[str, Any]]:
    request, _ = httpserver.log[-1]
    return request, json.loads(request.get_data())


def test_azure_openai_deployment_with_api_version_key_header_and_reasoning_parameters(httpserver: Any) -> None:
    from medmon.monitor.plan.model import Endpoint

    httpserver.expect_request(
        "/openai/deployments/o3-mini-prod/chat/completions", method="POST", query_string={"api-version": "2024-10-21"}
    ).respond_with_json(REASONING_BODY)
    endpoint = Endpoint(
        base_url=httpserver.url_for("/").rstrip("/"),
        model="o3-mini-prod",
        api_key_env="AZ_KEY",
        api_style="azure",
        api_version="2024-10-21",
        temperature=None,
        token_limit_param="max_completion_tokens",
        header_env={"X-Org-Token": "AZ_ORG"},
        headers={"X-Team": "clinical-ai"},
        price={"input_per_mtok": 1.1, "output_per_mtok": 4.4, "reasoning_per_mtok": 8.8},
    )
    s = replace(
        ModelSettings.from_endpoint(endpoint, environ={"AZ_KEY": "azure-secret", "AZ_ORG": "org-secret"}),
        max_tokens=2000,
    )
    completion = call(s)
    request, body = _sent(httpserver)
    assert request.headers["api-key"] == "azure-secret" and "Authorization" not in request.headers
    assert request.headers["X-Org-Token"] == "org-secret" and request.headers["X-Team"] == "clinical-ai"
    assert body["max_completion_tokens"] == 2000 and "max_tokens" not in body and "temperature" not in body
    assert completion.reasoning_tokens == 250 and completion.served_model == "o3-mini-2025-01-31"
    assert completion.cost_usd == pytest.approx((100 * 1.1 + 50 * 4.4 + 250 * 8.8) / 1e6)
    assert "azure-secret" not in repr(s) and "org-secret" not in repr(s)


def test_a_gateway_with_query_parameters_an_api_key_header_and_its_own_cost_header(httpserver: Any) -> None:
    httpserver.expect_request("/v1/chat/completions", query_string={"tenant": "north"}).respond_with_json(
        REASONING_BODY | {"model": "backend-a"}, headers={"x-litellm-response-cost": "0.00042"}
    )
    s = settings(
        httpserver.url_for("/").rstrip("/"),
        auth_header="api-key",
        query={"tenant": "north"},
        cost_header="x-litellm-response-cost",
    )
    completion = call(s)
    request, body = _sent(httpserver)
    assert request.headers["api-key"] == "sk-test-secret-value" and "Authorization" not in request.headers
    assert body["max_tokens"] == 512 and body["temperature"] == 0.0
    assert completion.cost_usd == pytest.approx(0.00042)  # the gateway's own figure, not the price table's


def test_error_bodies_of_every_shape_give_a_short_message_without_the_key(httpserver: Any) -> None:
    s = settings(httpserver.url_for("/").rstrip("/"), max_retries=0)
    shapes = [
        ({"error": {"message": "Incorrect API key provided: sk-test-secret-value"}}, 401),
        ({"error": "model 'x' not found"}, 404),
        ({"detail": "Not authenticated"}, 403),
        ({"message": "bad temperature"}, 400),
    ]
    found = []
    for body, status in shapes:
        httpserver.clear()
        httpserver.expect_request("/v1/chat/completions").respond_with_json(body, status=status)
        found.append(str(call(s)))
    assert found == [
        "HTTP 401 Incorrect API key provided: ***",
        "HTTP 404 model 'x' not found",
        "HTTP 403 Not authenticated",
        "HTTP 400 bad temperature",
    ]
