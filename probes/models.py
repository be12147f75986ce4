"""Tables owned by the probes package: probe runs, each canary's result, and the jury's ledger.

``JudgeCall`` is one judge's call on one result (its parse status and its own tokens and cost:
the judges' ledger, never mixed into the production model's cost); ``JuryVerdict`` is one
judge x criterion score of that call. Keeping the ledger on the call, not on each criterion
row, means summing judge cost counts every call once.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, TypedDict

from sqlalchemy import JSON, Column, Index
from sqlmodel import Field, SQLModel

from medmon.db import utcnow


class RunStatus(str, Enum):
    running = "running"
    complete = "complete"
    interrupted = "interrupted"
    failed = "failed"


class ProbeRun(SQLModel, table=True):
    """One scheduled execution of a task's canaries."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    deployment: str = "production"
    purpose: str = "scheduled"  # scheduled | reevaluation | burn-in | manual
    status: RunStatus = RunStatus.running
    started_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None
    n_canaries: int = 0
    n_errors: int = 0
    mean_score: float | None = None
    error: str | None = None
    # What produced the results: the canaries' content hash, the hash of the system prompt and
    # decoding settings sent, and the scorer with the medmon version that implements it.
    pack_sha256: str = Field(default="", sa_column_kwargs={"server_default": ""})
    prompt_sha256: str = Field(default="", sa_column_kwargs={"server_default": ""})
    scorer_version: str = Field(default="", sa_column_kwargs={"server_default": ""})


class Provenance(TypedDict, total=False):
    """A run's provenance columns, as ``start_run`` and ``execute_probe`` take them."""

    pack_sha256: str
    prompt_sha256: str
    scorer_version: str


class ParseStatus(str, Enum):
    """What became of a judge's answer: parsed first time, parsed when asked again, never, or no answer."""

    ok = "ok"
    retried_ok = "retried_ok"
    unparsed = "unparsed"
    failed = "failed"


class ProbeResultBase(SQLModel):
    task_id: str = Field(index=True)
    canary_id: str
    pack: str = ""
    benchmark: str = ""
    scorer: str = ""
    score: float | None = None  # None when the call failed or the answer could not be read
    correct: bool | None = None
    parsed: bool | None = None  # False: the scorer could not read an answer (format drift); None: no reading
    extracted: str | None = None  # what the scorer read (a letter, a number, codes), for review
    parse_reason: str | None = None  # the rule that read it, or why nothing could be read
    read_path: str | None = None  # which path decided the score: "rules", "reader model" or "none"
    reader_extracted: str | None = None  # what the plan's reader model read, when it was asked
    reader_reason: str | None = None  # why the reader model read nothing, or "reader model"
    reader_agrees: bool | None = None  # rules and reader model both read it: did they agree?
    answer: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None  # part of completion_tokens (billed, not shown)
    cost_usd: float | None = None
    latency_s: float | None = None  # the call's wall time: every attempt, backoff and wait
    attempt_latency_s: float | None = None  # the last attempt's own time
    finish_reason: str | None = None
    requested_model: str = ""
    served_model: str | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None
    error: str | None = None
    http_status: int | None = None  # of the call's first real error (the cause, even if the breaker refused a retry)
    refused: bool = False
    attempts: int | None = None
    jury_mean: float | None = None  # on the judges' scale (e.g. 1-5); ``score`` holds it normalised
    jury_judges: int | None = None  # judges whose verdict was valid
    jury_agreement: float | None = None  # 1 - mean pairwise |difference| / scale width
    jury_unanimous: bool | None = None
    baseline_score: float | None = None
    tags: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ProbeResult(ProbeResultBase, table=True):
    """One canary's answer with its score, tokens, cost, latency and the served model's identity."""

    # A task's newest results (the dashboard's recent estimate and answers) without walking
    # every other task's rows: PostgreSQL cannot order the single-column task index by id.
    __table_args__ = (Index("ix_proberesult_task_id_id", "task_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="proberun.id", index=True)


class ProbeRecord(ProbeResultBase):
    """A result as the runner returns it, before storage; ``jury`` holds the jury's outcome, if judged."""

    jury: Any = Field(default=None, exclude=True)


class JudgeCall(SQLModel, table=True):
    """One judge's call(s) on one result: parse status and the judge's own token and cost ledger."""

    id: int | None = Field(default=None, primary_key=True)
    result_id: int = Field(foreign_key="proberesult.id", index=True)
    task_id: str = Field(index=True)
    judge: str = Field(index=True)
    model: str = ""
    parse_status: ParseStatus
    asks: int = 1  # 2 when the first answer was malformed and the judge was asked again
    attempts: int = 0  # HTTP attempts over both asks, retries included
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow, index=True)


class JuryVerdict(SQLModel, table=True):
    """One judge x criterion score of a result (``score`` is None when the verdict is unparsed or failed)."""

    id: int | None = Field(default=None, primary_key=True)
    result_id: int = Field(foreign_key="proberesult.id", index=True)
    call_id: int = Field(foreign_key="judgecall.id", index=True)
    task_id: str = Field(index=True)
    judge: str = Field(index=True)
    criterion: str
    score: int | None = None
    explanation: str | None = None  # truncated to 500 characters
    parse_status: ParseStatus
    created_at: datetime = Field(default_factory=utcnow, index=True)
