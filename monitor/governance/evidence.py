"""Evidence seals: each finished probe run's results, scores and provenance, digested for the audit chain.

The audit chain proves the actions; the evidence they judge is the stored results. When a run
finishes, ``medmon.monitor.governance.audit.seal_run`` enters a ``run_sealed`` entry whose
details hold the run's provenance, one short digest per result (its score, answer, tokens, cost,
served model, jury verdicts) and a digest of the whole. ``audit verify`` recomputes them
(:func:`seal_problems`): an edited score, a deleted result or one inserted into a sealed run is
named by run and result; a sealed run deleted, or a run finished after sealing began that has
no seal, is named too. Runs finished before the first seal are not covered, and the verify
output says how many runs it checked.

A run sealed again (a later ``run_sealed`` entry for the same run, naming the seal it
supersedes) is checked against its newest seal; the re-seal is itself a chain entry with its
actor and time, listed by ``medmon audit list --kind run_sealed`` and counted by verify.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.db import as_utc
from medmon.probes.models import JuryVerdict, ProbeResult, ProbeRun, RunStatus

SEAL_VERSION = 1
# Result columns a seal covers: everything a score, a report or a review reads.
RESULT_FIELDS = (
    "task_id",
    "canary_id",
    "pack",
    "benchmark",
    "scorer",
    "score",
    "correct",
    "parsed",
    "extracted",
    "parse_reason",
    "answer",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cost_usd",
    "latency_s",
    "finish_reason",
    "requested_model",
    "served_model",
    "system_fingerprint",
    "error_type",
    "error",
    "refused",
    "jury_mean",
    "jury_judges",
    "jury_agreement",
    "baseline_score",
    "tags",
)
RUN_FIELDS = ("task_id", "purpose", "deployment", "pack_sha256", "prompt_sha256", "scorer_version")


def _sha(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _instant(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).astimezone(UTC).isoformat(timespec="microseconds")


def _float(value: Any) -> Any:
    # Floats as text with 12 significant digits: PostgreSQL and SQLite return the same figure.
    return f"{value:.12g}" if isinstance(value, float) else value


def result_digests(session: Session, run_id: int) -> dict[str, str]:
    """Each stored result of a run (by id, as text) and its digest (16 hex characters)."""
    verdicts: dict[int, list[Any]] = {}
    for v in session.exec(
        select(JuryVerdict)
        .join(ProbeResult, col(ProbeResult.id) == col(JuryVerdict.result_id))
        .where(ProbeResult.run_id == run_id)
        .order_by(col(JuryVerdict.id))
    ):
        verdicts.setdefault(v.result_id, []).append([v.judge, v.criterion, v.score, v.parse_status.value])
    out = {}
    for r in session.exec(select(ProbeResult).where(ProbeResult.run_id == run_id).order_by(col(ProbeResult.id))):
        assert r.id is not None
        body = {name: _float(getattr(r, name)) for name in RESULT_FIELDS}
        body["verdicts"] = verdicts.get(r.id, [])
        out[str(r.id)] = _sha(body)[:16]
    return out


def run_facts(run: ProbeRun) -> dict[str, Any]:
    """The run's own columns a seal covers: provenance, counts, the mean and when it finished."""
    facts: dict[str, Any] = {name: getattr(run, name) for name in RUN_FIELDS}
    facts |= {
        "status": run.status.value,
        "finished_at": _instant(run.finished_at),
        "n_canaries": run.n_canaries,
        "n_errors": run.n_errors,
        "mean_score": _float(run.mean_score),
    }
    return facts


def seal_details(session: Session, run: ProbeRun) -> dict[str, Any]:
    """What a ``run_sealed`` audit entry holds for ``run``: its facts, each result's digest, the whole's."""
    assert run.id is not None
    results = result_digests(session, run.id)
    facts = run_facts(run)
    return {
        "version": SEAL_VERSION,
        "run_id": run.id,
        "task": run.task_id,
        "run": facts,
        "results": results,
        "n_results": len(results),
        "digest": _sha({"run": facts, "results": results}),
    }


