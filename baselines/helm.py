"""One HELM run directory read into baseline figures and a canary pack (nothing is stored here).

The benchmark is joined on ``run_spec.groups`` with the taxonomy: the first group the taxonomy
knows, else the first group (flagged as outside the taxonomy), else ``scenario.json``'s ``name``,
else ``scenario_spec.args.name``. The directory name is never parsed. The model is
``adapter_spec.model``. See ``medmon.baselines.helm_stats`` for the main metric, n and interval, and
``medmon.baselines.helm_canaries`` for the pack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medmon.baselines.canary import Canary
from medmon.baselines.errors import HelmFormatError
from medmon.baselines.helm_canaries import JuryDetail, PackContext, build_pack
from medmon.baselines.helm_files import digest_sources, get_key, load_json, run_source_files
from medmon.baselines.helm_stats import (
    MainMetric,
    choose_main_metric,
    interval,
    merged_instance_scores,
    plain_stats,
    run_value_and_n,
    stat_index,
)
from medmon.baselines.store import BaselineFigures
from medmon.baselines.taxonomy import TaxonomyEntry, resolve


@dataclass
class RunEvidence:
    """Everything one run says: the baseline figures, its canaries and per-instance jury detail."""

    run_dir: Path
    run_name: str
    entry: TaxonomyEntry
    metric: MainMetric
    figures: BaselineFigures
    canaries: list[Canary] = field(default_factory=list)
    jury: dict[str, JuryDetail] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    completions: dict[str, list[str | None]] = field(default_factory=dict)  # HELM's, per trial, by canary id

    @property
    def benchmark(self) -> str:
        return self.figures.benchmark

    @property
    def model(self) -> str:
        return self.figures.model


def read_run_spec(run_dir: Path) -> dict[str, Any]:
    """``run_spec.json`` as a dict, with ``adapter_spec.model`` checked to be a string."""
    file = run_dir / "run_spec.json"
    spec = load_json(file, role="run specification")
    if not isinstance(spec, dict):
        raise HelmFormatError(file, "<top level>", f"expected an object, got {type(spec).__name__}")
    get_key(spec, "adapter_spec.model", file, expected=str)
    return spec


def benchmark_of(run_spec: dict[str, Any], scenario: dict[str, Any] | None, file: Path) -> str:
    """The run's benchmark: the join of ``run_spec.groups`` with the taxonomy (module docstring)."""
    groups = run_spec.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise HelmFormatError(file, "groups", "expected a list of group names", at=["groups"])
    for group in groups:
        if resolve(group).in_taxonomy:
            return str(group)
    if groups:
        return str(groups[0])
    if scenario and isinstance(scenario.get("name"), str) and scenario["name"]:
        return str(scenario["name"])
    name = ((run_spec.get("scenario_spec") or {}).get("args") or {}).get("name")
    if isinstance(name, str) and name:
        return name
    raise HelmFormatError(file, "groups", "empty, and neither scenario.json nor scenario_spec.args names the scenario")


def _jury_floor(metric: MainMetric, value: float, scores: dict[str, list[float]], notes: list[str]) -> MainMetric:
    """Widen a jury scale to 0-5 when the run holds scores below 1.

    The configurable MedHELM benchmark gives an instance no judge could score ``default_score``
    0.0, which lies outside 1-5; without this, ``normalized`` would leave [0, 1].
    """
    low = min([value, *(s for trials in scores.values() for s in trials)])
    if not metric.jury or low >= metric.scale_min:
        return metric
    notes.append(
        f"{metric.name}: scores down to {low:g} (the jury default_score for an unjudged instance); "
        "scale widened from 1-5 to 0-5 so the normalized value stays in [0, 1]"
    )
    return MainMetric(metric.name, metric.split, 0.0, metric.scale_max, metric.jury, metric.rule)


