"""``medmon check``: everything that can be verified about a plan before it runs.

Beyond a valid schema, a plan is refused when a monitored task cannot be governed: it lacks an
accountable owner, an approval threshold (``thresholds.min_score``) or a baseline to compare
with. Each refusal names the task and what is missing. A plan with a ``governance`` section
is held to its own controls too: probes at least as often as its risk tier requires, the
MedHELM mapping it declares matches its tasks, and human review is described where a task
requires it. Without a governance section, every task's owner is the use case's clinical owner
(``plan_notes`` says so).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from medmon.baselines import categories, resolve
from medmon.baselines.errors import BaselineError
from medmon.db import resolve_url, session_scope, utcnow
from medmon.files import MAX_YAML_BYTES, UnsafeInput, load_yaml, read_text
from medmon.monitor.errors import MedmonError, PlanError, PlanIssue
from medmon.monitor.governance.change_control import record_plan_changes
from medmon.monitor.governance.effective import effective_tasks
from medmon.monitor.plan.context import TaskContext, baseline_in_force, load_context
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan, Task, _line_of, load_plan
from medmon.monitor.plan.routing import check_endpoints, check_routes, routing_issues, unreachable_alerts
from medmon.monitor.storage import make_engine
from medmon.probes.errors import UnknownScorer
from medmon.probes.jury import JURY_SCORER
from medmon.probes.redaction import RedactorError, load_redactor
from medmon.probes.scoring import get_scorer

_TASK_PATH = re.compile(r"^tasks\[(\d+)\]")
_CRON_HORIZON = timedelta(days=15)


def _raw(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        data, node = load_yaml(read_text(path, limit=MAX_YAML_BYTES))
        return (data if isinstance(data, dict) else {}), node
    except (OSError, UnsafeInput):
        return {}, None


def _task_ids(data: dict[str, Any]) -> list[str]:
    tasks = data.get("tasks")
    return (
        [str(t.get("id", f"#{i}")) if isinstance(t, dict) else f"#{i}" for i, t in enumerate(tasks or [])]
        if isinstance(tasks, list)
        else []
    )


def _named(issue: PlanIssue, ids: list[str]) -> PlanIssue:
    """Name the task an issue is about; say 'approval threshold' where the schema says 'missing'."""
    match = _TASK_PATH.match(issue.path)
    if not match or int(match.group(1)) >= len(ids):
        return issue
    task = ids[int(match.group(1))]
    rest = issue.path[match.end() :]
    if rest in (".thresholds", ".thresholds.min_score") and issue.message == "required field is missing":
        return PlanIssue(
            issue.path,
            f"task {task!r} has no approval threshold: set thresholds.min_score, the "
            "minimum score the deployment is judged by (in force once approved: medmon approvals go-live)",
            issue.line,
        )
    return PlanIssue(issue.path, f"task {task!r}: {issue.message}", issue.line)


def _raw_owner_issues(data: dict[str, Any], node: yaml.Node | None) -> list[PlanIssue]:
    """Owner refusals found in the raw file, so they are reported even when the schema fails."""
    if not isinstance(data.get("governance"), dict) or not isinstance(data.get("tasks"), list):
        return []
    issues = []
    for i, task in enumerate(data["tasks"]):
        if isinstance(task, dict) and not task.get("owner"):
            issues.append(_owner_issue(i, str(task.get("id", f"#{i}")), _line_of(node, ("tasks", i))))
    return issues


def _owner_issue(index: int, task_id: str, line: int | None) -> PlanIssue:
    return PlanIssue(
        f"tasks[{index}].owner",
        f"task {task_id!r} has no owner: name the person accountable for it "
        "({name, email}); a governance section needs one per task",
        line,
    )


def max_gap(schedule: str, interval: timedelta | None) -> timedelta:
    """The longest wait between two probes of a schedule (cron: over the next two weeks).

    Examples
    --------
    >>> max_gap("0 9 * * 1-5", None)  # weekdays at nine: Friday to Monday
    datetime.timedelta(days=3)
    """
    if interval is not None:
        return interval
    trigger = CronTrigger.from_crontab(schedule, timezone="UTC")
    start = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday: a fixed, reproducible window
    previous, fire, gap = None, trigger.get_next_fire_time(None, start), timedelta(0)
    while fire is not None and fire - start <= _CRON_HORIZON:
        if previous is not None:
            gap = max(gap, fire - previous)
        previous, fire = fire, trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
    return gap if previous is not None else _CRON_HORIZON


class _Database:
    """The plan's database, opened only when a check needs it and only if it already exists.

    A check never creates a database; tables missing from an older one are created only when
    the check is about to record the plan in the audit log.
    """

    def __init__(self, plan: Plan, engine: Engine | None, *, create_tables: bool) -> None:
        self.plan, self.engine, self.create_tables = plan, engine, create_tables
        self._owned, self._tried = False, engine is not None

    def get(self) -> Engine | None:
        if not self._tried:
            self._tried = True
            url = resolve_url(self.plan.storage.url)
            path = url.removeprefix("sqlite:///")
            if url.startswith("sqlite") and (url == "sqlite:///:memory:" or not Path(path).expanduser().exists()):
                return None
            try:
                self.engine, self._owned = make_engine(url, create=self.create_tables), True
            except MedmonError:
                return None
        return self.engine

    def close(self) -> None:
        if self._owned and self.engine is not None:
            self.engine.dispose()


def _stored_baseline(db: _Database, task: Task) -> bool:
    engine = db.get()
    if engine is None:
        return False
    try:
        with Session(engine) as session:
            return baseline_in_force(session, db.plan, task).baseline is not None
    except SQLAlchemyError:
        return False


def _has_baseline(ctx: TaskContext, db: _Database) -> bool:
    ref, card = ctx.task.baseline, ctx.pack_baseline
    return (
        (ref.value is not None and ref.n is not None)
        or ("value" in card and "n" in card)
        or _stored_baseline(db, ctx.task)
    )


def _governance_issues(plan: Plan, line: Callable[..., int | None]) -> list[PlanIssue]:
    gov = plan.governance
    if gov is None:
        return []
    issues = []
    tier = plan.use_case.risk_tier.value
    limit_text = gov.controls.max_probe_interval[tier]
    limit = parse_interval(limit_text)
    for i, task in enumerate(plan.tasks):
        if task.owner is None:
            issues.append(_owner_issue(i, task.id, line("tasks", i)))
        gap = max_gap(task.schedule, task.interval)
        if gap > limit:
            issues.append(
                PlanIssue(
                    f"tasks[{i}].schedule",
                    f"task {task.id!r} is probed only every "
                    f"{human_interval(gap)} ({task.schedule!r}) but risk tier {tier!r} requires at "
                    f"least every {limit_text} (governance.controls.max_probe_interval)",
                    line("tasks", i, "schedule"),
                )
            )
    if any(t.human_review_required for t in plan.tasks) and not gov.controls.human_review.strip():
        names = ", ".join(t.id for t in plan.tasks if t.human_review_required)
        issues.append(
            PlanIssue(
                "governance.controls.human_review",
                f"task(s) {names} require human review but the plan does not say who reviews what, and when",
                line("governance", "controls"),
            )
        )
    issues.extend(_mapping_issues(plan, line))
    return issues


def _mapping_issues(plan: Plan, line: Callable[..., int | None]) -> list[PlanIssue]:
    """Step 2: what the committee declared against what the tasks measure."""
    assert plan.governance is not None
    declared = plan.governance.medhelm
    entries = {t.id: resolve(t.benchmark) for t in plan.tasks}
    known_categories = {c["name"] for c in categories()}
    known_subcategories = {s for c in categories() for s in c["subcategories"]}
    issues = []

    def check(
        field: str, label: str, declared_values: list[str], derived: dict[str, str | None], known: set[str]
    ) -> None:
        if not declared_values:
            return
        where = line("governance", "medhelm", field)
        for value in declared_values:
            if known and value not in known:
                issues.append(PlanIssue(f"governance.medhelm.{field}", f"{value!r} is not a MedHELM {label}", where))
            elif value not in derived.values():
                issues.append(
                    PlanIssue(f"governance.medhelm.{field}", f"{value!r} is declared but no task measures it", where)
                )
        for task_id, mapped in derived.items():
            if mapped is not None and mapped not in declared_values:
                issues.append(
                    PlanIssue(
                        f"governance.medhelm.{field}",
                        f"task {task_id!r} maps to {mapped!r}, which the declared mapping leaves out",
                        where,
                    )
                )

    check(
        "categories",
        "category",
        declared.categories,
        {t: e.category for t, e in entries.items() if e.in_taxonomy},
        known_categories,
    )
    check(
        "subcategories",
        "subcategory",
        declared.subcategories,
        {t: e.subcategory for t, e in entries.items() if e.in_taxonomy},
        known_subcategories,
    )
    check("benchmarks", "benchmark", declared.benchmarks, {t.id: t.benchmark for t in plan.tasks}, set())
    return issues


def human_interval(gap: timedelta) -> str:
    """A gap as the plan would write it: '1h', '3d', '90s'."""
    seconds = gap.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def check_plan(
    path: Path, engine: Engine | None = None, *, record_by: str | None = None, require_env: bool = False
) -> Plan:
    """Load and validate a plan, then everything it refers to; raise PlanError with every issue.

    Parameters
    ----------
    path
        The plan file.
    engine
        The plan's database, to find imported or adopted baselines. Without one, the plan's
        database is opened if it already exists (a check never creates one).
    record_by
        When given (an actor), a plan that passes is recorded in the audit log if its text
        changed since it was last recorded: the diff and any threshold change, with who ran it.
    require_env
        Check the environment the plan will run in: every variable it names (endpoint keys and
        headers, route secrets) must be set. Otherwise unset endpoint variables are notes
        (``plan_notes``): a plan is often checked where its secrets are not.
    """
    data, node = _raw(path)
    ids = _task_ids(data)
    try:
        plan = load_plan(path)
    except PlanError as exc:
        named = [_named(i, ids) for i in exc.issues]
        extra = [i for i in _raw_owner_issues(data, node) if i.path not in {n.path for n in named}]
        raise PlanError(exc.source, named + extra) from None

    def line(*loc: object) -> int | None:
        return _line_of(node, tuple(loc))

    db = _Database(plan, engine, create_tables=record_by is not None)
    try:
        issues = _task_issues(plan, db, line) + _governance_issues(plan, line)
        issues += check_routes(plan, line=line, require_env=require_env) + routing_issues(plan, line=line)
        issues += _price_issues(plan, line) + receiver_issues(plan, line)
        if require_env:
            issues += check_endpoints(plan, line=line)
        try:
            load_redactor(plan.privacy.redactor)
        except RedactorError as exc:
            issues.append(
                PlanIssue("privacy.redactor", str(exc).removeprefix("privacy.redactor: "), line("privacy", "redactor"))
            )
        if issues:
            raise PlanError(str(path), issues)
        recorder = db.get() if record_by is not None else None
        if recorder is not None and record_by is not None:
            with session_scope(recorder) as session:
                record_plan_changes(session, path.read_text("utf-8"), str(path), record_by, utcnow())
    finally:
        db.close()
    return plan


MIN_TOKEN_CHARS = 32  # secrets.token_urlsafe(24) and longer; a guessable token is an open door


def receiver_issues(
    plan: Plan, line: Callable[..., int | None] = lambda *_: None, environ: Mapping[str, str] | None = None
) -> list[PlanIssue]:
    """A receiver anyone on the network may feed, a weak token, an application feeding no task."""
    t = plan.traffic
    if t is None or t.port is None:
        return []
    env = os.environ if environ is None else environ
    issues = []
    if not t.token_variables() and not is_loopback_host(t.host):
        issues.append(
            PlanIssue(
                "traffic.token_env",
                f"the receiver listens on {t.host} (not a loopback address) and takes no token: anyone who "
                "can reach it can write traffic; name a token variable",
                line("traffic", "token_env"),
            )
        )
    where = [("traffic.token_env", ("traffic", "token_env"), t.token_env)] + [
        (f"traffic.applications[{i}].token_env", ("traffic", "applications", i, "token_env"), a.token_env)
        for i, a in enumerate(t.applications)
    ]
    for path, loc, name in where:
        token = env.get(name) if name else None
        if token and (len(token) < MIN_TOKEN_CHARS or len(set(token)) < 10):
            issues.append(
                PlanIssue(
                    path,
                    f"the token in {name} is too weak ({len(token)} characters, {len(set(token))} distinct); "
                    f"use at least {MIN_TOKEN_CHARS} random characters "
                    "(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
                    line(*loc),
                )
            )
    ids = {task.id for task in plan.tasks}
    for i, app in enumerate(t.applications):
        for j, task_id in enumerate(app.tasks):
            if task_id not in ids:
                issues.append(
                    PlanIssue(
                        f"traffic.applications[{i}].tasks[{j}]",
                        f"application {app.name!r}: {task_id!r} is not a task of this plan",
                        line("traffic", "applications", i, "tasks", j),
                    )
                )
    return issues


def is_loopback_host(host: str) -> bool:
    if host.lower() in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _price_issues(plan: Plan, line: Callable[..., int | None]) -> list[PlanIssue]:
    """A routed (or the approved) model that ``traffic.prices`` does not price: its calls would cost nothing."""
    if plan.traffic is None:
        return []

    def path(loc: tuple[object, ...]) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")

    return [
        PlanIssue(
            path(loc),
            f"model {model!r} has no entry in traffic.prices: add its price, or an entry with "
            "'unpriced: true' if its calls cost nothing",
            line(*loc),
        )
        for loc, model in plan.traffic.unpriced_models(plan.deployment.model)
    ]


def _task_issues(plan: Plan, db: _Database, line: Callable[..., int | None]) -> list[PlanIssue]:
    issues: list[PlanIssue] = []
    for i, task in enumerate(plan.tasks):
        try:
            ctx = load_context(plan, task)
        except BaselineError as exc:
            issues.append(PlanIssue(f"tasks[{i}].canaries", f"task {task.id!r}: {exc}", line("tasks", i, "canaries")))
            continue
        if ctx.scorer == JURY_SCORER:
            if plan.jury is None:
                issues.append(
                    PlanIssue(
                        f"tasks[{i}].scorer",
                        "task is scored by the LLM jury ('jury') but the plan "
                        "has no 'jury' section; add one with at least one judge endpoint",
                    )
                )
        else:
            try:
                get_scorer(ctx.scorer)
            except UnknownScorer as exc:
                issues.append(PlanIssue(f"tasks[{i}].scorer", str(exc)))
        if not _has_baseline(ctx, db):
            where = resolve_url(plan.storage.url) if db.get() is not None else "the plan's database (not created yet)"
            issues.append(
                PlanIssue(
                    f"tasks[{i}].baseline",
                    f"task {task.id!r} has no baseline for benchmark "
                    f"{task.benchmark!r}: give baseline {{value, n}}, use a canary pack with a "
                    f"baseline card, or import one with 'medmon baseline import' into {where}",
                    line("tasks", i),
                )
            )
    return issues


def plan_notes(plan: Plan) -> list[str]:
    """What a passing plan should still hear: defaults it relies on and evidence it lacks."""
    notes = []
    if plan.governance is None:
        notes.append(
            f"no governance section: every task's owner defaults to the clinical owner "
            f"{plan.owners.clinical.email}, and probe frequency is not checked against the risk tier"
        )
    else:
        if plan.governance.local_validation is None:
            notes.append("governance.local_validation is empty: the thresholds rest on no stated local data")
        if plan.governance.approval is None:
            notes.append("governance.approval is empty: the plan does not say who approved it for go-live")
    for task in plan.tasks:
        entry = resolve(task.benchmark)
        if not entry.in_taxonomy:
            notes.append(f"task {task.id!r}: benchmark {task.benchmark!r} is outside the MedHELM taxonomy")
        if task.decoding is not None and task.decoding.overrides():
            shown = ", ".join(f"{k} {v!r}" for k, v in task.decoding.overrides().items())
            notes.append(
                f"task {task.id!r}: decoding overridden by the plan ({shown}); canaries from a HELM run "
                "are not replayed with the settings their baseline was produced with"
            )
    if plan.service.executor == "celery":
        from medmon.monitor.plan.timeouts import longest_probe_s, visibility_timeout_of

        broker = os.environ.get(plan.service.broker_url_env, "")
        parts = urlsplit(broker) if broker else None
        if parts is not None and not parts.password and not is_loopback_host(parts.hostname or ""):
            notes.append(
                f"{plan.service.broker_url_env}: the Celery broker at {parts.hostname} is reached without a "
                "password: anyone who can reach it can queue probes; set one (redis://:PASSWORD@host:6379/0, "
                "Redis requirepass) from the environment"
            )

        if longest_probe_s(plan) >= visibility_timeout_of(plan):
            notes.append(
                f"service.visibility_timeout ({plan.service.visibility_timeout}) is shorter than the longest "
                f"probe can take (about {longest_probe_s(plan):.0f}s when every call times out): a slow "
                "probe's message would be handed to a second worker while the first still runs"
            )
    unset = check_endpoints(plan) + [i for i in check_routes(plan, require_env=True) if i.message.endswith("not set")]
    for issue in unset:
        notes.append(
            f"{issue.path}: {issue.message} here; 'serve' and 'probe run' refuse to start without it "
            "(check the environment it runs in with --require-env)"
        )
    if plan.privacy.redactor == "none" and plan.privacy.store_text:
        notes.append("privacy: answers are stored without redaction")
    reviewed = {t for r in plan.oversight.reviewers for t in r.tasks}
    for task in plan.tasks:
        if task.human_review_required and task.id not in reviewed:
            notes.append(
                f"task {task.id!r} requires human review but no reviewer in oversight.reviewers is "
                "assigned to it: none of its answers will be queued"
            )
    if plan.alerts.allow_unrouted:
        lost = unreachable_alerts(plan)
        if lost:
            notes.append(
                f"alerts.allow_unrouted: {len(lost)} (task, severity) combination(s) reach no route and are "
                "seen only on the dashboard: " + ", ".join(f"({t}, {s})" for t, s in lost)
            )
    notes.extend(_traffic_notes(plan))
    return notes


def threshold_notes(plan: Plan, engine: Engine | None = None) -> list[str]:
    """Each threshold edit of the plan that no owner has approved: proposed, while the approved value judges.

    Read from the plan's database (opened only if it exists); none without one.
    """
    db = _Database(plan, engine, create_tables=False)
    try:
        found = db.get()
        if found is None:
            return []
        with Session(found) as session:
            return [s for e in effective_tasks(session, plan) for s in e.proposal_sentences()]
    except SQLAlchemyError:
        return []
    finally:
        db.close()


def _traffic_notes(plan: Plan) -> list[str]:
    """Real traffic that would silently go unwatched or unjudged."""
    t = plan.traffic
    if t is None:
        return []
    notes = []
    if t.port is not None and not is_loopback_host(t.host):
        notes.append(
            f"traffic.host {t.host} is not a loopback address: the receiver speaks plain HTTP, so bearer tokens "
            "and any message content cross the network unencrypted unless a TLS-terminating proxy or "
            "Collector sits in front of it (see docs/security.md)"
        )
    if not t.routes:
        notes.append(
            "traffic.routes is empty: every call received is counted as unmatched, no task's traffic is watched"
        )
    if t.judging is not None:
        if plan.jury is None:
            notes.append("traffic.judging is set but the plan has no jury: real answers are not judged")
        elif not any(j.phi_allowed for j in plan.jury.judges):
            notes.append(
                "traffic.judging is set but no judge is marked phi_allowed: real answers (which may hold "
                "patient data) go to none, so none is judged"
            )
        if not plan.privacy.store_text:
            notes.append("traffic.judging is set but privacy.store_text is false: no text is kept to judge")
    return notes
