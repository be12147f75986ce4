"""The served-model identity stream: answers to the identity canaries against their go-live sample.

One stream per deployment (pseudo-task ``served_identity``), on the detector the plan's
``identity.method`` names: ``identity_logprob`` (temperature-0 log-probability fingerprints, the
default) or ``identity_mmd`` (sampled answers). Its segment is the weights it tests: the first
``identity.reference_runs`` runs after a segment opens are its go-live sample; a new served model
*name* opens a new segment (that change is the pipeline's to report, ``identity.py``), and so does
an alarm: the weights now answering become the reference the next change is tested against.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.monitor.detection.drift.layout import StreamSpec
from medmon.monitor.detection.streams import StreamUpdate, update_stream
from medmon.monitor.models import DetectorState, StreamStatus
from medmon.monitor.plan.identity import IdentityCheck
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeResultBase

IDENTITY = "served_identity"  # the pseudo-task its runs and stream belong to, and the stream's metric


def _answer(result: ProbeResultBase) -> tuple[str, str] | None:
    """An identity observation: ``(canary id, answer)``; a failed call carries none."""
    if result.error_type is not None or result.answer is None:
        return None
    return result.canary_id, result.answer


def _fingerprint(result: ProbeResultBase) -> tuple[str, list[Any]] | None:
    """A fingerprint observation: ``(canary id, top log-probabilities per position)``; none without them."""
    fingerprint = (result.tags or {}).get("logprobs")
    if result.error_type is not None or not isinstance(fingerprint, list) or not fingerprint:
        return None
    return result.canary_id, fingerprint


def identity_spec(plan: Plan, served_model: str = "") -> StreamSpec[ProbeResultBase]:
    """The deployment's identity stream for answers served under ``served_model``."""
    check = plan.identity or IdentityCheck()
    params: dict[str, Any] = {
        "reference_size": check.go_live_runs * check.calls,
        "max_answers": max(400, (check.go_live_runs + 1) * check.calls),
        "served_model": served_model,
    }
    if check.method == "logprobs":
        # the tie-breaking draws: fixed per deployment (a restart decides the same way), not the same everywhere
        params["seed"] = int.from_bytes(hashlib.blake2b(plan.deployment.name.encode(), digest_size=4).digest(), "big")
        return StreamSpec(
            f"{IDENTITY}:{plan.deployment.name}:logprobs",
            IDENTITY,
            IDENTITY,
            "change",
            0.0,
            0.0,
            _fingerprint,
            "identity_logprob",
            params,
        )
    params["length"] = check.length
    return StreamSpec(
        f"{IDENTITY}:{plan.deployment.name}:change",
        IDENTITY,
        IDENTITY,
        "change",
        0.5,
        0.5,
        _answer,
        "identity_mmd",
        params,
    )


def identity_threshold(plan: Plan) -> float:
    """``1 / identity.false_alarm``: Ville's inequality bounds the chance of any false alarm in a segment by it."""
    return 1.0 / (plan.identity or IdentityCheck()).false_alarm


def served_model_of(results: Sequence[ProbeResultBase]) -> str:
    """The model name most answers came back under ('' when every call failed)."""
    names = [r.served_model for r in results if r.served_model]
    return max(set(names), key=names.count) if names else ""


def update_identity(session: Session, plan: Plan, results: Sequence[ProbeResultBase], now: datetime) -> StreamUpdate:
    """Feed one identity run's answers to the stream; after an alarm, open a segment on the new weights."""
    spec = identity_spec(plan, served_model_of(results))
    update = update_stream(session, spec, identity_threshold(plan), results, now)
    if update.finding is not None:
        row = session.get(DetectorState, spec.key)
        assert row is not None
        row.segment, row.state, row.evidence, row.n = row.segment + 1, {}, 0.0, 0
        row.status, row.recovery, row.recovery_runs, row.recovery_obs = StreamStatus.ok, {}, 0, 0
        session.add(row)
    return update
