"""Tables owned by the baselines package."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from medmon.db import utcnow


class Baseline(SQLModel, table=True):
    """Pre-deployment evidence for (benchmark, model, metric), versioned by source content.

    ``value`` is on the benchmark's own scale (HELM does not normalise: jury scores are 1-5);
    ``normalized`` maps it to [0, 1] so every stream compares like with like.
    """

    __table_args__ = (UniqueConstraint("benchmark", "model", "metric", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    benchmark: str = Field(index=True)
    model: str = Field(index=True)
    metric: str
    split: str = "test"
    value: float
    normalized: float
    scale_min: float = 0.0
    scale_max: float = 1.0
    n: int
    ci_low: float
    ci_high: float
    replicates: int = 1
    category: str = ""
    subcategory: str | None = None
    in_taxonomy: bool = True
    source_kind: str = "manual"  # helm | manual | pack | reevaluation
    source_path: str = ""
    source_sha256: str = ""
    source_files: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    suite: str = ""
    version: int = 1
    approved_by: str | None = None
    imported_at: datetime = Field(default_factory=utcnow)
    # The source's completions scored again by medmon (``medmon.baselines.rescore``): medmon's value
    # in [0, 1] over the instances it could read, how many it could not read, and how many
    # instances HELM and medmon score differently out of ``compared``.
    rescored_value: float | None = None
    rescored_n: int | None = None
    rescored_unparsed: int | None = None
    disagreements: int | None = None
    compared: int | None = None

    @property
    def disagreement_rate(self) -> float | None:
        """Share of instances HELM and medmon score differently, when the source was re-scored."""
        if self.disagreements is None or not self.compared:
            return None
        return self.disagreements / self.compared

    @property
    def detector_normalized(self) -> float:
        """The [0, 1] value detectors compare with: medmon's re-score when there is one.

        Production answers are scored by medmon, so the baseline they are compared with must be
        scored the same way; HELM's own figure stays the approval evidence (``value``).
        """
        return self.rescored_value if self.rescored_value is not None else self.normalized


class BaselineInstance(SQLModel, table=True):
    """One instance's baseline score: what paired drift tests compare each canary with."""

    __table_args__ = (UniqueConstraint("baseline_id", "instance_id"),)

    id: int | None = Field(default=None, primary_key=True)
    baseline_id: int = Field(foreign_key="baseline.id", index=True)
    instance_id: str
    score: float  # the source's own score (HELM's metric)
    runs: int = 1
    medmon_score: float | None = None  # medmon's scorer on the source's completions, over the trials it read
    # trials whose completion medmon could not read
    medmon_unparsed: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class CanaryRecord(SQLModel, table=True):
    """One canary of a pack imported with a baseline (a HELM run's instance), stored as JSON.

    ``canary`` is the canary's JSONL object (``medmon.baselines.canary``); ``jury`` holds the per-judge,
    per-criterion baseline scores ``{judge: {criterion: score}}`` for jury-scored benchmarks.
    """

    __table_args__ = (UniqueConstraint("baseline_id", "canary_id"),)

    id: int | None = Field(default=None, primary_key=True)
    baseline_id: int = Field(foreign_key="baseline.id", index=True)
    canary_id: str
    pack: str = Field(default="", index=True)
    benchmark: str = Field(default="", index=True)
    canary: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    replayable: bool = True
    jury: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))


class LeaderboardEntry(SQLModel, table=True):
    """One numeric cell of a helm-summarize table (``groups/<group>.json``): leaderboard context.

    ``model`` is the row's display name and ``model_name`` HELM's model name when the suite's
    ``schema.json`` maps it; ``run_group``/``metric`` are the column's display names and
    ``benchmark`` the schema group they resolve to. ``mean_win_rate`` is medmon's computation
    (``medmon.baselines.win_rate``); ``published_mean_win_rate`` is HELM's cell, when it wrote one.
    """

    __table_args__ = (UniqueConstraint("suite", "group", "table_title", "model", "column", "source_sha256"),)

    id: int | None = Field(default=None, primary_key=True)
    suite: str = Field(index=True)
    group: str = Field(index=True)
    table_title: str
    model: str
    model_name: str | None = None
    column: str
    run_group: str | None = None
    metric: str | None = None
    benchmark: str | None = Field(default=None, index=True)
    value: float
    lower_is_better: bool | None = None
    mean_win_rate: float | None = None
    published_mean_win_rate: float | None = None
    run_specs: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    source_path: str = ""
    source_sha256: str = ""
    imported_at: datetime = Field(default_factory=utcnow)
