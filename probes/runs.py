"""A probe run's life in one place: open it, call, store what came back, and close it.

Every path that asks the model (or the judges) and keeps the answers, a scheduled probe, a
re-evaluation or a judge-canary run, goes through :func:`execute_probe`; every change of a run's
status goes through :func:`move_run`, which refuses any move :data:`MOVES` does not list::

    running -> complete      its results are stored
    running -> failed        the call, a scorer, the redactor or storage raised
    running -> interrupted   the process stopped mid-probe, or a retry took its slot over

A settled run never moves again: a probe that outlived its run (marked interrupted meanwhile)
has its results discarded instead of counted twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.db import session_scope
from medmon.errors import MedmonError
from medmon.probes.jury import JuryOutcome
from medmon.probes.models import JudgeCall, JuryVerdict, ProbeResult, ProbeResultBase, ProbeRun, Provenance, RunStatus
from medmon.probes.pool import ClientPool, shared_pool
from medmon.probes.redaction import TextPolicy, protect_results

log = logging.getLogger("medmon.runs")

T = TypeVar("T")

MOVES: Mapping[RunStatus, frozenset[RunStatus]] = {
    RunStatus.running: frozenset({RunStatus.complete, RunStatus.failed, RunStatus.interrupted})
}


class IllegalRunMove(MedmonError):
    """A run asked to change status in a way :data:`MOVES` does not allow (a settled run, above all)."""


def move_run(run: ProbeRun, to: RunStatus, at: datetime, error: str | None = None) -> None:
    """Move ``run`` to ``to`` (finished ``at``, with ``error`` if given): the one place a status changes.

    >>> from datetime import timezone
    >>> run = ProbeRun(id=7, task_id="t")
    >>> move_run(run, RunStatus.interrupted, datetime(2026, 1, 1, tzinfo=timezone.utc), "process stopped")
    >>> run.status.value, run.error, RunStatus.complete in MOVES.get(run.status, ())
    ('interrupted', 'process stopped', False)
    """
    if to not in MOVES.get(run.status, frozenset()):
        raise IllegalRunMove(f"run {run.id} of {run.task_id} is {run.status.value}; it cannot become {to.value}")
    run.status, run.finished_at = to, at
    if error is not None:
        run.error = error


def start_run(
    session: Session,
    task_id: str,
    *,
    started_at: datetime,
    purpose: str = "scheduled",
    deployment: str = "production",
    provenance: Provenance | None = None,
) -> ProbeRun:
    """Open a run row (status running) in the caller's transaction; ``provenance`` holds ``pack_sha256``,
    ``prompt_sha256`` and ``scorer_version``, so every result can say what produced it."""
    run = ProbeRun(
        task_id=task_id, purpose=purpose, deployment=deployment, started_at=started_at, **(provenance or Provenance())
    )
    session.add(run)
    session.flush()
    return run


def _store_jury(session: Session, row: ProbeResult, outcome: JuryOutcome, created_at: datetime) -> None:
    """Store each judge's call (its ledger) and its criterion scores; ``outcome`` has passed the text policy."""
    assert row.id is not None
    calls = []
    for v in outcome.verdicts:
        call = JudgeCall(
            result_id=row.id,
            task_id=row.task_id,
            judge=v.judge,
            model=v.model,
            parse_status=v.parse_status,
            asks=v.asks,
            attempts=v.attempts,
            prompt_tokens=v.prompt_tokens,
            completion_tokens=v.completion_tokens,
            cost_usd=v.cost_usd,
            latency_s=v.latency_s,
            served_model=v.served_model,
            system_fingerprint=v.system_fingerprint,
            error_type=v.error_type,
            error=v.error,
            created_at=created_at,
        )
        calls.append((call, v))
    session.add_all([c for c, _ in calls])
    session.flush()
    for call, v in calls:
        assert call.id is not None
        session.add_all(
            [
                JuryVerdict(
                    result_id=row.id,
                    call_id=call.id,
                    task_id=row.task_id,
                    judge=v.judge,
                    criterion=s.criterion,
                    score=s.score,
                    explanation=s.explanation,
                    parse_status=v.parse_status,
                    created_at=created_at,
                )
                for s in v.scores
            ]
        )


