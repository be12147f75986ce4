"""The monitoring plan: one YAML file, validated once by pydantic and passed down.

It is the governance record as much as configuration: the use case, its owners, the deployed
model, the clinical tasks mapped to MedHELM, their thresholds, and where alerts go. Secrets never
live here: the plan names the *environment variables* that hold them.
"""

from __future__ import annotations

from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from apscheduler.triggers.cron import CronTrigger
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from medmon.files import MAX_YAML_BYTES, UnsafeInput, load_yaml, read_text
from medmon.moments import zone
from medmon.monitor.errors import PlanError, PlanIssue
from medmon.monitor.plan.alerts import AlertsConfig
from medmon.monitor.plan.cadence import AdaptiveCadence
from medmon.monitor.plan.governance import Governance, Privacy
from medmon.monitor.plan.identity import IdentityCheck
from medmon.monitor.plan.intervals import INTERVAL, parse_interval
from medmon.monitor.plan.oversight import Oversight
from medmon.monitor.plan.people import Person
from medmon.monitor.plan.reports import ReportsConfig
from medmon.monitor.plan.retention import Retention
from medmon.monitor.plan.section import HttpUrl, Interval, Section
from medmon.monitor.plan.traffic import Traffic


class RiskTier(str, Enum):
    high = "high"
    medium = "medium"
    low = "low"


class UseCase(Section):
    name: str
    intended_use: str
    intended_users: list[str] = Field(default_factory=list)
    workflow: str = ""
    consequence_of_error: str = ""
    risk_tier: RiskTier = RiskTier.medium


class Owners(Section):
    clinical: Person
    technical: Person
    on_call_route: str = "default"
    chair: Person | None = None  # the governance committee's chair (medmon.monitor.governance.roles)


class Price(Section):
    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)
    reasoning_per_mtok: float | None = Field(None, ge=0)  # reasoning tokens, when not at the output price


class Endpoint(Section):
    """An OpenAI-compatible chat completions endpoint (or Azure OpenAI, ``api_style: azure``).

    Secrets never live in the plan: the key comes from ``api_key_env`` (``null`` for an
    endpoint that takes none) and secret headers from ``header_env`` (header -> variable name);
    ``headers`` and ``query`` hold values that are not secret.
    """

    name: str = "production"
    base_url: HttpUrl
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    api_style: Literal["openai", "azure"] = "openai"
    api_version: str | None = None  # Azure OpenAI's api-version query parameter
    auth_header: Literal["bearer", "api-key", "none"] = "bearer"
    headers: dict[str, str] = Field(default_factory=dict)
    header_env: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    token_limit_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    cost_header: str | None = None  # e.g. LiteLLM's x-litellm-response-cost, trusted over the price table
    price: Price = Price()
    timeout_s: float = Field(30.0, gt=0)
    max_concurrency: int = Field(8, ge=1)
    max_retries: int = Field(2, ge=0)
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    temperature: float | None = Field(0.0, ge=0, le=2)  # null: not sent (some reasoning models reject it)
    max_tokens: int = Field(512, ge=1)
    system_prompt: str | None = None
    breaker_failures: int = Field(5, ge=1)  # consecutive failed calls (after retries) that open the breaker
    breaker_cooldown_s: float = Field(30.0, gt=0)  # how long an open breaker fails calls fast
    # Who may answer: a pool of backends (a gateway balancing deployments) is one deployment.
    expected_models: list[str] = Field(default_factory=list)
    fingerprints: Literal["ignore", "record", "alert"] = "record"
    identity_window_runs: int = Field(10, ge=2)
    identity_min_share: float = Field(0.2, gt=0, le=1)
    phi_allowed: bool = False  # in-network: may receive real patient text (judging of real traffic)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if "?" in value or "#" in value:
            raise ValueError(
                f"expected a base URL without a query string, got {value!r}; put query parameters "
                f"under 'query' (or 'api_version' with api_style: azure)"
            )
        return value.rstrip("/")

    @model_validator(mode="after")
    def _style(self) -> Endpoint:
        if self.api_style == "azure" and not self.api_version:
            raise ValueError("api_style azure needs api_version (e.g. '2024-10-21')")
        return self

    def variables(self) -> list[str]:
        """The environment variables this endpoint reads: its key and secret headers."""
        return ([self.api_key_env] if self.api_key_env else []) + list(self.header_env.values())


