"""The audit log: append-only, every entry hash-chained to the one before it.

Every governance fact medmon or a person creates is recorded here with its actor and time:
plan changes (as a unified diff), baseline imports, threshold changes, alert
acknowledgements, resolutions and silences, model changes, declared changes, re-evaluations
and re-baselining approvals. An entry's hash covers the previous entry's hash and the
canonical JSON of its own fields, so ``verify`` finds an edited, deleted, inserted or
reordered entry and says where.

Appends are serialized on one lock row (``AuditHead``): its ``UPDATE`` comes first in the
append, which takes PostgreSQL's row lock and SQLite's write lock until the caller commits,
so two writers cannot both extend the chain from the same entry. A unique ``seq`` is the
backstop. The head also remembers the newest entry, so deleting the tail is detected too;
keeping the printed head (``medmon audit verify`` shows it, reports carry it) somewhere else
anchors the log against someone who can rewrite both.

Callers outside ``monitor`` (the dashboard recording a human decision) use :func:`record`
in the same transaction as the change it describes.
"""

from __future__ import annotations

import difflib
import getpass
import hashlib
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import yaml
from sqlalchemy import CursorResult, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from medmon.alerts.models import AlertEvent
from medmon.db import as_utc
from medmon.monitor.governance.evidence import seal_details, seal_problems
from medmon.monitor.models import AuditEvent, AuditHead, ChangeRecord, Reevaluation
from medmon.monitor.storage import select_row
from medmon.probes.models import ProbeRun

GENESIS = "0" * 64


class AuditKind(str, Enum):
    """What an audit entry records."""

    plan_change = "plan_change"
    baseline_import = "baseline_import"
    threshold_change = "threshold_change"
    alert_acknowledged = "alert_acknowledged"
    alert_resolved = "alert_resolved"
    alert_silenced = "alert_silenced"
    alert_unsilenced = "alert_unsilenced"
    model_change = "model_change"
    change_declared = "change_declared"
    reevaluation = "reevaluation"
    baseline_approved = "baseline_approved"
    clinician_review = "clinician_review"
    safety_event = "safety_event"  # opened, re-graded, reported or decided
    corrective_action = "corrective_action"  # added, or closed by its effectiveness check
    near_miss = "near_miss"
    suspension = "suspension"  # requested, confirmed, sent, failed or resumed
    report_generated = "report_generated"
    report_signed = "report_signed"
    threshold_approved = "threshold_approved"
    answers_viewed = "answers_viewed"  # a signed-in person opened a task's answers on the dashboard
    committee_decision = "committee_decision"  # continue, continue with conditions, restrict or suspend a task
    run_sealed = "run_sealed"  # a finished probe run's results, scores and provenance, digested
    unproven_act = "unproven_act"  # a governance act whose actor proved no identity: recorded, never counted
    retention_purge = "retention_purge"  # records past retention deleted: run ids, counts, seal digests
    go_live_approved = "go_live_approved"  # the plan, risk tier, thresholds and baselines approved for go-live


