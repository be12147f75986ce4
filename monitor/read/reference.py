"""How far a task's go-live reference is built, and when detection will be armed.

While the reference is being built the drift detectors have nothing to test against, so no
surface may call the task fine: the overview, the task page, the report and ``medmon status``
show "building the reference" with this progress and the time until detection is armed at the
plan's schedule (each probe run replays the ``sample_size`` least-answered canaries).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from apscheduler.triggers.cron import CronTrigger
from sqlmodel import Session

from medmon.moments import display_time
from medmon.monitor.models import BurnIn
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, Task

BUILDING = "building the reference"


@dataclass(frozen=True)
class ReferenceProgress:
    """The go-live reference of one task: answers collected against answers needed, and the time left."""

    task: str
    building: bool  # True until the reference is complete (False also when the plan turns it off)
    canaries_done: int
    canaries_needed: int
    repeats: int
    answers: int
    answers_needed: int
    runs_left: int
    time_left: timedelta | None  # at the plan's schedule; None when the schedule gives no interval

    @property
    def share(self) -> float:
        return 1.0 if not self.answers_needed else min(self.answers / self.answers_needed, 1.0)

    def sentence(self, now: datetime | None = None) -> str:
        """The state as the committee reads it.

        >>> print(ReferenceProgress("t", True, 3, 18, 5, 40, 90, 3, timedelta(hours=3)).sentence())
        ... # doctest: +ELLIPSIS
        Building the go-live reference: 40 of 90 answers (3 of 18 canaries answered 5 times); ...
        """
        if not self.building:
            return "The go-live reference is complete: drift detection is armed"
        when = ""
        if self.time_left is not None:
            when = f", in about {_duration(self.time_left)} at the plan's schedule"
            if now is not None:
                when += f" (around {display_time(now + self.time_left)})"
        runs = f"{self.runs_left} more probe run{'s' if self.runs_left != 1 else ''}"
        return (
            f"Building the go-live reference: {self.answers} of {self.answers_needed} answers "
            f"({self.canaries_done} of {self.canaries_needed} canaries answered {self.repeats} times); "
            f"drift detection is armed after {runs}{when}"
        )


def _duration(delta: timedelta) -> str:
    minutes = max(int(delta.total_seconds() // 60), 1)
    if minutes >= 2880:
        return f"{round(minutes / 1440)} days"
    if minutes >= 120:
        return f"{round(minutes / 60)} h"
    return f"{minutes} min"


_POOLS: dict[tuple[str, str], int] = {}


def _pool_size(plan: Plan, task: Task) -> int:
    """How many replayable canaries the task has (read once per canary source)."""
    key = (task.id, task.canaries.model_dump_json())
    if key not in _POOLS:
        _POOLS[key] = sum(1 for c in load_context(plan, task).canaries if c.replayable)
    return _POOLS[key]


def runs_to_complete(counts: list[int], repeats: int, needed: int, per_run: int) -> int:
    """Probe runs until ``needed`` canaries have ``repeats`` answers, replaying the least answered first.

    >>> runs_to_complete([0] * 10, 5, 9, 20)   # 10 canaries: each answered once a run
    5
    >>> runs_to_complete([0] * 40, 5, 36, 20)  # 40 canaries, 20 a run: 36 of them reach 5 answers in 10 runs
    10
    """
    counts, runs = sorted(counts), 0
    while sum(1 for c in counts if c >= repeats) < needed and runs < 100_000:
        for i in range(min(per_run, len(counts))):  # a run replays each canary at most once
            counts[i] += 1
        counts.sort()
        runs += 1
    return runs


def schedule_interval(task: Task, now: datetime) -> timedelta | None:
    """The time between two probe runs of the task: its interval, or the gap between a cron line's next two runs."""
    if task.interval is not None:
        return task.interval
    trigger = CronTrigger.from_crontab(task.schedule, timezone="UTC")
    first = trigger.get_next_fire_time(None, now)
    second = trigger.get_next_fire_time(first, first + timedelta(seconds=1)) if first else None
    return (second - first) if first and second else None


def reference_progress(session: Session, plan: Plan, task: Task, now: datetime) -> ReferenceProgress:
    """How far ``task``'s go-live reference is built (read-only)."""
    repeats = plan.detection.reference.repeats
    if repeats < 1:
        return ReferenceProgress(task.id, False, 0, 0, 0, 0, 0, 0, None)
    row = session.get(BurnIn, task.id)
    if row is not None and row.complete:
        return ReferenceProgress(task.id, False, 0, 0, row.runs, 0, 0, 0, timedelta(0))
    runs = row.runs if row is not None else repeats
    pool = _pool_size(plan, task)
    needed = math.ceil(plan.detection.reference.coverage * pool)
    counts = [int(v[0]) for v in ((row.instances or {}) if row else {}).values() if v][:pool]
    counts += [0] * max(pool - len(counts), 0)
    runs_left = runs_to_complete(counts, runs, needed, task.sample_size)
    answers = sum(counts)
    step = schedule_interval(task, now)
    return ReferenceProgress(
        task.id,
        True,
        sum(1 for c in counts if c >= runs),
        needed,
        runs,
        answers,
        answers + runs_left * min(task.sample_size, pool),
        runs_left,
        step * runs_left if step is not None else None,
    )
