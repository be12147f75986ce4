"""The committee report's clinician-scale table: the estimate on the clinician scale beside the jury's
opinion and MedHELM's ICC 0.47, and what the review queue needs next (``medmon.monitor.read.clinician_scale``)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.monitor.governance.clinician_scale import ICC_WIDTH, clinician_scale
from medmon.monitor.plan.model import Plan


def clinician_scale_rows(session: Session, plan: Plan, now: datetime) -> dict[str, Any]:
    """The figures as the report's template reads them; ``active`` False says why there are none."""
    return {
        "active": plan.oversight.review.selection == "active",
        "icc_width": ICC_WIDTH,
        "rows": [asdict(f) for f in clinician_scale(session, plan, now)],
    }