class Jury(Section):
    """Judge endpoints, criteria and scale. A judge without a ``name`` is named ``judge-<n>``
    (its position, from 1); names must be unique, since each judge's scores are a stream."""

    judges: list[Endpoint] = Field(min_length=1)
    criteria: list[str] = Field(default_factory=lambda: ["accuracy", "completeness", "clarity"], min_length=1)
    scale_min: int = 1
    scale_max: int = 5
    # Judge canaries: fixed (answer, gold score) pairs re-judged on this schedule (an interval
    # like '1d' or a cron line); None runs none. ``canary_path`` replaces the bundled set.
    canary_schedule: str | None = None
    canary_path: Path | None = None
    # The judge-bias stream: each judge's signed error over its first runs is its reference; a
    # shift of the mean by more than the tolerance (score points) plus that reference's own
    # uncertainty is judge drift (lenient or severe).
    canary_burn_in_runs: int = Field(3, ge=1)
    canary_bias_tolerance: float = Field(0.25, ge=0)

    @field_validator("canary_schedule")
    @classmethod
    def _canary_schedule(cls, value: str | None) -> str | None:
        if value is None or INTERVAL.match(value):
            return value
        try:
            CronTrigger.from_crontab(value)
        except ValueError:
            raise ValueError(f"expected a cron expression or an interval like '1d', got {value!r}") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _name_judges(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("judges"), list):
            data = {
                **data,
                "judges": [
                    {"name": f"judge-{i + 1}", **j} if isinstance(j, dict) and "name" not in j else j
                    for i, j in enumerate(data["judges"])
                ],
            }
        return data

    @model_validator(mode="after")
    def _distinct(self) -> Jury:
        names = [j.name for j in self.judges]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"judge names must be unique; repeated: {', '.join(dupes)}")
        if self.scale_max <= self.scale_min:
            raise ValueError(f"scale_max ({self.scale_max}) must be greater than scale_min ({self.scale_min})")
        return self


class CanarySource(Section):
    """Either a bundled pack by name or a JSONL file of the user's own."""

    pack: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,100}$")  # a bundled pack's name, never a path
    path: Path | None = None

    @field_validator("path")
    @classmethod
    def _path(cls, value: Path | None) -> Path | None:
        if value is not None and (len(str(value)) > 4096 or "\x00" in str(value)):
            raise ValueError("expected a file path (at most 4096 characters, no NUL)")
        return value

    @model_validator(mode="after")
    def _one(self) -> CanarySource:
        if (self.pack is None) == (self.path is None):
            raise ValueError("expected exactly one of 'pack' or 'path'")
        return self


class BaselineRef(Section):
    """Inline published figures, or a reference to an imported baseline."""

    value: float | None = None
    n: int | None = Field(None, ge=1)
    model: str | None = None
    metric: str | None = None
    scale_min: float = 0.0
    scale_max: float = 1.0

    @model_validator(mode="after")
    def _pair(self) -> BaselineRef:
        if (self.value is None) != (self.n is None):
            raise ValueError("expected both 'value' and 'n' for inline baseline figures")
        return self


