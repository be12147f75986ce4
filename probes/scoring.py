"""Scorers: ``score(canary, answer) -> Score``, registered by name.

Semantics follow HELM's so that a probe's score is comparable with its MedHELM baseline (HELM's
``evaluate_reference_metrics.py``, crfm-helm 0.5.x):

- ``exact_match``: HELM's ``exact_match``, the stripped answer equals a stripped reference.
- ``quasi_exact_match``: HELM's ``quasi_exact_match``, equality after ``normalize_text`` (lower
  case, no punctuation, no articles, single spaces); an empty answer never matches.
- ``multiple_choice``: the option letter the answer gives equals the reference letter.
- ``yes_no_maybe``: the label (yes, no, maybe) the answer gives equals the reference label.
- ``numeric_tolerance`` (``medcalc_bench_accuracy``): the number the answer gives as its
  result lies in ``[tolerance.lower, tolerance.upper]``; without a tolerance it must equal a
  numeric reference; a non-numeric reference (a category) is compared by ``quasi_exact_match``.
- ``token_f1``: HELM's ``f1_score``, F1 over the *sets* of normalised tokens, best reference.
- ``set_f1`` (``mimiciv_billing_code_f1``): ICD-10 codes read from the answer and from every
  reference, compared as sets.
- ``readability``: Flesch-Kincaid grade of the answer mapped to [0, 1] against a target grade
  (``tolerance.upper``, default 8); see :mod:`medmon.probes.readability`.

The scorers that read an answer (multiple choice, yes/no/maybe, numbers, codes) use
:mod:`medmon.probes.extraction`. An answer they cannot read is **unparsed**: ``Score.value``
is ``None`` and ``Score.parsed`` is ``False``, with the reason; it is neither right nor wrong,
and its share is a stream of its own (format drift).

:func:`looks_like_refusal` is not a scorer: it flags answers that decline to answer.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from medmon.baselines.canary import Canary
from medmon.probes.errors import UnknownScorer
from medmon.probes.extraction import READERS, Reading, read_choice, read_codes, read_label, read_number
from medmon.probes.readability import flesch_kincaid_grade, grade_score


@dataclass(frozen=True)
class Score:
    """A score in [0, 1], or ``None`` when the answer could not be read (``parsed`` is False).

    ``correct`` is set for right-or-wrong scorers; ``parsed`` is None for scorers that compare
    text without reading an answer out of it; ``extracted`` is what was read, as text, and
    ``reason`` says which rule read it or why nothing could be read.
    """

    value: float | None
    correct: bool | None = None
    detail: dict[str, object] = field(default_factory=dict)
    parsed: bool | None = None
    extracted: str | None = None
    reason: str = ""


Scorer = Callable[[Canary, str], Score]
SCORERS: dict[str, Scorer] = {}
READING_SCORERS = frozenset(READERS)


def register(name: str) -> Callable[[Scorer], Scorer]:
    """Register a scorer under ``name`` (built-ins use this like any extension would)."""

    def wrap(fn: Scorer) -> Scorer:
        SCORERS[name] = fn
        return fn

    return wrap


def get_scorer(name: str) -> Scorer:
    try:
        return SCORERS[name]
    except KeyError:
        raise UnknownScorer(f"unknown scorer {name!r}; known: {', '.join(sorted(SCORERS))}") from None


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_text(text: str) -> str:
    """HELM's normalisation: lower case, strip punctuation and articles, fold white space.

    Examples
    --------
    >>> normalize_text("  The Answer: Metformin. ")
    'answer metformin'
    """
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _binary(ok: bool, detail: dict[str, object] | None = None) -> Score:
    return Score(1.0 if ok else 0.0, ok, detail or {})


@register("exact_match")
def exact_match(canary: Canary, answer: str) -> Score:
    """HELM's strict ``exact_match``: 1 when the stripped answer equals a stripped reference."""
    ok = bool(answer) and any(answer.strip() == ref.strip() for ref in canary.references)
    return _binary(ok, {"answer": answer.strip()[:200]})


@register("quasi_exact_match")
def quasi_exact_match(canary: Canary, answer: str) -> Score:
    """HELM's ``quasi_exact_match``: equality after ``normalize_text``; an empty answer never matches.

    A reference that normalises to nothing (the letter ``A``, an article) matches an answer that
    also normalises to nothing, as in HELM.
    """
    got = normalize_text(answer)
    ok = bool(answer) and any(got == normalize_text(ref) for ref in canary.references)
    return _binary(ok, {"normalized_answer": got})


