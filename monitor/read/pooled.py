"""Detectors that pool a MedHELM category's tasks: a small drop shared by several tasks, in sentences."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlmodel import Session, col, select

from medmon.monitor.models import DetectorState, StreamStatus


@dataclass(frozen=True)
class PooledStream:
    """A detector over a whole MedHELM category (tasks pooled), which no single task row shows."""

    key: str
    category: str
    status: str
    evidence: float
    threshold: float
    n: int

    @property
    def meaning(self) -> str:
        """The detector's state as a sentence: what a committee reads instead of an e-value.

        Examples
        --------
        >>> PooledStream("category:x:pooled_score:drop", "x", "watching", 10.0, 1000.0, 40).meaning
        'Evidence of a drop shared by its tasks is building (a third of the way to an alarm, on a log scale)'
        """
        if self.status == "degraded":
            return "The tasks of this category together score below their go-live reference"
        if self.status == "recovered":
            return "Back at the go-live reference after an alarm; quiet runs will return it to ok"
        if self.status == "watching" and self.evidence > 1 and self.threshold > 1:
            share = min(math.log(self.evidence) / math.log(self.threshold), 1.0)
            words = next(
                w
                for limit, w in (
                    (0.2, "early on"),
                    (0.45, "a third of the way"),
                    (0.7, "half way"),
                    (1.01, "most of the way"),
                )
                if share < limit
            )
            return f"Evidence of a drop shared by its tasks is building ({words} to an alarm, on a log scale)"
        return "Holds the go-live reference"


def category_streams(session: Session) -> list[PooledStream]:
    """Detectors that pool a category's tasks (their ``task_id`` is ``category:<slug>``), worst first."""
    rows = session.exec(select(DetectorState).where(col(DetectorState.task_id).startswith("category:"))).all()
    out = [
        PooledStream(
            r.key, r.task_id.removeprefix("category:"), StreamStatus(r.status).value, r.evidence, r.threshold, r.n
        )
        for r in rows
    ]
    rank = {"degraded": 0, "watching": 1}
    return sorted(out, key=lambda p: (rank.get(p.status, 2), p.key))
