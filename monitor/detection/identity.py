"""Who answered: the identities serving a deployment, and when they really change.

A deployment is not always one model. A gateway may balance several backends under one name
(LiteLLM with two deployments of a model group), and a provider may serve one model under
several ``system_fingerprint`` values at once. Comparing each answer with the last one recorded
would then call every alternation a model change and start a re-evaluation on nearly every run.

Instead the task keeps the *set* of current identities (``ModelIdentity`` rows not retired) and
looks at their shares over the last ``identity_window_runs`` runs:

- an identity not in the set is a change when it takes a real share of traffic
  (``identity_min_share``, in this run or over the window), unless the plan lists its model in
  ``deployment.expected_models``: then it joins the pool silently;
- a current identity not seen for a whole window retires; that is a change only when nothing
  joined in its place (a replaced backend is one change, recorded when the new one appeared);
- the first run's identities are the pool as it was at go-live.

``deployment.fingerprints`` says what a fingerprint is: ``alert`` makes it part of the identity
(a new fingerprint is a change), ``record`` and ``ignore`` do not; ``record`` also notes each
fingerprint new to the window as an information finding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from medmon.monitor.models import ModelIdentity
from medmon.monitor.plan.model import Endpoint
from medmon.probes.models import ProbeResult, ProbeResultBase, ProbeRun, RunStatus

Identity = tuple[str, str | None]

# Runs that describe the deployment in production: a re-evaluation replays the same endpoint,
# so its answers count too; nothing else probes the production model.
COUNTED_PURPOSES = ("scheduled", "manual", "reevaluation", "burn-in")


@dataclass(frozen=True)
class IdentityChange:
    """A change of the pool: ``old`` and ``new`` identities, and whether it joined or left."""

    old: Identity
    new: Identity
    how: str  # "joined" | "left"


@dataclass(frozen=True)
class IdentityReport:
    change: IdentityChange | None
    shares: dict[Identity, float]
    new_fingerprints: tuple[str, ...] = ()


def identity_of(endpoint: Endpoint, served_model: str, fingerprint: str | None) -> Identity:
    """The identity an answer counts for, under the plan's fingerprint policy.

    Examples
    --------
    >>> from medmon.monitor.plan.model import Endpoint
    >>> identity_of(Endpoint(base_url="http://x", model="m"), "gpt-4o", "fp_1")
    ('gpt-4o', None)
    >>> identity_of(Endpoint(base_url="http://x", model="m", fingerprints="alert"), "gpt-4o", "fp_1")
    ('gpt-4o', 'fp_1')
    """
    return served_model, fingerprint if endpoint.fingerprints == "alert" else None


def _window(session: Session, task_id: str, runs: int) -> list[tuple[int, str, str | None]]:
    """(run id, served model, fingerprint) of every answer in the task's last ``runs`` runs."""
    run_ids = list(
        session.exec(
            select(ProbeRun.id)
            .where(
                ProbeRun.task_id == task_id,
                col(ProbeRun.purpose).in_(COUNTED_PURPOSES),
                ProbeRun.status == RunStatus.complete,
            )
            .order_by(col(ProbeRun.id).desc())
            .limit(runs)
        ).all()
    )
    if not run_ids:
        return []
    rows = session.exec(
        select(ProbeResult.run_id, ProbeResult.served_model, ProbeResult.system_fingerprint).where(
            col(ProbeResult.run_id).in_(run_ids), col(ProbeResult.served_model).is_not(None)
        )
    )
    return [(r, m, f) for r, m, f in rows.all() if m is not None]


def observe_identities(
    session: Session, endpoint: Endpoint, task_id: str, results: Sequence[ProbeResultBase], run_id: int, now: datetime
) -> IdentityReport:
    """Update the task's pool with a stored run's answers and say whether it changed.

    The run's results must already be flushed to ``session`` (they are part of the window).
    At most one change is reported per run: the one that joined, else the one that left.
    """
    here = Counter(identity_of(endpoint, r.served_model, r.system_fingerprint) for r in results if r.served_model)
    if not here:
        return IdentityReport(None, {})
    window = _window(session, task_id, endpoint.identity_window_runs)
    seen = Counter(identity_of(endpoint, m, f) for _, m, f in window)
    total = sum(seen.values()) or 1
    shares = {k: v / total for k, v in seen.items()}
    runs_in_window = len({r for r, _, _ in window})
    known = {
        (m.served_model, m.system_fingerprint): m
        for m in session.exec(
            select(ModelIdentity)
            .where(ModelIdentity.task_id == task_id, col(ModelIdentity.retired_at).is_(None))
            .order_by(col(ModelIdentity.id))
        ).all()
    }
    for key in here:
        if key in known:
            known[key].last_seen = now
            session.add(known[key])
    first_run = (
        not known
        and not session.exec(select(ModelIdentity.id).where(ModelIdentity.task_id == task_id).limit(1)).first()
    )
    run_total = sum(here.values())
    change: IdentityChange | None = None
    for key, count in here.most_common():
        if key in known:
            continue
        real = count / run_total >= endpoint.identity_min_share or shares.get(key, 0.0) >= endpoint.identity_min_share
        expected = key[0] in endpoint.expected_models
        if not (real or expected or first_run):
            continue  # a stray answer: watched over the window, not yet a change
        session.add(
            ModelIdentity(
                task_id=task_id,
                served_model=key[0],
                system_fingerprint=key[1],
                first_seen=now,
                last_seen=now,
                run_id=run_id,
            )
        )
        if not first_run and not expected and change is None:
            previous = max(known, key=lambda k: shares.get(k, 0.0)) if known else key
            change = IdentityChange(previous, key, "joined")
    if runs_in_window >= endpoint.identity_window_runs:
        for key, row in known.items():
            if key in seen:
                continue
            row.retired_at = now
            session.add(row)
            replaced = any(
                other.first_seen > (row.last_seen or row.first_seen) for k, other in known.items() if k != key
            )
            if change is None and not replaced and key[0] not in endpoint.expected_models:
                current = here.most_common(1)[0][0]
                change = IdentityChange(key, current, "left")
    fingerprints: tuple[str, ...] = ()
    if endpoint.fingerprints == "record":
        before = {f for r, _, f in window if r != run_id}
        fingerprints = (
            tuple(sorted({r.system_fingerprint for r in results if r.system_fingerprint} - before))
            if before or runs_in_window > 1
            else ()
        )
    return IdentityReport(change, shares, fingerprints)
