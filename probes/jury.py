"""The LLM jury: several judge models score an answer on criteria, as MedHELM's jury does.

Each judge sees the request, the response and, when the task has one, the gold reference, and
answers a JSON object ``{"accuracy": {"score": 1-5, "explanation": "..."}, ...}``. The instance
score is the mean over the valid judges x criteria (MedHELM's ``LLMJuryMetric``), kept on the
judges' scale as ``mean`` and normalised to [0, 1] as ``(mean - min) / (max - min)`` for the
result's ``score``, so it sits on the same scale as every other scorer.

An unusable verdict is data, not an exception: malformed output is asked for again once
(``retried_ok`` when the second answer parses) and otherwise recorded as ``unparsed``; a judge
whose call fails is ``failed`` and does not hold up the others. With no valid judge the result
has *no* score and is an error of type ``jury_unavailable`` ("no valid judge"), counted with
the run's errors and in the error stream, so a dead jury raises an availability alert.
MedHELM instead scores such an instance ``default_score = 1.0`` (the bottom of the scale); medmon
does not, because a judge outage would then read as a collapse in answer quality and fire a
quality alert for what is an availability problem (which the error stream already reports).

Judge calls have their own token and cost ledger (:class:`JudgeVerdict`), never added to the
production model's cost.

References
----------
MedHELM, Stanford CRFM: ``helm.benchmark.metrics.llm_jury_metrics.LLMJuryMetric``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from types import TracebackType
from typing import Protocol, TypeVar

from medmon.baselines.canary import Canary
from medmon.probes.client import Completion, EndpointSection, ModelClient, ModelSettings
from medmon.probes.errors import EmptyCompletion, ModelCallError
from medmon.probes.models import ParseStatus
from medmon.probes.telemetry import Telemetry, global_telemetry

JURY_SCORER = "jury"
JURY_UNAVAILABLE = "jury_unavailable"  # the error type of a result no judge could score
JUDGE_MARKER = "[medmon-jury rubric v1]"
REQUEST_TAG, RESPONSE_TAG, GOLD_TAG = "user_request", "response", "gold_response"
DEFAULT_CRITERIA = ("accuracy", "completeness", "clarity")
EXPLANATION_CHARS = 500

CRITERION_TEXT = {
    "accuracy": "Is the response medically correct, and consistent with the gold response where one is given?",
    "completeness": "Does the response cover everything the request needs, with no clinically important omission?",
    "clarity": "Is the response clear, well organised and easy for its intended reader to act on?",
}

JUDGE_SYSTEM = (
    f"You are a medical expert judging a response written by a language model deployed in a clinical "
    f"setting. Judge strictly and only by the criteria given. {JUDGE_MARKER}"
)

T = TypeVar("T", int, float)

RETRY_NUDGE = "That was not the JSON object requested. Reply with only the JSON object, in the structure given."


class JurySection(Protocol):
    """What :meth:`JurySettings.from_plan` reads of a plan ``Jury`` (the plan lives above this package)."""

    @property
    def judges(self) -> Sequence[EndpointSection]: ...

    @property
    def criteria(self) -> Sequence[str]: ...

    @property
    def scale_min(self) -> int: ...

    @property
    def scale_max(self) -> int: ...


@dataclass(frozen=True)
class JurySettings:
    """Judges (one ``ModelSettings`` each, named), criteria and scale; mirrors the plan's ``jury``."""

    judges: tuple[ModelSettings, ...]
    criteria: tuple[str, ...] = DEFAULT_CRITERIA
    scale_min: int = 1
    scale_max: int = 5

    def __post_init__(self) -> None:
        if not self.judges:
            raise ValueError("judges: expected at least one judge")
        if not self.criteria:
            raise ValueError("criteria: expected at least one criterion")
        if self.scale_max <= self.scale_min:
            raise ValueError(f"scale_max ({self.scale_max}) must exceed scale_min ({self.scale_min})")
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judges: names must be unique, got {names}")

    @classmethod
    def from_plan(cls, jury: JurySection, *, environ: Mapping[str, str] | None = None) -> JurySettings:
        """From a plan ``Jury`` section; each judge's key comes from the variable it names."""
        env = os.environ if environ is None else environ
        judges = tuple(ModelSettings.from_endpoint(e, environ=env) for e in jury.judges)
        return cls(judges=judges, criteria=tuple(jury.criteria), scale_min=jury.scale_min, scale_max=jury.scale_max)


