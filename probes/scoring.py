"""Scorers: ``score(canary, answer) -> Score``, registered by name.

Semantics follow HELM's so that a probe's score is comparable with its MedHELM baseline:

- ``exact_match``: HELM's ``normalize_text`` (lower case, no punctuation, no articles, single
  spaces), compared with every reference.
- ``multiple_choice``: the option letter found in the answer equals the reference letter.
- ``numeric_tolerance`` (``medcalc_bench_accuracy``): the number extracted from the answer lies
  in ``[tolerance.lower, tolerance.upper]``; without a tolerance it must equal a numeric
  reference; a non-numeric reference (a category) is compared as ``exact_match``.
- ``token_f1``: HELM's ``f1_score``, F1 over the *sets* of normalised tokens, best reference.
- ``set_f1`` (``mimiciv_billing_code_f1``): ICD-10 codes extracted from the answer and from
  every reference, compared as sets; F1 is 0 when either set is empty.
- ``readability``: Flesch-Kincaid grade of the answer mapped to [0, 1] against a target grade
  (``tolerance.upper``, default 8); see :mod:`medmon.probes.readability`.

:func:`looks_like_refusal` is not a scorer: it flags answers that decline to answer.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field

from medmon.baselines.canary import Canary
from medmon.probes.errors import UnknownScorer
from medmon.probes.readability import flesch_kincaid_grade, grade_score


@dataclass(frozen=True)
class Score:
    """A score in [0, 1]; ``correct`` is set for right-or-wrong scorers."""

    value: float
    correct: bool | None = None
    detail: dict[str, object] = field(default_factory=dict)


Scorer = Callable[[Canary, str], Score]
SCORERS: dict[str, Scorer] = {}


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


@register("exact_match")
def exact_match(canary: Canary, answer: str) -> Score:
    """1 when the normalised answer equals any normalised reference."""
    got = normalize_text(answer)
    ok = bool(got) and any(got == normalize_text(ref) for ref in canary.references)
    return Score(1.0 if ok else 0.0, ok, {"normalized_answer": got})


# An option letter: bracketed "(b)"/"[B]", followed by ")", "." or ":" ("b) warfarin", "B."), or
# a bare capital not followed by a lower-case word (so "I think" and "A beta blocker" are not
# options I and A).
_LETTER = r"(?:[\(\[]([A-Ja-j])[\)\]]|([A-Ja-j])[\).:](?=\s|$)|([A-J])(?=$|[,;]|\s+[^a-z\s]|\s*$))"
_CHOICE_PATTERNS = (
    re.compile(r"(?i:\banswer\b)(?:\s+(?i:is|would be))?\s*[:=]?\s*(?:" + _LETTER + r"|([A-Ja-j])(?=\s*$|[,;]))"),
    re.compile(r"^\s*" + _LETTER),
    re.compile(r"[\(\[]([A-Ja-j])[\)\]]"),
    re.compile(r"(?i:\b(?:option|choice)\s+)([A-Ja-j])\b"),
)


def extract_choice(answer: str) -> str | None:
    """Find the option letter in answers like 'B', '(b)', 'The answer is (B).' or 'B. Metformin'.

    Rules, in order: the letter after "answer is" / "answer:"; a letter opening the answer;
    the first bracketed letter anywhere; "option B"; a lone letter. Lower case is accepted when the letter
    is bracketed, followed by ")", "." or ":", or alone.

    Examples
    --------
    >>> extract_choice("The answer is (B).")
    'B'
    >>> extract_choice("c) warfarin")
    'C'
    >>> extract_choice("I am not sure") is None
    True
    """
    for pattern in _CHOICE_PATTERNS:
        match = pattern.search(answer.strip())
        if match:
            return next(g for g in match.groups() if g).upper()
    stripped = answer.strip().rstrip(".").strip()
    if len(stripped) == 1 and stripped.upper() in "ABCDEFGHIJ":
        return stripped.upper()
    return None


@register("multiple_choice")
def multiple_choice(canary: Canary, answer: str) -> Score:
    """1 when the option letter found in the answer is the reference letter."""
    letter = extract_choice(answer)
    refs = {r.strip().upper() for r in canary.references}
    ok = letter is not None and letter in refs
    return Score(1.0 if ok else 0.0, ok, {"extracted": letter})


# A number not glued to a word (so the 2 of "kg/m2" or "CHA2DS2" is not one): "1,234.5" has
# thousands separators, "62,4" a decimal comma; a minus sign counts only when it does not
# follow a digit, so "140-70" is two positive numbers.
_NUMBER = r"(?<![\w.,])[-−]?(?:\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)"
_NUMBER_RE = re.compile(_NUMBER)
_NEAR = r"(?:approximately|approx\.?|about|around|roughly|~|≈)?\s*[*(\[]*\s*"
_ANSWER_CUE = re.compile(
    rf"\b(?:final\s+answer|answer|result)\b(?:\s+(?:is|was|would\s+be|of))?\s*[:=]?\s*{_NEAR}({_NUMBER})", re.I
)
_VALUE_CUE = re.compile(rf"(?:\bis|\bwas|\bequals|(?<!out )\bof|=|≈|~|:)\s*{_NEAR}({_NUMBER})", re.I)
_BSA_UNIT = re.compile(r"(?:/|\bper\s+)\s*1\.73\s*m(?:2|²|\^2)", re.I)


def _parse_number(token: str) -> float:
    token = token.replace("−", "-")
    whole = token.lstrip("-").split(",")[0]
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", token) and whole != "0":
        return float(token.replace(",", ""))
    return float(token.replace(",", "."))


def extract_number(answer: str) -> float | None:
    """The number an answer gives, or ``None``.

    Rules, in order: the last number that directly follows "answer is", "answer:" or "result
    is"; else the last number that directly follows "is", "was", "of", "=", "≈", "~" or ":";
    else the last number in the text. "Directly" allows "approximately"/"about" and markdown
    or brackets in between. Percent signs and units are ignored, and "/1.73 m²" is dropped so
    the eGFR unit is not read as a value.

    Examples
    --------
    >>> extract_number("The creatinine clearance is 62.4 mL/min.")
    62.4
    >>> extract_number("CrCl = (140 - 70) x 72 / (72 x 1.1) ≈ 63.6 mL/min")
    63.6
    >>> extract_number("62,4")
    62.4
    >>> extract_number("no idea") is None
    True
    """
    text = _BSA_UNIT.sub(" ", answer)
    for cue in (_ANSWER_CUE, _VALUE_CUE):
        cued = cue.findall(text)
        if cued:
            return _parse_number(cued[-1])
    numbers = _NUMBER_RE.findall(text)
    return _parse_number(numbers[-1]) if numbers else None


def _reference_number(reference: str) -> float | None:
    """A reference that is exactly one number ("62.41", "-4", "1,234"), else ``None``."""
    reference = reference.strip()
    return _parse_number(reference) if _NUMBER_RE.fullmatch(reference) else None


@register("numeric_tolerance")
def numeric_tolerance(canary: Canary, answer: str) -> Score:
    """MedCalc-Bench accuracy: the answer's number within the canary's tolerance.

    With ``tolerance = {"lower": l, "upper": u}`` the extracted number must satisfy
    ``l <= x <= u``; without one it must equal a numeric reference (point scores). When the
    first reference is not a number (a category such as "high risk"), ``exact_match`` decides.
    """
    if canary.references and _reference_number(canary.references[0]) is None:
        return exact_match(canary, answer)
    got = extract_number(answer)
    detail: dict[str, object] = {"extracted": got}
    tol = canary.tolerance or {}
    if got is None:
        ok = False
    elif "lower" in tol and "upper" in tol:
        detail |= {"lower": tol["lower"], "upper": tol["upper"]}
        ok = float(tol["lower"]) <= got <= float(tol["upper"])
    else:
        refs = [n for n in map(_reference_number, canary.references) if n is not None]
        ok = any(math.isclose(got, n, rel_tol=1e-9, abs_tol=1e-9) for n in refs)
    return Score(1.0 if ok else 0.0, ok, detail)


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


# ICD-10-CM: a letter, two digits (or the C4A/D3A/M1A/Z3A categories), then up to four
# characters after an optional dot (S72.001A, T78.40XA); case and the dot are normalised.
_ICD10 = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]\d{2}|[CDMZcdmz]\d[Aa])(?:\.?([0-9A-Za-z]{1,4}))?(?![A-Za-z0-9])")


def extract_icd10_codes(text: str) -> set[str]:
    """ICD-10 codes in ``text``, upper case with the dot after the third character.

    Examples
    --------
    >>> sorted(extract_icd10_codes("Codes: e11.9, I10 and N183."))
    ['E11.9', 'I10', 'N18.3']
    """
    codes: set[str] = set()
    for category, suffix in _ICD10.findall(text.replace("**", "")):
        code = category.upper()
        codes.add(f"{code}.{suffix.upper()}" if suffix else code)
    return codes


@register("set_f1")
def set_f1(canary: Canary, answer: str) -> Score:
    """F1 of the answer's ICD-10 codes against the union of the references' codes.

    A reference may hold several codes ("E11.9, I10") or one each; duplicates count once.
    """
    gold = {code for reference in canary.references for code in extract_icd10_codes(reference)}
    pred = extract_icd10_codes(answer)
    precision, recall, f1 = _f1(gold, pred)
    detail: dict[str, object] = {"predicted": sorted(pred), "reference": sorted(gold),
                                 "precision": precision, "recall": recall}
    return Score(f1, f1 == 1.0, detail)


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
_FILLER = {"i", "i'm", "im", "sorry", "unfortunately", "however", "please", "thank", "thanks", "you",
           "apologies", "apologize", "apologise", "understand", "that", "this", "request", "with"}


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
