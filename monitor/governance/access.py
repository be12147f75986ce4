"""Who read stored text: every surface that shows or exports answers or event narratives writes an entry.

The dashboard records ``answers_viewed`` per page view (``medmon.dashboards.actions``); command
lines that export stored text record the same kind here, with the OS account (a command line
proves no identity: ``authenticated: false``) and what was read, so the report's access count
(section 9) covers every path, not only the dashboard.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.monitor.governance.audit import AuditKind, local_actor, record
from medmon.monitor.models import AuditEvent


def record_text_read(
    session: Session,
    *,
    tool: str,
    task: str | None,
    what: str,
    answers: Sequence[int] = (),
    now: datetime,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record that the person at this shell read stored text through ``tool`` (e.g. ``medmon oversight export``)."""
    actor = local_actor(tool)
    return record(
        session,
        AuditKind.answers_viewed,
        f"{actor} (unauthenticated)",
        f"task:{task}" if task else "deployment",
        {
            "task": task,
            "page": tool,
            "what": what,
            "answers": list(answers),
            "authenticated": False,
            "via": "cli",
            "os_user": actor,
        }
        | dict(details or {}),
        now,
    )