@dataclass(frozen=True)
class CriterionScore:
    criterion: str
    score: int | None
    explanation: str | None = None


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge's verdict on one answer, with the judge call's own ledger."""

    judge: str
    model: str
    parse_status: ParseStatus
    scores: tuple[CriterionScore, ...] = ()
    asks: int = 1
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.parse_status in (ParseStatus.ok, ParseStatus.retried_ok)

    @property
    def mean(self) -> float | None:
        values = [s.score for s in self.scores if s.score is not None]
        return sum(values) / len(values) if self.valid and values else None


@dataclass(frozen=True)
class JuryOutcome:
    """The jury's decision on one answer: the instance score and how much the judges agreed."""

    verdicts: tuple[JudgeVerdict, ...]
    mean: float | None
    score: float | None
    judges_answered: int
    agreement: float | None
    unanimous: bool | None
    error: str | None = None


def judge_messages(
    canary: Canary, answer: str, criteria: Sequence[str], scale_min: int = 1, scale_max: int = 5
) -> list[dict[str, str]]:
    """The judge prompt: request, response, gold reference when there is one, criteria, JSON format."""
    turns = [m for m in canary.messages if m["role"] != "system"]
    request = canary.prompt if len(turns) <= 1 else "\n\n".join(f"{m['role']}: {m['content']}" for m in turns)
    parts = [
        "Evaluate the response to the request below.",
        f"<{REQUEST_TAG}>\n{request.strip()}\n</{REQUEST_TAG}>",
        f"<{RESPONSE_TAG}>\n{answer.strip()}\n</{RESPONSE_TAG}>",
    ]
    if canary.references:
        parts.append(f"<{GOLD_TAG}>\n{canary.references[0].strip()}\n</{GOLD_TAG}>")
        parts.append(
            "The gold response is a reference written for this request: use it to judge accuracy and "
            "completeness, but a response may be correct without matching its wording."
        )
    rubric = "\n".join(f"- {c}: {CRITERION_TEXT.get(c, f'How well does the response meet {c}?')}" for c in criteria)
    parts.append(
        f"Score each criterion with a whole number from {scale_min} (poor) to {scale_max} (excellent):\n{rubric}"
    )
    shape = ", ".join(
        f'"{c}": {{"score": <{scale_min}-{scale_max}>, "explanation": "<one sentence>"}}' for c in criteria
    )
    parts.append(f"Output only one JSON object with this structure, and nothing else:\n{{{shape}}}")
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def _first_object(text: str) -> object | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        found: object = json.JSONDecoder().raw_decode(text, start)[0]
        return found
    except json.JSONDecodeError:
        end = text.rfind("}")
        try:
            fallback: object = json.loads(text[start : end + 1]) if end > start else None
            return fallback
        except json.JSONDecodeError:
            return None


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]  # any value may come from a judge; float() decides
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def parse_verdict(
    text: str, criteria: Sequence[str], scale_min: int = 1, scale_max: int = 5
) -> tuple[CriterionScore, ...] | None:
    """The scores in a judge's answer, or ``None`` when it is not a usable verdict.

    The first ``{...}`` in the text is read as JSON (prose around it is tolerated). Every
    criterion must be present (case-insensitive) with a whole-number score on the scale, given
    as ``{"score": 4, "explanation": "..."}`` or a bare ``4``.

    Examples
    --------
    >>> parse_verdict('Verdict: {"accuracy": {"score": 4, "explanation": "right dose"}} done', ["accuracy"])
    (CriterionScore(criterion='accuracy', score=4, explanation='right dose'),)
    >>> parse_verdict("The answer looks fine to me.", ["accuracy"]) is None
    True
    >>> parse_verdict('{"accuracy": {"score": 7}}', ["accuracy"]) is None
    True
    """
    found = _first_object(text)
    if not isinstance(found, dict):
        return None
    by_key = {str(k).strip().lower(): v for k, v in found.items()}
    scores = []
    for criterion in criteria:
        entry = by_key.get(criterion.lower())
        explanation = None
        if isinstance(entry, dict):
            explanation = entry.get("explanation")
            entry = entry.get("score")
        score = _whole(entry)
        if score is None or not scale_min <= score <= scale_max:
            return None
        text_expl = str(explanation)[:EXPLANATION_CHARS] if explanation is not None else None
        scores.append(CriterionScore(criterion, score, text_expl))
    return tuple(scores)


