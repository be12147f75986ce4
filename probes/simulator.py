"""A SIMULATED clinical model behind an OpenAI-compatible chat completions endpoint.

It exists for the demo and the tests: it is not a language model and says so everywhere (its
model names start with ``medmon-simulator``, every response carries ``X-Medmon-Simulator: true``
and ``"simulated": true``, and its judge verdicts say "simulated judge"). It answers known
canaries correctly at the rate of the current phase, and its phases change with the number of
requests served, so drift really happens: an accuracy drop, a cost rise (more completion
tokens), a silent model-version swap, added latency.

**Answer styles**: each phase may answer in a configurable mix of the ways real chat models
write (``plain``; ``markdown``, ``**Answer: B**``; ``reasoning``, working then "Therefore, the
answer is B."; ``json``, ``{"answer": "B"}``; ``hedge``, no single answer: "B or C", a range;
``language``, the answer cue and labels in another language, "Réponse : B", "答案：B", "Nein.";
``letterless``, the option's text without its letter; ``units``, a number in another unit than
the canary's, "0.9 mL/s" for 54 mL/min; ``cut``, reasoning cut off by the token limit before the
answer, with ``finish_reason: "length"``). A phase that changes only the mix changes how the model
writes, not how often it is right.

It also plays **judges**: a request whose system prompt carries the jury marker is answered
with a JSON verdict, scored by comparing the judged response with the gold reference. Each
judge (told apart by the requested model name) has its own behaviour: a bias, a drift after
some requests, noise, prose instead of JSON (always, or only on the first ask), or failure.

**Faults** are injected for the next ``count`` matching requests (optionally only for one
model): HTTP status codes (500s, 429 storms with ``Retry-After``), hangs (until the client
gives up), truncated or non-JSON bodies, empty completions, prose instead of a judge's JSON.
Tests and the demo set them in-process (``app.state.sim``) or over HTTP on a running
simulator: ``POST /_simulator/faults``, ``POST /_simulator/judges``, ``POST /_simulator/latency``.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
import time
import uuid
import zlib
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from medmon.baselines.canary import Canary
from medmon.probes.jury import DEFAULT_CRITERIA, GOLD_TAG, JUDGE_MARKER, RESPONSE_TAG
from medmon.probes.scoring import READING_SCORERS, extract_choice, normalize_text

SIMULATOR_MODEL = "medmon-simulator/clinical-v1"
SIMULATOR_HEADERS = {"X-Medmon-Simulator": "true"}
FAULT_KINDS = ("status", "hang", "truncated", "non_json", "empty", "prose")
JUDGE_MODES = ("json", "prose", "prose_once", "fail")
HANG_DEFAULT_S = 30.0
RECENT_BODIES = 64  # request bodies kept for tests to inspect what was sent
STYLES = ("plain", "markdown", "reasoning", "json", "hedge", "language", "letterless", "units", "cut", "ordinal")
# An option named by its place in the list ("the option listed second"): the rules do not read it; a reader model can.
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
READER_SCHEMA = "medmon_final_answer"
CUT_OFF = "Let me work through this step by step. First I check each finding in the question against"


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
    styles: Mapping[str, float] | None = None  # answer style -> weight; None answers plainly

    def __post_init__(self) -> None:
        for style, weight in (self.styles or {}).items():
            if style not in STYLES:
                raise ValueError(f"styles: expected keys among {', '.join(STYLES)}, got {style!r}")
            if weight < 0:
                raise ValueError(f"styles.{style}: expected a weight >= 0, got {weight!r}")
        if self.styles is not None and not any(self.styles.values()):
            raise ValueError("styles: expected at least one positive weight")


@dataclass(frozen=True)
class Fault:
    """An injected failure for the next ``count`` requests (for ``model`` only, when set).

    Kinds: ``status`` (HTTP ``status``, with ``Retry-After: retry_after`` when given), ``hang``
    (no answer for ``delay_s``, default 30 s, or until the client disconnects), ``truncated``
    (a JSON body cut short), ``non_json`` (an HTML error page labelled as JSON), ``empty`` (a
    well-formed completion with no text), ``prose`` (a judge answering in prose, not JSON).
    ``delay_s`` also delays any other kind.
    """

    kind: str
    count: int = 1
    status: int = 500
    retry_after: float | None = None
    delay_s: float = 0.0
    model: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"kind: expected one of {', '.join(FAULT_KINDS)}, got {self.kind!r}")
        if self.count < 1:
            raise ValueError(f"count: expected at least 1, got {self.count}")


@dataclass(frozen=True)
class JudgeBehaviour:
    """How one simulated judge scores: ``offset`` added to every score (a biased judge), plus
    ``drift_offset`` once it has served ``drift_after`` requests (a judge that drifts), with a
    ``noise`` chance of moving each score by one point; ``mode`` is ``json``, ``prose`` (never
    JSON), ``prose_once`` (prose, then JSON when asked again) or ``fail`` (HTTP 500)."""

    offset: float = 0.0
    noise: float = 0.0
    drift_after: int | None = None
    drift_offset: float = 0.0
    mode: str = "json"

    def __post_init__(self) -> None:
        if self.mode not in JUDGE_MODES:
            raise ValueError(f"mode: expected one of {', '.join(JUDGE_MODES)}, got {self.mode!r}")


@dataclass(frozen=True)
class AnswerKey:
    correct: str
    wrong: str
    scorer: str = ""  # styles apply to answers a scorer reads (letters, labels, numbers, codes)
    choices: tuple[str, ...] = ()  # the options' texts (the letterless style names them)
    unit: str | None = None  # a numeric canary's unit (the units style writes another)


CANNOT = "I cannot determine this from the information given."


def _wrong(c: Canary, correct: str) -> str:
    """A wrong answer the canary's scorer can read (so a wrong answer is wrong, not unparsed)."""
    if c.scorer == "numeric_tolerance":
        try:
            value = float(correct)
        except ValueError:
            return CANNOT
        return f"{value + max(1.0, abs(value) * 0.5):g}"
    if c.scorer == "yes_no_maybe":
        return next(label for label in ("no", "yes", "maybe") if label != correct.strip().lower())
    if c.scorer == "set_f1":
        return "Z00.00"
    return CANNOT


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
            wrong = _wrong(c, correct)
        key[c.prompt] = AnswerKey(correct, wrong, c.scorer or "", tuple(c.choices or ()), c.unit)
    return key