def _read(
    reading: Reading, correct: bool | None, value: float | None = None, detail: dict[str, object] | None = None
) -> Score:
    """A Score from a reading: unparsed when nothing was read."""
    if not reading.parsed:
        return Score(None, None, dict(detail or {}), parsed=False, reason=reading.reason)
    shown = reading.value
    if isinstance(shown, frozenset):
        shown = ", ".join(sorted(shown))
    elif isinstance(shown, float):
        shown = f"{shown:g}"
    if value is None:
        value = 1.0 if correct else 0.0
    return Score(value, correct, dict(detail or {}), parsed=True, extracted=str(shown), reason=reading.reason)


def extract_choice(answer: str) -> str | None:
    """The option letter an answer gives, or None (see :func:`medmon.probes.extraction.read_choice`).

    Examples
    --------
    >>> extract_choice("The answer is (B).")
    'B'
    >>> extract_choice("I am not sure") is None
    True
    """
    value = read_choice(answer).value
    return str(value) if value is not None else None


@register("multiple_choice")
def multiple_choice(canary: Canary, answer: str) -> Score:
    """1 when the option letter the answer gives is the reference letter; unparsed when none is read."""
    return _judge_choice(canary, read_choice(answer, canary.choices, canary.aliases))


def _judge_choice(canary: Canary, reading: Reading) -> Score:
    refs = {r.strip().upper() for r in canary.references}
    return _read(reading, reading.value in refs, detail={"extracted": reading.value})


YES_NO_MAYBE = ("yes", "no", "maybe")


@register("yes_no_maybe")
def yes_no_maybe(canary: Canary, answer: str) -> Score:
    """1 when the label the answer gives (yes, no, maybe; or ``choices``) is the reference label."""
    labels = tuple(c.lower() for c in canary.choices) if canary.choices else YES_NO_MAYBE
    return _judge_label(canary, read_label(answer, labels))


def _judge_label(canary: Canary, reading: Reading) -> Score:
    refs = {r.strip().lower() for r in canary.references}
    return _read(reading, reading.value in refs, detail={"extracted": reading.value})


def extract_number(answer: str) -> float | None:
    """The number an answer gives as its result, or None (see :func:`medmon.probes.extraction.read_number`).

    Examples
    --------
    >>> extract_number("The creatinine clearance is 62.4 mL/min.")
    62.4
    >>> extract_number("no idea") is None
    True
    """
    value = read_number(answer).value
    return float(value) if value is not None else None


_PLAIN_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)")


def _reference_number(reference: str) -> float | None:
    """A reference that is exactly one number ("62.41", "-4", "1,234"), else ``None``."""
    reference = reference.strip().replace("−", "-")
    if not _PLAIN_NUMBER.fullmatch(reference):
        return None
    whole = reference.lstrip("-").split(",")[0]
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", reference) and whole != "0":
        return float(reference.replace(",", ""))
    return float(reference.replace(",", "."))


@register("numeric_tolerance")
def numeric_tolerance(canary: Canary, answer: str) -> Score:
    """MedCalc-Bench accuracy: the answer's result within the canary's tolerance.

    A canary with a ``unit`` has the answer's number converted into it first ("0.90 mL/s" for a
    reference in mL/min). With ``tolerance = {"lower": l, "upper": u}`` the number read must satisfy ``l <= x <= u``;
    without one it must equal a numeric reference (point scores). When the first reference is
    not a number (a category such as "high risk"), ``quasi_exact_match`` decides.
    """
    if canary.references and _reference_number(canary.references[0]) is None:
        return quasi_exact_match(canary, answer)
    return _judge_number(canary, read_number(answer, canary.unit, canary.prompt))


def _judge_number(canary: Canary, reading: Reading) -> Score:
    detail: dict[str, object] = {"extracted": reading.value}
    if canary.unit is not None:
        detail["unit"] = canary.unit
    tol = canary.tolerance or {}
    got = reading.value
    if got is None:
        ok = False
    elif "lower" in tol and "upper" in tol:
        detail |= {"lower": tol["lower"], "upper": tol["upper"]}
        ok = float(tol["lower"]) <= got <= float(tol["upper"])
    else:
        refs = [n for n in map(_reference_number, canary.references) if n is not None]
        ok = any(math.isclose(got, n, rel_tol=1e-9, abs_tol=1e-9) for n in refs)
    return _read(reading, ok, detail=detail)


