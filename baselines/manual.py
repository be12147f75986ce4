"""Published scores typed in by hand: a CSV or YAML file of baselines, one per row.

For teams that have only the leaderboard. Columns (CSV header, or keys of each YAML mapping):

=============  ========  ==============================================================
column         required  meaning
=============  ========  ==============================================================
``model``      yes       the evaluated model, as HELM names it (``openai/gpt-4o-2024-05-13``)
``benchmark``  yes       the MedHELM schema group (``med_qa``); others are flagged as outside
``metric``     yes       the metric HELM writes; for a taxonomy benchmark, its main metric
``value``      yes       the score on the metric's own scale
``n``          yes       the number of evaluated instances
``scale_min``  no        defaults to 1 for jury benchmarks and ``jury_score``, else 0
``scale_max``  no        defaults to 5 for jury benchmarks and ``jury_score``, else 1
``split``      no        defaults to the taxonomy's main split (``test``; ``valid`` for MedMCQA)
``ci_low``     no        with ``ci_high``, a published 95% interval (else Wilson on ``value``)
``ci_high``    no
``source``     no        where the figure was published (URL, paper, leaderboard release)
=============  ========  ==============================================================

A YAML file is a list of such mappings, or a mapping with that list under ``baselines``.
Each row's ``source_sha256`` is a digest of its own content, so re-importing an edited file
creates new versions only for the rows that changed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from medmon.baselines.errors import ManualFormatError, SourceFileMissing, UnknownMetric
from medmon.baselines.helm_files import sha256_file
from medmon.baselines.store import BaselineFigures
from medmon.baselines.taxonomy import resolve

REQUIRED = ("model", "benchmark", "metric", "value", "n")
OPTIONAL = ("scale_min", "scale_max", "split", "ci_low", "ci_high", "source")
_LINE = "__line__"


@dataclass(frozen=True)
class ManualRow:
    """One validated row and the line it came from."""

    line: int
    figures: BaselineFigures
    source: str


class _LineLoader(yaml.SafeLoader):
    """A safe loader that records each mapping's line under ``__line__``."""


