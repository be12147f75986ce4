"""Several runs of one benchmark in one suite combined into one baseline, as the leaderboard does.

CLEAR conditions, EHRSHOT subjects and MedDialog subsets are separate HELM runs that share a
schema group; helm-summarize shows their unweighted mean of run means (``helm-format.md`` §6).
The combined baseline takes that mean as its value, the summed ``num_instances`` as n, and every
run's per-instance scores, with instance (and canary) ids prefixed ``"<run name>/"`` so they stay
unique. Its interval follows the single-run rule over the pooled per-instance scores.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from medmon.baselines.helm import RunEvidence
from medmon.baselines.helm_files import digest_sources
from medmon.baselines.helm_stats import MainMetric, interval
from medmon.baselines.store import BaselineFigures


def combine_runs(runs: list[RunEvidence], *, suite_dir: Path) -> RunEvidence:
    """One evidence record for runs sharing (benchmark, model, metric); one run is returned as is."""
    if len(runs) == 1:
        return runs[0]
    first = runs[0]
    low = min(r.figures.scale_min for r in runs)
    high = max(r.figures.scale_max for r in runs)
    value = sum(r.figures.value for r in runs) / len(runs)
    n = sum(r.figures.n for r in runs)
    instances: dict[str, tuple[float, int]] = {}
    source_files: dict[str, str] = {}
    canaries = []
    jury = {}
    completions = {}
    notes = [f"combined {len(runs)} runs of {first.benchmark}: value is the unweighted mean of run means"]
    for run in runs:
        prefix = f"{run.run_name}/"
        instances.update({prefix + i: s for i, s in run.figures.instances.items()})
        source_files.update({f"{run.run_dir.name}/{name}": sha for name, sha in run.figures.source_files.items()})
        canaries += [replace(c, id=prefix + c.id) for c in run.canaries]
        jury.update({prefix + i: d for i, d in run.jury.items()})
        completions.update({prefix + i: c for i, c in run.completions.items()})
        notes += [f"{run.run_name}: {note}" for note in run.notes]
    figures = BaselineFigures(
        benchmark=first.benchmark,
        model=first.model,
        metric=first.figures.metric,
        value=value,
        n=n,
        scale_min=low,
        scale_max=high,
        ci=interval(value, n, (s for s, _ in instances.values()), (low, high)),
        split=first.figures.split,
        replicates=max(r.figures.replicates for r in runs),
        source_kind="helm",
        source_path=str(suite_dir),
        source_sha256=digest_sources(source_files),
        source_files=source_files,
        suite=first.figures.suite,
        instances=instances,
    )
    metric = MainMetric(first.metric.name, first.metric.split, low, high, first.metric.jury, first.metric.rule)
    return RunEvidence(
        run_dir=suite_dir,
        run_name=", ".join(r.run_name for r in runs),
        entry=first.entry,
        metric=metric,
        figures=figures,
        canaries=canaries,
        jury=jury,
        notes=notes,
        completions=completions,
    )