def finish_run(
    session: Session,
    run: ProbeRun,
    results: Sequence[ProbeResultBase],
    finished_at: datetime,
    *,
    policy: TextPolicy,
    error: str | None = None,
) -> list[ProbeResult]:
    """Store every result of a run (and its jury verdicts) and close it, in the caller's transaction.

    The run ends complete, or failed when ``error`` says why. This is the one way results reach
    storage: every text (answers, judges' explanations and errors) passes ``policy`` (the plan's
    redactor, ``store_text`` and secrets) on the way.
    """
    assert run.id is not None
    results = protect_results(results, policy)
    rows = [ProbeResult(run_id=run.id, **(r.model_dump() | {"created_at": finished_at})) for r in results]
    session.add_all(rows)
    scored = [r.score for r in results if r.score is not None]
    run.n_canaries = len(results)
    run.n_errors = sum(1 for r in results if r.error_type)
    run.mean_score = sum(scored) / len(scored) if scored else None
    move_run(run, RunStatus.failed if error else RunStatus.complete, finished_at, error)
    session.add(run)
    session.flush()
    for row, result in zip(rows, results, strict=True):
        outcome = getattr(result, "jury", None)
        if isinstance(outcome, JuryOutcome):
            _store_jury(session, row, outcome, finished_at)
    session.flush()
    return rows


def _why(exc: BaseException, texts: TextPolicy) -> str | None:
    """A failure as stored on its run: medmon's own errors as they read, others with their type; redacted."""
    message = str(exc) if isinstance(exc, MedmonError) else f"{type(exc).__name__}: {exc}"
    return texts.error(message, type(exc).__name__)


def _fail(engine: Engine, run_id: int, exc: Exception, texts: TextPolicy, now: Callable[[], datetime]) -> None:
    """Move a run still running to failed; if the database is what failed and the run cannot be marked,
    it stays running for the service's retry pass to take over."""
    try:
        with session_scope(engine) as session:
            run = session.get(ProbeRun, run_id)
            if run is not None and run.status == RunStatus.running:
                move_run(run, RunStatus.failed, now(), _why(exc, texts))
                session.add(run)
    except Exception as mark:
        log.warning("could not mark run %d failed: %s", run_id, mark)


@dataclass
class Executed(Generic[T]):
    """One probe run: its id, the results the call returned and what ``store`` made of them."""

    run_id: int
    results: list[ProbeResultBase]
    stored: T | None = None
    superseded: bool = False  # the run was settled (interrupted) while probing: nothing was stored


def execute_probe(
    engine: Engine,
    task_id: str,
    call: Callable[[ClientPool], Awaitable[Sequence[ProbeResultBase]]],
    *,
    now: Callable[[], datetime],
    texts: TextPolicy,
    purpose: str = "scheduled",
    deployment: str = "production",
    provenance: Provenance | None = None,
    opened: Callable[[Session, ProbeRun], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    store: Callable[[Session, ProbeRun, list[ProbeResultBase], datetime], T] | None = None,
    keep_failure: bool = False,
) -> Executed[T]:
    """Open a run, ``call`` the model on the process's client pool, store the results and close the run.

    1. The run row is committed (with what ``opened`` adds) before the model is called, so a crash
       leaves a visible running run to mark interrupted; ``on_start`` then receives its id.
    2. ``call(pool)`` returns the results. With ``keep_failure`` a call that raises closes the run
       failed with no results and ``store`` still runs (the failure is on ``run.error``).
    3. In one transaction, the run row locked: if it still runs, the results are stored (redacted
       by ``texts``), the run completes and ``store`` acts on them (giving ``stored``); if it was
       settled meanwhile, nothing is written.

    Any other error after the run is opened moves it to failed (its error redacted) and propagates.
    """
    with session_scope(engine) as session:
        run = start_run(
            session, task_id, started_at=now(), purpose=purpose, deployment=deployment, provenance=provenance
        )
        if opened is not None:
            opened(session, run)
        run_id = run.id
    assert run_id is not None
    if on_start is not None:
        on_start(run_id)
    pool, failure = shared_pool(), None
    try:
        try:
            results = list(pool.run(lambda: call(pool)))
        except Exception as exc:
            if not keep_failure:
                raise
            results, failure = [], _why(exc, texts)
        with session_scope(engine) as session:
            row = session.exec(select(ProbeRun).where(ProbeRun.id == run_id).with_for_update()).one()
            if row.status != RunStatus.running:
                # Its slot was taken over (a redelivered message, a retry after this process was
                # presumed dead) or the service gave up on it: the taker's run is the one that counts.
                log.warning(
                    "run %d of %s was marked %s while probing; its %d results are discarded",
                    run_id,
                    task_id,
                    row.status.value,
                    len(results),
                )
                return Executed(run_id, results, superseded=True)
            stamp = now()
            finish_run(session, row, results, stamp, policy=texts, error=failure)
            return Executed(run_id, results, store(session, row, results, stamp) if store is not None else None)
    except Exception as exc:  # the failed transaction has been rolled back by now
        _fail(engine, run_id, exc, texts, now)
        raise
