"""Tables owned by the monitor package: detector states, findings and the served-model history."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint, true
from sqlmodel import Field, SQLModel

from medmon.db import utcnow


class StreamStatus(str, Enum):
    ok = "ok"
    watching = "watching"  # evidence building up, not yet enough for an alarm
    degraded = "degraded"
    recovered = "recovered"


class DetectorState(SQLModel, table=True):
    """A stream's detector, persisted after every update so a restart decides the same way."""

    key: str = Field(primary_key=True)  # task:metric:direction
    task_id: str = Field(index=True)
    metric: str
    direction: str
    status: StreamStatus = StreamStatus.ok
    null_mean: float
    baseline_mean: float
    threshold: float
    evidence: float = 0.0
    n: int = 0
    recovery_runs: int = 0  # runs back on the null's side (two-sided detectors), or quiet runs once recovered
    recovery_obs: int = Field(default=0, sa_column_kwargs={"server_default": "0"})  # and their observations
    recovery: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # the recovery detector's state
    segment: int = 1
    state: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    updated_at: datetime = Field(default_factory=utcnow)
    detector: str = "mixture_sr"  # the class in medmon.monitor.detection.drift that ``state`` belongs to
    family: str = "quality"  # quality | operational (budgeted) or info (river, one-shot)
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # mu0, sigma2, margin, K...


class FindingRecord(SQLModel, table=True):
    """What a detector concluded, with its evidence."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    metric: str
    kind: str  # drift | model_change | recovered
    direction: str = ""
    statistic: float | None = None
    threshold: float | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    null_mean: float | None = None
    run_id: int | None = None
    summary: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ModelIdentity(SQLModel, table=True):
    """Each identity (served model, and fingerprint when the plan alerts on them) known for a task.

    A deployment may be a pool: several identities are current at once, each until it retires.
    """

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    served_model: str
    system_fingerprint: str | None = None
    first_seen: datetime = Field(default_factory=utcnow)
    run_id: int | None = None
    last_seen: datetime | None = None
    retired_at: datetime | None = None  # it left the pool (no share over a whole window)


class ProbeSlot(SQLModel, table=True):
    """One scheduled time of a task's probe, claimed once by whichever process runs it.

    The unique (task, time) pair is what keeps a restart, a standby taking over, a clock set
    back or a redelivered Celery message from probing the same scheduled time twice.
    """

    __table_args__ = (UniqueConstraint("task_id", "scheduled_for", name="uq_probeslot_task_time"),)

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    scheduled_for: datetime
    claimed_by: str = ""
    claimed_at: datetime = Field(default_factory=utcnow)
    attempts: int = 1
    run_id: int | None = None


class AuditEvent(SQLModel, table=True):
    """One entry of the append-only audit log, chained to the entry before it by its hash.

    ``hash`` is SHA-256 over the previous entry's hash and the canonical JSON of this entry's
    ``seq``, ``at``, ``kind``, ``actor``, ``subject`` and ``details`` (``medmon.monitor.governance.audit``), so
    an edited, deleted, inserted or reordered entry breaks the chain where it happened.
    """

    id: int | None = Field(default=None, primary_key=True)
    seq: int = Field(unique=True, index=True)
    at: datetime = Field(index=True)
    kind: str = Field(index=True)
    actor: str
    subject: str = ""
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    prev_hash: str
    hash: str


class AuditHead(SQLModel, table=True):
    """The audit log's single lock row: appends serialize on it, and it remembers the tail.

    Without it, deleting the newest entries would leave a shorter but valid-looking chain.
    """

    id: int = Field(default=1, primary_key=True)
    seq: int = 0
    hash: str = ""


class ChangeStatus(str, Enum):
    pending = "pending"  # recorded; its re-evaluation has not run yet
    reevaluated = "reevaluated"
    failed = "failed"  # the re-evaluation could not run (see the re-evaluation's error)


class ChangeRecord(SQLModel, table=True):
    """A change of model, fingerprint, prompt, workflow or judge for one task, detected or declared."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    kind: str  # model | fingerprint | prompt | workflow | judge
    source: str  # detected | declared
    actor: str
    note: str = ""
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    status: ChangeStatus = ChangeStatus.pending
    reevaluation_id: int | None = None
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ReevaluationStatus(str, Enum):
    running = "running"
    complete = "complete"
    failed = "failed"
    approved = "approved"  # adopted as the task's baseline by an owner