def local_actor(tool: str) -> str:
    """Who is acting when a command runs unattended or from a shell: ``user@host via tool``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()} via {tool}"


def _instant(value: datetime) -> str:
    """A timestamp as the same text whichever database returned it (UTC, microseconds)."""
    return as_utc(value).astimezone(UTC).isoformat(timespec="microseconds")


def canonical(data: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept, so equal content hashes equally."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_hash(
    seq: int, at: datetime, kind: str, actor: str, subject: str, details: Mapping[str, Any], prev_hash: str
) -> str:
    """SHA-256 over the previous hash and the canonical JSON of the entry.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> at = datetime(2026, 11, 1, tzinfo=timezone.utc)
    >>> entry_hash(1, at, "plan_change", "a", "plan", {}, GENESIS)[:12]
    '08c4e2760f6c'
    """
    body = canonical(
        {"seq": seq, "at": _instant(at), "kind": kind, "actor": actor, "subject": subject, "details": dict(details)}
    )
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def _jsonable(value: object) -> object:
    if isinstance(value, datetime):
        return _instant(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"audit details must be JSON data; got {type(value).__name__}")


def _kind(kind: AuditKind | str) -> AuditKind:
    try:
        return AuditKind(kind)
    except ValueError:
        known = ", ".join(k.value for k in AuditKind)
        raise ValueError(f"unknown audit kind {kind!r}; expected one of {known}") from None


def _lock_head(session: Session) -> AuditHead:
    """Take the append lock (the head row's UPDATE) and return the head, creating it once."""
    stmt = update(AuditHead).where(col(AuditHead.id) == 1).values(seq=AuditHead.seq)
    if cast("CursorResult[Any]", session.execute(stmt)).rowcount == 0:  # an UPDATE's result is a cursor result
        dialect = session.get_bind().dialect.name
        maker = pg_insert if dialect == "postgresql" else sqlite_insert
        session.execute(maker(AuditHead).values(id=1, seq=0, hash=GENESIS).on_conflict_do_nothing())
        session.execute(stmt)
    head = session.exec(select(AuditHead).where(AuditHead.id == 1).execution_options(populate_existing=True)).one()
    return head


def record(
    session: Session, kind: AuditKind | str, actor: str, subject: str, details: Mapping[str, Any] | None, now: datetime
) -> AuditEvent:
    """Append one entry in the caller's transaction; it is kept only if the caller commits.

    Parameters
    ----------
    session
        The caller's session: record a decision in the same transaction as the change.
    kind
        An :class:`AuditKind` (or its value).
    actor
        Who did it: a person's e-mail for human decisions, ``medmon`` or
        :func:`local_actor` for automatic ones. Never empty.
    subject
        What it is about, e.g. ``task:knowledge-qa`` or ``alert:12``.
    details
        JSON-serializable facts. Never put secrets here: the log is kept forever.
    now
        The time of the event (the injected clock).
    """
    kind = _kind(kind)
    if not actor.strip():
        raise ValueError("an audit entry needs an actor")
    # What is stored is what is hashed: times, enums and paths become text once, here.
    payload: dict[str, Any] = json.loads(json.dumps(dict(details or {}), default=_jsonable, allow_nan=False))
    at = as_utc(now).astimezone(UTC)
    head = _lock_head(session)
    seq = head.seq + 1
    digest = entry_hash(seq, at, kind.value, actor, subject, payload, head.hash)
    event = AuditEvent(
        seq=seq, at=at, kind=kind.value, actor=actor, subject=subject, details=payload, prev_hash=head.hash, hash=digest
    )
    session.add(event)
    head.seq, head.hash = seq, digest
    session.add(head)
    session.flush()
    return event


@dataclass(frozen=True)
class AuditProblem:
    """One place where the chain does not hold."""

    seq: int | None
    entry_id: int | None
    what: str

    def __str__(self) -> str:
        where = f"entry seq {self.seq}" + (f" (id {self.entry_id})" if self.entry_id is not None else "")
        return f"{where}: {self.what}" if self.seq is not None else self.what


def seal_run(session: Session, run: ProbeRun, now: datetime, *, actor: str = "medmon") -> AuditEvent:
    """Enter a finished run's evidence in the chain, in the transaction that stored its results.

    ``audit verify`` recomputes the seal from storage (``medmon.monitor.governance.evidence``).
    Sealing a run again (after evidence was added to it on purpose) names the seal it supersedes.
    """
    details = seal_details(session, run)
    earlier = session.exec(
        select(AuditEvent.seq)
        .where(AuditEvent.kind == AuditKind.run_sealed.value, AuditEvent.subject == f"run:{run.id}")
        .order_by(col(AuditEvent.seq).desc())
    ).first()
    if earlier is not None:
        details["supersedes_seq"] = earlier
    return record(session, AuditKind.run_sealed, actor, f"run:{run.id}", details, now)


@dataclass
class VerifyReport:
    entries: int
    head_seq: int
    head_hash: str
    problems: list[AuditProblem] = field(default_factory=list)
    runs_sealed: int = 0  # finished probe runs whose stored results were recomputed against their seal
    results_checked: int = 0
    runs_resealed: int = 0  # runs sealed more than once: checked against the newest seal
    runs_purged: dict[int, int] = field(default_factory=dict)  # sealed run -> the retention_purge entry that deleted it

    @property
    def purged_text(self) -> str:
        """The sealed runs a recorded purge deleted, in words ('' when none)."""
        if not self.runs_purged:
            return ""
        entries = sorted(set(self.runs_purged.values()))
        runs = sorted(self.runs_purged)
        shown = ", ".join(str(r) for r in runs[:8]) + (f" and {len(runs) - 8} more" if len(runs) > 8 else "")
        return (
            f"{len(runs)} sealed run(s) ({shown}) deleted past retention by the purge recorded at audit "
            f"seq {', '.join(str(e) for e in entries)}: named as purged, not tampered with"
        )

    @property
    def summary(self) -> str:
        """What was verified, in one sentence (the report's integrity line)."""
        what = (
            f"{self.entries} audit entries (head seq {self.head_seq}) and the stored results of "
            f"{self.runs_sealed} sealed probe runs ({self.results_checked} results)"
            + (f", {self.runs_resealed} of them sealed again" if self.runs_resealed else "")
            + (f"; {self.purged_text}" if self.runs_purged else "")
        )
        if self.ok:
            return f"verified: {what}"
        return f"did not verify: {len(self.problems)} problem(s) in {what}"

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "problems": [{"seq": p.seq, "id": p.entry_id, "what": p.what} for p in self.problems],
            "runs_sealed": self.runs_sealed,
            "results_checked": self.results_checked,
            "runs_resealed": self.runs_resealed,
            "runs_purged": {str(k): v for k, v in sorted(self.runs_purged.items())},
            "summary": self.summary,
        }


