"""Canary packs: bundled JSONL files of canaries with a YAML card holding their baseline.

A pack named ``NAME`` is two files in ``probes/packs/`` (or any folder):
``NAME.jsonl`` (one canary per line, see ``medmon.baselines.canary``) and ``NAME.yaml``::

    name: clinical_knowledge_mcq
    title: Clinical knowledge multiple choice
    benchmark: med_qa                # the MedHELM benchmark it mirrors
    scorer: multiple_choice
    description: ...
    baseline: {value: 0.85, n: 500, model: ..., metric: exact_match, source: ...}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from medmon.baselines.canary import Canary, read_canaries
from medmon.baselines.errors import CanaryFormatError
from medmon.baselines.taxonomy import TaxonomyEntry, resolve


@dataclass(frozen=True)
class Pack:
    name: str
    title: str
    benchmark: str
    scorer: str
    canaries: tuple[Canary, ...]
    description: str = ""
    baseline: dict[str, Any] = field(default_factory=dict)

    @property
    def taxonomy(self) -> TaxonomyEntry:
        return resolve(self.benchmark)


def bundled_dir() -> Path:
    return Path(str(resources.files("medmon.probes").joinpath("packs")))


def available_packs(folder: Path | None = None) -> list[str]:
    """Names of the packs in ``folder`` (the bundled packs by default)."""
    folder = folder or bundled_dir()
    return sorted(p.stem for p in folder.glob("*.yaml") if p.with_suffix(".jsonl").exists())


def load_pack_file(card: Path) -> Pack:
    """Load a pack from its YAML card; the canaries file sits beside it."""
    try:
        meta = yaml.safe_load(card.read_text("utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CanaryFormatError(f"{card}: cannot read pack card: {exc}") from exc
    for key in ("name", "benchmark", "scorer"):
        if not isinstance(meta.get(key), str):
            raise CanaryFormatError(f"{card}: field '{key}': expected a string")
    canaries = read_canaries(card.with_suffix(".jsonl"), pack=meta["name"], benchmark=meta["benchmark"])
    return Pack(
        name=meta["name"],
        title=meta.get("title", meta["name"]),
        benchmark=meta["benchmark"],
        scorer=meta["scorer"],
        canaries=tuple(canaries),
        description=meta.get("description", ""),
        baseline=dict(meta.get("baseline") or {}),
    )


def load_pack(name: str, folder: Path | None = None) -> Pack:
    """Load a bundled (or ``folder``) pack by name."""
    card = (folder or bundled_dir()) / f"{name}.yaml"
    if not card.exists():
        known = ", ".join(available_packs(folder)) or "none"
        raise CanaryFormatError(f"unknown canary pack {name!r}; available: {known}")
    return load_pack_file(card)
