"""The plan's ``traffic`` section: the deployed application's own calls, received as OpenTelemetry spans.

Applications instrumented with the OpenTelemetry GenAI conventions (for instance the official
``opentelemetry-instrumentation-openai-v2``) export a span per model call. ``medmon serve``
receives them over OTLP/HTTP on a port of its own; ``routes`` say which plan task each call
belongs to (first match wins; a call no route matches is counted per model as unmatched).
Streams on that traffic are compared with a reference: the first ``reference_window`` of a
task's traffic (once it holds ``reference_min_calls`` calls), or a declared period.

``applications`` give each application its own bearer token, mapped to the tasks it may feed:
a call one application's token brings in that routes to another's task is refused (so one leaked
token cannot poison every task's traffic), and one token can be revoked without the others.
"""

from __future__ import annotations

from datetime import datetime
from fnmatch import fnmatchcase

from pydantic import Field, field_validator, model_validator

from medmon.monitor.plan.section import Interval, Section


class TrafficRoute(Section):
    """Calls matching every given condition belong to ``task``. Patterns are shell-style globs
    (``chat gpt-*``); ``attributes`` match span or resource attributes by exact key."""

    task: str
    service: str | None = None
    span_name: str | None = None
    model: str | None = None  # the requested model, or the served one
    attributes: dict[str, str] = Field(default_factory=dict)


class TrafficApplication(Section):
    """One application sending spans: its own token (from ``token_env``) and the tasks it may feed."""

    name: str = Field(min_length=1)
    token_env: str = Field(min_length=1)
    tasks: list[str] = Field(min_length=1)


class TrafficJudging(Section):
    """Real exchanges sent to the plan's jury with reference-free criteria.

    Only exchanges whose spans carry content are sampled; only judges marked ``phi_allowed``
    receive them (real text may hold patient data).
    """

    sample_rate: float = Field(0.01, ge=0, le=1)
    daily_cap: int = Field(200, ge=0)
    criteria: list[str] = Field(default_factory=lambda: ["accuracy", "completeness", "clarity", "safety"], min_length=1)
    every: Interval = "1m"


class TrafficPrice(Section):
    """The price of calls a given model served (a shell-style glob on ``gen_ai.response.model``, else the
    requested model), per million tokens; ``unpriced: true`` says on purpose that its calls have no cost
    (an in-house model), so they are not mistaken for a forgotten price."""

    model: str
    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)
    unpriced: bool = False

    @model_validator(mode="after")
    def _either(self) -> TrafficPrice:
        if self.unpriced and (self.input_per_mtok or self.output_per_mtok):
            raise ValueError("expected either prices or 'unpriced: true', not both")
        return self


class Traffic(Section):
    """How real traffic comes in and what it is compared with."""

    host: str = "127.0.0.1"
    port: int | None = Field(4318, ge=0, le=65535)  # OTLP/HTTP's usual port; None: no receiver
    token_env: str | None = "MEDMON_TRAFFIC_TOKEN"  # bearer token callers must send (None: no token)
    applications: list[TrafficApplication] = Field(default_factory=list)  # per-application tokens
    routes: list[TrafficRoute] = Field(default_factory=list)
    reference_window: Interval = "3d"  # from a task's first call
    reference_min_calls: int = Field(200, ge=10)
    reference_from: datetime | None = None  # a declared reference period instead of the first days
    reference_to: datetime | None = None
    tolerated_rise: float = Field(0.05, ge=0, lt=0.5)  # share of calls above the reference median tolerated
    volume_tolerance: float = Field(0.2, ge=0, lt=0.9)  # calls per hour may fall or rise this much beyond the margin
    daily_budget_usd: float | None = Field(None, gt=0)  # spend of real traffic per day, shown against its days
    retention: Interval = "30d"
    detect_every: Interval = "5s"
    max_tokens_per_call: int = Field(2_000_000, ge=1)  # more is refused as absurd
    max_clock_skew: Interval = "1h"  # spans ending further in the future are refused
    max_age: Interval = "7d"  # spans ending longer ago are refused
    judging: TrafficJudging | None = None
    # Prices per served model, first match wins; empty: the deployment's price for every call.
    prices: list[TrafficPrice] = Field(default_factory=list)

    def token_variables(self) -> list[str]:
        """Every environment variable holding a receiver token (the shared one and each application's)."""
        return ([self.token_env] if self.token_env else []) + [a.token_env for a in self.applications]

    def price_for(self, model: str) -> TrafficPrice | None:
        """The first ``prices`` entry whose pattern matches ``model``; None when none does."""
        return next((p for p in self.prices if fnmatchcase(model, p.model)), None)

    def unpriced_models(self, approved: str) -> list[tuple[tuple[object, ...], str]]:
        """Models the plan routes or approves that no ``prices`` entry covers: (field location, model).

        A route's model pattern counts as covered when an entry's pattern matches it as written
        (``gpt-4o*`` by ``gpt-4o*`` or ``*``). Nothing to check while ``prices`` is empty.
        """
        if not self.prices:
            return []
        found: list[tuple[tuple[object, ...], str]] = []
        if self.price_for(approved) is None:
            found.append((("traffic", "prices"), approved))
        for i, route in enumerate(self.routes):
            if route.model is not None and self.price_for(route.model) is None:
                found.append((("traffic", "routes", i, "model"), route.model))
        return found

    @model_validator(mode="after")
    def _tokens(self) -> Traffic:
        names = self.token_variables()
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(
                f"each receiver token needs a variable of its own; named more than once: {', '.join(twice)}"
            )
        apps = [a.name for a in self.applications]
        if len(set(apps)) != len(apps):
            raise ValueError("traffic.applications: each application needs a name of its own")
        return self

    @model_validator(mode="after")
    def _period(self) -> Traffic:
        if (self.reference_from is None) != (self.reference_to is None):
            raise ValueError("expected both 'reference_from' and 'reference_to' for a declared reference period")
        if (
            self.reference_from is not None
            and self.reference_to is not None
            and self.reference_to <= self.reference_from
        ):
            raise ValueError("'reference_to' must come after 'reference_from'")
        return self

    @field_validator("reference_from", "reference_to")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("expected a date-time with a time zone, e.g. 2026-01-05T00:00:00Z")
        return value