def styled(text: str, style: str, key: AnswerKey) -> str:
    """``text`` (an answer) written in ``style``; free-text answers are always written plainly.

    Examples
    --------
    >>> styled("B", "markdown", AnswerKey("B", "C", "multiple_choice"))
    '**Answer: B**'
    """
    if style == "plain" or key.scorer not in READING_SCORERS:
        return text
    if style == "markdown":
        return f"**Answer: {text}**"
    if style == "reasoning":
        return (
            "Let me work through this step by step. I will check each piece of information in the "
            f"question against what I know, and rule out what does not fit.\n\nTherefore, the answer is {text}."
        )
    if style == "json":
        return json.dumps({"answer": text, "explanation": "simulated reasoning"})
    if style == "ordinal" and key.scorer == "multiple_choice" and len(text.strip()) == 1:
        index = ord(text.strip().upper()) - 65
        if 0 <= index < len(_ORDINALS):
            return f"I would go with the option listed {_ORDINALS[index]}."
    if style in ("language", "letterless", "units"):
        return _restyled(text, style, key)
    # hedge: no single answer a clinician could act on
    other = key.wrong if text == key.correct else key.correct
    if key.scorer == "numeric_tolerance" and _is_number(text) and _is_number(other):
        low, high = sorted((float(text), float(other)))
        return f"Somewhere between {low:g} and {high:g}, depending on the assumptions."
    if key.scorer == "set_f1":
        return "The codes depend on documentation that is not in the note."
    return f"It could be {text} or {other}; I would need more information to choose."


# The same answer in the languages patients speak (the cue, and yes / no / maybe).
_CUES = (
    "Réponse : {}.",
    "La respuesta correcta es la {}.",
    "Antwort: {}",
    "答案：{}",
    "正解は {} です。",
    "정답은 {}입니다.",
)
_LABELS = {
    "yes": ("Oui.", "Sí.", "Ja.", "是。", "はい。", "Tak."),
    "no": ("Non.", "No.", "Nein.", "否。", "いいえ。", "Nie."),
    "maybe": ("Peut-être.", "Quizás.", "Vielleicht.", "也许。", "たぶん。", "Może."),
}
# Another unit for the result, and the factor from the canary's unit into it (pint converts back).
_OTHER_UNIT = {"mL/min": ("mL/s", 1 / 60), "mg": ("g", 1e-3), "kg": ("lb", 2.20462), "ms": ("s", 1e-3)}


