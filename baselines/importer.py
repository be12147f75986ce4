"""Importing evidence: HELM/MedHELM output and manual score files, each in one transaction.

Every source is read and validated completely before anything is written, so bad input writes
nothing; a failure while writing rolls the session back. Nothing is committed here: the caller
commits (``medmon.monitor.storage.session_scope`` does both).

Re-importing the same files changes nothing (baselines are deduplicated by ``source_sha256``,
leaderboard cells by their group file's SHA-256); a different run of the same (benchmark, model,
metric) becomes the next version and the old one is kept. The files are hashed before anything is
parsed: when every run is already stored with the same digests the import reads no run again
(``medmon.baselines.helm_unchanged``), so re-importing an unchanged suite costs about the hashing.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from medmon.baselines.errors import HelmFormatError, NoMainMetric, NotHelmOutput
from medmon.baselines.helm import RunEvidence, read_run, read_run_spec
from medmon.baselines.helm_files import locate, run_source_files
from medmon.baselines.helm_merge import combine_runs
from medmon.baselines.helm_summary import read_group_tables
from medmon.baselines.helm_unchanged import split_stored
from medmon.baselines.manual import read_manual
from medmon.baselines.models import Baseline, CanaryRecord
from medmon.baselines.rescore import DISAGREEMENT_FLAG, Rescore, rescore_run
from medmon.baselines.store import record_baseline, record_canaries, record_leaderboard

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, label)`` after each run is read."""


@dataclass
class BaselineOutcome:
    """What an import did for one (benchmark, model, metric)."""

    benchmark: str
    model: str
    metric: str
    version: int
    baseline_id: int
    created: bool
    value: float
    normalized: float
    scale: tuple[float, float]
    n: int
    ci: tuple[float, float]
    category: str
    in_taxonomy: bool
    canaries: int = 0
    replayable: int = 0
    source_path: str = ""
    notes: list[str] = field(default_factory=list)
    rescored_value: float | None = None  # medmon's scorer on the source's completions, in [0, 1]
    disagreements: int | None = None
    compared: int | None = None
    rescored_unparsed: int | None = None

    @property
    def disagreement_rate(self) -> float | None:
        return self.disagreements / self.compared if self.disagreements is not None and self.compared else None

    @property
    def flagged(self) -> bool:
        """True when HELM and medmon disagree on more than ``DISAGREEMENT_FLAG`` of the instances."""
        rate = self.disagreement_rate
        return rate is not None and rate > DISAGREEMENT_FLAG


@dataclass
class SkippedRun:
    """A run left out of a suite import, and why (the error naming file and key)."""

    run_dir: str
    reason: str


