"""The production model client: the only module that imports ``openai``.

It speaks to any OpenAI-compatible chat completions endpoint with the plan's model parameters
(temperature, max tokens, system prompt), so a replay matches how the model is used in
production. Failures become ``ModelCallError`` subclasses: a failed call is recorded as an
error, never scored as a wrong answer.

Requests go through openai's ``post`` (its auth, base URL, timeouts and error classes) and the
body is read as plain JSON by :func:`read_completion`: openai's typed ``create`` spends about a
third of the client's CPU per call on parameter transforms and model construction, which limits
throughput at high concurrency.

Retries are medmon's own loop, with the ``openai`` client's built-in retries off
(``max_retries=0``). openai's loop does honour ``Retry-After`` / ``retry-after-ms``, but it is
invisible from outside: the rate limiter and the circuit breaker must see every *attempt* (a
retry spends quota; an outage must open the breaker on attempts, not on calls that already
retried three times), the number of attempts is recorded with each result, and the backoff's
jitter and sleep are injected so tests are exact. The loop retries timeouts, connection errors,
429 and 5xx; it waits what ``Retry-After`` says (up to ``max_retry_after_s``, beyond which the
call gives up at once, as openai does) or else exponential backoff with jitter.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

import aiohttp
import httpx2
import openai

from medmon.probes.errors import (BadModelResponse, CircuitOpen, EmptyCompletion, ModelCallError, ModelRateLimited,
                           ModelTimeout, ModelUnavailable)
from medmon.probes.limits import CallGuard, Sleep
from medmon.probes.telemetry import CallRecord, Telemetry, global_telemetry

_GUARDS: dict[tuple[object, ...], CallGuard] = {}
_GUARDS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ModelSettings:
    """How an endpoint is called; mirrors the plan's ``deployment`` (or a judge) section."""

    base_url: str
    model: str
    api_key: str
    timeout_s: float = 30.0
    max_retries: int = 2
    max_concurrency: int = 8
    temperature: float = 0.0
    max_tokens: int = 512
    system_prompt: str | None = None
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    max_retry_after_s: float = 60.0
    name: str = "production"

    @classmethod
    def from_endpoint(cls, endpoint: object, *, environ: Mapping[str, str] | None = None,
                      name: str | None = None) -> ModelSettings:
        """Build settings from a plan ``Endpoint``; the key comes from the variable it names."""
        env = os.environ if environ is None else environ
        price = getattr(endpoint, "price")
        optional = {k: getattr(endpoint, k) for k in ("requests_per_minute", "tokens_per_minute", "breaker_failures",
                                                      "breaker_cooldown_s") if hasattr(endpoint, k)}
        return cls(
            base_url=getattr(endpoint, "base_url"), model=getattr(endpoint, "model"),
            api_key=env.get(getattr(endpoint, "api_key_env"), "") or "unset",
            timeout_s=getattr(endpoint, "timeout_s"), max_retries=getattr(endpoint, "max_retries"),
            max_concurrency=getattr(endpoint, "max_concurrency"), temperature=getattr(endpoint, "temperature"),
            max_tokens=getattr(endpoint, "max_tokens"), system_prompt=getattr(endpoint, "system_prompt"),
            input_per_mtok=price.input_per_mtok, output_per_mtok=price.output_per_mtok,
            name=str(name or getattr(endpoint, "name", "production")), **optional,
        )

    def guard(self) -> CallGuard:
        """This endpoint's limiter and breaker, shared by every client in this process.

        A quota belongs to the endpoint, model and key, not to one probe run: tasks probing at
        the same time draw on one requests/tokens budget, and an outage that one run meets opens
        the breaker for all of them, so the others fail fast instead of each finding out again.
        """
        key = (self.base_url, self.model, hashlib.sha256(self.api_key.encode()).hexdigest(),
               self.requests_per_minute, self.tokens_per_minute, self.breaker_failures, self.breaker_cooldown_s)
        with _GUARDS_LOCK:
            guard = _GUARDS.get(key)
            if guard is None:
                guard = _GUARDS[key] = CallGuard.build(
                    requests_per_minute=self.requests_per_minute, tokens_per_minute=self.tokens_per_minute,
                    failure_threshold=self.breaker_failures, cooldown_s=self.breaker_cooldown_s)
            return guard

    def __repr__(self) -> str:  # the key never reaches logs
        return f"ModelSettings(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r}, api_key='***')"


