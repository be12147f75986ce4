"""medmon's text metrics agree with HELM's own code on every pair (HELM takes the best reference)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from medmon.baselines.canary import Canary
from medmon.probes.scoring import get_scorer
from tests.probes import helm_reference_metrics as helm

CORPUS = Path(__file__).parent / "corpus" / "answers.jsonl"
REFERENCES = [
    "A",
    "B",
    "yes",
    "no",
    "maybe",
    "Yes",
    "The",
    "a",
    "63.6",
    "E11.9, I10",
    "the patient has pneumonia",
    "Metoprolol",
    "No",
    " yes ",
    "an answer",
]


def pairs() -> list[tuple[str, str]]:
    answers = [json.loads(line)["answer"] for line in CORPUS.read_text("utf-8").splitlines()]
    extra = [
        "A",
        "a",
        "The",
        "",
        " ",
        "yes",
        "Yes",
        "YES.",
        "the no",
        "an",
        "pneumonia",
        "Patient has pneumonia.",
        '"No"',
        "No",
        "B\n",
        " B ",
        "metoprolol",
    ]
    texts = answers + extra
    return [
        (text, ref)
        for i, text in enumerate(texts)
        for ref in (REFERENCES[i % len(REFERENCES)], REFERENCES[(i * 7 + 3) % len(REFERENCES)])
    ]


PAIRS = pairs()


def test_enough_pairs() -> None:
    assert len(PAIRS) >= 800


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [("exact_match", helm.exact_match), ("quasi_exact_match", helm.quasi_exact_match), ("token_f1", helm.f1_score)],
)
def test_agrees_with_helm_on_every_pair(ours: str, theirs: object) -> None:
    scorer = get_scorer(ours)
    differ = []
    for answer, reference in PAIRS:
        canary = Canary(id="x", messages=({"role": "user", "content": "q"},), references=(reference,))
        mine = scorer(canary, answer).value
        expected = float(theirs(reference, answer))  # type: ignore[operator]
        if mine is None or not math.isclose(mine, expected, abs_tol=1e-12):
            differ.append((answer[:40], reference, mine, expected))
    assert not differ, differ[:10]


def test_strict_and_quasi_disagree_where_helm_says_they_do() -> None:
    """The pairs on which a benchmark's strict exact_match and quasi exact match differ (PubMedQA's main metric is
    strict)."""
    differ = [(a, r) for a, r in PAIRS if helm.exact_match(r, a) != helm.quasi_exact_match(r, a)]
    assert differ  # e.g. "Yes." against "yes"
    canary = Canary(id="x", messages=({"role": "user", "content": "q"},), references=("yes",))
    assert get_scorer("exact_match")(canary, "Yes.").value == 0.0
    assert get_scorer("quasi_exact_match")(canary, "Yes.").value == 1.0