class Decoding(Section):
    """Decoding settings that override what a task's canaries carry (a HELM run's, by default).

    A canary imported from a HELM run replays the temperature, max tokens and stop sequences HELM
    sent; a field set here replaces the canaries' value for every call of the task (shown by
    ``medmon check``). Unset fields keep the canaries', then the deployment's, settings.
    """

    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    stop_sequences: list[str] | None = Field(None, max_length=4)

    def overrides(self) -> dict[str, object]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Thresholds(Section):
    min_score: float = Field(ge=0, le=1)
    tolerated_drop: float = Field(0.05, ge=0, le=1)
    cost_budget_per_call: float | None = Field(None, gt=0)
    latency_slo_s: float | None = Field(None, gt=0)
    min_jury_agreement: float | None = Field(None, ge=0, le=1)
    # Equity: each subgroup's estimate should stay at or above this, and the best and worst
    # subgroup of a tag no further apart than this (the committee report checks both).
    subgroup_min_score: float | None = Field(None, ge=0, le=1)
    max_subgroup_gap: float | None = Field(None, ge=0, le=1)


class Task(Section):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    benchmark: str
    canaries: CanarySource
    schedule: str = "1h"
    sample_size: int = Field(20, ge=1)
    scorer: str | None = None
    baseline: BaselineRef = BaselineRef()
    thresholds: Thresholds
    owner: Person | None = None
    human_review_required: bool = False
    subgroups: list[str] = Field(default_factory=list)
    severity: Literal["critical", "warning", "info"] | None = None
    runbook_url: str | None = None  # the local procedure for this task's incidents, linked beside medmon's own
    decoding: Decoding | None = None

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        if INTERVAL.match(value):
            return value
        try:
            CronTrigger.from_crontab(value)
        except ValueError:
            raise ValueError(f"expected a cron expression or an interval like '1h', got {value!r}") from None
        return value

    @property
    def interval(self) -> timedelta | None:
        return parse_interval(self.schedule) if INTERVAL.match(self.schedule) else None


class GoLiveReference(Section):
    """What the approved model did on the canaries themselves: the null of every score stream.

    When a task starts monitoring (and after an adopted re-evaluation) its probes replay the
    canaries least answered so far until ``coverage`` of them have ``repeats`` answers each; the
    reference then keeps growing from quiet runs (no stream watching or degraded), its margin
    re-set at each doubling, until every canary has about ``max_repeats`` answers.
    """

    repeats: int = Field(5, ge=0)  # K answers per canary at go-live (0: no reference, the benchmark's mean is the null)
    coverage: float = Field(0.9, gt=0, le=1)  # share of canaries that must reach ``repeats``
    max_repeats: int = Field(160, ge=1)  # growth stops at about this many answers per canary