def verify(session: Session, expect: tuple[int, str] | None = None) -> VerifyReport:
    """Walk the chain from the first entry and report every place it breaks.

    ``expect`` is a ``(seq, hash)`` pair noted earlier (from a report or a previous verify):
    the entry at that ``seq`` must still carry that hash, which catches a rewrite of the whole
    chain and its head.
    """
    columns = (
        AuditEvent.id,
        AuditEvent.seq,
        AuditEvent.at,
        AuditEvent.kind,
        AuditEvent.actor,
        AuditEvent.subject,
        AuditEvent.details,
        AuditEvent.prev_hash,
        AuditEvent.hash,
    )
    # Streamed in chunks: a years-long log need not fit in memory to be checked.
    rows = session.exec(
        select_row(*columns).order_by(col(AuditEvent.seq), col(AuditEvent.id)).execution_options(yield_per=2000)
    )
    problems: list[AuditProblem] = []
    prev_hash, expected_seq, count = GENESIS, 1, 0
    last_seq, last_hash, anchor_id, anchor_hash = 0, GENESIS, None, None
    for row_id, seq, at, kind, actor, subject, details, row_prev, row_hash in rows:
        count += 1
        if expect is not None and seq == expect[0]:
            anchor_id, anchor_hash = row_id, row_hash
        malformed = _malformed(seq, at, kind, actor, subject, details, row_prev, row_hash)
        if malformed:
            problems.append(
                AuditProblem(seq if isinstance(seq, int) else None, row_id, f"malformed entry: {malformed}")
            )
            prev_hash = row_hash if isinstance(row_hash, str) else prev_hash
            expected_seq = (max(expected_seq, seq) if isinstance(seq, int) else expected_seq) + 1
            continue
        if seq > expected_seq:
            missing = (
                f"entry seq {expected_seq} is"
                if seq == expected_seq + 1
                else f"entries seq {expected_seq}-{seq - 1} are"
            )
            problems.append(AuditProblem(seq, row_id, f"{missing} missing (deleted); the chain resumes here"))
        elif seq < expected_seq:
            problems.append(AuditProblem(seq, row_id, f"out of order: expected seq {expected_seq}"))
        if row_prev != prev_hash:
            problems.append(
                AuditProblem(
                    seq,
                    row_id,
                    f"link broken: prev_hash {row_prev[:12]}... does not "
                    f"match the hash of the entry before ({prev_hash[:12]}...): "
                    "an entry before it was deleted, inserted or rewritten",
                )
            )
        if entry_hash(seq, at, kind, actor, subject, details or {}, row_prev) != row_hash:
            problems.append(
                AuditProblem(
                    seq,
                    row_id,
                    f"content does not match its hash (kind {kind!r}, "
                    f"actor {actor!r}, subject {subject!r}): "
                    "the entry was edited after it was written",
                )
            )
        prev_hash, expected_seq = row_hash, max(expected_seq, seq) + 1
        last_seq, last_hash = seq, row_hash
    head = session.get(AuditHead, 1)
    if head is not None and (head.seq, head.hash) != (last_seq, last_hash):
        problems.append(
            AuditProblem(
                None,
                None,
                f"the log ends at seq {last_seq} but its head records seq {head.seq} "
                f"({head.hash[:12]}...): newest entries were deleted or the head "
                "was altered",
            )
        )
    if head is None and count:
        problems.append(AuditProblem(None, None, "the head row is missing"))
    problems.extend(coverage_problems(session))
    purges = {  # run -> the retention_purge entry naming it
        int(r): int(seq)
        for seq, details in session.exec(
            select(AuditEvent.seq, AuditEvent.details)
            .where(AuditEvent.kind == AuditKind.retention_purge.value)
            .order_by(col(AuditEvent.seq))
        )
        for r in (details or {}).get("run_ids", [])
    }
    seals = seal_problems(
        session,
        (
            (seq, row_id, details or {})
            for row_id, seq, details in session.exec(
                select(AuditEvent.id, AuditEvent.seq, AuditEvent.details)
                .where(AuditEvent.kind == AuditKind.run_sealed.value)
                .order_by(col(AuditEvent.seq))
            )
        ),
        purged=set(purges),
    )
    problems.extend(AuditProblem(seq, entry_id, what) for seq, entry_id, what in seals.problems)
    if expect is not None:
        if anchor_hash is None:
            problems.append(AuditProblem(expect[0], None, "the expected anchor entry is missing"))
        elif anchor_hash != expect[1]:
            problems.append(
                AuditProblem(
                    expect[0],
                    anchor_id,
                    f"hash {anchor_hash[:12]}... differs from the expected "
                    f"anchor {expect[1][:12]}...: the chain was rewritten",
                )
            )
    return VerifyReport(
        entries=count,
        head_seq=last_seq,
        head_hash=last_hash,
        problems=problems,
        runs_sealed=seals.runs_checked,
        results_checked=seals.results_checked,
        runs_resealed=seals.resealed,
        runs_purged={r: purges[r] for r in seals.purged},
    )


