"""The labelled corpus: realistic answers in real chat models' styles, read as a clinician reads them.

``corpus/answers.jsonl`` holds answers written the way chat models write (markdown, reasoning
then a final answer, JSON and XML, fullwidth characters, negations, letter-first phrasings,
restated inputs, thresholds and ranges after a result) with the reading a clinician gives
each (``expected``; null when the answer gives no single answer). ``corpus/holdout.jsonl`` was
written after the readers were tuned on the first file. The targets are the project's: at least
99% of multiple-choice and 97% of numeric answers read as a clinician reads them
(``benchmarks/extraction.py`` prints the figures).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from medmon.baselines.canary import Canary
from medmon.probes.extraction import read_answer
from medmon.probes.scoring import get_scorer

CORPUS = Path(__file__).parent / "corpus"
TARGETS = {"multiple_choice": 0.99, "numeric_tolerance": 0.97, "yes_no_maybe": 0.97, "set_f1": 0.97}


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line.strip()]


def read_as_expected(row: dict[str, Any]) -> bool:
    value = read_answer(row["scorer"], row["answer"], row.get("choices")).value
    expected = row["expected"]
    if isinstance(value, frozenset):
        value = sorted(value)
    if isinstance(value, float) and expected is not None:
        return math.isclose(value, expected, abs_tol=1e-9)
    return bool(value == expected)


def test_corpus_is_large_and_covers_every_reader_and_style() -> None:
    corpus = rows("answers.jsonl")
    assert len(corpus) >= 400
    assert {r["scorer"] for r in corpus} == set(TARGETS)
    styles = {r["style"] for r in corpus}
    assert {"markdown", "reasoning", "structured", "fullwidth", "negation", "phrasing"} <= styles
    assert sum(r["expected"] is None for r in corpus) >= 30  # answers with no single answer


@pytest.mark.parametrize("name", ["answers.jsonl", "holdout.jsonl"])
@pytest.mark.parametrize("scorer", sorted(TARGETS))
def test_extraction_meets_its_target(name: str, scorer: str) -> None:
    corpus = [r for r in rows(name) if r["scorer"] == scorer]
    misread = [(r["id"], r["answer"][:80]) for r in corpus if not read_as_expected(r)]
    assert 1 - len(misread) / len(corpus) >= TARGETS[scorer], misread


@pytest.mark.parametrize("name", ["answers.jsonl", "holdout.jsonl"])
def test_scores_follow_the_reading(name: str) -> None:
    """A read answer is scored right or wrong against its reference; an unread one is unparsed."""
    for row in rows(name):
        canary = Canary(
            id=row["id"],
            messages=({"role": "user", "content": "q"},),
            references=tuple(row["references"]),
            tolerance=row.get("tolerance"),
            choices=tuple(row["choices"]) if row.get("choices") else None,
        )
        score = get_scorer(row["scorer"])(canary, row["answer"])
        if row["expected"] is None:
            assert score.parsed is False and score.value is None, row["id"]
        elif read_as_expected(row):
            assert score.parsed is True and score.value is not None, row["id"]
