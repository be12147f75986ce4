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

The circuit breaker counts *calls*, once each after its retries: a burst of server errors as
wide as the concurrency, which every call survives on its second attempt, never opens it. While
the breaker tests recovery (half-open) the other calls wait for the trial's outcome, up to the
call timeout, instead of failing. A call that met a real error and was then refused by an open
breaker reports the real error (its HTTP status and message), not ``circuit_open``.

Endpoints differ in what they take: Azure OpenAI (``api_style: azure``, an ``api-version`` and
the ``api-key`` header), gateways with their own headers and query parameters, reasoning models
that take ``max_completion_tokens`` and no ``temperature``. All of it comes from the plan; header
values that are secrets come from environment variables it names.
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
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import httpx2
import openai

from medmon.probes.errors import (
    BadModelResponse,
    CircuitOpen,
    EmptyCompletion,
    ModelCallError,
    ModelRateLimited,
    ModelRefused,
    ModelTimeout,
    ModelUnavailable,
)
from medmon.probes.limits import Admission, BreakerState, CallGuard, CircuitBreaker, Sleep
from medmon.probes.telemetry import CallRecord, Telemetry, global_telemetry

_GUARDS: dict[tuple[object, ...], CallGuard] = {}
_GUARDS_LOCK = threading.Lock()


class PriceSection(Protocol):
    """What :meth:`ModelSettings.from_endpoint` reads of a plan ``Price`` (the plan lives above this package)."""

    @property
    def input_per_mtok(self) -> float: ...

    @property
    def output_per_mtok(self) -> float: ...


class EndpointSection(Protocol):
    """What :meth:`ModelSettings.from_endpoint` reads of a plan ``Endpoint`` (besides the optional fields)."""

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def api_key_env(self) -> str | None: ...

    @property
    def price(self) -> PriceSection: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def max_concurrency(self) -> int: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def max_tokens(self) -> int: ...

    @property
    def system_prompt(self) -> str | None: ...


@dataclass(frozen=True)
class ModelSettings:
    """How an endpoint is called; mirrors the plan's ``deployment`` (or a judge) section."""

    base_url: str
    model: str
    api_key: str
    timeout_s: float = 30.0
    max_retries: int = 2
    max_concurrency: int = 8
    temperature: float | None = 0.0  # None: not sent (reasoning models reject it)
    max_tokens: int = 512
    token_limit_param: str = "max_tokens"  # or "max_completion_tokens" (OpenAI's reasoning models)
    system_prompt: str | None = None
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    reasoning_per_mtok: float | None = None  # reasoning tokens' price when not the output price
    cost_header: str | None = None  # a response header whose value is the call's cost (a gateway's own)
    api_style: str = "openai"  # or "azure": AzureOpenAI's URLs, api-version and api-key header
    api_version: str | None = None
    auth_header: str = "bearer"  # "bearer" (Authorization), "api-key", or "none"
    # Compared but not hashed (dicts are not hashable): settings key the client pool.
    headers: dict[str, str] = field(default_factory=dict, repr=False, hash=False)
    query: dict[str, str] = field(default_factory=dict, hash=False)
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    max_retry_after_s: float = 60.0
    name: str = "production"
    # A JSON schema the answer must follow (OpenAI's ``response_format``), for the reader model.
    response_format: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    @classmethod
    def from_endpoint(
        cls, endpoint: EndpointSection, *, environ: Mapping[str, str] | None = None, name: str | None = None
    ) -> ModelSettings:
        """Build settings from a plan ``Endpoint``; the key and secret headers come from the variables it names.

        An unset variable becomes an empty value, never a placeholder: the commands that call an
        endpoint refuse to start while one is unset (``medmon.monitor.plan.routing.require_endpoint_env``).
        """
        env = os.environ if environ is None else environ
        price = endpoint.price
        optional = {
            k: getattr(endpoint, k)
            for k in (
                "requests_per_minute",
                "tokens_per_minute",
                "breaker_failures",
                "breaker_cooldown_s",
                "token_limit_param",
                "cost_header",
                "api_style",
                "api_version",
                "auth_header",
            )
            if hasattr(endpoint, k)
        }
        headers = dict(getattr(endpoint, "headers", None) or {})
        headers |= {h: env.get(var, "") for h, var in (getattr(endpoint, "header_env", None) or {}).items()}
        key_env = endpoint.api_key_env
        if key_env is None:
            optional["auth_header"] = "none"
        return cls(
            base_url=endpoint.base_url,
            model=endpoint.model,
            api_key=env.get(key_env, "") if key_env else "",
            headers=headers,
            query=dict(getattr(endpoint, "query", None) or {}),
            reasoning_per_mtok=getattr(price, "reasoning_per_mtok", None),
            timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
            max_concurrency=endpoint.max_concurrency,
            temperature=endpoint.temperature,
            max_tokens=endpoint.max_tokens,
            system_prompt=endpoint.system_prompt,
            input_per_mtok=price.input_per_mtok,
            output_per_mtok=price.output_per_mtok,
            name=str(name or getattr(endpoint, "name", "production")),
            **optional,
        )

    def guard(self) -> CallGuard:
        """This endpoint's limiter and breaker, shared by every client in this process.

        A quota belongs to the endpoint, model and key, not to one probe run: tasks probing at
        the same time draw on one requests/tokens budget, and an outage that one run meets opens
        the breaker for all of them, so the others fail fast instead of each finding out again.
        """
        key = (
            self.base_url,
            self.model,
            hashlib.sha256(self.api_key.encode()).hexdigest(),
            self.requests_per_minute,
            self.tokens_per_minute,
            self.breaker_failures,
            self.breaker_cooldown_s,
        )
        with _GUARDS_LOCK:
            guard = _GUARDS.get(key)
            if guard is None:
                guard = _GUARDS[key] = CallGuard.build(
                    requests_per_minute=self.requests_per_minute,
                    tokens_per_minute=self.tokens_per_minute,
                    failure_threshold=self.breaker_failures,
                    cooldown_s=self.breaker_cooldown_s,
                )
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
    attempt_latency_s: float | None = None  # the last attempt's own time; ``latency_s`` is the whole call's
    reasoning_tokens: int | None = None  # part of ``completion_tokens``, billed, never shown
    # With ``top_logprobs`` asked: per generated token, its top alternatives as (token digest, log-probability),
    # the chosen token first. Tokens are kept as digests: no model text outside the answer's text policy.
    logprobs: tuple[tuple[tuple[str, float], ...], ...] = ()


