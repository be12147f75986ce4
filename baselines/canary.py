"""The canary: one replayable clinical scenario instance, and its JSONL file format.

Each line of a canary file is one JSON object::

    {"id": "mc-001", "messages": [{"role": "user", "content": "..."}],
     "references": ["B"], "scorer": "exact_match",
     "tags": {"age_band": "65+", "sex": "female"},
     "baseline_score": 1.0, "baseline_runs": 5, "replayable": true,
     "provenance": "medmon original", "tolerance": null, "choices": null,
     "decoding": {"temperature": 0.0, "max_tokens": 1, "stop_sequences": ["\\n"]},
     "unit": null, "aliases": null}

Only ``id`` and ``messages`` are required. ``baseline_score`` is this instance's own baseline
outcome (mean over ``baseline_runs`` runs) when the canary came from a HELM run, which lets drift
tests be paired. ``decoding`` holds the decoding settings the baseline was produced with (a
HELM run's temperature, max tokens and stop sequences): a replay uses them unless the plan
overrides them. ``unit`` is the unit a numeric reference is in (``"mL/min"``, ``""`` for a
score): an answer written in another unit is converted into it before it is compared.
``aliases`` gives other names of options (``{"B": ["PCI", "primary PCI"]}``), so an answer that
names an option without its letter is read as that option. ``replayable`` is false for
instances whose text HELM published as ``"[redacted]"``: their scores count as evidence but they
cannot be sent to the model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Set
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from medmon.baselines.errors import CanaryFormatError
from medmon.files import UnsafeInput, loads_json, read_text, split_lines

_ROLES = {"system", "user", "assistant", "developer"}
_FIELDS = {
    "id",
    "messages",
    "references",
    "scorer",
    "tags",
    "baseline_score",
    "baseline_runs",
    "replayable",
    "provenance",
    "tolerance",
    "choices",
    "pack",
    "benchmark",
    "decoding",
    "unit",
    "aliases",
}
_DECODING = {"temperature": (int, float), "max_tokens": (int,), "stop_sequences": (list,)}


@dataclass(frozen=True)
class Canary:
    """One scenario instance to replay against the production model."""

    id: str
    messages: tuple[dict[str, str], ...]
    references: tuple[str, ...] = ()
    scorer: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    baseline_score: float | None = None
    baseline_runs: int = 0
    replayable: bool = True
    provenance: str = ""
    tolerance: dict[str, float] | None = None
    choices: tuple[str, ...] | None = None
    pack: str = ""
    benchmark: str = ""
    decoding: dict[str, Any] | None = None
    unit: str | None = None
    aliases: dict[str, tuple[str, ...]] | None = None

    @property
    def prompt(self) -> str:
        """The last user message: what a person would call the question."""
        users = [m["content"] for m in self.messages if m["role"] == "user"]
        return users[-1] if users else ""

    def to_json(self) -> str:
        data = asdict(self)
        data["messages"] = list(self.messages)
        data["references"] = list(self.references)
        data["choices"] = list(self.choices) if self.choices is not None else None
        data["aliases"] = {k: list(v) for k, v in self.aliases.items()} if self.aliases else None
        if self.unit is not None:  # "" (a dimensionless score) is a unit too
            return json.dumps(
                {k: v for k, v in data.items() if v not in (None, "", {}, [])} | {"id": self.id, "unit": self.unit}
            )
        return json.dumps({k: v for k, v in data.items() if v not in (None, "", {}, [])} | {"id": self.id})


def _number(value: Any) -> bool:
    """A finite JSON number (booleans are not numbers here)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_record(data: Any, fields: Set[str], where: str) -> None:
    """A JSON object of known ``fields`` with a non-empty string ``id`` (a canary or a judge canary);
    ``where`` names the file and line in errors."""
    if not isinstance(data, dict):
        raise CanaryFormatError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - fields)
    if unknown:
        raise CanaryFormatError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(fields))}")
    if not isinstance(data.get("id"), str) or not data["id"]:
        raise CanaryFormatError(f"{where}: field 'id': expected a non-empty string")