def aggregate(verdicts: Sequence[JudgeVerdict], scale_min: int = 1, scale_max: int = 5) -> JuryOutcome:
    """Instance score and per-item agreement from the judges' verdicts.

    ``mean`` is over every valid judge x criterion; ``agreement`` is ``1 - mean |m_a - m_b| /
    (max - min)`` over pairs of valid judges' means (1 = identical); ``unanimous`` is true when
    the valid judges gave identical scores on every criterion. Both need two valid judges.

    Examples
    --------
    >>> v = [JudgeVerdict("a", "m", ParseStatus.ok, (CriterionScore("accuracy", 5),)),
    ...      JudgeVerdict("b", "m", ParseStatus.ok, (CriterionScore("accuracy", 3),)),
    ...      JudgeVerdict("c", "m", ParseStatus.failed)]
    >>> o = aggregate(v)
    >>> o.mean, o.score, o.judges_answered, o.agreement, o.unanimous
    (4.0, 0.75, 2, 0.5, False)
    """
    valid = [v for v in verdicts if v.valid]
    values = [s.score for v in valid for s in v.scores if s.score is not None]
    span = scale_max - scale_min
    if not values:
        return JuryOutcome(tuple(verdicts), None, None, 0, None, None, "no valid judge")
    mean = sum(values) / len(values)
    means = [m for m in (v.mean for v in valid) if m is not None]
    agreement = unanimous = None
    if len(means) >= 2:
        pairs = list(combinations(means, 2))
        agreement = 1 - sum(abs(a - b) for a, b in pairs) / len(pairs) / span
        unanimous = all(len({s.score for s in col}) == 1 for col in zip(*(v.scores for v in valid), strict=True))
    return JuryOutcome(tuple(verdicts), mean, (mean - scale_min) / span, len(valid), agreement, unanimous)


class Jury:
    """The judges' clients, open for a run.

    Use as ``async with Jury(settings) as panel: outcome = await panel.judge(canary, answer)``.
    ``clients`` maps judge names to clients that are already open and stay open after the jury;
    without it each judge gets a client of its own (its own limiter and breaker).
    """

    def __init__(
        self,
        settings: JurySettings,
        *,
        telemetry: Telemetry | None = None,
        rng: random.Random | None = None,
        clients: Mapping[str, ModelClient] | None = None,
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry or global_telemetry()
        rng = rng or random.Random()
        # Clients handed in (``medmon.probes.pool``) outlive this jury and are not closed by it.
        self._owns_clients = clients is None
        self.clients = (
            dict(clients)
            if clients is not None
            else {
                j.name: ModelClient(j, telemetry=self.telemetry, rng=random.Random(rng.random()), role="judge")
                for j in settings.judges
            }
        )

    async def __aenter__(self) -> Jury:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_clients:
            await asyncio.gather(*(c.aclose() for c in self.clients.values()))

    async def judge(self, canary: Canary, answer: str) -> JuryOutcome:
        """Every judge scores ``answer`` concurrently; failures are verdicts, never exceptions."""
        s = self.settings
        messages = judge_messages(canary, answer, s.criteria, s.scale_min, s.scale_max)
        verdicts = await asyncio.gather(*(self._ask(name, client, messages) for name, client in self.clients.items()))
        self.telemetry.evaluation_events([(f"medmon.jury.{v.judge}", v.mean, v.parse_status.value) for v in verdicts])
        return aggregate(verdicts, s.scale_min, s.scale_max)

    async def _ask(self, name: str, client: ModelClient, messages: list[dict[str, str]]) -> JudgeVerdict:
        s = self.settings
        spent: list[Completion] = []  # every answer the judge gave, paid for whether it parsed or not
        attempts, text = 0, ""

        def verdict(
            status: ParseStatus,
            scores: tuple[CriterionScore, ...],
            ask: int,
            error_type: str | None = None,
            error: str | None = None,
        ) -> JudgeVerdict:
            last = spent[-1] if spent else None
            return JudgeVerdict(
                name,
                client.settings.model,
                status,
                scores,
                asks=ask,
                attempts=attempts,
                prompt_tokens=_total([c.prompt_tokens for c in spent]),
                completion_tokens=_total([c.completion_tokens for c in spent]),
                cost_usd=_total([c.cost_usd for c in spent]),
                latency_s=last.latency_s if last else None,
                served_model=last.served_model if last else None,
                system_fingerprint=last.system_fingerprint if last else None,
                error_type=error_type,
                error=error,
            )

        for ask in (1, 2):
            try:
                completion = await client.complete(messages)
            except EmptyCompletion as exc:  # an empty verdict is malformed output: asked again once
                attempts += exc.attempts
                if isinstance(exc.completion, Completion):
                    spent.append(exc.completion)
                text = ""
            except ModelCallError as exc:
                attempts += exc.attempts
                return verdict(ParseStatus.failed, (), ask, exc.kind, str(exc)[:500])
            else:
                attempts += completion.attempts
                spent.append(completion)
                text = completion.text
            scores = parse_verdict(text, s.criteria, s.scale_min, s.scale_max)
            if scores is not None:
                return verdict(ParseStatus.ok if ask == 1 else ParseStatus.retried_ok, scores, ask)
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": RETRY_NUDGE}]
        return verdict(
            ParseStatus.unparsed,
            tuple(CriterionScore(c, None) for c in s.criteria),
            2,
            error="judge output is not the requested JSON verdict",
        )


def _total(values: Sequence[T | None]) -> T | None:
    """Sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known[1:], known[0]) if known else None