def token_digest(token: str) -> str:
    """A short digest naming a token without its text.

    >>> token_digest("Answer")
    'd12b8898'
    """
    return hashlib.blake2b(token.encode("utf-8"), digest_size=4).hexdigest()


def read_logprobs(choice: Mapping[str, Any]) -> tuple[tuple[tuple[str, float], ...], ...]:
    """A chat choice's ``logprobs.content`` as digests and log-probabilities (empty when it has none)."""
    block = choice.get("logprobs")
    content = block.get("content") if isinstance(block, dict) else None
    out: list[tuple[tuple[str, float], ...]] = []
    for position in content if isinstance(content, list) else []:
        if not isinstance(position, dict) or not isinstance(position.get("token"), str):
            break
        chosen = (token_digest(position["token"]), float(position.get("logprob") or 0.0))
        tops = [
            (token_digest(t["token"]), float(t["logprob"]))
            for t in position.get("top_logprobs") or []
            if isinstance(t, dict) and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), int | float)
        ]
        out.append((chosen, *sorted((t for t in tops if t[0] != chosen[0]), key=lambda t: -t[1])))
    return tuple(out)


def price_tokens(
    prompt_tokens: int | None,
    completion_tokens: int | None,
    settings: ModelSettings,
    reasoning_tokens: int | None = None,
) -> float | None:
    """Cost in dollars from the plan's price table (per million input and output tokens).

    Reasoning tokens are counted inside ``completion_tokens`` (as OpenAI reports them) and
    billed at the output price unless the plan gives them a price of their own.

    Examples
    --------
    >>> s = ModelSettings("http://x", "m", "k", input_per_mtok=5, output_per_mtok=15)
    >>> price_tokens(1000, 100, s)
    0.0065
    >>> price_tokens(1000, 100, replace(s, reasoning_per_mtok=60), reasoning_tokens=80)
    0.0101
    """
    if prompt_tokens is None or completion_tokens is None:
        return None
    reasoning = reasoning_tokens or 0
    reasoning_price = settings.output_per_mtok if settings.reasoning_per_mtok is None else settings.reasoning_per_mtok
    return round(
        (
            prompt_tokens * settings.input_per_mtok
            + (completion_tokens - reasoning) * settings.output_per_mtok
            + reasoning * reasoning_price
        )
        / 1_000_000,
        12,
    )


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


