"""helm-summarize tables (``runs/<suite>/groups/<group>.json``) read as leaderboard context.

Every numeric cell becomes a ``LeaderboardEntry``. Column and row names in these tables are
display names (``"ADHD-Behavior - EM"``, ``"Simple Model 1"``); the suite's ``schema.json`` maps
them back to schema group and model names where it can. Mean win rates are recomputed
(``medmon.baselines.win_rate``) for tables where HELM shows a "Mean win rate" column, over the columns
that name a metric; HELM's own cell is kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medmon.baselines.errors import HelmFormatError
from medmon.baselines.helm_files import load_json, sha256_file
from medmon.baselines.models import LeaderboardEntry
from medmon.baselines.win_rate import mean_win_rates

WIN_RATE_COLUMN = "Mean win rate"


@dataclass
class SchemaNames:
    """Display name to schema name, for run groups and models (from ``schema.json``)."""

    groups: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, suite_dir: Path) -> SchemaNames:
        path = suite_dir / "schema.json"
        if not path.is_file():
            return cls()
        data = load_json(path)
        if not isinstance(data, dict):
            raise HelmFormatError(path, "<top level>", "expected an object")
        names = cls()
        for group in data.get("run_groups") or []:
            if isinstance(group, dict) and isinstance(group.get("name"), str):
                names.groups[str(group.get("display_name") or group["name"])] = group["name"]
        for model in data.get("models") or []:
            if isinstance(model, dict) and isinstance(model.get("name"), str):
                for key in ("display_name", "short_display_name"):
                    if isinstance(model.get(key), str):
                        names.models.setdefault(model[key], model["name"])
        return names


def _number(cell: Any) -> float | None:
    value = cell.get("value") if isinstance(cell, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def table_entries(
    table: Any, *, suite: str, group: str, names: SchemaNames, file: Path, sha: str
) -> list[LeaderboardEntry]:
    """Leaderboard entries for one table of a group file."""
    if (
        not isinstance(table, dict)
        or not isinstance(table.get("header"), list)
        or not isinstance(table.get("rows"), list)
    ):
        raise HelmFormatError(file, "header/rows", "a table needs a header list and a rows list")
    header: list[dict[str, Any]] = [h if isinstance(h, dict) else {} for h in table["header"]]
    rows: list[list[Any]] = [r if isinstance(r, list) else [] for r in table["rows"]]
    title = str(table.get("title") or table.get("name") or "")
    metric_columns = [i for i, h in enumerate(header) if (h.get("metadata") or {}).get("metric")]
    has_win_rate = any(h.get("value") == WIN_RATE_COLUMN for h in header)
    computed: list[float | None] = [None] * len(rows)
    if has_win_rate:
        computed = mean_win_rates(
            [
                ([_number(r[i]) if i < len(r) else None for r in rows], header[i].get("lower_is_better"))
                for i in metric_columns
            ]
        )
    win_index = next((i for i, h in enumerate(header) if h.get("value") == WIN_RATE_COLUMN), None)
    entries: list[LeaderboardEntry] = []
    for r, row in enumerate(rows):
        model = str((row[0] or {}).get("value") if row and isinstance(row[0], dict) else "")
        published = _number(row[win_index]) if win_index is not None and win_index < len(row) else None
        for i in metric_columns:
            value = _number(row[i]) if i < len(row) else None
            if value is None:
                continue
            meta = header[i].get("metadata") or {}
            run_group = meta.get("run_group")
            entries.append(
                LeaderboardEntry(
                    suite=suite,
                    group=group,
                    table_title=title,
                    model=model,
                    model_name=names.models.get(model),
                    column=str(header[i].get("value") or ""),
                    run_group=run_group,
                    metric=meta.get("metric"),
                    benchmark=names.groups.get(run_group) if isinstance(run_group, str) else None,
                    value=value,
                    lower_is_better=header[i].get("lower_is_better"),
                    mean_win_rate=computed[r],
                    published_mean_win_rate=published,
                    run_specs=list(row[i].get("run_spec_names") or []),
                    source_path=str(file),
                    source_sha256=sha,
                )
            )
    return entries


def read_group_tables(suite_dir: Path, *, suite: str) -> tuple[list[LeaderboardEntry], dict[str, str]]:
    """All leaderboard entries of a suite, and ``{relative path: sha256}`` of the files read."""
    groups_dir = suite_dir / "groups"
    if not groups_dir.is_dir():
        return [], {}
    names = SchemaNames.read(suite_dir)
    entries: list[LeaderboardEntry] = []
    files: dict[str, str] = {}
    for path in sorted(groups_dir.glob("*.json")):
        data = load_json(path)
        if not isinstance(data, list):
            raise HelmFormatError(path, "<top level>", f"expected a list of tables, got {type(data).__name__}")
        sha = sha256_file(path)
        files[f"groups/{path.name}"] = sha
        for table in data:
            entries += table_entries(table, suite=suite, group=path.stem, names=names, file=path, sha=sha)
    return entries, files
