"""Answer extraction accuracy on the labelled corpus: how often medmon reads an answer as a clinician does.

Reads ``tests/probes/corpus/answers.jsonl`` (417 answers in real chat models' styles) and
``holdout.jsonl`` (68 answers written after the readers were tuned) with the readers the
scorers use, and prints, per scorer, how many answers were read as labelled, the share, and
the target (99% for multiple choice, 97% for numbers). Then the CPU time of one reading on the
rule path (the scorers as a probe calls them, units and all), over those corpora and the blind
development sets (``blind_dev.jsonl``, 596 answers in many languages, and ``blind_dev2.jsonl``,
538 harder ones, scored through ``benchmarks/reading_blind.py``'s canaries): the target is under
0.5 ms per answer.
``--misread`` lists the answers read differently. Exit code 1 when a target is missed.

    .venv/bin/python benchmarks/extraction.py [--misread]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from medmon.probes.extraction import read_answer
from medmon.probes.scoring import score_reply

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reading_blind import canary_of as _blind_canary  # noqa: E402  (the blind set's canaries, one place)

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "probes" / "corpus"
CPU_TARGET_S = 0.0005
TARGETS = {"multiple_choice": 0.99, "numeric_tolerance": 0.97, "yes_no_maybe": 0.97, "set_f1": 0.97}


def as_expected(row: dict[str, Any]) -> tuple[bool, Any]:
    value = read_answer(row["scorer"], row["answer"], row.get("choices")).value
    value = sorted(value) if isinstance(value, frozenset) else value
    expected = row["expected"]
    if isinstance(value, float) and expected is not None:
        return math.isclose(value, expected, abs_tol=1e-9), value
    return value == expected, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misread", action="store_true", help="list each answer read differently from its label")
    args = parser.parse_args()
    missed_target = False
    for name in ("answers.jsonl", "holdout.jsonl"):
        rows = [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line.strip()]
        print(f"{name}: {len(rows)} labelled answers")
        print(f"  {'scorer':<18} {'read as labelled':>17} {'share':>7} {'target':>7}")
        for scorer, target in TARGETS.items():
            mine = [r for r in rows if r["scorer"] == scorer]
            results = [(r, *as_expected(r)) for r in mine]
            good = sum(ok for _, ok, _ in results)
            share = good / len(mine)
            missed_target |= share < target
            print(f"  {scorer:<18} {good:>8} / {len(mine):<6} {share:>7.1%} {target:>7.0%}")
            if args.misread:
                for r, ok, value in results:
                    if not ok:
                        print(f"    misread {r['id']}: {r['answer'][:70]!r} -> {value!r}, labelled {r['expected']!r}")
    rows = [json.loads(line) for line in (CORPUS / "answers.jsonl").read_text("utf-8").splitlines() if line.strip()]
    scored = []
    for name in ("blind_dev.jsonl", "blind_dev2.jsonl"):
        blind = [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line.strip()]
        scored += [(_blind_canary(r, f"{name}:{r['id']}"), r) for r in blind]
    for r in rows:  # warm the caches (unit registry, patterns) as a running service has them
        read_answer(r["scorer"], r["answer"], r.get("choices"))
    started = time.process_time()
    for _ in range(5):
        for r in rows:
            read_answer(r["scorer"], r["answer"], r.get("choices"))
        for canary, r in scored:
            score_reply(canary, r["answer"], finish_reason=r.get("finish_reason"))
    count = 5 * (len(rows) + len(scored))
    per = (time.process_time() - started) / count
    print(f"CPU per answer on the rule path: {per * 1e6:.0f} us (mean over {count} readings; target < 500 us)")
    missed_target |= per >= CPU_TARGET_S
    return 1 if missed_target else 0


if __name__ == "__main__":
    sys.exit(main())
