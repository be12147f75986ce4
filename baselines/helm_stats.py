"""HELM statistics: the run's main metric, its n, per-instance scores and the 95% interval.

HELM quirks handled here (``helm-format.md`` §2):

* ``count`` in ``stats.json`` counts train trials, so n comes from the ``num_instances`` stat;
* ``per_instance_stats.json`` repeats each ``(instance_id, train_trial_index)`` once per metric
  class, so entries are merged by that key;
* perturbation copies (``name.perturbation``) are dropped;
* keys with null values may be absent.

**Choosing the main metric.** A benchmark in the taxonomy uses its ``main_metric`` on its
``main_split``; if HELM did not write that stat the run is an error (``UnknownMetric``). Any other
run takes the first of these that ``stats.json`` holds on the split (``test``, else ``valid``,
else the first split written), without perturbation and with ``count > 0``:

1. a ``metric_name`` named in the run spec's ``metric_specs`` args (the LLM jury's ``jury_score``);
2. ``exact_match``;
3. ``jury_score``;
4. the alphabetically first stat ending in ``_accuracy``, then ``_f1``, then ``_score``.

None of them: ``NoMainMetric``. Jury metrics (taxonomy ``llm_jury``, ``jury_score``, or a metric
written by ``LLMJuryMetric``) are on HELM's 1-5 scale; all others on 0-1.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medmon.baselines.errors import HelmFormatError, NoMainMetric, UnknownMetric
from medmon.baselines.interval import mean_interval, wilson_interval
from medmon.baselines.taxonomy import TaxonomyEntry

JURY_SCALE = (1.0, 5.0)
UNIT_SCALE = (0.0, 1.0)
_SUFFIXES = ("_accuracy", "_f1", "_score")
_SPLIT_PREFERENCE = ("test", "valid")


@dataclass(frozen=True)
class MainMetric:
    """The metric a baseline is about, where it came from, and its scale."""

    name: str
    split: str
    scale_min: float
    scale_max: float
    jury: bool
    rule: str


def plain_stats(rows: Any, file: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(name, split): stat}`` for stats without perturbation (first one wins)."""
    if not isinstance(rows, list):
        raise HelmFormatError(file, "<top level>", f"expected a list of stats, got {type(rows).__name__}")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, stat in enumerate(rows):
        name = stat.get("name") if isinstance(stat, dict) else None
        if not isinstance(name, dict) or not isinstance(name.get("name"), str):
            raise HelmFormatError(file, f"[{i}].name.name", "key missing or not a string", at=[i, "name", "name"])
        if "perturbation" in name:
            continue
        out.setdefault((name["name"], str(name.get("split") or "")), stat)
    return out


def stat_index(rows: list[Any], stat: dict[str, Any]) -> int:
    """Where ``stat`` (one of ``plain_stats``'s values) sits in the file's list, for error lines."""
    return next(i for i, row in enumerate(rows) if row is stat)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _has_value(stat: dict[str, Any] | None) -> bool:
    """A stat with a positive count and a finite mean (HELM writes no NaN; a hostile file may)."""
    return stat is not None and _finite(stat.get("count")) and stat["count"] > 0 and _finite(stat.get("mean"))


def _jury_metric_names(run_spec: dict[str, Any]) -> list[str]:
    names = []
    for spec in run_spec.get("metric_specs") or []:
        args = spec.get("args") or {}
        if isinstance(args.get("metric_name"), str):
            names.append(args["metric_name"])
    return names


def _is_jury(run_spec: dict[str, Any], name: str, entry: TaxonomyEntry) -> bool:
    if (entry.in_taxonomy and entry.llm_jury) or name == "jury_score":
        return True
    return any(
        "LLMJuryMetric" in str(spec.get("class_name", "")) and (spec.get("args") or {}).get("metric_name") == name
        for spec in run_spec.get("metric_specs") or []
    )


def _split_for(stats: dict[tuple[str, str], dict[str, Any]], name: str) -> str | None:
    splits = [split for (n, split), stat in stats.items() if n == name and _has_value(stat)]
    for preferred in _SPLIT_PREFERENCE:
        if preferred in splits:
            return preferred
    return splits[0] if splits else None


