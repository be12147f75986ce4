"""A SIMULATED clinical model behind an OpenAI-compatible chat completions endpoint.

It exists for the demo and the tests: it is not a language model and says so everywhere (its
model name starts with ``medmon-simulator``, every response carries ``X-Medmon-Simulator: true``
and ``"simulated": true``). It answers known canaries correctly at the rate of the current
phase, and its phases change with the number of requests served, so drift really happens:
an accuracy drop, a cost rise (more completion tokens), a silent model-version swap.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from baselines.canary import Canary
from probes.scoring import extract_choice

SIMULATOR_MODEL = "medmon-simulator/clinical-v1"
SIMULATOR_HEADERS = {"X-Medmon-Simulator": "true"}


@dataclass(frozen=True)
class Phase:
    """How the simulated model behaves from request number ``after_requests`` on."""

    after_requests: int = 0
    accuracy: float = 0.85
    model: str = SIMULATOR_MODEL
    fingerprint: str = "fp_sim_0001"
    extra_completion_tokens: int = 0
    latency_s: float = 0.0
    label: str = "baseline"


@dataclass(frozen=True)
class Fault:
    """An injected failure for the next ``count`` requests (``status`` 0 means 'not HTTP')."""

    kind: str  # status | hang | truncated | non_json | empty | prose
    count: int = 1
    status: int = 500
    retry_after: float | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class AnswerKey:
    correct: str
    wrong: str


def answer_key(canaries: Iterable[Canary]) -> dict[str, AnswerKey]:
    """Map each canary's last user message to a right and a wrong answer."""
    key: dict[str, AnswerKey] = {}
    for c in canaries:
        if not c.references:
            continue
        correct = c.references[0]
        if extract_choice(correct) == correct.strip().upper() and len(correct.strip()) == 1:
            options = [chr(ord("A") + i) for i in range(len(c.choices) if c.choices else 4)]
            wrong = next(o for o in options if o != correct.strip().upper())
        else:
            wrong = "I cannot determine this from the information given."
        key[c.prompt] = AnswerKey(correct, wrong)
    return key


@dataclass
class SimulatorState:
    phases: Sequence[Phase]
    key: dict[str, AnswerKey]
    seed: int = 0
    requests: int = 0
    faults: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def phase(self) -> Phase:
        current = self.phases[0]
        for p in self.phases:
            if self.requests >= p.after_requests:
                current = p
        return current

    def next_request(self) -> tuple[Phase, Fault | None, float]:
        with self.lock:
            self.requests += 1
            fault = None
            if self.faults:
                fault = self.faults[0]
                remaining = fault.count - 1
                self.faults[0:1] = [Fault(**{**fault.__dict__, "count": remaining})] if remaining > 0 else []
            return self.phase(), fault, self.rng.random()


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def create_simulator(canaries: Iterable[Canary], phases: Sequence[Phase] | None = None, *, seed: int = 0) -> Starlette:
    """The simulator as an ASGI app; ``app.state.sim`` exposes its state to tests and the demo."""
    state = SimulatorState(phases=list(phases or [Phase()]), key=answer_key(canaries), seed=seed)

    async def chat(request: Request) -> Response:
        phase, fault, draw = state.next_request()
        if fault is not None:
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault.kind == "status":
                headers = dict(SIMULATOR_HEADERS)
                if fault.retry_after is not None:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
                return JSONResponse({"error": {"message": "simulated failure", "type": "simulated"}},
                                    status_code=fault.status, headers=headers)
            if fault.kind == "non_json":
                return Response("<html>simulated gateway error</html>", media_type="application/json",
                                headers=SIMULATOR_HEADERS)
            if fault.kind == "truncated":
                return Response('{"id": "chatcmpl-sim", "choices": [{"ind', media_type="application/json",
                                headers=SIMULATOR_HEADERS)
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return JSONResponse({"error": {"message": "body is not JSON"}}, status_code=400, headers=SIMULATOR_HEADERS)
        messages = body.get("messages") or []
        prompt = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        known = state.key.get(prompt)
        if fault is not None and fault.kind == "empty":
            text = ""
        elif known is None:
            text = "This is a simulated model; it has no answer for this prompt."
        else:
            text = known.correct if draw < phase.accuracy else known.wrong
        if phase.latency_s:
            await asyncio.sleep(phase.latency_s)
        prompt_tokens = sum(_tokens(str(m.get("content", ""))) for m in messages)
        reasoning = phase.extra_completion_tokens
        completion_tokens = _tokens(text) + reasoning if text else reasoning
        payload = {
            "id": f"chatcmpl-sim-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": phase.model,
            "system_fingerprint": phase.fingerprint,
            "simulated": True,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "completion_tokens_details": {"reasoning_tokens": reasoning}},
        }
        return JSONResponse(payload, headers=SIMULATOR_HEADERS)

    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": SIMULATOR_MODEL, "object": "model",
                                                         "owned_by": "medmon-simulator"}]},
                            headers=SIMULATOR_HEADERS)

    async def status(_: Request) -> Response:
        phase = state.phase()
        return JSONResponse({"simulated": True, "requests": state.requests, "phase": phase.label,
                             "model": phase.model, "accuracy": phase.accuracy}, headers=SIMULATOR_HEADERS)

    app = Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/_simulator", status, methods=["GET"]),
    ])
    app.state.sim = state
    return app