REFUSALS = frozenset({400, 401, 403, 404, 405, 413, 415, 422})
ERROR_MESSAGE_CHARS = 160


def error_message(exc: openai.APIStatusError, secrets: tuple[str, ...] = ()) -> str:
    """The short message of an error answer, whatever its shape, with secrets blanked.

    Servers answer errors as ``{"error": {"message": ...}}`` (OpenAI), ``{"error": "..."}``,
    ``{"detail": ...}`` (FastAPI) or ``{"message": ...}``; some echo the API key they refused.

    Examples
    --------
    >>> import httpx2
    >>> r = httpx2.Response(401, json={"error": {"message": "Incorrect API key provided: sk-abc"}},
    ...                     request=httpx2.Request("POST", "http://x"))
    >>> error_message(openai.AuthenticationError("x", response=r, body=r.json()), ("sk-abc",))
    'Incorrect API key provided: ***'
    """
    body = exc.body
    message: object = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") or inner.get("detail") if isinstance(inner, dict) else inner
        message = message or body.get("detail") or body.get("message")
    elif isinstance(body, str):
        message = body
    text = " ".join(str(message if message else exc.message).split())
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text[:ERROR_MESSAGE_CHARS]


def _status_error(exc: openai.APIStatusError, secrets: tuple[str, ...] = ()) -> ModelCallError:
    status = exc.status_code
    wait = retry_after_s(exc.response.headers if exc.response is not None else None)
    message = error_message(exc, secrets)
    if status == 429:
        err: ModelCallError = ModelRateLimited(f"HTTP 429 rate limited: {message}")
    elif status >= 500:
        err = ModelUnavailable(f"HTTP {status} server error: {message}")
    elif status == 408:
        err = ModelTimeout("HTTP 408: the endpoint timed out the request")
    elif status in REFUSALS:
        err = ModelRefused(f"HTTP {status} {message}")
    else:
        err = ModelCallError(f"HTTP {status} {message}")
    err.retry_after = wait
    err.status = status
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

    def __init__(
        self,
        settings: ModelSettings,
        *,
        guard: CallGuard | None = None,
        telemetry: Telemetry | None = None,
        rng: random.Random | None = None,
        sleep: Sleep = asyncio.sleep,
        role: str = "production",
    ) -> None:
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
        self._openai = openai_client(
            settings,
            openai.DefaultAioHttpClient(
                limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size), timeout=timeout
            ),
        )
        self._slots = asyncio.Semaphore(size)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._openai.close()

    async def complete(
        self, messages: list[dict[str, str]], *, model: str | None = None, decoding: Mapping[str, Any] | None = None
    ) -> Completion:
        """One chat completion, retried as configured; raises a ``ModelCallError`` subclass on failure.

        ``decoding`` (``temperature``, ``max_tokens``, ``stop_sequences``) replaces the endpoint's
        settings for this call (``seed`` and ``top_logprobs`` are passed on as the OpenAI API names
        them): a canary from a HELM run is asked the way HELM asked it. The
        error carries ``attempts`` and, when the endpoint did answer (an empty completion), the
        ``completion`` with its tokens and cost.
        """
        settings = self.settings
        if decoding:
            settings = replace(
                settings,
                temperature=float(decoding.get("temperature", settings.temperature)),
                max_tokens=int(decoding.get("max_tokens", settings.max_tokens)),
            )
        stop = list(decoding.get("stop_sequences") or []) if decoding else []
        extra: dict[str, Any] = {}
        if decoding and decoding.get("seed") is not None:
            extra["seed"] = int(decoding["seed"])
        if decoding and decoding.get("top_logprobs") is not None:
            extra["logprobs"], extra["top_logprobs"] = True, int(decoding["top_logprobs"])
        model = model or settings.model
        if settings.system_prompt and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": settings.system_prompt}, *messages]
        reserve = estimate_tokens(messages, settings.max_tokens)
        # The span and the duration start once a concurrency slot is held: time queued behind
        # medmon's own limit is not the endpoint's. They include retries and their backoff.
        async with self._slots:
            with self.telemetry.call_span(model, role=self.role) as span:
                started = time.perf_counter()
                outcome = await self._attempts(messages, model, reserve, settings, stop, extra)
                outcome = _timed(outcome, time.perf_counter() - started)
                completion = outcome if isinstance(outcome, Completion) else outcome.completion
                assert completion is None or isinstance(completion, Completion)
                self.telemetry.finish_call(
                    span,
                    CallRecord(
                        request_model=model,
                        temperature=settings.temperature,
                        max_tokens=settings.max_tokens,
                        duration_s=time.perf_counter() - started,
                        response_model=completion.served_model if completion else None,
                        response_id=completion.response_id if completion else None,
                        finish_reason=completion.finish_reason if completion else None,
                        input_tokens=completion.prompt_tokens if completion else None,
                        output_tokens=completion.completion_tokens if completion else None,
                        system_fingerprint=completion.system_fingerprint if completion else None,
                        error_type=None if isinstance(outcome, Completion) else outcome.kind,
                        attempts=completion.attempts if completion else outcome.attempts,
                    ),
                )
        if isinstance(outcome, Completion):
            return outcome
        raise outcome

    async def _attempts(
        self,
        messages: list[dict[str, str]],
        model: str,
        reserve: int,
        settings: ModelSettings,
        stop: list[str],
        extra: Mapping[str, Any] | None = None,
    ) -> Completion | ModelCallError:
        """The retry loop: every attempt asks the breaker and the limiter first.

        The breaker hears of the call once, when it is over (``_settle_breaker``). The first
        real error is what the call reports when a later attempt is refused by the breaker.
        """
        breaker, limiter = self.guard.breaker, self.guard.limiter
        attempts, trial = 0, False
        first: ModelCallError | None = None
        while True:
            if not trial:
                admission = await self._admission(breaker)
                if not admission.allowed:
                    refused = _refused(breaker, admission, settings.base_url, first)
                    refused.attempts = attempts
                    if first is not None:
                        breaker.record_failure()  # the call is over and failed: it counts once
                    return refused
                trial = admission.trial
            await limiter.acquire(reserve)
            attempts += 1
            try:
                completion = await self._once(messages, model, attempts, settings, stop, extra)
            except ModelCallError as exc:
                err = exc
            else:
                breaker.record_success()
                limiter.settle(reserve, _total(completion))
                return completion
            err.attempts = attempts
            first = first or (err if err.trips_breaker else None)
            if isinstance(err.completion, Completion):
                limiter.settle(reserve, _total(err.completion))
            wait = err.retry_after
            final = not err.retryable or attempts > settings.max_retries
            if not final and wait is not None and wait > settings.max_retry_after_s:
                err.args = (f"{err} ; Retry-After {wait:g}s exceeds {settings.max_retry_after_s:g}s, not retried",)
                final = True
            if final:
                _settle_breaker(breaker, err, trial)
                return err
            if wait is None:
                wait = min(settings.backoff_base_s * 2 ** (attempts - 1), settings.backoff_max_s)
                wait *= 1 - 0.25 * self._rng.random()
            await self._sleep(wait)

    async def _admission(self, breaker: CircuitBreaker) -> Admission:
        """Ask the breaker; while another call holds the half-open trial, wait for its outcome.

        The wait is bounded by the call timeout: a trial that hangs cannot hold every other call.
        It polls on the real clock (the trial is a real call) whatever ``sleep`` tests inject.
        """
        deadline = time.monotonic() + self.settings.timeout_s
        while True:
            admission = breaker.admit()
            if admission.allowed or admission.state != BreakerState.half_open or time.monotonic() >= deadline:
                return admission
            while not breaker.settled() and time.monotonic() < deadline:
                await asyncio.sleep(HALF_OPEN_POLL_S)

    async def _once(
        self,
        messages: list[dict[str, str]],
        model: str,
        attempts: int,
        settings: ModelSettings,
        stop: list[str],
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        """One HTTP attempt through the openai client; the body is read as plain JSON (``read_completion``)."""
        body: dict[str, Any] = {"model": model, "messages": messages, settings.token_limit_param: settings.max_tokens}
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if stop:
            body["stop"] = stop[:4]  # the OpenAI API takes up to four stop sequences
        if settings.response_format is not None:
            body["response_format"] = settings.response_format
        body.update(extra or {})
        started = time.perf_counter()
        try:
            response = await self._openai.post(
                "/chat/completions", body=body, cast_to=httpx2.Response, options=request_options(settings)
            )
            data = json.loads(response.content)
        except openai.APIConnectionError as exc:  # APITimeoutError included
            broken = _connection_failure(exc)
            if broken is None and isinstance(exc, openai.APITimeoutError):
                raise ModelTimeout(f"no answer within {settings.timeout_s:g}s") from exc
            cause = type(broken or exc.__cause__).__name__
            raise ModelUnavailable(f"cannot connect to {settings.base_url}: {cause}") from exc
        except openai.APIStatusError as exc:
            raise _status_error(exc, (settings.api_key, *settings.headers.values())) from exc
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError: a body that is not JSON
            raise BadModelResponse(f"response is not a chat completion: {str(exc)[:200]}") from exc
        completion = read_completion(
            data, latency_s=time.perf_counter() - started, attempts=attempts, settings=settings
        )
        if settings.cost_header and (billed := _header_cost(response.headers.get(settings.cost_header))) is not None:
            completion = replace(completion, cost_usd=billed)
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
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    reasoning = _optional(details.get("reasoning_tokens"), int) if isinstance(details, dict) else None
    return Completion(
        text=content if isinstance(content, str) else "",
        served_model=_optional(data.get("model"), str),
        system_fingerprint=_optional(data.get("system_fingerprint"), str),
        finish_reason=_optional(choice.get("finish_reason"), str),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_s=latency_s,
        cost_usd=price_tokens(prompt_tokens, completion_tokens, settings, reasoning),
        response_id=_optional(data.get("id"), str),
        attempts=attempts,
        attempt_latency_s=latency_s,
        reasoning_tokens=reasoning,
        logprobs=read_logprobs(choice),
    )


def _total(completion: Completion) -> int | None:
    if completion.prompt_tokens is None or completion.completion_tokens is None:
        return None
    return completion.prompt_tokens + completion.completion_tokens


HALF_OPEN_POLL_S = 0.02


def openai_client(settings: ModelSettings, http_client: openai.DefaultAioHttpClient) -> openai.AsyncOpenAI:
    """The openai client for an endpoint's style: plain OpenAI-compatible, or Azure OpenAI.

    ``auth_header`` ``api-key`` sends the key as an ``api-key`` header (Azure, some gateways)
    instead of ``Authorization: Bearer``; ``none`` sends no key at all.
    """
    headers: dict[str, Any] = dict(settings.headers)
    if settings.auth_header == "api-key" and settings.api_style != "azure":
        headers["api-key"] = settings.api_key
    common: dict[str, Any] = {
        "api_key": settings.api_key or "none",
        "timeout": settings.timeout_s,
        "max_retries": 0,
        "http_client": http_client,
        "default_headers": headers or None,
        "default_query": dict(settings.query) or None,
    }
    if settings.api_style == "azure":
        return openai.AsyncAzureOpenAI(azure_endpoint=settings.base_url, api_version=settings.api_version, **common)
    return openai.AsyncOpenAI(base_url=settings.base_url, **common)


def request_options(settings: ModelSettings) -> openai.RequestOptions:
    """Per-request options: no ``Authorization`` header unless the endpoint takes a bearer key."""
    if settings.auth_header == "bearer" or settings.api_style == "azure":
        return {"security": {"bearer_auth": settings.api_style != "azure"}}
    return {"security": {"bearer_auth": False}, "headers": {"Authorization": openai.Omit()}}


def _refused(
    breaker: CircuitBreaker, admission: Admission, base_url: str, first: ModelCallError | None
) -> ModelCallError:
    """What a call refused by the breaker reports: its own first real error when it had one."""
    if first is not None:
        first.args = (f"{first}; not retried: circuit open",)
        return first
    return CircuitOpen(
        f"circuit open after {breaker.failure_threshold} consecutive failed calls; "
        f"not calling {base_url} for {admission.retry_in:.1f}s more"
    )


def _settle_breaker(breaker: CircuitBreaker, err: ModelCallError, trial: bool) -> None:
    """Tell the breaker how a failed call ended, once: an outage, no verdict (429), or up."""
    if err.trips_breaker:
        breaker.record_failure()
    elif isinstance(err, ModelRateLimited):
        if trial:
            breaker.release()
    else:
        breaker.record_success()  # it answered: the endpoint is up


def _timed(outcome: Completion | ModelCallError, total_s: float) -> Completion | ModelCallError:
    """The call's whole wall time (attempts, backoff, waits) as its latency; the last attempt's kept apart."""
    if isinstance(outcome, Completion):
        return replace(outcome, latency_s=total_s)
    if isinstance(outcome.completion, Completion):
        outcome.completion = replace(outcome.completion, latency_s=total_s)
    outcome.latency_s = total_s
    return outcome


def _header_cost(value: str | None) -> float | None:
    try:
        cost = float(value) if value is not None else None
    except ValueError:
        return None
    return cost if cost is not None and cost >= 0 and cost == cost else None