@dataclass(frozen=True)
class SealCheck:
    """What :func:`seal_problems` found: the runs it checked and each place the evidence differs."""

    runs_checked: int
    results_checked: int
    problems: list[tuple[int | None, int | None, str]]  # (audit seq, audit entry id, what)
    resealed: int = 0  # runs sealed more than once (checked against the newest seal)
    purged: list[int] = field(default_factory=list)  # sealed runs absent because a retention purge deleted them


def _listed(ids: Iterable[str]) -> str:
    shown = sorted(ids, key=int)
    return ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")


def seal_problems(
    session: Session, seals: Iterable[tuple[int, int | None, Mapping[str, Any]]], purged: set[int] | None = None
) -> SealCheck:
    """Recompute every sealed run from storage and say where the stored evidence differs from its seal.

    ``seals`` are ``(seq, entry id, details)`` of the ``run_sealed`` entries, in chain order.
    ``purged`` are runs a ``retention_purge`` entry says were deleted past retention: their absence
    is recorded, not tampering. A purged run still present is checked like any other.
    """
    problems: list[tuple[int | None, int | None, str]] = []
    sealed: set[int] = set()
    first_sealed: int | None = None
    runs = results = 0
    newest: dict[object, tuple[int, int | None, Mapping[str, Any]]] = {}
    resealed: set[object] = set()
    purged_runs: list[int] = []
    for seal in seals:
        key = seal[2].get("run_id")
        if key in newest:
            resealed.add(key)
        newest[key if isinstance(key, int) else ("bad", seal[0])] = seal
    for seq, entry_id, details in newest.values():
        run_id = details.get("run_id")
        if not isinstance(run_id, int):
            problems.append((seq, entry_id, "a run seal without a run id"))
            continue
        sealed.add(run_id)
        first_sealed = run_id if first_sealed is None else min(first_sealed, run_id)
        runs += 1
        task = details.get("task")
        run = session.get(ProbeRun, run_id)
        if run is None:
            if run_id in (purged or set()):
                runs -= 1
                purged_runs.append(run_id)
                continue
            problems.append((seq, entry_id, f"run {run_id} of task {task} was deleted after it was sealed"))
            continue
        now, then = result_digests(session, run_id), dict(details.get("results") or {})
        results += len(now)
        what = []
        if gone := set(then) - set(now):
            what.append(f"result(s) {_listed(gone)} deleted")
        if added := set(now) - set(then):
            what.append(f"result(s) {_listed(added)} inserted")
        if edited := {i for i in set(now) & set(then) if now[i] != then[i]}:
            what.append(f"result(s) {_listed(edited)} edited")
        facts = run_facts(run)
        if changed := sorted(k for k, v in (details.get("run") or {}).items() if facts.get(k) != v):
            what.append(f"run column(s) {', '.join(changed)} edited")
        if what:
            problems.append(
                (
                    seq,
                    entry_id,
                    f"run {run_id} of task {run.task_id}: the evidence differs from its seal: {'; '.join(what)}",
                )
            )
    if first_sealed is not None:
        unsealed = [
            i
            for i in session.exec(
                select(ProbeRun.id).where(
                    col(ProbeRun.id) > first_sealed,
                    col(ProbeRun.status).in_([RunStatus.complete, RunStatus.failed]),
                    col(ProbeRun.n_canaries) > 0,
                )
            )
            if i is not None and i not in sealed
        ]
        unsealed += [
            i
            for i in session.exec(select(ProbeResult.run_id).where(col(ProbeResult.run_id) > first_sealed).distinct())
            if i not in sealed and i not in unsealed
        ]
        unsealed = [i for i in unsealed if _finished(session, i)]
        if unsealed:
            problems.append(
                (
                    None,
                    None,
                    f"run(s) {_listed(str(i) for i in unsealed)} finished after sealing began but have no seal: "
                    "inserted, or their seal was deleted",
                )
            )
    return SealCheck(runs, results, problems, len(resealed), sorted(purged_runs))


def _finished(session: Session, run_id: int) -> bool:
    run = session.get(ProbeRun, run_id)
    return run is None or run.status != RunStatus.running