class Reevaluation(SQLModel, table=True):
    """The full canary set replayed after a change, compared with the baseline task by task."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    change_id: int | None = None
    run_id: int | None = None
    status: ReevaluationStatus = ReevaluationStatus.running
    repeats: int = 1
    n: int = 0
    n_errors: int = 0
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    baseline_id: int | None = None
    baseline_value: float | None = None
    baseline_ci_low: float | None = None
    baseline_ci_high: float | None = None
    difference: float | None = None
    min_score: float | None = None
    tolerated_drop: float | None = None
    passed: bool | None = None
    conclusive: bool | None = None
    reasons: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    served_model: str | None = None
    system_fingerprint: str | None = None
    cost_usd: float | None = None
    error: str | None = None
    started_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None
    approved_by: str | None = None
    approved_at: datetime | None = None
    approval_note: str | None = None
    new_baseline_id: int | None = None


class BurnIn(SQLModel, table=True):
    """The go-live reference built from the canaries replayed after go-live (or after a passed
    re-evaluation): ``instances`` maps canary id to ``[n, sum, sum of squares, shortest output,
    longest output, cost and latency samples]`` (``medmon.monitor.detection.drift.reference``) and
    keeps growing from quiet runs; ``reference`` is the table as of the last stage (what the streams
    test against), ``stage`` counts its doublings. ``version`` grows with each restart."""

    task_id: str = Field(primary_key=True)
    version: int = 1
    runs: int = 5
    complete: bool = False
    instances: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    reference: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    stage: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    alpha: float | None = None  # the margin's error, fixed at completion (baseline_alpha / tasks then)
    started_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None

    def restart(self, now: datetime) -> None:
        """Build the reference again (a new version): a new approved model, or one still being built."""
        self.version, self.instances, self.complete, self.started_at, self.completed_at = (
            self.version + 1,
            {},
            False,
            now,
            None,
        )
        self.reference, self.stage, self.alpha = {}, 0, None


class DriftReport(SQLModel, table=True):
    """An evidently data-drift report of output descriptors: reference window against recent window."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    reference_from: datetime | None = None
    reference_to: datetime | None = None
    current_from: datetime | None = None
    current_to: datetime | None = None
    n_reference: int = 0
    n_current: int = 0
    columns: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    drifted: list[str] = Field(default_factory=list, sa_column=Column(JSON))  # columns evidently flagged
    summary: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # per column: method, score, drift
    html: str = ""  # the report itself, unless it was written to a file (``html_path``)
    html_path: str = ""
    json_text: str = ""


class ReviewItem(SQLModel, table=True):
    """One stored answer queued for one named reviewer (a double-reviewed answer has two items).

    ``stratum`` says why it was drawn (subgroup, jury-score band, judges agreeing or not) and
    ``stratum_size`` how many candidates that stratum held, so estimates can be reweighted.
    ``inclusion_probability`` is the known chance the answer was drawn with under active selection
    (``medmon.monitor.governance.selection``), which the clinician-scale estimators weight by;
    None for an answer drawn by the stratified quota, whose chance is not known per answer.
    """

    __table_args__ = (UniqueConstraint("result_id", "reviewer", name="uq_reviewitem_result_reviewer"),)

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    result_id: int = Field(index=True)
    reviewer: str = Field(index=True)  # e-mail, lower case
    week: str = Field(index=True)  # ISO week the item counts against, e.g. 2026-W48
    stratum: str = ""
    stratum_size: int = 0
    double: bool = False
    status: str = "open"  # open | done
    queued_at: datetime = Field(default_factory=utcnow, index=True)
    inclusion_probability: float | None = None


