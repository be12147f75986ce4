"""The MedHELM taxonomy: 5 categories, 22 subcategories and the benchmarks that measure them.

The data is package data copied from the MedHELM schema (crfm-helm 0.5.16) plus the nine
benchmarks only the live ``medhelm`` suite adds. A benchmark outside it is allowed but flagged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class TaxonomyEntry:
    """Where a benchmark sits in MedHELM."""

    benchmark: str
    display_name: str
    category: str
    subcategory: str | None
    main_metric: str | None
    main_split: str
    llm_jury: bool
    jury_criteria: tuple[str, ...]
    data_access: str | None
    source: str
    in_taxonomy: bool


@lru_cache(maxsize=1)
def taxonomy_data() -> dict[str, Any]:
    """The raw taxonomy document shipped with medmon."""
    text = resources.files("medmon.baselines").joinpath("data/medhelm_taxonomy.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@lru_cache(maxsize=1)
def _entries() -> dict[str, TaxonomyEntry]:
    entries = {}
    for b in taxonomy_data()["benchmarks"]:
        entries[b["name"]] = TaxonomyEntry(
            benchmark=b["name"],
            display_name=b.get("display_name") or b["name"],
            category=b["category"],
            subcategory=b.get("subcategory"),
            main_metric=b.get("main_metric"),
            main_split=b.get("main_split") or "test",
            llm_jury=bool(b.get("llm_jury")),
            jury_criteria=tuple(b.get("jury_criteria") or ()),
            data_access=b.get("data_access"),
            source=b.get("source") or "crfm-helm",
            in_taxonomy=True,
        )
    return entries


def benchmarks() -> list[TaxonomyEntry]:
    """Every benchmark medmon knows, in taxonomy order."""
    return list(_entries().values())


def categories() -> list[dict[str, Any]]:
    """The five categories with their subcategories and benchmark names."""
    return list(taxonomy_data()["categories"])


def resolve(benchmark: str) -> TaxonomyEntry:
    """Map a benchmark name to its category; unknown names resolve but say they are outside."""
    entry = _entries().get(benchmark)
    if entry is not None:
        return entry
    return TaxonomyEntry(
        benchmark=benchmark,
        display_name=benchmark,
        category="Outside the MedHELM taxonomy",
        subcategory=None,
        main_metric=None,
        main_split="test",
        llm_jury=False,
        jury_criteria=(),
        data_access=None,
        source="unknown",
        in_taxonomy=False,
    )