def _malformed(seq: Any, at: Any, kind: Any, actor: Any, subject: Any, details: Any, prev: Any, hashed: Any) -> str:
    """What makes a row impossible to check (a hand-edited column of the wrong type), or ''."""
    wrong = [
        name
        for name, value, kind_of in (
            ("seq", seq, int),
            ("at", at, datetime),
            ("kind", kind, str),
            ("actor", actor, str),
            ("subject", subject, str),
            ("prev_hash", prev, str),
            ("hash", hashed, str),
        )
        if not isinstance(value, kind_of) or isinstance(value, bool)
    ]
    if details is not None and not isinstance(details, dict):
        wrong.append("details")
    return f"{', '.join(wrong)} of the wrong type or empty" if wrong else ""


def coverage_problems(session: Session) -> list[AuditProblem]:
    """Records the log must cover but does not: the check that holds without an anchor.

    Every human action on an alert (or on an incident, whose one entry names each alert it covers
    in ``details["alerts"]``), declared or detected change, finished re-evaluation and
    approval writes its audit entry in the same transaction, so a record without its entry means
    entries were deleted (a truncated or emptied log), however consistent the remaining chain is.
    """
    seen_changes: set[int] = set()
    seen_reevaluations: set[int] = set()
    seen_approvals: set[int] = set()
    alert_actions: dict[tuple[str, str], int] = {}
    kinds = [
        AuditKind.change_declared.value,
        AuditKind.model_change.value,
        AuditKind.reevaluation.value,
        AuditKind.baseline_approved.value,
        AuditKind.alert_acknowledged.value,
        AuditKind.alert_resolved.value,
    ]
    for kind, subject, details in session.exec(
        select(AuditEvent.kind, AuditEvent.subject, AuditEvent.details).where(col(AuditEvent.kind).in_(kinds))
    ):
        d = details if isinstance(details, dict) else {}
        if kind in (AuditKind.change_declared.value, AuditKind.model_change.value):
            seen_changes.update(i for i in d.get("change_ids") or [] if isinstance(i, int))
        elif kind == AuditKind.reevaluation.value and isinstance(d.get("reevaluation_id"), int):
            seen_reevaluations.add(d["reevaluation_id"])
        elif kind == AuditKind.baseline_approved.value and isinstance(d.get("reevaluation_id"), int):
            seen_approvals.add(d["reevaluation_id"])
        else:  # an action on an incident is one entry naming every alert it covers
            covered = (
                [f"alert:{i}" for i in d.get("alerts") or [] if isinstance(i, int)]
                if subject.startswith("incident:")
                else [subject]
            )
            for one in covered:
                alert_actions[(kind, one)] = alert_actions.get((kind, one), 0) + 1
    problems: list[AuditProblem] = []

    def missing(what: str, ids: list[int]) -> None:
        if ids:
            shown = ", ".join(str(i) for i in ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            problems.append(
                AuditProblem(
                    None,
                    None,
                    f"{what} {shown} ha{'s' if len(ids) == 1 else 've'} no audit entry: entries were deleted",
                )
            )

    missing("change", [i for i in session.exec(select(ChangeRecord.id)) if i is not None and i not in seen_changes])
    missing(
        "re-evaluation",
        [
            i
            for i, done in session.exec(select(Reevaluation.id, Reevaluation.finished_at))
            if i is not None and done is not None and i not in seen_reevaluations
        ],
    )
    missing(
        "approval of re-evaluation",
        [
            i
            for i, by in session.exec(select(Reevaluation.id, Reevaluation.approved_by))
            if i is not None and by is not None and i not in seen_approvals
        ],
    )
    wanted: dict[tuple[str, str], int] = {}
    for alert_id, to_status, actor in session.exec(select(AlertEvent.alert_id, AlertEvent.to_status, AlertEvent.actor)):
        if actor != "medmon" and to_status in ("acknowledged", "resolved"):
            key = (f"alert_{to_status}", f"alert:{alert_id}")
            wanted[key] = wanted.get(key, 0) + 1
    missing(
        "alert",
        sorted(
            {
                int(subject.split(":")[1])
                for key, n in wanted.items()
                for subject in [key[1]]
                if alert_actions.get(key, 0) < n
            }
        ),
    )
    return problems


def list_events(
    session: Session,
    *,
    kind: AuditKind | str | None = None,
    subject: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
) -> list[AuditEvent]:
    """Entries in chain order, filtered by kind, subject prefix and time (``until`` exclusive)."""
    query = select(AuditEvent)
    if kind is not None:
        query = query.where(AuditEvent.kind == _kind(kind).value)
    if subject is not None:
        query = query.where(col(AuditEvent.subject).startswith(subject))
    if since is not None:
        query = query.where(col(AuditEvent.at) >= since)
    if until is not None:
        query = query.where(col(AuditEvent.at) < until)
    query = query.order_by(col(AuditEvent.seq))
    if limit is not None:
        query = query.order_by(None).order_by(col(AuditEvent.seq).desc()).limit(limit)
        return list(reversed(session.exec(query).all()))
    return list(session.exec(query).all())


def event_dict(event: AuditEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "id": event.id,
        "at": _instant(event.at),
        "kind": event.kind,
        "actor": event.actor,
        "subject": event.subject,
        "details": event.details,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


def last_plan_text(session: Session) -> AuditEvent | None:
    """The newest recorded plan (its full text is in ``details['text']``)."""
    return session.exec(
        select(AuditEvent).where(AuditEvent.kind == AuditKind.plan_change.value).order_by(col(AuditEvent.seq).desc())
    ).first()


def plan_thresholds(text: str) -> dict[str, dict[str, Any]]:
    """Each task's thresholds as written in a plan text (``{}`` where it sets none), tolerating a
    plan that no longer validates."""
    return {task: dict(values) for task, values in _parsed_thresholds(text).items()}


@lru_cache(maxsize=16)
def _parsed_thresholds(text: str) -> dict[str, dict[str, Any]]:
    # Cached: the same recorded plan texts are read once per task when thresholds in force are resolved.
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    tasks = data.get("tasks") if isinstance(data, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for task in tasks or []:
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            thresholds = task.get("thresholds")
            out[task["id"]] = dict(thresholds) if isinstance(thresholds, dict) else {}
    return out


def threshold_changes(old_text: str, new_text: str) -> list[dict[str, Any]]:
    """Every threshold that differs between two plan texts, task by task.

    Examples
    --------
    >>> old = "tasks: [{id: a, thresholds: {min_score: 0.7}}]"
    >>> new = "tasks: [{id: a, thresholds: {min_score: 0.6}}]"
    >>> threshold_changes(old, new)
    [{'task': 'a', 'threshold': 'min_score', 'old': 0.7, 'new': 0.6}]
    """
    old, new = plan_thresholds(old_text), plan_thresholds(new_text)
    changes = []
    for task in sorted(set(old) | set(new)):
        before, after = old.get(task, {}), new.get(task, {})
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                changes.append({"task": task, "threshold": name, "old": before.get(name), "new": after.get(name)})
    return changes


def record_plan(session: Session, text: str, source: str, actor: str, now: datetime) -> list[AuditEvent]:
    """Record a plan whose text differs from the last recorded one; nothing if it is the same.

    The entry keeps a unified diff against the previous text (the whole text the first time)
    and the full text, so the next change can be diffed and a report can quote the plan as
    approved; each changed threshold also gets its own ``threshold_change`` entry.
    """
    last = last_plan_text(session)
    old = str(last.details.get("text", "")) if last is not None else ""
    if last is not None and old == text:
        return []
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"plan (audit seq {last.seq})" if last else "(no plan recorded)",
            tofile=source,
        )
    )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    changes = threshold_changes(old, text) if last is not None else []
    events = [
        record(
            session,
            AuditKind.plan_change,
            actor,
            f"plan:{Path(source).name}",
            {
                "source": source,
                "sha256": digest,
                "initial": last is None,
                "diff": diff,
                "text": text,
                "threshold_changes": changes,
            },
            now,
        )
    ]
    for change in changes:
        events.append(
            record(
                session,
                AuditKind.threshold_change,
                actor,
                f"task:{change['task']}",
                change | {"plan_sha256": digest},
                now,
            )
        )
    return events


def record_baseline_import(session: Session, report: Mapping[str, Any], actor: str, now: datetime) -> AuditEvent | None:
    """Audit an import that stored new evidence (``ImportReport.to_dict()``); a no-op re-import is not."""
    created = [b for b in report.get("baselines", []) if b.get("created")]
    if not created and not report.get("leaderboard_entries"):
        return None
    keep = ("benchmark", "model", "metric", "version", "baseline_id", "value", "normalized", "n", "ci", "source_path")
    return record(
        session,
        AuditKind.baseline_import,
        actor,
        f"baseline:{report.get('source', '')}",
        {
            "source": report.get("source"),
            "kind": report.get("kind"),
            "suite": report.get("suite"),
            "created": len(created),
            "unchanged": report.get("unchanged"),
            "leaderboard_entries": report.get("leaderboard_entries"),
            "baselines": [{k: b.get(k) for k in keep} for b in created],
        },
        now,
    )