class ClinicianReview(SQLModel, table=True):
    """A clinician's rating of one answer on the jury's own rubric (same criteria and scale)."""

    __table_args__ = (UniqueConstraint("result_id", "reviewer", name="uq_clinicianreview_result_reviewer"),)

    id: int | None = Field(default=None, primary_key=True)
    item_id: int | None = Field(default=None, index=True)
    task_id: str = Field(index=True)
    result_id: int = Field(index=True)
    reviewer: str = Field(index=True)
    scores: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # criterion -> score
    note: str = ""
    safety_concern: bool = False
    created_at: datetime = Field(default_factory=utcnow, index=True)


class AgreementRecord(SQLModel, table=True):
    """One point of a jury-validation stream: a statistic for (task, criterion) at a time."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    criterion: str
    statistic: str  # jury_icc | jury_alpha | reviewer_icc | reviewer_alpha | bias[<judge>]
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    created_at: datetime = Field(default_factory=utcnow, index=True)


class SafetyEvent(SQLModel, table=True):
    """A possible harm: what happened, the evidence as it stood, the reporting clock and the decision."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    severity: str  # death | widespread | serious | non_serious
    what_happened: str
    source: str  # review | incident | alert | person
    source_ref: str = ""  # e.g. review:12, incident:3, alert:7
    opened_by: str
    opened_at: datetime = Field(default_factory=utcnow, index=True)
    aware_at: datetime = Field(default_factory=utcnow)  # the clock starts here
    jurisdiction: str = ""
    device_status: str = ""
    clock: str = ""  # the deadline that applies, e.g. '15d', '' for none
    due_at: datetime | None = None
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # frozen when opened
    status: str = "open"  # open | reported | closed
    reported_at: datetime | None = None
    report_reference: str = ""
    decision: str = ""
    decided_by: str = ""
    decided_at: datetime | None = None


class CorrectiveAction(SQLModel, table=True):
    """What will be done about a safety event, by whom and by when; closed only by a passing check."""

    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(foreign_key="safetyevent.id", index=True)
    task_id: str
    description: str
    owner: str
    due_at: datetime
    created_by: str
    created_at: datetime = Field(default_factory=utcnow)
    status: str = "open"  # open | closed
    check_reevaluation_id: int | None = None  # the passing re-evaluation that closed it
    closed_by: str = ""
    closed_at: datetime | None = None


class NearMiss(SQLModel, table=True):
    """Something that could have harmed and did not, recorded against a task."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    what: str
    recorded_by: str
    result_id: int | None = None
    created_at: datetime = Field(default_factory=utcnow, index=True)


class Suspension(SQLModel, table=True):
    """A task switched off through the plan's suspend route, and how it came back."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    status: str = "pending"  # pending (awaiting a second owner) | suspended | failed | resumed
    reason: str
    requested_by: str
    requested_at: datetime = Field(default_factory=utcnow)
    confirmed_by: str = ""
    suspended_at: datetime | None = None
    route_error: str = ""
    resumed_by: str = ""
    resumed_at: datetime | None = None
    resume_basis: str = ""  # reevaluation:<id> | decision:<text>


class BaselinePin(SQLModel, table=True):
    """The baseline a task is compared with from ``pinned_at`` on: imports alone never change it.

    The first comparison pins the baseline found then (``source="go-live"``, by ``medmon``);
    afterwards only an owner's approval pins another (an imported baseline or an adopted
    re-evaluation), with the approver and the rationale. The newest pin before a time is the
    baseline that was in force then, so a past period's report is judged against it.
    """

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    baseline_id: int = Field(foreign_key="baseline.id")
    source: str  # go-live | approved | reevaluation
    actor: str
    rationale: str = ""
    pinned_at: datetime = Field(default_factory=utcnow, index=True)