def canary_from_dict(data: Any, *, where: str = "<canary>") -> Canary:
    """Validate one decoded JSON object; ``where`` names the file and line in errors."""
    check_record(data, _FIELDS, where)
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise CanaryFormatError(f"{where}: field 'messages': expected a non-empty list of {{role, content}}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ROLES or not isinstance(m.get("content"), str):
            raise CanaryFormatError(
                f'{where}: field \'messages[{i}]\': expected {{"role": one of {sorted(_ROLES)}, "content": string}}'
            )
    refs = data.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise CanaryFormatError(f"{where}: field 'references': expected a list of strings")
    tags = data.get("tags", {})
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        raise CanaryFormatError(f"{where}: field 'tags': expected an object of string values")
    score = data.get("baseline_score")
    if score is not None and not _number(score):
        raise CanaryFormatError(f"{where}: field 'baseline_score': expected a finite number or null")
    runs = data.get("baseline_runs")
    if runs is not None and not (isinstance(runs, int) and not isinstance(runs, bool) and 0 <= runs <= 1_000_000):
        raise CanaryFormatError(f"{where}: field 'baseline_runs': expected a whole number from 0 to 1,000,000")
    tolerance = data.get("tolerance")
    if tolerance is not None and not (
        isinstance(tolerance, dict)
        and tolerance
        and all(isinstance(k, str) and _number(v) for k, v in tolerance.items())
        and tolerance.get("lower", -math.inf) <= tolerance.get("upper", math.inf)
    ):
        raise CanaryFormatError(
            f"{where}: field 'tolerance': expected an object of finite numbers with lower <= "
            'upper (e.g. {"lower": 4.5, "upper": 5.5}) or null'
        )
    choices = data.get("choices")
    if choices is not None and not (isinstance(choices, list) and all(isinstance(c, str) for c in choices)):
        raise CanaryFormatError(f"{where}: field 'choices': expected a list of strings or null")
    for name in ("scorer", "provenance", "pack", "benchmark"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise CanaryFormatError(f"{where}: field {name!r}: expected a string")
    if not isinstance(data.get("replayable", True), bool):
        raise CanaryFormatError(f"{where}: field 'replayable': expected true or false")
    decoding = data.get("decoding")
    if decoding is not None:
        if (
            not isinstance(decoding, dict)
            or set(decoding) - set(_DECODING)
            or not all(isinstance(v, _DECODING[k]) and not isinstance(v, bool) for k, v in decoding.items())
        ):
            raise CanaryFormatError(
                f"{where}: field 'decoding': expected an object with temperature (number), "
                "max_tokens (integer) and stop_sequences (list of strings), each optional"
            )
    unit = data.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise CanaryFormatError(f'{where}: field \'unit\': expected a string such as "mL/min" ("" for a score) or null')
    aliases = data.get("aliases")
    if aliases is not None and not (
        isinstance(aliases, dict)
        and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
            for k, v in aliases.items()
        )
    ):
        raise CanaryFormatError(
            f'{where}: field \'aliases\': expected an object of option letter to a list of names, e.g. {{"B": ["PCI"]}}'
        )
    return Canary(
        id=data["id"],
        messages=tuple({"role": m["role"], "content": m["content"]} for m in messages),
        references=tuple(refs),
        scorer=data.get("scorer"),
        tags=dict(tags),
        baseline_score=float(score) if score is not None else None,
        baseline_runs=int(data.get("baseline_runs") or (1 if score is not None else 0)),
        replayable=bool(data.get("replayable", True)),
        provenance=str(data.get("provenance") or ""),
        tolerance={k: float(v) for k, v in tolerance.items()} if tolerance is not None else None,
        choices=tuple(choices) if choices else None,
        pack=str(data.get("pack") or ""),
        benchmark=str(data.get("benchmark") or ""),
        decoding=dict(decoding) if decoding else None,
        unit=unit,
        aliases={k.strip().upper(): tuple(v) for k, v in aliases.items()} if aliases else None,
    )


def read_jsonl(path: Path, *, what: str = "canary file") -> Iterator[tuple[str, Any]]:
    """``(file:line, parsed object)`` for each non-blank line; a ``CanaryFormatError`` names the line.

    Lines are split on newlines only (a U+2028 inside a JSON string is text); each line is
    decoded strictly (:func:`medmon.files.loads_json`), the file refused over its size limit.
    """
    try:
        lines = split_lines(read_text(path))
    except OSError as exc:
        raise CanaryFormatError(f"{path}: cannot read {what}: {exc.strerror}") from exc
    except UnsafeInput as exc:
        raise CanaryFormatError(f"{path}{f':{exc.line}' if exc.line else ''}: {exc.message}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = loads_json(line)
        except UnsafeInput as exc:
            column = f" at column {exc.column}" if exc.column else ""
            raise CanaryFormatError(f"{where}: {exc.message}{column}") from None
        yield where, data


def read_canaries(path: Path, *, pack: str = "", benchmark: str = "") -> list[Canary]:
    """Read a canary JSONL file; every error names the file and line."""
    canaries: list[Canary] = []
    seen: set[str] = set()
    for where, data in read_jsonl(path):
        canary = canary_from_dict(data, where=where)
        if canary.id in seen:
            raise CanaryFormatError(f"{where}: duplicate canary id {canary.id!r}")
        seen.add(canary.id)
        if pack or benchmark:
            canary = replace(canary, pack=canary.pack or pack, benchmark=canary.benchmark or benchmark)
        canaries.append(canary)
    if not canaries:
        raise CanaryFormatError(f"{path}: no canaries in file")
    return canaries


def write_canaries(path: Path, canaries: Iterable[Canary]) -> int:
    """Write canaries as JSONL; returns how many were written."""
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for c in canaries:
            fh.write(c.to_json() + "\n")
            count += 1
    return count
