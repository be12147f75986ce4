"""Recording and finding baselines: versioned, never overwritten."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from medmon.baselines.canary import Canary, canary_from_dict
from medmon.baselines.interval import wilson_interval
from medmon.baselines.models import Baseline, BaselineInstance, CanaryRecord, LeaderboardEntry
from medmon.baselines.taxonomy import resolve


@dataclass
class BaselineFigures:
    """What a source says about one (benchmark, model, metric) before it is stored."""

    benchmark: str
    model: str
    metric: str
    value: float
    n: int
    scale_min: float = 0.0
    scale_max: float = 1.0
    ci: tuple[float, float] | None = None
    split: str = "test"
    replicates: int = 1
    source_kind: str = "manual"
    source_path: str = ""
    source_sha256: str = ""
    source_files: dict[str, Any] = field(default_factory=dict)
    suite: str = ""
    instances: dict[str, tuple[float, int]] = field(default_factory=dict)
    # medmon's scores of the source's own completions (``medmon.baselines.rescore``)
    medmon_instances: dict[str, tuple[float | None, int]] = field(default_factory=dict)
    rescored_value: float | None = None
    rescored_n: int | None = None
    rescored_unparsed: int | None = None
    disagreements: int | None = None
    compared: int | None = None

    @property
    def normalized(self) -> float:
        return (self.value - self.scale_min) / (self.scale_max - self.scale_min)


def record_baseline(session: Session, figures: BaselineFigures) -> tuple[Baseline, bool]:
    """Store a baseline; returns ``(baseline, created)``.

    The same source content (same SHA-256) returns the existing row unchanged, so importing the
    same files twice changes nothing; different content adds the next version and keeps the old.
    """
    existing = session.exec(
        select(Baseline)
        .where(
            Baseline.benchmark == figures.benchmark, Baseline.model == figures.model, Baseline.metric == figures.metric
        )
        .order_by(col(Baseline.version).desc())
    ).all()
    for row in existing:
        if figures.source_sha256 and row.source_sha256 == figures.source_sha256:
            return row, False
        if (
            not figures.source_sha256
            and row.value == figures.value
            and row.n == figures.n
            and row.source_kind == figures.source_kind
        ):
            return row, False
    entry = resolve(figures.benchmark)
    span = figures.scale_max - figures.scale_min
    ci = figures.ci
    if ci is None:
        lo, hi = wilson_interval(figures.normalized, figures.n)
        ci = (figures.scale_min + lo * span, figures.scale_min + hi * span)
    baseline = Baseline(
        benchmark=figures.benchmark,
        model=figures.model,
        metric=figures.metric,
        split=figures.split,
        value=figures.value,
        normalized=figures.normalized,
        scale_min=figures.scale_min,
        scale_max=figures.scale_max,
        n=figures.n,
        ci_low=ci[0],
        ci_high=ci[1],
        replicates=figures.replicates,
        category=entry.category,
        subcategory=entry.subcategory,
        in_taxonomy=entry.in_taxonomy,
        source_kind=figures.source_kind,
        source_path=figures.source_path,
        source_sha256=figures.source_sha256,
        source_files=figures.source_files,
        suite=figures.suite,
        version=(existing[0].version + 1) if existing else 1,
        rescored_value=figures.rescored_value,
        rescored_n=figures.rescored_n,
        rescored_unparsed=figures.rescored_unparsed,
        disagreements=figures.disagreements,
        compared=figures.compared,
    )
    session.add(baseline)
    session.flush()
    assert baseline.id is not None
    medmon = figures.medmon_instances
    rows = [
        {
            "baseline_id": baseline.id,
            "instance_id": instance_id,
            "score": score,
            "runs": runs,
            "medmon_score": medmon.get(instance_id, (None, 0))[0],
            "medmon_unparsed": medmon.get(instance_id, (None, 0))[1],
        }
        for instance_id, (score, runs) in figures.instances.items()
    ]
    if rows:  # one bulk insert: tens of thousands of instances in well under a second
        session.execute(insert(BaselineInstance), rows)
    return baseline, True


def latest_baseline(
    session: Session, benchmark: str, model: str | None = None, metric: str | None = None
) -> Baseline | None:
    """The newest version for a benchmark (and model, metric when given)."""
    query = select(Baseline).where(Baseline.benchmark == benchmark)
    if model:
        query = query.where(Baseline.model == model)
    if metric:
        query = query.where(Baseline.metric == metric)
    return session.exec(query.order_by(col(Baseline.version).desc(), col(Baseline.id).desc())).first()


def list_baselines(session: Session) -> list[Baseline]:
    """Every stored baseline version, grouped by benchmark."""
    return list(
        session.exec(select(Baseline).order_by(Baseline.benchmark, Baseline.model, col(Baseline.version))).all()
    )


def instance_scores(session: Session, baseline_id: int, *, scored_by: str = "helm") -> dict[str, float]:
    """Per-instance baseline scores: HELM's own (``scored_by="helm"``) or medmon's re-scores (``"medmon"``)."""
    rows = session.exec(select(BaselineInstance).where(BaselineInstance.baseline_id == baseline_id)).all()
    if scored_by == "medmon":
        return {r.instance_id: r.medmon_score for r in rows if r.medmon_score is not None}
    return {r.instance_id: r.score for r in rows}


def baseline_versions(session: Session, benchmark: str) -> list[Baseline]:
    """Every stored version for a benchmark, by model, metric and version."""
    query = select(Baseline).where(Baseline.benchmark == benchmark)
    return list(session.exec(query.order_by(Baseline.model, Baseline.metric, col(Baseline.version))).all())


def _canary_object(canary: Canary) -> dict[str, Any]:
    """The canary's JSONL object (what ``Canary.to_json`` writes), built without a JSON round trip."""
    data: dict[str, Any] = {}
    for f in fields(canary):
        value = getattr(canary, f.name)
        if isinstance(value, tuple):
            value = [dict(v) if isinstance(v, dict) else v for v in value]
        elif isinstance(value, dict):
            value = dict(value)
        if value not in (None, "", {}, []):
            data[f.name] = value
    return data | {"id": canary.id}


