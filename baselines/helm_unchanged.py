"""Recognise HELM runs that are already imported from their files' digests, before parsing them.

Parsing a MedHELM suite is most of an import's time (hundreds of MB of JSON); hashing the same
files costs a small fraction of it. A stored baseline records the SHA-256 of every file it was
read from (``Baseline.source_files``: ``{file: sha}`` for one run, ``{run_dir/file: sha}`` for
runs combined into one baseline), so a run whose files hash the same, and whose fellow runs in a
combined baseline are all still present and unchanged, needs no reading. The importer then reads
only the other runs; if any of them yields evidence (a new or changed run), it reads the whole
import again, which groups runs and deduplicates exactly as a first import does. So it does when
what is stored would be grouped differently now (two runs of one benchmark, model and metric that
were imported apart).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from sqlmodel import Session, col, select

from medmon.baselines.helm_files import digest_sources
from medmon.baselines.models import Baseline


def _runs_of(row: Baseline) -> dict[str, dict[str, str]] | None:
    """``{run_dir_name: {file: sha}}`` for a combined baseline; ``None`` for a single run's."""
    files = row.source_files or {}
    if not files or not all("/" in name for name in files):
        return None
    runs: dict[str, dict[str, str]] = defaultdict(dict)
    for name, sha in files.items():
        run, _, file = name.partition("/")
        runs[run][file] = str(sha)
    return dict(runs)


def split_stored(
    session: Session, suite: str, run_files: dict[Path, dict[str, str]]
) -> tuple[list[Baseline], list[Path]]:
    """The stored baselines that already hold some of these runs' files, and the runs they do not.

    ``run_files`` maps each run directory of the import to ``{file name: sha256}``
    (``medmon.baselines.helm_files.run_source_files``). A run counts as held when a stored
    baseline was read from exactly its files, and, for a baseline combined from several runs, when
    every one of those runs is present with its files unchanged. When what is held would be
    grouped differently now (two stored baselines of one benchmark, model and metric), nothing
    counts as held.
    """
    rows = (
        session.exec(
            select(Baseline).where(Baseline.source_kind == "helm", Baseline.suite == suite).order_by(col(Baseline.id))
        ).all()
        if run_files
        else []
    )
    single = {row.source_sha256: row for row in rows if _runs_of(row) is None}
    by_name = {run.name: files for run, files in run_files.items()}
    covered: dict[str, Baseline] = {}
    for row in rows:
        parts = _runs_of(row)
        if parts is not None and all(by_name.get(name) == files for name, files in parts.items()):
            covered.update({name: row for name in parts})
    found: dict[int, Baseline] = {}
    unread: list[Path] = []
    for run, files in run_files.items():
        held = covered.get(run.name) or single.get(digest_sources(files))
        if held is None or held.id is None:
            unread.append(run)
        else:
            found[held.id] = held
    keys = [(row.benchmark, row.model, row.metric) for row in found.values()]
    if len(set(keys)) != len(keys):  # stored apart, now imported together: the full path combines them
        return [], list(run_files)
    return list(found.values()), unread