def _restyled(text: str, style: str, key: AnswerKey) -> str:
    turn = zlib.crc32(f"{text}|{key.correct}".encode())
    if style == "language":
        if key.scorer == "yes_no_maybe" and text.strip().lower() in _LABELS:
            forms = _LABELS[text.strip().lower()]
            return forms[turn % len(forms)]
        return _CUES[turn % len(_CUES)].format(text)
    if style == "letterless" and key.choices and len(text.strip()) == 1 and text.strip().isalpha():
        index = ord(text.strip().upper()) - 65
        if 0 <= index < len(key.choices):
            return f"{key.choices[index]}."
    if style == "units" and key.unit in _OTHER_UNIT and _is_number(text):
        unit, factor = _OTHER_UNIT[key.unit]
        return f"The result is {float(text) * factor:.4g} {unit}."
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class SimulatorState:
    phases: Sequence[Phase]
    key: dict[str, AnswerKey]
    seed: int = 0
    requests: int = 0
    faults: list[Fault] = field(default_factory=list)
    judges: dict[str, JudgeBehaviour] = field(default_factory=dict)
    extra_latency_s: float = 0.0
    reader_wrong: bool = False  # as a reader model, read every reply as the wrong answer (a drifting reader)
    by_model: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_BODIES))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def phase(self) -> Phase:
        current = self.phases[0]
        for p in self.phases:
            if self.requests >= p.after_requests:
                current = p
        return current

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each applies to the next ``count`` requests it matches."""
        with self.lock:
            self.faults.extend(faults)

    def style_for(self, phase: Phase) -> str:
        """Draw this answer's style from the phase's mix (no draw when the phase has none)."""
        if not phase.styles:
            return "plain"
        with self.lock:
            styles = [k for k, w in phase.styles.items() if w > 0]
            return self.rng.choices(styles, weights=[phase.styles[k] for k in styles])[0]

    def next_request(
        self, model: str | None = None, body: dict[str, Any] | None = None
    ) -> tuple[Phase, Fault | None, float]:
        """Count a request (keeping its body among the recent ones) and take the first matching fault."""
        with self.lock:
            self.requests += 1
            self.by_model[model or ""] += 1
            if body is not None:
                self.recent.append(body)
            fault = None
            for i, queued in enumerate(self.faults):
                if queued.model is None or queued.model == model:
                    fault = queued
                    self.faults[i : i + 1] = [replace(queued, count=queued.count - 1)] if queued.count > 1 else []
                    break
            return self.phase(), fault, self.rng.random()

    def judge_draws(self, n: int) -> list[float]:
        with self.lock:
            return [self.rng.random() for _ in range(n)]


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def _tagged(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return match.group(1).strip() if match else None


def _criteria(prompt: str) -> list[str]:
    """The criteria a judge prompt asks for, read from its JSON structure line."""
    found = re.findall(r'"([^"]+)": \{"score"', prompt[prompt.rfind("structure") :])
    return found or list(DEFAULT_CRITERIA)


def _verdict(prompt: str, behaviour: JudgeBehaviour, served: int, draws: list[float]) -> str:
    """A simulated judge's JSON verdict: 5 when the response matches the gold reference, else 2."""
    response = normalize_text(_tagged(prompt, RESPONSE_TAG) or "")
    gold = _tagged(prompt, GOLD_TAG)
    if gold is None:
        base = 4.0
    else:
        g = normalize_text(gold)
        base = 5.0 if response and (response == g or g in response) else 2.0
    shift = behaviour.offset + (
        behaviour.drift_offset if behaviour.drift_after is not None and served > behaviour.drift_after else 0.0
    )
    verdict = {}
    for criterion, draw in zip(_criteria(prompt), draws, strict=True):
        noise = 0.0
        if draw < behaviour.noise:
            noise = -1.0 if draw < behaviour.noise / 2 else 1.0
        score = int(min(5, max(1, round(base + shift + noise))))
        verdict[criterion] = {"score": score, "explanation": f"simulated judge: {criterion} scored {score}"}
    return json.dumps(verdict)