def choose_main_metric(
    run_spec: dict[str, Any],
    stats: dict[tuple[str, str], dict[str, Any]],
    entry: TaxonomyEntry,
    file: Path,
    rows: list[Any] | None = None,
) -> MainMetric:
    """Pick the main metric by the rules in this module's docstring.

    ``rows`` (the file's list, of which ``stats`` holds the entries) lets an error name the line.
    """
    if entry.in_taxonomy and entry.main_metric:
        name, split = entry.main_metric, entry.main_split
        written_stat = stats.get((name, split))
        if written_stat is not None and not _has_value(written_stat):
            field = "count" if not (_finite(written_stat.get("count")) and written_stat["count"] > 0) else "mean"
            raise HelmFormatError(
                file,
                f"{name} (split {split}).{field}",
                "expected a finite number" + (" above 0" if field == "count" else ""),
                at=None if rows is None else [stat_index(rows, written_stat), field],
            )
        if not _has_value(written_stat):
            written = sorted({n for (n, s) in stats if s == split}) or sorted({n for n, _ in stats})
            raise UnknownMetric(
                file,
                f"{name} (split {split})",
                f"HELM did not write the main metric of {entry.benchmark}; "
                f"metrics written: {', '.join(written) or 'none'}",
            )
        rule = f"taxonomy main metric of {entry.benchmark}"
    else:
        present = {n for (n, _), stat in stats.items() if _has_value(stat)}
        candidates = [*_jury_metric_names(run_spec), "exact_match", "jury_score"]
        for suffix in _SUFFIXES:
            candidates += sorted(n for n in present if n.endswith(suffix))
        found = next((c for c in candidates if c in present), None)
        if found is None:
            raise NoMainMetric(
                file,
                "metrics",
                "no usable main metric (looked for a metric_specs metric_name, exact_match, jury_score, "
                f"*_accuracy, *_f1, *_score); present: {', '.join(sorted(present)) or 'none'}",
            )
        name, split = found, _split_for(stats, found) or "test"
        rule = "outside the taxonomy: first of metric_name, exact_match, jury_score, *_accuracy, *_f1, *_score"
    jury = _is_jury(run_spec, name, entry)
    low, high = JURY_SCALE if jury else UNIT_SCALE
    return MainMetric(name=name, split=split, scale_min=low, scale_max=high, jury=jury, rule=rule)


def run_value_and_n(stats: dict[tuple[str, str], dict[str, Any]], metric: MainMetric) -> tuple[float, int | None]:
    """The run mean of the main metric and ``num_instances`` on its split (None if absent)."""
    value = float(stats[(metric.name, metric.split)]["mean"])
    count = stats.get(("num_instances", metric.split))
    n = round(float(count["mean"])) if _has_value(count) and count is not None else None
    return value, n


def merged_instance_scores(entries: Any, metric: MainMetric, file: Path) -> dict[str, list[float]]:
    """Per-instance main-metric values, one per train trial, merged across metric classes.

    Entries repeating an ``(instance_id, train_trial_index)`` are merged (first value wins);
    perturbation copies and other splits are dropped.
    """
    if not isinstance(entries, list):
        raise HelmFormatError(file, "<top level>", f"expected a list, got {type(entries).__name__}")
    by_key: dict[tuple[str, int], float] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("instance_id"), str):
            raise HelmFormatError(file, f"[{i}].instance_id", "key missing or not a string", at=[i, "instance_id"])
        trial = entry.get("train_trial_index") or 0
        if not isinstance(trial, int) or isinstance(trial, bool):
            raise HelmFormatError(
                file,
                f"[{i}].train_trial_index",
                f"expected an integer, got {type(trial).__name__}",
                at=[i, "train_trial_index"],
            )
        key = (entry["instance_id"], trial)
        if key in by_key:
            continue
        entry_stats = entry.get("stats") or []
        if not isinstance(entry_stats, list) or not all(isinstance(st, dict) for st in entry_stats):
            raise HelmFormatError(file, f"[{i}].stats", "expected a list of stat objects", at=[i, "stats"])
        for stat in entry_stats:
            name = stat.get("name") or {}
            if not isinstance(name, dict):
                raise HelmFormatError(file, f"[{i}].stats.name", "expected an object", at=[i, "stats"])
            if name.get("name") != metric.name or "perturbation" in name:
                continue
            if str(name.get("split") or "") != metric.split or not _has_value(stat):
                continue
            by_key[key] = float(stat["mean"])
            break
    scores: dict[str, list[float]] = {}
    for (instance_id, _trial), value in sorted(by_key.items()):
        scores.setdefault(instance_id, []).append(value)
    return scores


def interval(
    value: float, n: int, instance_means: Iterable[float], scale: tuple[float, float]
) -> tuple[float, float] | None:
    """95% interval: Wilson for 0/1 outcomes on a 0-1 scale, else mean ± 1.96 sd/sqrt(n).

    The normal interval uses the sample sd of the per-instance scores (means over trials), and
    is clipped to the scale. Returns None when there are no per-instance scores.

    Examples
    --------
    >>> lo, hi = interval(0.5, 4, [0.0, 1.0, 1.0, 0.0], (0.0, 1.0))
    >>> round(lo, 3), round(hi, 3)
    (0.15, 0.85)
    >>> interval(4.0, 3, [4.0, 4.0, 4.0], (1.0, 5.0))
    (4.0, 4.0)
    """
    means = list(instance_means)
    if not means:
        return None
    if scale == UNIT_SCALE and all(m in (0.0, 1.0) for m in means):
        low, high = wilson_interval(value, n)
    elif len(means) > 1:
        low, high = mean_interval(value, statistics.stdev(means), len(means), scale[0], scale[1])
    else:
        low, high = scale
    # Wilson's float arithmetic leaves e.g. 3e-17 at p = 0: an interval always holds its value.
    return (min(low, value), max(high, value))
