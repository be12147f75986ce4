"""The production model client: the only module that imports ``openai``.

It speaks to any OpenAI-compatible chat completions endpoint with the plan's model parameters,
so a replay matches how the model is used in production. Failures become ``ModelCallError``
subclasses: a failed call is recorded as an error, never scored as a wrong answer.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from types import TracebackType

import openai

from probes.errors import BadModelResponse, ModelCallError, ModelRateLimited, ModelTimeout, ModelUnavailable


@dataclass(frozen=True)
class ModelSettings:
    """How the deployed model is called; mirrors the plan's ``deployment`` section."""

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

    @classmethod
    def from_endpoint(cls, endpoint: object, *, environ: dict[str, str] | None = None) -> ModelSettings:
        """Build settings from a plan ``Endpoint``; the key comes from the variable it names."""
        env = os.environ if environ is None else environ
        key_env = getattr(endpoint, "api_key_env")
        price = getattr(endpoint, "price")
        return cls(
            base_url=getattr(endpoint, "base_url"), model=getattr(endpoint, "model"),
            api_key=env.get(key_env, "") or "unset",
            timeout_s=getattr(endpoint, "timeout_s"), max_retries=getattr(endpoint, "max_retries"),
            max_concurrency=getattr(endpoint, "max_concurrency"), temperature=getattr(endpoint, "temperature"),
            max_tokens=getattr(endpoint, "max_tokens"), system_prompt=getattr(endpoint, "system_prompt"),
            input_per_mtok=price.input_per_mtok, output_per_mtok=price.output_per_mtok,
        )

    def __repr__(self) -> str:  # the key never reaches logs
        return f"ModelSettings(base_url={self.base_url!r}, model={self.model!r}, api_key='***')"


@dataclass(frozen=True)
class Completion:
    """What one chat completion call returned, with its cost and latency."""

    text: str
    served_model: str | None
    system_fingerprint: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cost_usd: float | None


def price_tokens(prompt_tokens: int | None, completion_tokens: int | None, settings: ModelSettings) -> float | None:
    """Cost in dollars from the plan's price table (per million input and output tokens)."""
    if prompt_tokens is None or completion_tokens is None:
        return None
    return (prompt_tokens * settings.input_per_mtok + completion_tokens * settings.output_per_mtok) / 1_000_000


class ModelClient:
    """Async chat client with bounded concurrency and explicit timeouts.

    Use as ``async with ModelClient(settings) as client: await client.complete(messages)``.
    """

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=settings.api_key,
            timeout=settings.timeout_s, max_retries=settings.max_retries,
        )
        self._slots = asyncio.Semaphore(settings.max_concurrency)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, messages: list[dict[str, str]], *, model: str | None = None) -> Completion:
        """One chat completion; raises a ``ModelCallError`` subclass on failure."""
        settings = self.settings
        if settings.system_prompt and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": settings.system_prompt}, *messages]
        async with self._slots:
            started = time.perf_counter()
            try:
                response = await self._client.chat.completions.create(
                    model=model or settings.model, messages=messages,  # type: ignore[arg-type]
                    temperature=settings.temperature, max_tokens=settings.max_tokens,
                )
            except openai.APITimeoutError as exc:
                raise ModelTimeout(f"no answer within {settings.timeout_s:g}s") from exc
            except openai.RateLimitError as exc:
                raise ModelRateLimited(f"rate limited (HTTP 429) after {settings.max_retries} retries") from exc
            except openai.APIConnectionError as exc:
                raise ModelUnavailable(f"cannot connect to {settings.base_url}") from exc
            except openai.InternalServerError as exc:
                raise ModelUnavailable(f"server error HTTP {exc.status_code}") from exc
            except openai.APIStatusError as exc:
                raise ModelCallError(f"HTTP {exc.status_code}: {exc.message[:200]}") from exc
            except (openai.APIResponseValidationError, ValueError) as exc:
                raise BadModelResponse(f"response is not a chat completion: {str(exc)[:200]}") from exc
            latency = time.perf_counter() - started
        if not getattr(response, "choices", None):
            raise BadModelResponse("response has no choices")
        choice = response.choices[0]
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else None
        completion_tokens = usage.completion_tokens if usage else None
        return Completion(
            text=(choice.message.content or "") if choice.message else "",
            served_model=response.model, system_fingerprint=response.system_fingerprint,
            finish_reason=choice.finish_reason, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens, latency_s=latency,
            cost_usd=price_tokens(prompt_tokens, completion_tokens, settings),
        )