class Detection(Section):
    """The false-alarm budget: expected probes between false alarms across the deployment."""

    probes_between_false_alarms: float = Field(200_000, gt=1)
    min_margin: float = Field(0.01, ge=0, lt=0.5)
    # Chance that any task's reference error alone (an optimistic reference) sets off a stream.
    baseline_alpha: float = Field(0.05, gt=0, lt=1)
    # A separate budget for error rate, cost over budget and latency over objective (None: shared).
    operational_probes_between_false_alarms: float | None = Field(None, gt=1)
    reference: GoLiveReference = GoLiveReference()
    # A call counts as slower than its canary's go-live calls only when it is slower by at least this
    # much: a shared host's sub-second jitter is not a delay a clinician notices.
    latency_min_rise_s: float = Field(0.25, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _burn_in_names(cls, data: Any) -> Any:
        """``burn_in_runs`` / ``burn_in_coverage``, the earlier names, still read as ``reference.*``."""
        if not isinstance(data, dict) or not {"burn_in_runs", "burn_in_coverage"} & data.keys():
            return data
        data = dict(data)
        ref = dict(data.get("reference") or {})
        if "burn_in_runs" in data:
            ref.setdefault("repeats", data.pop("burn_in_runs"))
        if "burn_in_coverage" in data:
            ref.setdefault("coverage", data.pop("burn_in_coverage"))
        data["reference"] = ref
        return data

    reevaluation_alpha: float = Field(0.05, gt=0, lt=1)  # error of each one-shot verdict after a change
    reevaluation_max_probes: int = Field(1000, ge=1)  # observations before the one-shot test gives up
    distribution_checks: bool = True  # river detectors on output length and latency (information only)
    # How often the service stores an evidently drift report per task (None: never); answers per window.
    drift_report_every: str | None = "1d"
    drift_report_window: int = Field(200, ge=30)

    @field_validator("drift_report_every")
    @classmethod
    def _report_every(cls, value: str | None) -> str | None:
        if value is not None and parse_interval(value).total_seconds() < 60:
            raise ValueError(f"drift_report_every must be at least one minute, got {value!r}")
        return value


class Storage(Section):
    url: str = "sqlite:///medmon.db"


class ServiceConfig(Section):
    """How ``medmon serve`` runs: where probes execute, its HTTP port, telemetry, seeding.

    ``executor: celery`` sends each scheduled probe to ``medmon worker`` processes through the
    broker named by ``broker_url_env`` (a variable, because broker URLs carry passwords).
    """

    executor: Literal["inprocess", "celery"] = "inprocess"
    broker_url_env: str = "MEDMON_BROKER_URL"
    queue: str = Field("medmon-probes", pattern=r"^[A-Za-z0-9_.-]+$")
    health_host: str = "127.0.0.1"
    health_port: int | None = Field(None, ge=0, le=65535)
    otlp_endpoint: HttpUrl | None = None
    seed: int | None = None
    misfire_grace: Interval | None = None
    standby_poll: Interval = "2s"
    # Celery: a probe message its worker has not acknowledged within this time (the worker died
    # mid-probe) goes to another worker, which retries the slot. Keep it above the longest probe.
    visibility_timeout: Interval = "1h"


class DashboardConfig(Section):
    """The dashboard's door. ``auth: oidc`` makes sign-in mandatory: without an ``[auth]`` section
    in Streamlit's secrets the dashboard refuses to start. ``hosts`` are further names it answers to
    (the one a reverse proxy forwards); loopback names and ``alerts.dashboard_url``'s host always are."""

    auth: Literal["none", "oidc"] = "none"
    hosts: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9.\-:\[\]]+$")]] = Field(default_factory=list)


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def dashboard_hosts(plan: Plan, bind: str) -> tuple[str, ...]:
    """The host names the dashboard answers to: loopback names, the bind address (unless it is
    every interface), the host of ``alerts.dashboard_url`` and ``dashboard.hosts``."""
    names = dict.fromkeys(LOOPBACK_HOSTS)
    if bind and bind not in ("0.0.0.0", "::"):
        names[bind.lower()] = None
    dashboard_host = urlsplit(plan.alerts.dashboard_url).hostname
    if dashboard_host:
        names[dashboard_host.lower()] = None
    names.update(dict.fromkeys(h.strip().lower() for h in plan.dashboard.hosts))
    return tuple(names)


class ReaderModel(Endpoint):
    """A model asked, in a strict JSON schema, the final answer of replies the rules leave unparsed.

    Off unless ``enabled``; its agreement with the rules on replies both read is held to
    ``agreement_floor`` (see ``medmon.probes.reading.reader_model``). ``check_share`` of the
    replies the rules read are sent to it as well, so that agreement is measured: each is one
    more call on the reader model's endpoint, billed there.
    """

    name: str = "reader"
    enabled: bool = False
    agreement_floor: float = Field(0.9, ge=0, le=1)
    check_share: float = Field(0.1, ge=0, le=1)


