"""Replay canaries against the model, score each answer, and record the results."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session

from baselines.canary import Canary
from probes.client import ModelClient
from probes.errors import ModelCallError
from probes.models import ProbeResultBase, ProbeRun, ProbeResult, RunStatus
from probes.scoring import get_scorer


def sample_canaries(canaries: Sequence[Canary], k: int, rng: random.Random) -> list[Canary]:
    """Draw ``k`` replayable canaries uniformly *with replacement*.

    With replacement keeps each probe an unbiased draw of the pack, which the drift tests
    assume; a fixed order would let difficulty masquerade as drift.
    """
    pool = [c for c in canaries if c.replayable]
    if not pool:
        return []
    return [rng.choice(pool) for _ in range(k)]


async def probe_canary(client: ModelClient, canary: Canary, task_id: str, scorer_name: str) -> ProbeResultBase:
    """Ask the model one canary and score its answer; a failed call is an error, not a score."""
    result = ProbeResultBase(
        task_id=task_id, canary_id=canary.id, pack=canary.pack, benchmark=canary.benchmark,
        scorer=scorer_name, requested_model=client.settings.model, baseline_score=canary.baseline_score,
        tags=dict(canary.tags),
    )
    try:
        completion = await client.complete(list(canary.messages))
    except ModelCallError as exc:
        result.error_type = exc.kind
        result.error = str(exc)
        return result
    score = get_scorer(scorer_name)(canary, completion.text)
    result.answer = completion.text
    result.score = score.value
    result.correct = score.correct
    result.prompt_tokens = completion.prompt_tokens
    result.completion_tokens = completion.completion_tokens
    result.cost_usd = completion.cost_usd
    result.latency_s = completion.latency_s
    result.finish_reason = completion.finish_reason
    result.served_model = completion.served_model
    result.system_fingerprint = completion.system_fingerprint
    return result


async def probe_canaries(client: ModelClient, canaries: Sequence[Canary], task_id: str,
                         scorer_name: str) -> list[ProbeResultBase]:
    """Probe every canary concurrently (bounded by the client's concurrency)."""
    return list(await asyncio.gather(*(probe_canary(client, c, task_id, scorer_name) for c in canaries)))


def start_run(session: Session, task_id: str, *, started_at: datetime, purpose: str = "scheduled",
              deployment: str = "production") -> ProbeRun:
    """Open a run row first, so a crash mid-probe leaves a visible 'running' run to mark interrupted."""
    run = ProbeRun(task_id=task_id, purpose=purpose, deployment=deployment, started_at=started_at)
    session.add(run)
    session.flush()
    return run


def finish_run(session: Session, run: ProbeRun, results: Sequence[ProbeResultBase],
               finished_at: datetime) -> list[ProbeResult]:
    """Store every result of a run and close it, in the caller's transaction."""
    assert run.id is not None
    rows = [ProbeResult(run_id=run.id, **(r.model_dump() | {"created_at": finished_at})) for r in results]
    session.add_all(rows)
    scored = [r.score for r in results if r.score is not None]
    run.n_canaries = len(results)
    run.n_errors = sum(1 for r in results if r.error_type)
    run.mean_score = sum(scored) / len(scored) if scored else None
    run.status = RunStatus.complete
    run.finished_at = finished_at
    session.add(run)
    session.flush()
    return rows
