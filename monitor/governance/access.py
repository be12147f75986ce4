"""Who read stored text: every surface that shows or exports answers, narratives or comments writes an entry.

Stored text is what medmon keeps of real or probed exchanges and of people's words about them:
probe answers and what was read from them, prompts and completions of traffic, judges'
explanations, clinicians' review notes, safety-event narratives and near misses. The dashboard
records ``answers_viewed`` once per session and page (``medmon.dashboards.actions``); a command
line that prints or exports such text records the same kind here, once per invocation, with the
OS account (a command line proves no identity: ``authenticated: false``), the command, what was
read and how many rows, so the report's access count (section 9) covers every path, not only
the dashboard. ``tests/monitor/test_access_audit.py`` lists every command of ``medmon`` and
fails when one that reads stored text records nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.monitor.governance.audit import AuditKind, local_actor, record
from medmon.monitor.models import AuditEvent

# Audit kinds whose details carry people's own words about stored answers (a clinician's review
# note, what nearly happened): listing their details is reading stored text.
TEXT_KINDS = {AuditKind.clinician_review.value: "note", AuditKind.near_miss.value: "what"}


def record_text_read(
    session: Session,
    *,
    tool: str,
    task: str | None,
    what: str,
    answers: Sequence[int] = (),
    rows: int | None = None,
    now: datetime,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record that the person at this shell read stored text through ``tool`` (e.g. ``medmon oversight export``).

    ``rows`` is how many stored records the text came from (default: the answers named).
    """
    actor = local_actor(tool)
    return record(
        session,
        AuditKind.answers_viewed,
        f"{actor} (unauthenticated)",
        f"task:{task}" if task else "deployment",
        {
            "task": task,
            "page": tool,
            "command": tool,
            "what": what,
            "answers": list(answers),
            "rows": len(answers) if rows is None else rows,
            "authenticated": False,
            "via": "cli",
            "os_user": actor,
        }
        | dict(details or {}),
        now,
    )


def text_entries(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The audit entries (as ``event_dict`` gives them) whose details hold someone's words (:data:`TEXT_KINDS`)."""
    return [e for e in entries if (field := TEXT_KINDS.get(str(e.get("kind")))) and (e.get("details") or {}).get(field)]