class Plan(Section):
    version: Literal[1] = 1
    use_case: UseCase
    owners: Owners
    deployment: Endpoint
    jury: Jury | None = None
    tasks: list[Task] = Field(min_length=1)
    alerts: AlertsConfig = AlertsConfig()
    detection: Detection = Detection()
    storage: Storage = Storage()
    service: ServiceConfig = ServiceConfig()
    governance: Governance | None = None
    privacy: Privacy = Privacy()
    dashboard: DashboardConfig = DashboardConfig()
    oversight: Oversight = Oversight()
    traffic: Traffic | None = None
    retention: Retention = Retention()
    reports: ReportsConfig | None = None
    adaptive_cadence: AdaptiveCadence = AdaptiveCadence()
    reader_model: ReaderModel | None = None
    identity: IdentityCheck | None = None
    # How people read moments on every surface (pages, report, CLI, notifications); stored times stay UTC.
    display_timezone: str = "UTC"

    @field_validator("display_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone(value)  # raises a ValueError naming the zone, which pydantic reports against this field
        return value

    @model_validator(mode="after")
    def _unique_tasks(self) -> Plan:
        ids = [t.id for t in self.tasks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"task ids must be unique; repeated: {', '.join(dupes)}")
        named = [(f"reviewer {r.email}", t) for r in self.oversight.reviewers for t in r.tasks]
        named += [("oversight.review.tasks", t) for t in self.oversight.review.tasks]
        unknown = [f"{where}: {t!r}" for where, t in named if t not in ids]
        if unknown:
            raise ValueError(f"oversight names tasks the plan does not have: {'; '.join(unknown)}")
        if self.traffic is not None:
            unknown = [
                f"traffic.routes[{i}].task {r.task!r}" for i, r in enumerate(self.traffic.routes) if r.task not in ids
            ]
            if unknown:
                raise ValueError(f"{', '.join(unknown)}: no such task; expected one of {', '.join(ids)}")
        if self.reports is not None:
            routes = {r.name: r for r in self.alerts.routes}
            route = routes.get(self.reports.route)
            if route is None:
                raise ValueError(
                    f"reports.route {self.reports.route!r} is not one of alerts.routes: "
                    f"{', '.join(routes) or '(none defined)'}"
                )
            if route.type != "webhook":
                raise ValueError(
                    f"reports.route {self.reports.route!r} is a {route.type} route; report notices "
                    "go to a webhook route (they carry the period, hash and file location, not alerts)"
                )
        return self

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)


def _loc_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Walk the YAML node tree along a pydantic location to the line of the closest key.

    A missing field points at its parent's key, an unknown one at itself.
    """
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if pair is None:
                return line
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _message(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check its spelling)"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind in {
        "string_type",
        "int_type",
        "float_type",
        "bool_type",
        "list_type",
        "dict_type",
        "model_type",
        "int_parsing",
        "float_parsing",
        "bool_parsing",
        "literal_error",
        "enum",
    }:
        return f"{msg}, got {err.get('input')!r}"
    return msg


def parse_plan(text: str, source: str = "<plan>") -> Plan:
    """Validate plan text; raise PlanError listing every problem with its field path and line."""
    try:
        data, node = load_yaml(text)
    except UnsafeInput as exc:
        raise PlanError(source, [PlanIssue("", exc.message, exc.line)]) from None
    if not isinstance(data, dict):
        raise PlanError(source, [PlanIssue("", f"expected a mapping at the top level, got {type(data).__name__}", 1)])
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        issues = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            # Unknown keys: point at the key itself, which pydantic puts last in loc.
            issues.append(PlanIssue(_loc_path(loc), _message(err), _line_of(node, loc)))
        raise PlanError(source, issues) from None


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file. Relative canary paths resolve against the plan's folder."""
    path = Path(path)
    try:
        text = read_text(path, limit=MAX_YAML_BYTES)
    except OSError as exc:
        raise PlanError(str(path), [PlanIssue("", f"cannot read plan file: {exc.strerror}")]) from exc
    except UnsafeInput as exc:
        raise PlanError(str(path), [PlanIssue("", exc.message, exc.line)]) from None
    return parse_plan_at(text, path)


def parse_plan_at(text: str, path: str | Path) -> Plan:
    """Validate plan text as if read from ``path``: relative canary paths resolve against its folder.

    A plan recorded in the audit log is re-read this way, so a past period's report sees the
    plan exactly as the file said then.
    """
    path = Path(path)
    plan = parse_plan(text, str(path))
    tasks = []
    for t in plan.tasks:
        if t.canaries.path is not None and not t.canaries.path.is_absolute():
            t = t.model_copy(update={"canaries": CanarySource(path=(path.parent / t.canaries.path).resolve())})
        tasks.append(t)
    return plan.model_copy(update={"tasks": tasks})