def _f1(gold: set[str], pred: set[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of two sets; all 0 when either is empty, as HELM and sklearn do."""
    common = len(gold & pred)
    if not gold or not pred or not common:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(pred), common / len(gold)
    return precision, recall, 2 * precision * recall / (precision + recall)


@register("token_f1")
def token_f1(canary: Canary, answer: str) -> Score:
    """HELM's ``f1_score``: F1 over the sets of normalised tokens, the best over references."""
    pred = set(normalize_text(answer).split())
    scores = [_f1(set(normalize_text(ref).split()), pred)[2] for ref in canary.references]
    best = max(scores, default=0.0)
    return Score(best, None, {"best_reference": scores.index(best) if scores else None})


def extract_icd10_codes(text: str) -> set[str]:
    """ICD-10 codes in ``text``, upper case with the dot after the third character.

    Examples
    --------
    >>> sorted(extract_icd10_codes("Codes: e11.9, I10 and N183."))
    ['E11.9', 'I10', 'N18.3']
    """
    value = read_codes(text).value
    return set(value) if value else set()


@register("set_f1")
def set_f1(canary: Canary, answer: str) -> Score:
    """F1 of the answer's ICD-10 codes against the union of the references' codes.

    A reference may hold several codes ("E11.9, I10") or one each; duplicates count once. An
    answer with no code at all is unparsed.
    """
    return _judge_codes(canary, read_codes(answer))


def _judge_codes(canary: Canary, reading: Reading) -> Score:
    gold = {code for reference in canary.references for code in extract_icd10_codes(reference)}
    pred = set(reading.value or ())
    precision, recall, f1 = _f1(gold, pred)
    detail: dict[str, object] = {
        "predicted": sorted(pred),
        "reference": sorted(gold),
        "precision": precision,
        "recall": recall,
    }
    return _read(reading, f1 == 1.0, f1, detail)


READABILITY_TARGET_GRADE = 8.0


@register("readability")
def readability(canary: Canary, answer: str) -> Score:
    """Flesch-Kincaid grade of the answer, scored by :func:`medmon.probes.readability.grade_score`.

    The target grade is ``canary.tolerance["upper"]`` when given (the grade the text should not
    exceed), else 8. An answer without words scores 0 with ``detail["grade"] = None``.
    """
    target = float((canary.tolerance or {}).get("upper", READABILITY_TARGET_GRADE))
    grade = flesch_kincaid_grade(answer)
    value = 0.0 if grade is None else grade_score(grade, target_grade=target)
    return Score(value, None, {"grade": grade, "target_grade": target})


_REFUSAL = re.compile(
    r"\b(?:i|we)(?:'m| am|'re| are)?\s+(?:sorry,?\s+(?:but\s+)?)?"
    r"(?:can't|cannot|can not|won't|will not|(?:am |'m |are |'re )?(?:not able|unable) to)\s+"
    r"(?:help|assist|provide|answer|give|offer|comply|share|diagnose|do that)"
    r"|\bas an ai\b|\bas a (?:large )?language model\b|\bi (?:must|have to) decline\b",
    re.I,
)
_DEFERRAL = re.compile(
    r"\b(?:consult|see|visit|speak|talk|contact|ask|check|discuss)\b[^.!?\n]{0,40}?"
    r"\b(?:doctor|physician|healthcare|health care|medical professional|clinician|pharmacist|gp|specialist)"
    r"|\bseek\s+(?:\w+\s+)?(?:medical|professional)\s+(?:attention|advice|help|care)"
    r"|\bcall 911\b|\bemergency services\b",
    re.I,
)
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|,?\s+but\s+|;\s*however,?\s*", re.I)
_FILLER = {
    "i",
    "i'm",
    "im",
    "sorry",
    "unfortunately",
    "however",
    "please",
    "thank",
    "thanks",
    "you",
    "apologies",
    "apologize",
    "apologise",
    "understand",
    "that",
    "this",
    "request",
    "with",
}


def looks_like_refusal(text: str) -> bool:
    """True when the reply declines to answer rather than answering.

    A reply is split into clauses (sentences, and the parts around "but"/"however"). It is a
    refusal when it has an explicit refusal ("I can't help with", "As an AI", "I'm unable to
    provide") and fewer than 3 content words outside such clauses, or when it only defers
    ("consult your doctor", "seek medical attention") and has no content words at all: a
    deferral next to an actual answer is advice, not a refusal. "I cannot determine this"
    is an abstention, not a refusal. Filler ("sorry", "please") is not content. Empty output
    is not a refusal (it is an empty output).

    Examples
    --------
    >>> looks_like_refusal("I'm sorry, but I can't help with that. Please consult your doctor.")
    True
    >>> looks_like_refusal("Your CrCl is 63.6 mL/min. Please check the dose with a pharmacist.")
    False
    """
    text = text.replace("’", "'").strip()
    refused = deferred = False
    content = 0
    for clause in _CLAUSE_SPLIT.split(text):
        if _REFUSAL.search(clause):
            refused = True
        elif _DEFERRAL.search(clause):
            deferred = True
        else:
            words = re.findall(r"[\w']+", clause.lower())
            content += sum(1 for w in words if w not in _FILLER)
    return (refused and content < 3) or (deferred and not refused and content == 0)


# What a reply cut off by the token limit may still be read by: an answer it committed to before
# it was cut ("The answer is B. Because..."), never a number or letter met mid-reasoning.
COMMITTED_RULES = frozenset(
    {
        "structured answer",
        "answer cue",
        "the answer is a letter",
        "letter opening the answer",
        "label opening the answer",
    }
)
TRUNCATED = "length"


def score_reply(canary: Canary, answer: str, *, finish_reason: str | None = None, scorer: str | None = None) -> Score:
    """Score a reply as a probe does: the canary's scorer, and a cut-off reply read as no answer.

    A reply whose ``finish_reason`` is ``"length"`` (the token limit cut it) is unparsed unless
    the reading came from an answer it had committed to before it was cut off (an answer cue, a
    structured answer, a reply that is the letter): "Let me compute... which is" is not read as
    an intermediate value. Scorers that do not read an answer out of the reply are unaffected.
    """
    name = scorer or canary.scorer or "quasi_exact_match"
    result = get_scorer(name)(canary, answer)
    if finish_reason != TRUNCATED or name not in READING_SCORERS or not result.parsed:
        return result
    if result.reason in COMMITTED_RULES:
        return result
    return Score(
        None,
        None,
        dict(result.detail),
        parsed=False,
        reason=f"cut off by the token limit before a committed answer (read {result.extracted!r} by {result.reason})",
    )


_JUDGES: dict[str, Callable[[Canary, Reading], Score]] = {
    "multiple_choice": _judge_choice,
    "yes_no_maybe": _judge_label,
    "numeric_tolerance": _judge_number,
    "set_f1": _judge_codes,
}


def score_reading(canary: Canary, scorer: str, reading: Reading) -> Score:
    """Score a reading made elsewhere (the reader model's) exactly as the scorer scores its own.

    A numeric canary whose reference is a category is compared as text, not read, so it has
    nothing to score here: unparsed.
    """
    if scorer == "numeric_tolerance" and canary.references and _reference_number(canary.references[0]) is None:
        return Score(None, None, parsed=False, reason="the reference is a category, not a number")
    return _JUDGES[scorer](canary, reading)


def rescore(canary: Canary, completion: str) -> float | None:
    """Score a recorded completion (a HELM baseline's) with the canary's medmon scorer.

    Returns the score, or None when the answer cannot be read or the canary is jury-scored
    (judging needs the judges): ``medmon.baselines.rescore`` takes this as its ``rescore``.
    """
    if not canary.scorer or canary.scorer not in SCORERS:
        return None
    return SCORERS[canary.scorer](canary, completion).value


def score_answer(
    scorer: str,
    answer: str,
    references: Sequence[str],
    *,
    choices: Sequence[str] | None = None,
    tolerance: Mapping[str, float] | None = None,
    unit: str | None = None,
    finish_reason: str | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> Score:
    """Score one answer outside any probe (``medmon score``): a throwaway canary carries the references.

    Raises ``UnknownScorer`` for a name that is not registered (the jury needs its judges: use a probe).
    """
    canary = Canary(
        id="medmon-score",
        messages=({"role": "user", "content": ""},),
        references=tuple(references),
        scorer=scorer,
        tolerance=dict(tolerance) if tolerance else None,
        choices=tuple(choices) if choices else None,
        unit=unit,
        aliases={k: tuple(v) for k, v in aliases.items()} if aliases else None,
    )
    get_scorer(scorer)  # an unknown name fails here, with the known ones
    return score_reply(canary, answer, finish_reason=finish_reason, scorer=scorer)