class TrafficSpan(SQLModel, table=True):
    """One call of the deployed application, received as an OpenTelemetry GenAI span.

    ``task_id`` is None when no route of the plan matched (counted per model, never dropped).
    Text is stored redacted, and only where the plan stores text. ``streamed`` marks a span the
    detection pass has rolled up and fed to its task's streams.
    """

    __table_args__ = (UniqueConstraint("trace_id", "span_id", name="uq_trafficspan_trace_span"),)

    id: int | None = Field(default=None, primary_key=True)
    trace_id: str
    span_id: str
    task_id: str | None = Field(default=None, index=True)
    service: str = ""
    span_name: str = ""
    operation: str = ""
    request_model: str = ""
    response_model: str | None = None
    system_fingerprint: str | None = None
    started_at: datetime
    ended_at: datetime = Field(index=True)
    latency_s: float
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    error_type: str | None = None
    has_content: bool = False
    refused: bool | None = None  # None: the span carried no completion text to judge by
    prompt: str | None = None
    completion: str | None = None
    received_at: datetime = Field(default_factory=utcnow)
    streamed: bool = Field(default=False, index=True)
    judged: bool = False


# Upper bounds (seconds) of the latency histogram buckets of a rollup: ``latency_b0`` counts calls
# up to 0.1 s, ``latency_b11`` those over 120 s. Columns, not a list, so the database sums them.
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, float("inf"))


class TrafficRollup(SQLModel, table=True):
    """An hour of one task's traffic on one model (``task_id`` '' for unmatched calls): what the
    dashboard and reports read, kept after the raw spans expire."""

    hour: datetime = Field(primary_key=True)
    task_id: str = Field(primary_key=True)
    model: str = Field(primary_key=True)
    calls: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_sum_s: float = 0.0
    latency_max_s: float = 0.0
    latency_b0: int = 0
    latency_b1: int = 0
    latency_b2: int = 0
    latency_b3: int = 0
    latency_b4: int = 0
    latency_b5: int = 0
    latency_b6: int = 0
    latency_b7: int = 0
    latency_b8: int = 0
    latency_b9: int = 0
    latency_b10: int = 0
    latency_b11: int = 0
    truncated: int = 0
    with_content: int = 0
    refusals: int = 0


class TrafficRejection(SQLModel, table=True):
    """Spans refused at the door, counted per hour and reason (malformed, absurd, out of time...)."""

    hour: datetime = Field(primary_key=True)
    reason: str = Field(primary_key=True)
    count: int = 0


class TrafficReference(SQLModel, table=True):
    """What a task's traffic looked like over its reference period: the null of its traffic streams."""

    task_id: str = Field(primary_key=True)
    period_from: datetime
    period_to: datetime
    calls: int
    stats: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # per metric: median, share above
    models: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)


class TrafficJudgement(SQLModel, table=True):
    """The jury's reference-free verdict on one sampled real exchange."""

    id: int | None = Field(default=None, primary_key=True)
    span_id: int = Field(index=True)  # TrafficSpan.id
    task_id: str = Field(index=True)
    judged_at: datetime = Field(default_factory=utcnow, index=True)
    score: float | None = None  # mean over judges and criteria, on the jury's scale
    agreement: float | None = None
    scores: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # judge -> criterion -> score
    judge_cost_usd: float | None = None
    error: str | None = None  # PENDING while a receiver judges it in memory
    # False until the leader fed the verdict to the task's streams (judged in memory at ingest);
    # verdicts of stored text are fed where they are judged.
    streamed: bool = Field(default=True, index=True, sa_column_kwargs={"server_default": true()})


class ScheduledReport(SQLModel, table=True):
    """A period's scheduled committee report, written once: the period is the key.

    The service's leader inserts the row in the transaction that records the report and
    queues its notice, so a second replica, a restart or a clock set back finds the period done.
    """

    period: str = Field(primary_key=True)
    due_at: datetime
    generated_at: datetime
    generated_by: str
    sha256: str
    html_path: str
    pdf_path: str | None = None
    status: str = ""  # the report's digest status: "on track" or "attention needed"
    notification_id: int | None = None
