"""Flesch-Kincaid grade level, and how a grade maps to a readability score in [0, 1].

``textstat`` is not a medmon dependency, so the grade is computed here with a plain syllable
heuristic (vowel groups, minus a silent final *e* and a silent *-ed*/*-es*, at least one per
word). It agrees with dictionary syllable counts on the common words of patient instructions;
it is an estimate, as every automatic syllable count is.

Sentences end at ``.``, ``!``, ``?`` or a line break, so each bullet of a list counts as a
sentence (instructions are often bulleted, and a list read as one sentence would inflate the
grade). Words are runs of letters or digits (with inner apostrophes and hyphens).

Examples
--------
>>> round(flesch_kincaid_grade("The cat sat on the mat."), 2)
-1.45
>>> grade_score(7.0, target_grade=8.0)
1.0
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")
_VOWEL_GROUP = re.compile(r"[aeiouy]+")


def count_syllables(word: str) -> int:
    """Estimated syllables in one word; digits and single letters count as one.

    Examples
    --------
    >>> [count_syllables(w) for w in ("take", "table", "medicine", "stopped", "glasses", "day")]
    [1, 2, 3, 1, 2, 1]
    """
    w = re.sub(r"[^a-z]", "", word.lower())
    if len(w) <= 2:
        return 1
    count = len(_VOWEL_GROUP.findall(w))
    if w.endswith("e") and not w.endswith(("le", "ee", "ye")) and count > 1:
        count -= 1  # silent final e: take, medicine
    elif w.endswith("ed") and not w.endswith(("ted", "ded")) and count > 1:
        count -= 1  # silent -ed: stopped, used
    elif w.endswith("es") and not re.search(r"(?:[sxz]|[cs]h|[cg])es$", w) and count > 1:
        count -= 1  # silent -es: takes, times (but not glasses, changes)
    return max(1, count)


def text_counts(text: str) -> tuple[int, int, int]:
    """(sentences, words, syllables) of ``text``; a text with words has at least one sentence."""
    words = _WORD.findall(text)
    if not words:
        return 0, 0, 0
    sentences = [s for s in _SENTENCE_END.split(text) if _WORD.search(s)]
    return max(1, len(sentences)), len(words), sum(count_syllables(w) for w in words)


def flesch_kincaid_grade(text: str) -> float | None:
    """Flesch-Kincaid grade level of ``text``, or ``None`` when it has no words.

    Grade = 0.39 × (words / sentences) + 11.8 × (syllables / words) − 15.59.

    References
    ----------
    Kincaid JP, Fishburne RP, Rogers RL, Chissom BS. Derivation of new readability formulas
    for Navy enlisted personnel. Research Branch Report 8-75, Naval Technical Training
    Command, 1975.
    """
    sentences, words, syllables = text_counts(text)
    if words == 0:
        return None
    return 0.39 * (words / sentences) + 11.8 * (syllables / words) - 15.59


def grade_score(grade: float, *, target_grade: float = 8.0, span: float = 6.0) -> float:
    """Map a grade to [0, 1]: 1 at or below the target, falling linearly to 0 at target + span.

    A text simpler than the target is not penalised: patient materials are recommended at a
    6th to 8th grade reading level, and simpler is better for them. With the defaults a grade 11
    text scores 0.5 and grade 14 or above scores 0.

    Examples
    --------
    >>> grade_score(11.0, target_grade=8.0)
    0.5
    >>> grade_score(15.0, target_grade=8.0)
    0.0
    """
    if span <= 0:
        raise ValueError(f"span must be positive, got {span!r}")
    return min(1.0, max(0.0, 1.0 - (grade - target_grade) / span))