PROSE_VERDICT = "Simulated judge here: overall the response reads well and seems broadly accurate to me."


def _reader_answer(state: SimulatorState, prompt: str) -> str:
    """The simulator as a reader model: the option letter (or value) the reply commits to, in the
    strict JSON schema; with ``state.reader_wrong`` it reads every reply as the wrong answer."""
    asked, _, reply = prompt.partition("Reply:\n")
    known = next((k for q, k in state.key.items() if q and q in asked), None)
    if known is None:
        return json.dumps({"answer": None, "committed": False})
    if state.reader_wrong:
        value = known.wrong
    else:
        letter = next((chr(65 + i) for i, o in enumerate(_ORDINALS) if f"listed {o}" in reply), None)
        value = letter or (known.correct if known.correct in reply else known.wrong)
    if known.scorer == "numeric_tolerance" and _is_number(value):
        return json.dumps({"answer": float(value), "committed": True})
    return json.dumps({"answer": value, "committed": True})


def create_simulator(
    canaries: Iterable[Canary],
    phases: Sequence[Phase] | None = None,
    *,
    seed: int = 0,
    judges: Mapping[str, JudgeBehaviour] | None = None,
) -> Starlette:
    """The simulator as an ASGI app; ``app.state.sim`` exposes its state to tests and the demo."""
    state = SimulatorState(
        phases=list(phases or [Phase()]), key=answer_key(canaries), seed=seed, judges=dict(judges or {})
    )

    def reply(payload: dict[str, Any], status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
        return JSONResponse(payload, status_code=status, headers={**SIMULATOR_HEADERS, **(headers or {})})

    async def hang(request: Request, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not await request.is_disconnected():
            await asyncio.sleep(0.02)

    async def chat(request: Request) -> Response:
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            return await answer(request)
        finally:
            with state.lock:
                state.in_flight -= 1

    async def answer(request: Request) -> Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return reply({"error": {"message": "body is not JSON", "type": "simulated"}}, 400)
        if not isinstance(body, dict):
            return reply({"error": {"message": "body is not a JSON object", "type": "simulated"}}, 400)
        requested = str(body.get("model") or "")
        messages = body.get("messages") or []
        phase, fault, draw = state.next_request(requested, body)
        if fault is not None:
            if fault.kind == "hang":
                await hang(request, fault.delay_s or HANG_DEFAULT_S)
                return reply({"error": {"message": "simulated hang ended", "type": "simulated"}}, 504)
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault.kind == "status":
                headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                return reply(
                    {"error": {"message": f"simulated failure (HTTP {fault.status})", "type": "simulated"}},
                    fault.status,
                    headers,
                )
            if fault.kind == "non_json":
                return Response(
                    "<html>simulated gateway error</html>", media_type="application/json", headers=SIMULATOR_HEADERS
                )
            if fault.kind == "truncated":
                return Response(
                    '{"id": "chatcmpl-sim", "simulated": true, "choices": [{"ind',
                    media_type="application/json",
                    headers=SIMULATOR_HEADERS,
                )
        latency = phase.latency_s + state.extra_latency_s
        if latency:
            await asyncio.sleep(latency)
        system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        prompt = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
        model, fingerprint = phase.model, phase.fingerprint
        finish = "stop"
        schema = body.get("response_format") or {}
        if isinstance(schema, dict) and (schema.get("json_schema") or {}).get("name") == READER_SCHEMA:
            text = _reader_answer(state, prompt)
            model = requested if requested.startswith("medmon-simulator") else f"medmon-simulator/{requested}"
            fingerprint = "fp_sim_reader"
        elif JUDGE_MARKER in system:
            behaviour = state.judges.get(requested, JudgeBehaviour())
            if behaviour.mode == "fail":
                return reply({"error": {"message": "simulated judge failure", "type": "simulated"}}, 500)
            asked_again = any(m.get("role") == "assistant" for m in messages)
            first_prompt = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
            if (
                (fault is not None and fault.kind == "prose")
                or behaviour.mode == "prose"
                or (behaviour.mode == "prose_once" and not asked_again)
            ):
                text = PROSE_VERDICT
            else:
                text = _verdict(
                    first_prompt, behaviour, state.by_model[requested], state.judge_draws(len(_criteria(first_prompt)))
                )
            model = requested if requested.startswith("medmon-simulator") else f"medmon-simulator/{requested}"
            fingerprint = "fp_sim_judge"
        else:
            known = state.key.get(prompt)
            if known is None:
                text = "This is a simulated model; it has no answer for this prompt."
            else:
                style = state.style_for(phase)
                text = styled(known.correct if draw < phase.accuracy else known.wrong, style, known)
                if style == "cut" and known.scorer in READING_SCORERS:
                    text, finish = f"{CUT_OFF} {known.correct}, which", "length"  # the right value, mid-working
        if fault is not None and fault.kind == "empty":
            text = ""
        prompt_tokens = sum(_tokens(str(m.get("content", ""))) for m in messages)
        reasoning = phase.extra_completion_tokens
        completion_tokens = _tokens(text) + reasoning if text else reasoning
        return reply(
            {
                "id": f"chatcmpl-sim-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "system_fingerprint": fingerprint,
                "simulated": True,
                "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "completion_tokens_details": {"reasoning_tokens": reasoning},
                },
            }
        )

    async def models(_: Request) -> Response:
        return reply(
            {"object": "list", "data": [{"id": SIMULATOR_MODEL, "object": "model", "owned_by": "medmon-simulator"}]}
        )

    def snapshot() -> dict[str, Any]:
        phase = state.phase()
        with state.lock:
            return {
                "simulated": True,
                "requests": state.requests,
                "requests_by_model": dict(state.by_model),
                "max_in_flight": state.max_in_flight,
                "phase": phase.label,
                "model": phase.model,
                "accuracy": phase.accuracy,
                "styles": dict(phase.styles) if phase.styles else {"plain": 1.0},
                "latency_s": phase.latency_s + state.extra_latency_s,
                "faults": [asdict(f) for f in state.faults],
                "judges": {k: asdict(v) for k, v in state.judges.items()},
            }

    async def status(_: Request) -> Response:
        return reply(snapshot())

    async def admin_body(request: Request) -> Any:
        try:
            return await request.json()
        except json.JSONDecodeError:
            return None

    def build(cls: type, data: Any, where: str) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object")
        allowed = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None

    async def faults(request: Request) -> Response:
        if request.method == "DELETE":
            with state.lock:
                state.faults.clear()
            return reply(snapshot())
        if request.method == "POST":
            data = await admin_body(request)
            items = data.get("faults") if isinstance(data, dict) and "faults" in data else data
            items = items if isinstance(items, list) else [items]
            try:
                state.inject(*(build(Fault, item, f"faults[{i}]") for i, item in enumerate(items)))
            except ValueError as exc:
                return reply({"error": {"message": str(exc), "type": "invalid_fault"}}, 422)
        return reply(snapshot())

    async def set_judges(request: Request) -> Response:
        data = await admin_body(request)
        if not isinstance(data, dict):
            return reply({"error": {"message": 'expected {"<judge model>": {behaviour}}', "type": "invalid"}}, 422)
        try:
            parsed = {str(k): build(JudgeBehaviour, v, f"judges.{k}") for k, v in data.items()}
        except ValueError as exc:
            return reply({"error": {"message": str(exc), "type": "invalid_judge"}}, 422)
        with state.lock:
            state.judges.update(parsed)
        return reply(snapshot())

    async def set_latency(request: Request) -> Response:
        data = await admin_body(request)
        value = data.get("latency_s") if isinstance(data, dict) else None
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            return reply({"error": {"message": "latency_s: expected a number >= 0", "type": "invalid"}}, 422)
        state.extra_latency_s = float(value)
        return reply(snapshot())

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/_simulator", status, methods=["GET"]),
            Route("/_simulator/faults", faults, methods=["GET", "POST", "DELETE"]),
            Route("/_simulator/judges", set_judges, methods=["POST"]),
            Route("/_simulator/latency", set_latency, methods=["POST"]),
        ]
    )
    app.state.sim = state
    return app