def read_run(
    run_dir: Path,
    *,
    suite: str = "",
    run_spec: dict[str, Any] | None = None,
    source_files: dict[str, str] | None = None,
) -> RunEvidence:
    """Read one run directory into figures and a canary pack; errors name the file and key.

    ``source_files`` are the run's file digests when the caller has already hashed them.
    """
    source_files = source_files if source_files is not None else run_source_files(run_dir)
    spec = run_spec if run_spec is not None else read_run_spec(run_dir)
    spec_file, stats_file = run_dir / "run_spec.json", run_dir / "stats.json"
    scenario_path = run_dir / "scenario.json"
    scenario = load_json(scenario_path) if scenario_path.is_file() else None
    benchmark = benchmark_of(spec, scenario if isinstance(scenario, dict) else None, spec_file)
    entry = resolve(benchmark)
    rows = load_json(stats_file, role="run statistics")
    stats = plain_stats(rows, stats_file)
    metric = choose_main_metric(spec, stats, entry, stats_file, rows)
    value, n = run_value_and_n(stats, metric)
    if n is not None and n < 1:
        raise HelmFormatError(
            stats_file,
            f"num_instances (split {metric.split}).mean",
            f"{n}; expected a positive number of instances",
            at=[stat_index(rows, stats[("num_instances", metric.split)]), "mean"],
        )
    per_instance_file = run_dir / "per_instance_stats.json"
    scores = merged_instance_scores(load_json(per_instance_file), metric, per_instance_file)
    notes: list[str] = []
    if not entry.in_taxonomy:
        notes.append(f"benchmark {benchmark!r} is outside the MedHELM taxonomy")
    if n is None:
        if not scores:
            raise HelmFormatError(
                stats_file, f"num_instances (split {metric.split})", "missing, and no per-instance scores"
            )
        n = len(scores)
        notes.append(f"no num_instances stat; n = {n} instances with per-instance scores")
    metric = _jury_floor(metric, value, scores, notes)
    if not metric.scale_min <= value <= metric.scale_max:
        raise HelmFormatError(
            stats_file,
            f"{metric.name}.mean",
            f"value {value:g} outside the metric's {metric.scale_min:g}-{metric.scale_max:g} scale",
            at=[stat_index(rows, stats[(metric.name, metric.split)]), "mean"],
        )
    if not scores:
        notes.append(f"per_instance_stats.json has no {metric.name} values: interval from the run value alone")
    run_name = str(spec.get("name") or run_dir.name)
    figures = BaselineFigures(
        benchmark=benchmark,
        model=str(spec["adapter_spec"]["model"]),
        metric=metric.name,
        value=value,
        n=n,
        scale_min=metric.scale_min,
        scale_max=metric.scale_max,
        ci=interval(value, n, (sum(t) / len(t) for t in scores.values()), (metric.scale_min, metric.scale_max)),
        split=metric.split,
        replicates=max((len(t) for t in scores.values()), default=1),
        source_kind="helm",
        source_path=str(run_dir),
        source_sha256=digest_sources(source_files),
        source_files=source_files,
        suite=suite,
        instances={i: (sum(t) / len(t), len(t)) for i, t in scores.items()},
    )
    evidence = RunEvidence(run_dir=run_dir, run_name=run_name, entry=entry, metric=metric, figures=figures, notes=notes)
    state_file = run_dir / "scenario_state.json"
    if state_file.is_file():
        ctx = PackContext(
            pack=run_name,
            benchmark=benchmark,
            metric=metric,
            suite=suite,
            provenance=str(run_dir),
            adapter_method=str((spec.get("adapter_spec") or {}).get("method") or ""),
        )
        evidence.canaries, evidence.jury, evidence.completions = build_pack(
            load_json(state_file), ctx, scores, state_file
        )
        unreplayable = sum(not c.replayable for c in evidence.canaries)
        if unreplayable:
            notes.append(f"{unreplayable} canaries are redacted or empty: scores kept, replayable=False")
    else:
        notes.append("no scenario_state.json: baseline without a canary pack")
    return evidence