@dataclass
class ImportReport:
    """The outcome of one import."""

    source: str
    kind: str
    suite: str = ""
    baselines: list[BaselineOutcome] = field(default_factory=list)
    skipped: list[SkippedRun] = field(default_factory=list)
    leaderboard_entries: int = 0

    @property
    def created(self) -> int:
        """How many new baseline versions were written."""
        return sum(b.created for b in self.baselines)

    @property
    def unchanged(self) -> int:
        """How many baselines were already stored with the same source content."""
        return sum(not b.created for b in self.baselines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, with the created/unchanged counts and each baseline's disagreement rate."""
        data = asdict(self) | {"created": self.created, "unchanged": self.unchanged}
        for row, outcome in zip(data["baselines"], self.baselines, strict=True):
            row |= {"disagreement_rate": outcome.disagreement_rate, "disagreement_flagged": outcome.flagged}
        return data


def _outcome(
    baseline: Baseline, created: bool, *, canaries: int = 0, replayable: int = 0, notes: list[str] | None = None
) -> BaselineOutcome:
    assert baseline.id is not None
    return BaselineOutcome(
        benchmark=baseline.benchmark,
        model=baseline.model,
        metric=baseline.metric,
        version=baseline.version,
        baseline_id=baseline.id,
        created=created,
        value=baseline.value,
        normalized=baseline.normalized,
        scale=(baseline.scale_min, baseline.scale_max),
        n=baseline.n,
        ci=(baseline.ci_low, baseline.ci_high),
        category=baseline.category,
        in_taxonomy=baseline.in_taxonomy,
        canaries=canaries,
        replayable=replayable,
        source_path=baseline.source_path,
        notes=list(notes or []),
        rescored_value=baseline.rescored_value,
        disagreements=baseline.disagreements,
        compared=baseline.compared,
        rescored_unparsed=baseline.rescored_unparsed,
    )


@contextmanager
def _shape_errors_named(run_dir: Path) -> Iterator[None]:
    """A value of a shape no check foresaw (a string where HELM writes a number, a list for an
    object) is reported against its run, as every other format error is, never as a traceback."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise HelmFormatError(run_dir, "<run>", f"unexpected value ({type(exc).__name__}: {str(exc)[:200]})") from exc


def _read_runs(
    runs: tuple[Path, ...],
    *,
    suite: str,
    model: str | None,
    strict: bool,
    progress: Progress | None,
    report: ImportReport,
    run_files: dict[Path, dict[str, str]],
    keep_completions: bool,
) -> list[RunEvidence]:
    evidence: list[RunEvidence] = []
    models_seen: set[str] = set()
    for done, run_dir in enumerate(runs, start=1):
        with _shape_errors_named(run_dir):
            spec = read_run_spec(run_dir)
            adapter = spec["adapter_spec"]
            models_seen.add(adapter["model"])
            if model is None or model in (adapter["model"], adapter.get("model_deployment")):
                try:
                    run = read_run(run_dir, suite=suite, run_spec=spec, source_files=run_files.get(run_dir))
                    if not keep_completions:  # only rescoring reads them: every run is held until stored
                        run.completions = {}
                    evidence.append(run)
                except NoMainMetric as exc:
                    if strict or len(runs) == 1:
                        raise
                    report.skipped.append(SkippedRun(run_dir=str(run_dir), reason=str(exc)))
        if progress is not None:
            progress(done, len(runs), run_dir.name)
    if model is not None and not evidence and not report.skipped:
        raise NotHelmOutput(
            runs[0].parent, "model", f"no run of model {model!r}; models: {', '.join(sorted(models_seen))}"
        )
    if not evidence and report.skipped:
        raise NoMainMetric(
            report.skipped[0].run_dir, "metrics", "no run has a usable main metric: " + report.skipped[0].reason
        )
    return evidence


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while JSON is parsed, restoring it afterwards.

    Parsed JSON is acyclic (reference counting frees it), but the collector's generation
    thresholds fire on every few hundred allocations and each full collection walks every object
    read so far: a third of a large suite's import time, for nothing to collect.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _unchanged_outcome(session: Session, baseline: Baseline) -> BaselineOutcome:
    assert baseline.id is not None
    total, replayable = session.exec(
        select(func.count(), func.coalesce(func.sum(case((col(CanaryRecord.replayable), 1), else_=0)), 0)).where(
            CanaryRecord.baseline_id == baseline.id
        )
    ).one()
    notes = ["unchanged since it was imported (every source file has the same SHA-256): not read again"]
    if not baseline.in_taxonomy:
        notes.append(f"benchmark {baseline.benchmark!r} is outside the MedHELM taxonomy")
    return _outcome(baseline, False, canaries=int(total), replayable=int(replayable), notes=notes)


def _read_unchanged_suite(
    stored: list[Baseline],
    unread: list[Path],
    *,
    suite: str,
    strict: bool,
    report: ImportReport,
    run_files: dict[Path, dict[str, str]],
) -> list[RunEvidence] | None:
    """``[]`` when the runs not held by ``stored`` all lack a usable main metric (each recorded as
    skipped), so the import has nothing new; ``None`` when one of them must be read in full."""
    for run_dir in unread:
        try:
            read_run(run_dir, suite=suite, source_files=run_files[run_dir])
        except NoMainMetric as exc:
            if strict:
                raise
            report.skipped.append(SkippedRun(run_dir=str(run_dir), reason=str(exc)))
            continue
        return None
    return []


def _matching_runs(runs: tuple[Path, ...], model: str | None) -> tuple[Path, ...]:
    if model is None:
        return runs
    matching = []
    for run_dir in runs:
        adapter = read_run_spec(run_dir)["adapter_spec"]
        if model in (adapter["model"], adapter.get("model_deployment")):
            matching.append(run_dir)
    return tuple(matching)


def _group(evidence: list[RunEvidence], suite_dir: Path) -> list[RunEvidence]:
    groups: dict[tuple[str, str, str], list[RunEvidence]] = {}
    for run in evidence:
        groups.setdefault((run.benchmark, run.model, run.metric.name), []).append(run)
    return [combine_runs(runs, suite_dir=suite_dir) for runs in groups.values()]


def import_helm_path(
    session: Session,
    path: Path | str,
    *,
    suite: str | None = None,
    model: str | None = None,
    progress: Progress | None = None,
    strict: bool = False,
    rescore: Rescore | None = None,
) -> ImportReport:
    """Import HELM or MedHELM output: a ``benchmark_output`` dir, a ``runs/<suite>`` dir or one run.

    Parameters
    ----------
    session
        Where to write; not committed here (see the module docstring).
    path
        The directory HELM wrote.
    suite
        Which suite under ``benchmark_output/runs`` (required when there are several); for
        other paths, the suite name to record instead of ``summary.json``'s.
    model
        Import only runs whose ``adapter_spec.model`` (or ``model_deployment``) is this.
    progress
        ``progress(done, total, run_dir_name)`` after each run is read.
    strict
        In a suite, fail on a run without a usable main metric instead of skipping it (a single
        run directory always fails).
    rescore
        ``rescore(canary, completion)``: score HELM's recorded completions again with the scorer
        production uses (``medmon.probes.scoring.rescore``); both figures are stored per
        instance and the canaries' baseline scores become medmon's (``medmon.baselines.rescore``).

    Returns
    -------
    ImportReport
        One outcome per (benchmark, model, metric), the runs skipped, and leaderboard cells added.

    Raises
    ------
    medmon.baselines.errors.SourceError
        Bad input; the message names the file and the key. Nothing has been written.

    Examples
    --------
    >>> from medmon.monitor.storage import make_engine, session_scope  # doctest: +SKIP
    >>> with session_scope(make_engine()) as session:  # doctest: +SKIP
    ...     report = import_helm_path(session, "benchmark_output", suite="v2")
    """
    location = locate(Path(path), suite=suite)
    report = ImportReport(source=str(path), kind="helm", suite=location.suite)
    # Hash first: an import whose every run is already stored costs the hashing, not the parse.
    run_files = {run_dir: run_source_files(run_dir) for run_dir in _matching_runs(location.runs, model)}
    stored, unread = split_stored(session, location.suite, run_files)
    with _collection_paused():
        evidence = (
            _read_unchanged_suite(
                stored, unread, suite=location.suite, strict=strict, report=report, run_files=run_files
            )
            if stored
            else None
        )
        if evidence is None:  # a first import, or a new or changed run: read and group every run
            report.skipped.clear()
            evidence = _read_runs(
                location.runs,
                suite=location.suite,
                model=model,
                strict=strict,
                progress=progress,
                report=report,
                run_files=run_files,
                keep_completions=rescore is not None,
            )
            evidence = _group(evidence, location.path)
            if rescore is not None:
                evidence = [rescore_run(run, rescore) for run in evidence]
        else:
            report.baselines = [_unchanged_outcome(session, row) for row in stored]
            if progress is not None:
                progress(len(location.runs), len(location.runs), "unchanged")
    entries, _files = read_group_tables(location.path, suite=location.suite) if location.is_suite_dir else ([], {})
    try:
        for run in evidence:
            baseline, created = record_baseline(session, run.figures)
            if created and baseline.id is not None:
                record_canaries(session, baseline.id, run.canaries, jury=run.jury)
            replayable = sum(c.replayable for c in run.canaries)
            report.baselines.append(
                _outcome(baseline, created, canaries=len(run.canaries), replayable=replayable, notes=run.notes)
            )
        report.leaderboard_entries = record_leaderboard(session, entries)
        session.flush()
    except BaseException:
        session.rollback()
        raise
    return report


def import_manual(session: Session, path: Path | str) -> ImportReport:
    """Import a CSV or YAML file of published scores (format in ``medmon.baselines.manual``).

    Every row is validated before any is written; errors name the file, line and field.
    """
    rows = read_manual(Path(path))
    report = ImportReport(source=str(path), kind="manual")
    try:
        for row in rows:
            baseline, created = record_baseline(session, row.figures)
            notes = (
                [] if baseline.in_taxonomy else [f"benchmark {baseline.benchmark!r} is outside the MedHELM taxonomy"]
            )
            report.baselines.append(_outcome(baseline, created, notes=notes))
        session.flush()
    except BaseException:
        session.rollback()
        raise
    return report
