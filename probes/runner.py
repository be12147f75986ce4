"""Replay canaries against the model and score each answer (``medmon.probes.runs`` stores them).

A failed call is recorded as an error (``error_type`` set, no score): it feeds the availability
stream and never counts as a wrong answer. A task scored by the ``jury`` is judged by the
plan's judges (asynchronously, alongside the other canaries); every other scorer is a plain
function from :mod:`medmon.probes.scoring`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence

from medmon.baselines.canary import Canary
from medmon.probes.client import Completion, ModelClient
from medmon.probes.errors import JuryNotConfigured, ModelCallError
from medmon.probes.jury import JURY_SCORER, JURY_UNAVAILABLE, Jury, JuryOutcome
from medmon.probes.models import ProbeRecord, ProbeResultBase
from medmon.probes.reading.base import Reading
from medmon.probes.reading.reader_model import READER_MODEL, RULES, ReaderSetup, read_with_model
from medmon.probes.scoring import (
    READING_SCORERS,
    Score,
    Scorer,
    get_scorer,
    looks_like_refusal,
    score_reading,
    score_reply,
)
from medmon.probes.telemetry import RUN_ERRORS


def sample_canaries(canaries: Sequence[Canary], k: int, rng: random.Random) -> list[Canary]:
    """Draw ``k`` replayable canaries uniformly *with replacement*.

    With replacement keeps each probe an unbiased draw of the pack, which the drift tests
    assume; a fixed order would let difficulty masquerade as drift.
    """
    pool = [c for c in canaries if c.replayable]
    if not pool:
        return []
    return [rng.choice(pool) for _ in range(k)]


def _record_call(result: ProbeResultBase, completion: Completion) -> None:
    result.prompt_tokens = completion.prompt_tokens
    result.completion_tokens = completion.completion_tokens
    result.reasoning_tokens = completion.reasoning_tokens
    result.cost_usd = completion.cost_usd
    result.latency_s = completion.latency_s
    result.attempt_latency_s = completion.attempt_latency_s
    result.finish_reason = completion.finish_reason
    result.served_model = completion.served_model
    result.system_fingerprint = completion.system_fingerprint
    result.attempts = completion.attempts
    if completion.logprobs:  # asked for (the identity test's fingerprint): digests and numbers, no text
        result.tags = {**result.tags, "logprobs": [[list(t) for t in position] for position in completion.logprobs]}


def _record_jury(result: ProbeRecord, outcome: JuryOutcome) -> None:
    result.jury = outcome
    result.score = outcome.score
    result.jury_mean = outcome.mean
    result.jury_judges = outcome.judges_answered
    result.jury_agreement = outcome.agreement
    result.jury_unanimous = outcome.unanimous
    if outcome.error:
        # The answer cannot be scored: an availability failure (the judges'), counted as an
        # error of the run and of the error stream, never as a wrong answer and never silence.
        result.error_type = JURY_UNAVAILABLE
        causes = sorted({v.error or v.parse_status.value for v in outcome.verdicts})
        result.error = f"{outcome.error}: " + "; ".join(f"{c}"[:120] for c in causes)


def replay_decoding(canary: Canary, overrides: Mapping[str, object] | None = None) -> dict[str, object] | None:
    """The decoding settings a canary is replayed with: its own (a HELM run's), then the plan's overrides."""
    merged = {**(canary.decoding or {}), **(overrides or {})}
    return merged or None


async def probe_canary(
    client: ModelClient,
    canary: Canary,
    task_id: str,
    scorer_name: str,
    *,
    jury: Jury | None = None,
    scorer: Scorer | None = None,
    decoding: Mapping[str, object] | None = None,
    reader: ReaderSetup | None = None,
) -> ProbeRecord:
    """Ask the model one canary and score its answer; a failed call is an error, not a score.

    The canary is asked with its own decoding settings (a HELM run's temperature, max tokens
    and stop sequences), overridden by ``decoding`` (the plan's). A call that reached the model
    but failed (an empty completion) still records its tokens, cost, latency and served model:
    they were spent.
    """
    result = ProbeRecord(
        task_id=task_id,
        canary_id=canary.id,
        pack=canary.pack,
        benchmark=canary.benchmark,
        scorer=scorer_name,
        requested_model=client.settings.model,
        baseline_score=canary.baseline_score,
        tags=dict(canary.tags),
    )
    try:
        completion = await client.complete(list(canary.messages), decoding=replay_decoding(canary, decoding))
    except ModelCallError as exc:
        result.error_type = exc.kind
        result.error = str(exc)
        result.http_status = exc.status
        result.latency_s = exc.latency_s
        if isinstance(exc.completion, Completion):
            _record_call(result, exc.completion)
            result.answer = exc.completion.text
        result.attempts = exc.attempts
        return result
    _record_call(result, completion)
    result.answer = completion.text
    result.refused = looks_like_refusal(completion.text)
    if scorer_name == JURY_SCORER:
        if jury is None:
            raise JuryNotConfigured(f"task {task_id!r} is scored by the jury but no jury is configured")
        _record_jury(result, await jury.judge(canary, completion.text))
        return result
    if scorer is None:  # a reply cut off by the token limit is read only for an answer it committed to
        score = score_reply(canary, completion.text, finish_reason=completion.finish_reason, scorer=scorer_name)
    else:
        score = scorer(canary, completion.text)
    if scorer_name in READING_SCORERS:
        score = await _second_reading(result, canary, scorer_name, score, completion.text, reader)
    result.score = score.value
    result.correct = score.correct
    result.parsed = score.parsed
    result.extracted = score.extracted[:200] if score.extracted is not None else None
    result.parse_reason = score.reason[:200] or None
    return result


async def _second_reading(
    result: ProbeRecord, canary: Canary, scorer_name: str, rules: Score, reply: str, reader: ReaderSetup | None
) -> Score:
    """Record which path decided, asking the reader model when the rules could not read the reply
    (its reading then decides) or when this rule-read reply is drawn to check their agreement."""
    result.read_path = RULES if rules.parsed else "none"
    if reader is None or (rules.parsed and not reader.checks()):
        return rules
    reading: Reading = await read_with_model(
        reader.client, scorer_name, canary, reply, redact=reader.redact, store_text=reader.store_text
    )
    result.reader_reason = reading.reason[:200]
    if not reading.parsed:
        return rules
    theirs = score_reading(canary, scorer_name, reading)
    result.reader_extracted = theirs.extracted[:200] if theirs.extracted is not None else None
    if rules.parsed:
        result.reader_agrees = theirs.extracted == rules.extracted
        return rules
    if not theirs.parsed:
        return rules
    result.read_path = READER_MODEL
    return Score(
        theirs.value,
        theirs.correct,
        theirs.detail,
        parsed=True,
        extracted=theirs.extracted,
        reason=f"reader model (the rules could not: {rules.reason})",
    )


async def probe_canaries(
    client: ModelClient,
    canaries: Sequence[Canary],
    task_id: str,
    scorer_name: str,
    *,
    jury: Jury | None = None,
    decoding: Mapping[str, object] | None = None,
    reader: ReaderSetup | None = None,
) -> list[ProbeRecord]:
    """Probe every canary concurrently (bounded by the client's concurrency) under one run span.

    Raises ``JuryNotConfigured`` or ``UnknownScorer`` before any call when the scorer cannot run.
    """
    if scorer_name == JURY_SCORER:
        if jury is None:
            raise JuryNotConfigured(f"task {task_id!r} is scored by the jury, but the plan has no 'jury' section")
    else:
        get_scorer(scorer_name)  # an unknown scorer fails before any call
    scorer = None  # probe_canary scores through score_reply, which knows the reply's finish reason
    with client.telemetry.run_span(task_id, len(canaries)) as span:
        results = await asyncio.gather(
            *(
                probe_canary(
                    client, c, task_id, scorer_name, jury=jury, scorer=scorer, decoding=decoding, reader=reader
                )
                for c in canaries
            )
        )
        span.set_attribute(RUN_ERRORS, sum(1 for r in results if r.error_type))
    return list(results)
