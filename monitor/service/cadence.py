"""Adaptive cadence: how often a task is probed, from its schedule, its evidence and its budget.

While a stream of the task is watching (evidence building, no alarm yet) the task is probed at
the fastest interval the plan allows (``adaptive_cadence``) that divides its schedule into whole
steps, so every time of the schedule stays a probe time and the extra probes fall between them.
It goes back to the schedule when no stream watches, or when the day's extra budget could not
pay for one more probe. The detectors' false-alarm promise is per observation, whenever the
observations are taken, so probing faster on the evidence itself does not weaken it
(docs/detection.md, "Adaptive cadence").

:func:`next_interval` is the whole decision, a plain function; the scheduler
(``medmon.monitor.service.scheduler``) applies it and the ledger
(``medmon.monitor.service.cadence_ledger``) reads the budget used from the stored slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from medmon.monitor.plan.cadence import AdaptiveCadence

DAY = timedelta(days=1)


@dataclass(frozen=True)
class BudgetUsed:
    """Extra probes (beyond the schedule's own) a task ran in the current budget window, and their cost."""

    probes: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Cadence:
    """The decision: probe every ``interval`` (None: on the plan's own schedule), and why."""

    interval: timedelta | None
    reason: str

    @property
    def fast(self) -> bool:
        return self.interval is not None


def fast_interval(schedule: timedelta | None, fastest: timedelta) -> timedelta | None:
    """The shortest interval of at least ``fastest`` that divides ``schedule`` into whole steps.

    None when the schedule is a cron line (no grid to divide) or no faster one exists.

    Examples
    --------
    >>> fast_interval(timedelta(hours=1), timedelta(minutes=15))
    datetime.timedelta(seconds=900)
    >>> fast_interval(timedelta(hours=1), timedelta(minutes=25))
    datetime.timedelta(seconds=1800)
    >>> fast_interval(timedelta(minutes=10), timedelta(minutes=15)) is None
    True
    """
    if schedule is None:
        return None
    steps = schedule // fastest
    return schedule / steps if steps >= 2 else None


def budget_left(used: BudgetUsed, settings: AdaptiveCadence, next_cost_usd: float | None = None) -> str | None:
    """None when one more extra probe fits the budget, else what is spent (for the reason)."""
    cap = settings.max_extra_probes_per_day
    if used.probes >= cap:
        return f"today's extra probes are spent ({used.probes} of {cap})"
    money = settings.max_extra_cost_per_day
    if money is not None and used.cost_usd + (next_cost_usd or 0.0) > money:
        return f"today's extra probe cost is spent (${used.cost_usd:.2f} of ${money:.2f})"
    return None


def next_interval(
    schedule: timedelta | None,
    watching: bool,
    used: BudgetUsed,
    settings: AdaptiveCadence,
    next_cost_usd: float | None = None,
) -> Cadence:
    """How often to probe a task now: faster while a stream watches and the budget allows, else its schedule.

    ``schedule`` is the task's interval (None for a cron schedule), ``used`` the extra probes of
    the current window, ``next_cost_usd`` what one more probe is expected to cost (the last one's).
    """
    if not settings.enabled:
        return Cadence(None, "adaptive cadence is off")
    fast = fast_interval(schedule, settings.fastest)
    if fast is None:
        why = "a cron schedule" if schedule is None else f"its schedule is already at most {human(settings.fastest)}"
        return Cadence(None, f"{why}: no faster cadence")
    if not watching:
        return Cadence(None, "no stream is watching")
    spent = budget_left(used, settings, next_cost_usd)
    if spent is not None:
        return Cadence(None, spent)
    return Cadence(fast, "evidence builds")


def budget_window(now: datetime) -> tuple[datetime, datetime]:
    """The budget's window: the UTC day holding ``now``."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + DAY


def human(interval: timedelta) -> str:
    """'15 min', '1 h', '90 s', '1 d'.

    Examples
    --------
    >>> human(timedelta(minutes=15)), human(timedelta(hours=1)), human(timedelta(seconds=90))
    ('15 min', '1 h', '90 s')
    """
    seconds = interval.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


def describe(task_id: str, schedule: str, cadence: Cadence, used: BudgetUsed, settings: AdaptiveCadence) -> str:
    """One line for status output, e.g. 'task knowledge-qa probed every 15 min while evidence builds
    (4 of 24 extra probes used today)'."""
    spent = f"{used.probes} of {settings.max_extra_probes_per_day} extra probes used today"
    if settings.max_extra_cost_per_day is not None:
        spent += f", ${used.cost_usd:.2f} of ${settings.max_extra_cost_per_day:.2f}"
    if cadence.interval is not None:
        return f"task {task_id} probed every {human(cadence.interval)} while evidence builds ({spent})"
    if not settings.enabled:
        return f"task {task_id} probed on its schedule ({schedule}); adaptive cadence is off"
    return f"task {task_id} probed on its schedule ({schedule}): {cadence.reason} ({spent})"
