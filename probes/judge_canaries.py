"""Judge canaries: fixed (answer, gold score) pairs that test the judges, not the model.

Re-judging the same answers with the same rubric should give the same verdicts. The production
model is not called, so when a judge's verdicts move away from the gold scores the judge has
drifted (a silently updated judge model, a changed prompt), which is told apart from a change in
the production model's answers.

File format: JSON Lines, one pair per line (the bundled set is ``probes/packs/judge_canaries.jsonl``;
it has no YAML card, so it is never listed as a canary pack)::

    {"id": "jc-001",
     "messages": [{"role": "user", "content": "..."}],   # the original request
     "answer": "...",                                     # a fixed model response
     "reference": "...",                                  # the gold response shown to the judges
     "gold_score": 4,                                     # overall, on the jury's scale ...
     "tags": {"age_band": "65+"}}                         # ... or {"accuracy": 5, "clarity": 3}

A per-criterion ``gold_score`` is averaged over the jury's criteria it names, to compare with a
judge's mean over the same criteria. ``reference`` may be omitted (the judges then see no gold
response). Gold scores are agreed by clinicians, or by the judges at go-live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from medmon.baselines.canary import Canary, check_record, read_jsonl
from medmon.baselines.errors import CanaryFormatError
from medmon.probes.jury import JURY_SCORER, Jury, JuryOutcome
from medmon.probes.packs import bundled_dir

JUDGE_CANARIES = "judge_canaries"
_FIELDS = frozenset({"id", "messages", "answer", "reference", "gold_score", "tags"})
_ROLES = frozenset({"system", "user", "assistant"})


@dataclass(frozen=True)
class JudgeCanary:
    """One fixed answer to a request, with the score the judges should give it."""

    id: str
    messages: tuple[dict[str, str], ...]
    answer: str
    gold: float | Mapping[str, float]
    reference: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    def gold_score(self, criteria: Sequence[str]) -> float:
        """The gold score to compare with a judge's mean over ``criteria``.

        Examples
        --------
        >>> c = JudgeCanary("x", ({"role": "user", "content": "q"},), "a", {"accuracy": 5, "clarity": 3})
        >>> c.gold_score(["accuracy", "clarity"]), c.gold_score(["accuracy", "completeness"])
        (4.0, 5.0)
        """
        if not isinstance(self.gold, Mapping):
            return float(self.gold)
        named = [float(self.gold[c]) for c in criteria if c in self.gold]
        if not named:
            raise ValueError(f"judge canary {self.id}: gold_score names none of the criteria {', '.join(criteria)}")
        return sum(named) / len(named)

    def as_canary(self) -> Canary:
        """The request as a canary, so the judges get exactly the prompt a probe's answer gets."""
        refs = (self.reference,) if self.reference else ()
        return Canary(
            id=self.id,
            messages=self.messages,
            references=refs,
            scorer=JURY_SCORER,
            tags=dict(self.tags),
            pack=JUDGE_CANARIES,
        )


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def judge_canary_from_dict(data: Any, *, where: str = "<judge canary>", scale: tuple[int, int] = (1, 5)) -> JudgeCanary:
    """Validate one decoded JSON object; ``where`` names the file and line in errors."""
    check_record(data, _FIELDS, where)
    messages = data.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(
            isinstance(m, dict) and m.get("role") in _ROLES and isinstance(m.get("content"), str) for m in messages
        )
    ):
        raise CanaryFormatError(f"{where}: field 'messages': expected a non-empty list of {{role, content}}")
    if not isinstance(data.get("answer"), str) or not data["answer"].strip():
        raise CanaryFormatError(f"{where}: field 'answer': expected a non-empty string")
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise CanaryFormatError(f"{where}: field 'reference': expected a string")
    gold = data.get("gold_score")
    lo, hi = scale
    values = list(gold.values()) if isinstance(gold, dict) and gold else [gold]
    if not all(_number(v) and lo <= v <= hi for v in values):
        raise CanaryFormatError(
            f"{where}: field 'gold_score': expected a number from {lo} to {hi}, "
            f"or an object of such numbers by criterion; got {gold!r}"
        )
    tags = data.get("tags", {})
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        raise CanaryFormatError(f"{where}: field 'tags': expected an object of string values")
    assert gold is not None  # a number, or an object of numbers, as checked above
    return JudgeCanary(
        id=data["id"],
        messages=tuple(dict(m) for m in messages),
        answer=data["answer"],
        gold=dict(gold) if isinstance(gold, dict) else float(gold),
        reference=reference,
        tags=dict(tags),
    )


def bundled_judge_canaries_path() -> Path:
    return bundled_dir() / f"{JUDGE_CANARIES}.jsonl"


def load_judge_canaries(path: Path | None = None, *, scale: tuple[int, int] = (1, 5)) -> tuple[JudgeCanary, ...]:
    """Read judge canaries from ``path`` (the bundled set by default); errors name the file and line."""
    path = path or bundled_judge_canaries_path()
    out = [
        judge_canary_from_dict(data, where=where, scale=scale)
        for where, data in read_jsonl(path, what="judge canaries")
    ]
    ids = [c.id for c in out]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise CanaryFormatError(f"{path}: repeated id(s) {', '.join(repeated)}")
    if not out:
        raise CanaryFormatError(f"{path}: no judge canaries")
    return tuple(out)


@dataclass(frozen=True)
class Rejudged:
    """The jury's verdicts on one judge canary, beside its gold score."""

    canary: JudgeCanary
    gold: float
    outcome: JuryOutcome

    def pairs(self) -> dict[str, tuple[float, float]]:
        """``(judge mean, gold)`` for each judge whose verdict was valid."""
        return {v.judge: (v.mean, self.gold) for v in self.outcome.verdicts if v.mean is not None}


async def rejudge(jury: Jury, canaries: Sequence[JudgeCanary]) -> list[Rejudged]:
    """Every judge scores every fixed answer again (concurrently; failures are verdicts)."""
    criteria = jury.settings.criteria
    outcomes = await asyncio.gather(*(jury.judge(c.as_canary(), c.answer) for c in canaries))
    return [Rejudged(c, c.gold_score(criteria), o) for c, o in zip(canaries, outcomes, strict=True)]