@dataclass(frozen=True)
class Completion:
    """What one chat completion call returned, with its cost, latency and attempts."""

    text: str
    served_model: str | None
    system_fingerprint: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cost_usd: float | None
    response_id: str | None = None
    attempts: int = 1


def price_tokens(prompt_tokens: int | None, completion_tokens: int | None, settings: ModelSettings) -> float | None:
    """Cost in dollars from the plan's price table (per million input and output tokens).

    Examples
    --------
    >>> s = ModelSettings("http://x", "m", "k", input_per_mtok=5, output_per_mtok=15)
    >>> price_tokens(1000, 100, s)
    0.0065
    """
    if prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * settings.input_per_mtok + completion_tokens * settings.output_per_mtok) / 1_000_000


def estimate_tokens(messages: list[dict[str, str]], max_tokens: int) -> int:
    """A reservation for the tokens-per-minute limiter: ~4 characters a token, plus the answer's cap."""
    return sum(len(m.get("content") or "") for m in messages) // 4 + max_tokens


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a response asks to wait: ``retry-after-ms``, then ``Retry-After`` (seconds or HTTP date).

    Examples
    --------
    >>> retry_after_s({"retry-after": "2"}), retry_after_s({"retry-after-ms": "250"}), retry_after_s({})
    (2.0, 0.25, None)
    """
    if not headers:
        return None
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def _status_error(exc: openai.APIStatusError) -> ModelCallError:
    status = exc.status_code
    wait = retry_after_s(exc.response.headers if exc.response is not None else None)
    if status == 429:
        err: ModelCallError = ModelRateLimited("rate limited (HTTP 429)")
    elif status >= 500:
        err = ModelUnavailable(f"server error HTTP {status}")
    elif status == 408:
        err = ModelTimeout("the endpoint timed out the request (HTTP 408)")
    else:
        err = ModelCallError(f"HTTP {status}: {str(exc.message)[:200]}")
    err.retry_after = wait
    return err


class ModelClient:
    """Async chat client with bounded concurrency, limits, a breaker, retries and telemetry.

    Use as ``async with ModelClient(settings) as client: await client.complete(messages)``.

    Parameters
    ----------
    settings
        Endpoint, model parameters, prices and limits.
    guard
        The endpoint's rate limiter and circuit breaker. Pass the same guard to every client of
        one endpoint (e.g. across scheduled runs) to make the quota and the breaker global; by
        default each client has its own.
    telemetry
        Where spans and metrics go; global (no-op unless configured) providers by default.
    rng, sleep
        Backoff jitter and waiting, injected for tests.
    role
        ``"production"`` or ``"judge"``, recorded on the call span.
    """

    def __init__(self, settings: ModelSettings, *, guard: CallGuard | None = None,
                 telemetry: Telemetry | None = None, rng: random.Random | None = None,
                 sleep: Sleep = asyncio.sleep, role: str = "production") -> None:
        self.settings = settings
        self.guard = guard or settings.guard()
        self.telemetry = telemetry or global_telemetry()
        self.role = role
        self._rng = rng or random.Random()
        self._sleep = sleep
        size = settings.max_concurrency
        # openai's aiohttp transport (the `aiohttp` extra): its C HTTP parser and connection pool
        # cost about half the CPU per call of the default httpx transport, whose pool also scans
        # every connection for every request (measured as in benchmarks/probe_throughput.py).
        # Connections match the concurrency: fewer would queue calls inside the transport.
        timeout = httpx2.Timeout(settings.timeout_s, connect=min(5.0, settings.timeout_s))
        self._openai = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout_s, max_retries=0,
            http_client=openai.DefaultAioHttpClient(
                limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size), timeout=timeout))
        self._slots = asyncio.Semaphore(size)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._openai.close()

    async def complete(self, messages: list[dict[str, str]], *, model: str | None = None,
                       decoding: Mapping[str, Any] | None = None) -> Completion:
        """One chat completion, retried as configured; raises a ``ModelCallError`` subclass on failure.

        ``decoding`` (``temperature``, ``max_tokens``, ``stop_sequences``) replaces the endpoint's
        settings for this call: a canary from a HELM run is asked the way HELM asked it. The
        error carries ``attempts`` and, when the endpoint did answer (an empty completion), the
        ``completion`` with its tokens and cost.
        """
        settings = self.settings
        if decoding:
            settings = replace(settings, temperature=float(decoding.get("temperature", settings.temperature)),
                               max_tokens=int(decoding.get("max_tokens", settings.max_tokens)))
        stop = list(decoding.get("stop_sequences") or []) if decoding else []
        model = model or settings.model
        if settings.system_prompt and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": settings.system_prompt}, *messages]
        reserve = estimate_tokens(messages, settings.max_tokens)
        # The span and the duration start once a concurrency slot is held: time queued behind
        # medmon's own limit is not the endpoint's. They include retries and their backoff.
        async with self._slots:
            with self.telemetry.call_span(model, role=self.role) as span:
                started = time.perf_counter()
                outcome = await self._attempts(messages, model, reserve, settings, stop)
                completion = outcome if isinstance(outcome, Completion) else outcome.completion
                assert completion is None or isinstance(completion, Completion)
                self.telemetry.finish_call(span, CallRecord(
                    request_model=model, temperature=settings.temperature, max_tokens=settings.max_tokens,
                    duration_s=time.perf_counter() - started,
                    response_model=completion.served_model if completion else None,
                    response_id=completion.response_id if completion else None,
                    finish_reason=completion.finish_reason if completion else None,
                    input_tokens=completion.prompt_tokens if completion else None,
                    output_tokens=completion.completion_tokens if completion else None,
                    system_fingerprint=completion.system_fingerprint if completion else None,
                    error_type=None if isinstance(outcome, Completion) else outcome.kind,
                    attempts=completion.attempts if completion else outcome.attempts))
        if isinstance(outcome, Completion):
            return outcome
        raise outcome

    async def _attempts(self, messages: list[dict[str, str]], model: str, reserve: int, settings: ModelSettings,
                        stop: list[str]) -> Completion | ModelCallError:
        """The retry loop: every attempt asks the breaker and the limiter first."""
        breaker, limiter = self.guard.breaker, self.guard.limiter
        attempts = 0
        while True:
            admission = breaker.admit()
            if not admission.allowed:
                err: ModelCallError = CircuitOpen(
                    f"circuit open after {breaker.failure_threshold} consecutive failures; "
                    f"not calling {settings.base_url} for {admission.retry_in:.1f}s more")
                err.attempts = attempts
                return err
            await limiter.acquire(reserve)
            attempts += 1
            try:
                completion = await self._once(messages, model, attempts, settings, stop)
            except ModelCallError as exc:
                err = exc
            else:
                breaker.record_success()
                limiter.settle(reserve, _total(completion))
                return completion
            err.attempts = attempts
            if err.trips_breaker:
                breaker.record_failure()
            elif isinstance(err, ModelRateLimited):
                breaker.release()
            else:
                breaker.record_success()  # it answered: the endpoint is up
            if isinstance(err.completion, Completion):
                limiter.settle(reserve, _total(err.completion))
            if not err.retryable or attempts > settings.max_retries:
                return err
            wait = err.retry_after
            if wait is not None and wait > settings.max_retry_after_s:
                err.args = (f"{err} ; Retry-After {wait:g}s exceeds {settings.max_retry_after_s:g}s, not retried",)
                return err
            if wait is None:
                wait = min(settings.backoff_base_s * 2 ** (attempts - 1), settings.backoff_max_s)
                wait *= 1 - 0.25 * self._rng.random()
            await self._sleep(wait)

    async def _once(self, messages: list[dict[str, str]], model: str, attempts: int, settings: ModelSettings,
                    stop: list[str]) -> Completion:
        """One HTTP attempt through the openai client; the body is read as plain JSON (``read_completion``)."""
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": settings.temperature,
                                "max_tokens": settings.max_tokens}
        if stop:
            body["stop"] = stop[:4]  # the OpenAI API takes up to four stop sequences
        started = time.perf_counter()
        try:
            response = await self._openai.post("/chat/completions", body=body, cast_to=httpx2.Response,
                                               options={"security": {"bearer_auth": True}})
            data = json.loads(response.content)
        except openai.APIConnectionError as exc:  # APITimeoutError included
            broken = _connection_failure(exc)
            if broken is None and isinstance(exc, openai.APITimeoutError):
                raise ModelTimeout(f"no answer within {settings.timeout_s:g}s") from exc
            cause = type(broken or exc.__cause__).__name__
            raise ModelUnavailable(f"cannot connect to {settings.base_url}: {cause}") from exc
        except openai.APIStatusError as exc:
            raise _status_error(exc) from exc
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError: a body that is not JSON
            raise BadModelResponse(f"response is not a chat completion: {str(exc)[:200]}") from exc
        completion = read_completion(data, latency_s=time.perf_counter() - started, attempts=attempts, settings=settings)
        if not completion.text.strip():
            empty = EmptyCompletion(f"empty completion (finish_reason={completion.finish_reason!r})")
            empty.completion = completion
            raise empty
        return completion


def _connection_failure(exc: BaseException) -> BaseException | None:
    """The aiohttp error behind a failed call when it is a broken connection, not a timeout.

    The aiohttp transport reports every connection error (refused, reset, closed by the server)
    as a connect timeout; the cause chain still holds what happened.
    """
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, asyncio.TimeoutError):
            return cause
        cause = cause.__cause__
    return None


def _optional(value: object, kind: type) -> Any:
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def read_completion(data: object, *, latency_s: float, attempts: int, settings: ModelSettings) -> Completion:
    """The fields medmon records from a chat completion body; ``BadModelResponse`` if it is not one.

    The body is read as JSON rather than through openai's typed models: the request goes
    through openai's ``post`` (auth, base URL, timeouts, its error classes) but skips its
    parameter transform and model construction, which cost about a third of the client's CPU
    per call (1.41 vs 0.97 ms in benchmarks/probe_throughput.py).
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(data, dict) or not isinstance(choice, dict):
        raise BadModelResponse("response is not a chat completion: it has no choices")
    message, usage = choice.get("message"), data.get("usage")
    content = message.get("content") if isinstance(message, dict) else None
    prompt_tokens = _optional(usage.get("prompt_tokens"), int) if isinstance(usage, dict) else None
    completion_tokens = _optional(usage.get("completion_tokens"), int) if isinstance(usage, dict) else None
    return Completion(
        text=content if isinstance(content, str) else "", served_model=_optional(data.get("model"), str),
        system_fingerprint=_optional(data.get("system_fingerprint"), str),
        finish_reason=_optional(choice.get("finish_reason"), str),
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_s=latency_s,
        cost_usd=price_tokens(prompt_tokens, completion_tokens, settings),
        response_id=_optional(data.get("id"), str), attempts=attempts)


def _total(completion: Completion) -> int | None:
    if completion.prompt_tokens is None or completion.completion_tokens is None:
        return None
    return completion.prompt_tokens + completion.completion_tokens