def record_canaries(
    session: Session, baseline_id: int, canaries: list[Canary], *, jury: dict[str, dict[str, Any]] | None = None
) -> int:
    """Store a baseline's canary pack (one bulk insert); returns how many were written.

    ``jury`` maps a canary id to its per-judge, per-criterion baseline scores.
    """
    rows = [
        {
            "baseline_id": baseline_id,
            "canary_id": c.id,
            "pack": c.pack,
            "benchmark": c.benchmark,
            "canary": _canary_object(c),
            "replayable": c.replayable,
            "jury": (jury or {}).get(c.id),
        }
        for c in canaries
    ]
    if rows:
        session.execute(insert(CanaryRecord), rows)
    return len(rows)


def canaries_for_baseline(session: Session, baseline_id: int) -> list[Canary]:
    """The canary pack imported with a baseline, in canary id order."""
    query = select(CanaryRecord).where(CanaryRecord.baseline_id == baseline_id).order_by(CanaryRecord.canary_id)
    return [canary_from_dict(r.canary, where=f"canary_record {r.id}") for r in session.exec(query).all()]


def jury_detail(session: Session, baseline_id: int) -> dict[str, dict[str, Any]]:
    """Per-canary ``{judge: {criterion: score}}`` baseline jury scores, where recorded."""
    query = select(CanaryRecord).where(CanaryRecord.baseline_id == baseline_id, col(CanaryRecord.jury).is_not(None))
    return {r.canary_id: dict(r.jury or {}) for r in session.exec(query).all()}


def record_leaderboard(session: Session, entries: list[LeaderboardEntry]) -> int:
    """Store leaderboard entries whose source file content is new; returns how many were added.

    A group file already imported with the same SHA-256 adds nothing; a changed file adds its
    entries beside the old ones (``imported_at`` tells them apart).
    """
    columns = (LeaderboardEntry.suite, LeaderboardEntry.group, LeaderboardEntry.source_sha256)
    known = {tuple(row) for row in session.exec(select(*columns).distinct()).all()}
    fresh = [e for e in entries if (e.suite, e.group, e.source_sha256) not in known]
    session.add_all(fresh)
    session.flush()
    return len(fresh)


def leaderboard_entries(
    session: Session, *, suite: str | None = None, benchmark: str | None = None, group: str | None = None
) -> list[LeaderboardEntry]:
    """Stored leaderboard cells, filtered by suite, benchmark (schema group) or group file."""
    query = select(LeaderboardEntry)
    if suite:
        query = query.where(LeaderboardEntry.suite == suite)
    if benchmark:
        query = query.where(LeaderboardEntry.benchmark == benchmark)
    if group:
        query = query.where(LeaderboardEntry.group == group)
    query = query.order_by(LeaderboardEntry.group, LeaderboardEntry.table_title, col(LeaderboardEntry.id))
    return list(session.exec(query).all())