def _mapping_with_line(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping[_LINE] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def _read_yaml(path: Path, text: str) -> list[dict[str, Any]]:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} col {mark.column + 1}" if mark else "yaml"
        raise ManualFormatError(path, where, f"invalid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if isinstance(data, dict) and "baselines" in data:
        data = data["baselines"]
    if not isinstance(data, list):
        raise ManualFormatError(path, "baselines", "expected a list of rows (or a mapping with a 'baselines' list)")
    rows = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ManualFormatError(path, f"row {i + 1}", f"expected a mapping, got {type(item).__name__}")
        rows.append(item)
    return rows


def _read_csv(path: Path, text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for row in reader:
        if None in row:
            raise ManualFormatError(path, f"line {reader.line_num}", "more cells than header columns")
        cleaned: dict[str, Any] = {k.strip(): v.strip() for k, v in row.items() if v is not None and v.strip() != ""}
        cleaned[_LINE] = reader.line_num
        rows.append(cleaned)
    return rows


def _number(path: Path, where: str, name: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ManualFormatError(path, f"{where} field {name}", f"expected a number, got {raw!r}") from None
    if isinstance(raw, bool) or not math.isfinite(value):
        raise ManualFormatError(path, f"{where} field {name}", f"expected a finite number, got {raw!r}")
    return value


def _text(path: Path, where: str, name: str, raw: Any) -> str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ManualFormatError(path, f"{where} field {name}", "required, missing or empty")
    return str(raw).strip()


def _row(path: Path, data: dict[str, Any], file_sha: str) -> ManualRow:
    line = int(data.pop(_LINE, 0))
    where = f"line {line}"
    unknown = sorted(str(k) for k in data if k not in REQUIRED and k not in OPTIONAL)
    if unknown:
        raise ManualFormatError(
            path, f"{where} field {unknown[0]}", f"unknown column; allowed: {', '.join(REQUIRED + OPTIONAL)}"
        )
    model, benchmark, metric = (_text(path, where, k, data.get(k)) for k in ("model", "benchmark", "metric"))
    entry = resolve(benchmark)
    if entry.in_taxonomy and entry.main_metric and metric != entry.main_metric:
        raise UnknownMetric(
            path,
            f"{where} field metric",
            f"{metric!r} is not the metric HELM writes for {benchmark} (its main metric is {entry.main_metric!r})",
        )
    value = _number(path, where, "value", _text(path, where, "value", data.get("value")))
    n_raw = _number(path, where, "n", _text(path, where, "n", data.get("n")))
    if n_raw != int(n_raw) or n_raw < 1:
        raise ManualFormatError(path, f"{where} field n", f"expected a positive whole number, got {data['n']!r}")
    jury = (entry.in_taxonomy and entry.llm_jury) or metric == "jury_score"
    low = _number(path, where, "scale_min", data["scale_min"]) if "scale_min" in data else (1.0 if jury else 0.0)
    high = _number(path, where, "scale_max", data["scale_max"]) if "scale_max" in data else (5.0 if jury else 1.0)
    if not low < high:
        raise ManualFormatError(path, f"{where} field scale_max", f"scale_max {high:g} must exceed scale_min {low:g}")
    if not low <= value <= high:
        raise ManualFormatError(path, f"{where} field value", f"{value:g} is outside the {low:g}-{high:g} scale")
    ci = None
    if ("ci_low" in data) != ("ci_high" in data):
        raise ManualFormatError(
            path,
            f"{where} field {'ci_high' if 'ci_low' in data else 'ci_low'}",
            "give both ci_low and ci_high, or neither",
        )
    if "ci_low" in data:
        ci = (_number(path, where, "ci_low", data["ci_low"]), _number(path, where, "ci_high", data["ci_high"]))
        if not low <= ci[0] <= value <= ci[1] <= high:
            raise ManualFormatError(
                path, f"{where} field ci_low", f"need {low:g} <= ci_low <= value <= ci_high <= {high:g}"
            )
    split = str(data.get("split") or entry.main_split)
    source = str(data.get("source") or "")
    content = {
        "model": model,
        "benchmark": benchmark,
        "metric": metric,
        "value": value,
        "n": int(n_raw),
        "scale": [low, high],
        "ci": list(ci) if ci else None,
        "split": split,
        "source": source,
    }
    figures = BaselineFigures(
        benchmark=benchmark,
        model=model,
        metric=metric,
        value=value,
        n=int(n_raw),
        scale_min=low,
        scale_max=high,
        ci=ci,
        split=split,
        source_kind="manual",
        source_path=f"{source} [{path}:{line}]" if source else f"{path}:{line}",
        source_sha256=hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest(),
        source_files={path.name: file_sha},
    )
    return ManualRow(line=line, figures=figures, source=source)


def read_manual(path: Path) -> list[ManualRow]:
    """Read and validate every row; errors name the file, the line and the field."""
    path = path.expanduser()
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".yaml", ".yml"):
        raise ManualFormatError(path, "path", "a manual baseline file must end in .csv, .yaml or .yml")
    try:
        text = path.read_text("utf-8-sig")
    except FileNotFoundError:
        raise SourceFileMissing(path, path.name, "file missing") from None
    except UnicodeDecodeError as exc:
        raise ManualFormatError(path, f"byte {exc.start}", "not UTF-8 text") from exc
    raw_rows = _read_csv(path, text) if suffix == ".csv" else _read_yaml(path, text)
    if not raw_rows:
        raise ManualFormatError(path, "rows", "no baselines in file")
    file_sha = sha256_file(path)
    rows = [_row(path, dict(r), file_sha) for r in raw_rows]
    seen: dict[tuple[str, str, str], int] = {}
    for row in rows:
        key = (row.figures.benchmark, row.figures.model, row.figures.metric)
        if key in seen:
            raise ManualFormatError(path, f"line {row.line}", f"duplicate of line {seen[key]} ({', '.join(key)})")
        seen[key] = row.line
    return rows
