"""Answer reading on a blind, hand-labelled set: the share read as a clinician reads it, per scorer.

Takes a JSONL file in the blind-set format (one item a line: ``id``, ``scorer`` one of ``mcq``,
``number``, ``label``, ``icd10``; ``question``; ``choices`` (mcq, letter to option text) or
``labels`` (label); ``expected``; ``unit`` and relative ``tolerance`` (number); ``answer``;
``finish_reason``; ``truth``, what a careful clinician reads as the reply's final committed
answer, null when it commits to none; ``verdict``: correct, wrong or unreadable) and scores each
answer with the scorer medmon uses in production (``multiple_choice``, ``numeric_tolerance``,
``yes_no_maybe``, ``set_f1``) against a canary built from the item, as a probe run would.

Per scorer it prints:

- **read as truth**: the reading equals ``truth`` (no reading when ``truth`` is null; a number
  within the item's relative tolerance of ``truth``, in the item's unit);
- **false correct**: items whose verdict is wrong or unreadable but that the scorer scored
  correct. This must be 0: a wrong or unreadable answer is never scored right.

``--misread`` lists every item read differently from its truth; ``--json`` prints the figures
as one JSON object. Exit code 0; 1 when any item is falsely scored correct; 2 on a malformed file
(the message names the line and field).

    .venv/bin/python benchmarks/reading_blind.py /path/to/answers.jsonl [--misread] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medmon.baselines.canary import Canary
from medmon.probes import scoring
from medmon.probes.scoring import SCORERS, Score

SCORER_OF = {"mcq": "multiple_choice", "number": "numeric_tolerance", "label": "yes_no_maybe", "icd10": "set_f1"}
VERDICTS = ("correct", "wrong", "unreadable")


class BadItem(ValueError):
    """A line that does not follow the blind-set format; the message names the line and field."""


def canary_of(item: Mapping[str, Any], where: str) -> Canary:
    kind = item["scorer"]
    fields: dict[str, Any] = {"id": str(item["id"]), "messages": ({"role": "user", "content": item["question"]},)}
    if kind == "mcq":
        choices = item.get("choices")
        if not isinstance(choices, dict) or not choices:
            raise BadItem(f"{where}: field 'choices': expected an object of option letter to text")
        letters = sorted(choices)
        fields |= {"references": (str(item["expected"]),), "choices": tuple(str(choices[k]) for k in letters)}
    elif kind == "label":
        labels = item.get("labels")
        if not isinstance(labels, list) or not labels:
            raise BadItem(f"{where}: field 'labels': expected a list of labels")
        fields |= {"references": (str(item["expected"]),), "choices": tuple(str(x) for x in labels)}
    elif kind == "number":
        expected, tol = float(item["expected"]), float(item.get("tolerance") or 0.0)
        low, high = sorted((expected * (1 - tol), expected * (1 + tol)))
        fields |= {"references": (repr(expected),), "tolerance": {"lower": low, "upper": high}}
        if "unit" in {f.name for f in dataclasses.fields(Canary)}:  # a canary that carries its unit
            fields["unit"] = str(item.get("unit") or "")
    else:
        codes = item.get("expected")
        if not isinstance(codes, list):
            raise BadItem(f"{where}: field 'expected': expected a list of ICD-10 codes")
        fields["references"] = (", ".join(str(c) for c in codes),)
    return Canary(scorer=SCORER_OF[kind], **fields)


def _score(canary: Canary, item: Mapping[str, Any]) -> Score:
    """Score as a probe run does: with the reply's finish reason where the scorers take it."""
    reply = getattr(scoring, "score_reply", None)
    if reply is not None:
        result: Score = reply(canary, str(item["answer"]), finish_reason=item.get("finish_reason"))
        return result
    return SCORERS[str(canary.scorer)](canary, str(item["answer"]))


def _reading(score: Score, kind: str) -> Any:
    if not score.parsed:
        return None
    if kind == "icd10":
        return sorted(str(c).upper() for c in score.detail.get("predicted", ()))
    return score.detail.get("extracted")


def _matches(kind: str, reading: Any, truth: Any, tolerance: float) -> bool:
    if truth is None or reading is None:
        return truth is None and reading is None
    if kind == "number":
        return math.isclose(float(reading), float(truth), rel_tol=max(tolerance, 1e-6), abs_tol=1e-9)
    if kind == "icd10":
        return sorted(str(c).upper() for c in reading) == sorted(str(c).upper() for c in truth)
    return str(reading).strip().lower() == str(truth).strip().lower()


def measure(path: Path) -> dict[str, Any]:
    """Per scorer: items, read as truth, false correct; and the misread items."""
    figures: dict[str, dict[str, int]] = {k: {"items": 0, "read_as_truth": 0, "false_correct": 0} for k in SCORER_OF}
    misread: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadItem(f"{where}: not JSON: {exc.msg}") from None
        kind = item.get("scorer")
        if kind not in SCORER_OF:
            raise BadItem(f"{where}: field 'scorer': expected one of {', '.join(SCORER_OF)}, got {kind!r}")
        if item.get("verdict") not in VERDICTS:
            raise BadItem(f"{where}: field 'verdict': expected one of {', '.join(VERDICTS)}")
        score = _score(canary_of(item, where), item)
        reading = _reading(score, kind)
        tally = figures[kind]
        tally["items"] += 1
        ok = _matches(kind, reading, item.get("truth"), float(item.get("tolerance") or 0.0))
        tally["read_as_truth"] += ok
        false_correct = item["verdict"] != "correct" and score.correct is True
        tally["false_correct"] += false_correct
        if not ok or false_correct:
            misread.append(
                {
                    "id": item["id"],
                    "style": item.get("style", ""),
                    "read": reading,
                    "truth": item.get("truth"),
                    "reason": score.reason,
                    "false_correct": false_correct,
                    "answer": str(item["answer"]),
                }
            )
    return {"file": str(path), "scorers": figures, "misread": misread}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a JSONL file in the blind-set format")
    parser.add_argument("--misread", action="store_true", help="list each item read differently from its truth")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    try:
        result = measure(args.path)
    except (OSError, BadItem, KeyError, TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    figures = result["scorers"]
    if args.json:
        print(json.dumps(result if args.misread else {k: v for k, v in result.items() if k != "misread"}))
    else:
        total = sum(f["items"] for f in figures.values())
        print(f"{args.path}: {total} hand-labelled answers")
        print(f"  {'scorer':<18} {'read as truth':>16} {'share':>7} {'false correct':>14}")
        for kind, f in figures.items():
            share = f["read_as_truth"] / f["items"] if f["items"] else float("nan")
            label = f"{SCORER_OF[kind]}"
            print(f"  {label:<18} {f['read_as_truth']:>7} / {f['items']:<6} {share:>7.1%} {f['false_correct']:>14}")
        if args.misread:
            for m in result["misread"]:
                flag = " FALSE CORRECT" if m["false_correct"] else ""
                print(
                    f"  misread {m['id']} [{m['style']}]{flag}: read {m['read']!r}, "
                    f"truth {m['truth']!r} ({m['reason']})"
                )
                print(f"      {m['answer'][:300]!r}")
    return 1 if any(f["false_correct"] for f in figures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
