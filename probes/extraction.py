"""Reading the answer out of a model's reply, the way a clinician reads it.

Real chat models do not answer ``B``: they write ``**Answer: B**``, a paragraph of reasoning
ending in "Therefore, the answer is C.", a JSON object, a fenced block, fullwidth ``（B）``, or
"It is not B, it is D.". Each reader here returns a :class:`Reading`: the value read and the
rule that read it, or no value and the reason (two letters, a range, nothing readable). A reply
with no single readable answer is *unparsed*: neither correct nor silently wrong.

Every reader first :func:`clean`\\ s the reply (Unicode NFKC, so fullwidth letters and digits
become ASCII; markdown emphasis, headings and code fences dropped) and looks inside a JSON
object or an ``<answer>`` tag when the reply has one. Then, in order of how explicitly the
reply states its answer:

1. a structured answer (a JSON field such as ``answer``, an ``<answer>`` tag, ``\\boxed{}``);
2. an answer cue ("final answer", "the answer is", "correct option:", "I would choose",
   "B is correct", "CrCl is 63.6 mL/min");
3. weaker evidence (a letter opening the reply, "option B", a lone number).

Negated options ("not B", "B is incorrect", "rule out B") are never the answer. A number in a
reference range, a threshold or a restated input ("Note the creatinine was 1.1 mg/dL") is not
the result.

Examples
--------
>>> read_choice("**Answer: B**").value
'B'
>>> read_choice("It is not B, it is D.").value
'D'
>>> read_choice("E. coli is the likely organism.").reason
'no option letter in the answer'
>>> read_number("CrCl is 63.6 mL/min. Note the serum creatinine was 1.1 mg/dL.").value
63.6
>>> read_number("60-65 mL/min").reason
'a range (60 to 65), not a single number'
>>> read_label("**Yes.** The trial met its primary end point.", ("yes", "no", "maybe")).value
'yes'
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "READERS",
    "Reading",
    "clean",
    "read_answer",
    "read_choice",
    "read_codes",
    "read_label",
    "read_number",
    "structured_answer",
]


@dataclass(frozen=True)
class Reading:
    """What a reader found: ``value`` and the rule that found it, or ``None`` and why not."""

    value: Any
    reason: str

    @property
    def parsed(self) -> bool:
        return self.value is not None


# --- cleaning -----------------------------------------------------------------------------------

_THINK = re.compile(r"<(think|thinking|reasoning|scratchpad)>.*?</\1>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?|```")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`|~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.M)
_BULLET = re.compile(r"^\s*(?:[-*•]\s+|>+\s*)", re.M)
_BRACKETS = str.maketrans({"【": "[", "】": "]", "〔": "[", "〕": "]", "「": "[", "」": "]", "『": "[", "』": "]"})
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}.*$", re.M)
_ANSWER_KEYS = (
    "final_answer",
    "answer",
    "final",
    "choice",
    "option",
    "selected_option",
    "letter",
    "label",
    "decision",
    "result",
    "value",
    "score",
    "prediction",
    "response",
    "output",
    "codes",
    "icd10_codes",
    "icd_codes",
    "code",
)
_TAGGED = re.compile(r"<(answer|final_answer|final|result)>\s*(.*?)\s*</\1>", re.S | re.I)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_LATEX = re.compile(r"\\(?:text|mathrm|mathbf|textbf)\{([^{}]*)\}")


def clean(text: str) -> str:
    """NFKC (fullwidth to ASCII), no reasoning blocks, no markdown emphasis, fences or headings.

    Examples
    --------
    >>> clean("### **Answer:** （Ｂ）")
    'Answer: (B)'
    """
    text = unicodedata.normalize("NFKC", text).replace("−", "-").replace("–", "-").replace("—", " - ")
    text = _THINK.sub(" ", text).translate(_BRACKETS)
    text = _table_answer(text)
    text = _LATEX.sub(r"\1", text)
    text = _FENCE.sub("\n", text)
    text = _HEADING.sub("", text)
    text = _BULLET.sub("", text)
    text = _EMPHASIS.sub("", text)
    return text.strip()


def _table_answer(text: str) -> str:
    """A markdown table with an "Answer" column becomes "Answer: <cell>"; other tables lose their rules."""
    lines = [line for line in text.splitlines() if not _TABLE_RULE.fullmatch(line)]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.count("|") >= 2]
    if len(rows) >= 2:
        header = [_EMPHASIS.sub("", c).lower() for c in rows[0]]
        if "answer" in header and len(rows[1]) > header.index("answer"):
            return "Answer: " + rows[1][header.index("answer")]
    return "\n".join(line.replace("|", " ") for line in lines)


def _json_answer(data: Any) -> Any:
    if isinstance(data, dict):
        lowered = {str(k).lower().replace(" ", "_").replace("-", "_"): v for k, v in data.items()}
        for key in _ANSWER_KEYS:
            if key in lowered and lowered[key] not in (None, ""):
                found = lowered[key]
                return _json_answer(found) if isinstance(found, dict) else found
    return None


def structured_answer(text: str) -> str | None:
    """The answer a reply states in a structure: a JSON field, an ``<answer>`` tag or ``\\boxed{}``.

    Examples
    --------
    >>> structured_answer('```json\\n{"answer": "C", "reasoning": "..."}\\n```')
    'C'
    >>> structured_answer("<answer>63.6</answer>")
    '63.6'
    """
    text = unicodedata.normalize("NFKC", text)
    tagged = _TAGGED.findall(text)
    if tagged:
        return str(tagged[-1][1]).strip()
    boxed = _BOXED.findall(text)
    if boxed:
        return _LATEX.sub(r"\1", boxed[-1]).strip()
    body = _FENCE.sub("\n", text).strip()
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(body[start : end + 1])
        except json.JSONDecodeError:
            return None
        found = _json_answer(data)
        if found is None and isinstance(data, dict):
            numbers = [v for v in data.values() if isinstance(v, int | float) and not isinstance(v, bool)]
            found = numbers[0] if len(numbers) == 1 else None  # {"creatinine_clearance": 63.6, "unit": ...}
        if found is not None:
            if isinstance(found, list):
                return ", ".join(str(x) for x in found)
            return str(found).strip()
    return None


def _structured_then(text: str) -> tuple[str, bool]:
    found = structured_answer(text)
    return (clean(found), True) if found is not None else (clean(text), False)


# --- multiple choice ----------------------------------------------------------------------------

_L = r"\(?\[?([A-J])\]?\)?"  # an option letter, maybe bracketed
_END = r"(?![A-Za-z0-9'])"
# A capital A or I followed by a lower-case word is an article or a pronoun, not an option.
_CONNECTORS = {
    "because",
    "since",
    "as",
    "which",
    "given",
    "and",
    "but",
    "for",
    "with",
    "is",
    "was",
    "would",
    "seems",
    "appears",
    "remains",
    "fits",
    "best",
    "here",
    "in",
    "on",
    "due",
    "option",
    "choice",
    "answer",
    "correct",
    "right",
    "the",
    "this",
    "that",
    "it",
}
_CUE = (
    r"(?:(?:(?:final|correct|best|right|most\s+likely|most\s+appropriate)\s+(?:answer|option|choice|response|selection))"
    r"|\banswer|\bresponse)(?:\s+(?:is|would\s+be|will\s+be|=|:))?\s*[:=-]?\s*(?:is\s*)?(?:option\s+)?"
    r"|\b(?:my|our)\s+(?:final\s+)?(?:answer|choice|pick|selection)(?:\s+is)?\s*[:=-]?\s*"
    r"|\bI\s*(?:would|'d|will|'ll|)\s*(?:choose|pick|select|go\s+with|opt\s+for)\s+(?:option\s+|choice\s+)?"
    r"|\b(?:choose|pick|select|go\s+with|going\s+with|went\s+with)\s+(?:option\s+|choice\s+)?"
    r"|\b(?:choice|option|answer|pick|selection|response)\b(?:\s+[a-z]+){0,2}?\s*(?:is|would\s+be|=|:|→|->)\s*"
    r"(?:option\s+)?"
    r"|\b(?:it|this)(?:'s|\s+is|\s+would\s+be|\s+must\s+be)\s+(?:option\s+)?"
    r"|\btherefore,?\s+|\bthus,?\s+|\bso,?\s+"
    r"|:\s*(?=\(?\[?[A-J]\]?\)?\s*\.?\s*$)"
)
_CUED = re.compile(rf"(?i:{_CUE})(?-i:{_L}){_END}")
# "the answer is d": a lower-case letter only when it ends the answer (or its sentence).
_CUED_LOWER = re.compile(r"(?i:\banswer\b(?:\s+is|\s*:)\s*)\(?([a-j])\)?(?=\s*[.)]?\s*$)")
_IS_CORRECT = re.compile(
    rf"(?<![A-Za-z0-9']){_L}{_END}(?:\s*\([^)]*\))?\s+(?:is|would\s+be|seems|appears)\s+"
    r"(?:the\s+)?(?:correct|right|best|preferred|indicated|most\s+(?:likely|appropriate|accurate))",
    re.I,
)
_OPTION = re.compile(rf"(?i:\b(?:option|choice)\s+)(?-i:{_L}){_END}")
_BRACKETED = re.compile(r"(?<![A-Za-z0-9])[\(\[]([A-Ja-j])[\)\]](?![A-Za-z0-9])")
_LEADING = re.compile(r"^\s*\(?\[?([A-Ja-j])(?:\]|\)|\.(?!\s*[a-z])|:|,|\s+-|\s*$|\s+(?=[A-Z(\[]))")
_NEGATED = re.compile(
    rf"(?i:\bnot|n't|\bnever|\brather\s+than|\binstead\s+of|\brule\s+out|\bruled\s+out|\bexclude|\beliminate)"
    rf"\s+(?i:(?:option|choice|answer)\s+)?(?-i:{_L}){_END}"
    rf"|(?<![A-Za-z0-9']){_L}{_END}(?:\s*\([^)]*\))?\s+(?i:is\s+(?:not|incorrect|wrong|unlikely)|isn't|can\s+be\s+ruled)"
)
_TWO = re.compile(rf"(?<![A-Za-z0-9']){_L}\s*(?:,|/|\bor\b|\band\b|&)\s*(?:option\s+)?{_L}{_END}", re.I)


def _letters(pattern: re.Pattern[str], text: str) -> list[tuple[int, str]]:
    out = []
    for m in pattern.finditer(text):
        letter = next(g for g in m.groups() if g)
        end = m.end()
        if letter in "AI" and not m.group(0).rstrip().endswith((")", "]")):
            nxt = re.match(r"\s+([a-z0-9][a-z0-9'-]*)", text[end:])
            if nxt and nxt.group(1) not in _CONNECTORS:
                continue
        out.append((m.start(), letter.upper()))
    return out


def _decide(found: list[tuple[int, str]], negated: set[str], rule: str) -> Reading | None:
    letters = [letter for _, letter in sorted(found) if letter not in negated]
    if not letters:
        return None
    return Reading(letters[-1], rule)


def read_choice(answer: str, choices: Sequence[str] | None = None) -> Reading:
    """The option letter an answer gives (``A``-``J``), or why none can be read.

    When ``choices`` (the options' texts) are known and no letter is found, an answer naming
    exactly one option's text is read as that option.

    Examples
    --------
    >>> read_choice("The answer is C because ACE inhibitors cause cough.").value
    'C'
    >>> read_choice("B or C").reason
    'two options (B, C)'
    """
    text, structured = _structured_then(answer)
    if not text:
        return Reading(None, "empty answer")
    negated = {letter for _, letter in _letters(_NEGATED, text)}
    two = [
        m
        for m in _TWO.finditer(text)
        if m.group(1).upper() != m.group(2).upper() and not {m.group(1).upper(), m.group(2).upper()} & negated
    ]
    stripped = text.strip().rstrip(".").strip()
    if len(stripped) == 1 or re.fullmatch(r"[\(\[][A-Ja-j][\)\]]", stripped):
        letter = stripped.strip("()[]").upper()
        if letter in "ABCDEFGHIJ":
            return Reading(letter, "structured answer" if structured else "the answer is a letter")
    if structured:
        lead = _letters(_LEADING, text)
        if lead:
            return Reading(lead[0][1], "structured answer")
    cued = _letters(_CUED, text) + _letters(_IS_CORRECT, text) + _letters(_CUED_LOWER, text)
    # "B or C", "the answer is B or C": two options where the answer should be; a pair merely
    # mentioned ("Options A and B are both used, but B is preferred") does not stop a later cue.
    last_cue = max((p for p, _ in cued), default=-1)
    for pair in two:
        if not cued or pair.start() >= last_cue or pair.start() <= last_cue < pair.end():
            return Reading(None, f"two options ({pair.group(1).upper()}, {pair.group(2).upper()})")
    for pattern_found, rule in (
        (cued, "answer cue"),
        (_letters(_LEADING, text), "letter opening the answer"),
        (_letters(_OPTION, text), "'option X'"),
        (_letters(_BRACKETED, text), "bracketed letter"),
    ):
        reading = _decide(pattern_found, negated, rule)
        if reading is not None:
            return reading
    if choices:
        named = _named_choice(text, choices, negated)
        if named is not None:
            return named
    return Reading(None, "no option letter in the answer")


def _named_choice(text: str, choices: Sequence[str], negated: set[str]) -> Reading | None:
    folded = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
    hits = []
    for i, choice in enumerate(choices):
        name = re.sub(r"[^a-z0-9]+", " ", unicodedata.normalize("NFKC", choice).lower()).strip()
        if name and f" {name} " in folded and chr(65 + i) not in negated:
            hits.append(chr(65 + i))
    if len(hits) == 1:
        return Reading(hits[0], "option text")
    return None


# --- numbers ------------------------------------------------------------------------------------

_NUM = (
    r"(?<![A-Za-z0-9.,^/])(?<![A-Za-z]-)-?(?:\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:[.,]\d+)?|\.\d+)"
    r"(?:\s*(?:[eE][-+]?\d+|[x×*]\s*10\s*\^\s*\(?[-+]?\d+\)?))?"
)
_NUMBER = re.compile(_NUM)
_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_WORD_NUMBER = re.compile(
    r"\b(?:(" + "|".join(_TENS) + r")(?:[-\s](" + "|".join(list(_WORDS)[1:10]) + r"))?|(" + "|".join(_WORDS) + r"))\b",
    re.I,
)
_UNIT_POWER = re.compile(r"(?<=[A-Za-z])\s*(?:\^\s*-?\d+|[²³¹⁰])")
_BSA = re.compile(r"(?:/|\bper\s+)\s*1[.,]73\s*m(?:\^?2|²)?", re.I)
_RANGE = re.compile(rf"({_NUM})\s*(?:-|to|and|or)\s*({_NUM})")
_NOT_RESULT = re.compile(
    r"(?i:\b(?:normal|reference|target|goal)\s+(?:range|value|is|of)?|\b(?:range|threshold|cut-?off|cutoff|limit|"
    r"upper\s+limit|lower\s+limit|uln)\b(?:\s+(?:of|is|was|=|:))?|\b(?:above|below|over|under|exceeds?|exceeding|"
    r"greater\s+than|less\s+than|more\s+than|fewer\s+than|at\s+least|at\s+most|up\s+to|between)\b|[<>≤≥]=?|"
    r"\bout\s+of\b|\d\s+of|/)\s*$"
)
_RESTATED = re.compile(
    r"^\s*(?:note|notes|given|inputs?|where|assuming|based\s+on|for\s+reference|for\s+context|"
    r"the\s+patient(?:'s)?\s+(?:is|was|weighs)|patient\s+data|data|values?)\b",
    re.I,
)
# A number right after the name of an input ("Age: 70", "weight 72 kg", "creatinine of 1.1") is a
# restated input, not the result.
_INPUT = re.compile(
    r"(?<![-\w])(?<!gestational\s)(?<!target\s)(?<!ideal\s)(?<!adjusted\s)(?<!lean\s)(?<!body\s)"
    r"(?:age|weight|height|sex|gender|scr|serum\s+creatinine|creatinine(?!\s+clearance)|bun|urea|sodium|na|"
    r"potassium|glucose|albumin|bilirubin|inr|platelets?|ast|alt|hr|heart\s+rate|bp|blood\s+pressure|"
    r"respiratory\s+rate|temp(?:erature)?|spo2|qt|rr|insulin|cholesterol|hdl|triglycerides)"
    r"(?:\s+(?:was|is|of))?\s*[:=]?\s*$",
    re.I,
)
_FINAL = re.compile(
    r"(?i:\b(?:final\s+answer|answer|result|total(?:\s+score)?)\b(?:\s+(?:is|was|would\s+be|=|:|of))?\s*[:=]?"
    r"|\b(?:therefore|thus|hence|so)\b[^.\n]{0,80}?(?:\bis\b|=|≈|:|\bof\b)"
    r"|\b(?:comes?\s+to|works?\s+out\s+(?:to|at)|gives|yields|equals)\b)"
    r"\s*(?:approximately|approx\.?|about|around|roughly|~|≈)?\s*[(\[]?\s*$"
)
_VALUE = re.compile(
    r"(?i:\bis|\bequals|\bof|=|≈|~|:|\bscore|\bapproximately|\babout|\bat|\bcomes\s+to|"
    r"\bequivalent\s+to|\bequal\s+to)\s*[(\[]?\s*$"
)
_CHAIN = re.compile(r"[=≈]\s*[(\[]?\s*$")
_CLAUSE = re.compile(r",\s+|;\s*")
_ARITHMETIC = re.compile(r"\d\s*\)?\s*[×x*/+]\s*\(?\s*\d")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")


def _word_value(m: re.Match[str]) -> str:
    tens, unit, small = m.group(1), m.group(2), m.group(3)
    if small:
        return str(_WORDS[small.lower()])
    return str(_TENS[tens.lower()] + (_WORDS[unit.lower()] if unit else 0))


def _to_float(token: str) -> float:
    token = token.replace(" ", "")
    power = re.search(r"[x×*]10\^\(?([-+]?\d+)\)?$", token)
    if power:
        return _to_float(token[: power.start()]) * 10 ** int(power.group(1))
    if re.search(r"[eE][-+]?\d+$", token):
        mantissa, exp = re.split(r"[eE]", token)
        return _to_float(mantissa) * 10 ** int(exp)
    whole = token.lstrip("-").split(",")[0]
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", token) and whole != "0":
        return float(token.replace(",", ""))
    return float(token.replace(",", "."))


@dataclass(frozen=True)
class _Candidate:
    value: float
    start: int
    end: int
    level: int  # 3 answer cue, 2 value cue, 1 bare, 0 not a result
    sentence: int
    range_with: float | None = None
    chained: bool = False  # follows "=" or "≈": the end of an equation


def _candidates(text: str) -> list[_Candidate]:
    text = _BSA.sub(" ", text)
    text = _UNIT_POWER.sub("", text)
    text = _WORD_NUMBER.sub(_word_value, text)
    spans = []
    offset = 0
    for i, sentence in enumerate(_SENTENCE.split(text)):
        spans.append((text.find(sentence, offset), sentence, i))
        offset = text.find(sentence, offset) + len(sentence)
    ranges = {m.start(1): _to_float(m.group(2)) for m in _RANGE.finditer(text)}
    seconds = {m.start(2): m.start(1) for m in _RANGE.finditer(text)}
    ranges |= {m.start(2): _to_float(m.group(1)) for m in _RANGE.finditer(text)}
    levels: dict[int, int] = {}
    out = []
    for start, sentence, index in spans:
        clauses = [0] + [c.end() for c in _CLAUSE.finditer(sentence)]
        for m in _NUMBER.finditer(sentence):
            before = sentence[max(0, m.start() - 90) : m.start()]
            clause = max(c for c in clauses if c <= m.start())
            restated = bool(_RESTATED.search(sentence[clause:]))
            nested = sentence[: m.start()].count("(") > sentence[: m.start()].count(")")
            where = start + m.start()
            if _NOT_RESULT.search(before) or (
                m.end() < len(sentence)
                and sentence[m.end() :].lstrip().startswith("/")
                and not sentence[m.end() :].lstrip().startswith("/1")
            ):
                level = 0
            elif _FINAL.search(before):
                level = 3
            elif restated or _INPUT.search(before):
                level = 0
            elif _VALUE.search(before):
                level = 2
            else:
                level = 1
            if nested and level == 2:
                level = 1  # a breakdown in brackets ("score: 3 (age: 1, ...)") is not the result
            if where in seconds and seconds[where] in levels:
                level = levels[seconds[where]]  # "90-120": the upper end is read like the lower
            levels[where] = level
            out.append(
                _Candidate(
                    _to_float(m.group(0)),
                    where,
                    start + m.end(),
                    level,
                    index,
                    ranges.get(where),
                    bool(_CHAIN.search(before)),
                )
            )
    return out


def read_number(answer: str) -> Reading:
    """The number an answer gives as its result, or why none can be read.

    The result is the number the reply states as its answer ("the answer is", "final answer:",
    "therefore ... is", a structured answer), else the one it states as a value ("CrCl is 63.6",
    "= 63.6") outside restated inputs, thresholds and reference ranges, else the only number.
    Units, "/1.73 m²", unit powers ("kg/m^2"), scientific notation ("6.36e1", "6.36 x 10^1") and
    number words ("zero" to "twenty") are read as a clinician reads them; a range is unparsed.

    Examples
    --------
    >>> read_number("The CURB-65 score is zero.").value
    0.0
    >>> read_number("BMI = 44.4 kg/m^2").value
    44.4
    >>> read_number("6.36e1").value
    63.6
    """
    text, structured = _structured_then(answer)
    if not text:
        return Reading(None, "empty answer")
    found = _candidates(text)
    if not found:
        return Reading(None, "no number in the answer")
    if structured:
        first = found[0]
        if first.range_with is not None:
            return _range(first)
        return Reading(first.value, "structured answer")
    for level, rule in ((3, "answer cue"), (2, "value cue")):
        at = [c for c in found if c.level == level]
        if at:
            pick = at[-1] if level == 3 else _first_result(at, text)
            if pick.range_with is not None:
                return _range(pick)
            return Reading(pick.value, rule)
    bare = [c for c in found if c.level == 1]
    if len(bare) == 2 and bare[0].range_with is not None:
        return _range(bare[0])
    values = {c.value for c in bare}
    if len(values) == 1:
        return Reading(bare[0].value, "the only number")
    if not bare:
        return Reading(None, "only thresholds, ranges or restated inputs")
    return Reading(None, f"several numbers ({', '.join(f'{v:g}' for v in sorted(values))}) and no stated result")


def _first_result(at: list[_Candidate], text: str) -> _Candidate:
    """Among value-cued numbers: the result of worked arithmetic, else the first stated value.

    Working shown step by step ("IBW = 50 + 2.3 x 5 = 61.5 kg. CrCl = ... = 54.4 mL/min") ends in
    its result, so the last value wins; a short answer states its result first and adds context
    after it ("CrCl is 63.6 mL/min; the creatinine was 1.1 mg/dL"), so the first sentence
    stating a value wins (the last value of that sentence: ``a = b = 63.6``).
    """
    if _ARITHMETIC.search(text):
        return at[-1]
    first = [c for c in at if c.sentence == at[0].sentence]
    return first[-1] if first[-1].chained else first[0]


def _range(c: _Candidate) -> Reading:
    low, high = sorted((c.value, c.range_with if c.range_with is not None else c.value))
    return Reading(None, f"a range ({low:g} to {high:g}), not a single number")


# --- labels (yes / no / maybe) ------------------------------------------------------------------

_LABEL_CUE = r"(?i:\b(?:final\s+)?(?:answer|decision|verdict|conclusion|label)\b(?:\s+(?:is|would\s+be))?\s*[:=-]?\s*)"


def read_label(answer: str, labels: Sequence[str]) -> Reading:
    """One of ``labels`` (e.g. yes, no, maybe) the answer gives, or why none can be read.

    An answer cue ("Answer: no") wins; else the label opening the answer ("Yes, the trial...");
    else the only label named. "Not yes" style negations are not read as the label.

    Examples
    --------
    >>> read_label("Based on the abstract, the answer is maybe.", ("yes", "no", "maybe")).value
    'maybe'
    >>> read_label("Yes or no: hard to say", ("yes", "no", "maybe")).reason
    'several labels (no, yes) and no stated answer'
    """
    text, structured = _structured_then(answer)
    if not text:
        return Reading(None, "empty answer")
    alternation = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    word = rf"(?i:\b({alternation})\b)"
    text = re.sub(r"(?i:\bnot\s+)" + word, " ", text)  # "not yes" names no label
    cued = re.findall(_LABEL_CUE + r"[\"'(\[]?" + word, text) or re.findall(
        r"(?i:\b(?:it|this)(?:'s|\s+is)\s+|:\s*)[\"'(\[]?" + word + r"[\"')\]]?\s*\.?\s*$", text
    )
    if cued:
        return Reading(cued[-1].lower(), "structured answer" if structured else "answer cue")
    lead = re.match(r"\s*[\"'(\[]?" + word + r"(?![-\w])(?!\s*(?:or|/|and)\s*" + word + ")", text)
    if lead:
        return Reading(lead.group(1).lower(), "structured answer" if structured else "label opening the answer")
    named = {m.lower() for m in re.findall(word, text)}
    if len(named) == 1:
        return Reading(named.pop(), "the only label named")
    if not named:
        return Reading(None, f"none of {', '.join(labels)} in the answer")
    return Reading(None, f"several labels ({', '.join(sorted(named))}) and no stated answer")


# --- ICD-10 codes -------------------------------------------------------------------------------

# ICD-10-CM: a letter, two digits (or the C4A/D3A/M1A/Z3A categories), then up to four
# characters after an optional dot (S72.001A, T78.40XA); case and the dot are normalised.
_ICD10 = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]\d{2}|[CDMZcdmz]\d[Aa])(?:\.?([0-9A-Za-z]{1,4}))?(?![A-Za-z0-9])")


def read_codes(answer: str) -> Reading:
    """The set of ICD-10 codes an answer gives (upper case, dot after the third character).

    Examples
    --------
    >>> sorted(read_codes('{"codes": ["e11.9", "I10"]}').value)
    ['E11.9', 'I10']
    >>> read_codes("Type 2 diabetes without complications").reason
    'no ICD-10 code in the answer'
    """
    text, structured = _structured_then(answer)
    codes: set[str] = set()
    for category, suffix in _ICD10.findall(text):
        code = category.upper()
        codes.add(f"{code}.{suffix.upper()}" if suffix else code)
    if not codes:
        return Reading(None, "no ICD-10 code in the answer" if text else "empty answer")
    return Reading(frozenset(codes), "structured answer" if structured else "codes in the answer")


READERS = {"multiple_choice", "yes_no_maybe", "numeric_tolerance", "set_f1"}


def read_answer(scorer: str, answer: str, choices: Sequence[str] | None = None) -> Reading:
    """The reading the named scorer takes of ``answer`` (``choices``: option texts or labels).

    Examples
    --------
    >>> read_answer("numeric_tolerance", "Final answer: 63.6 mL/min").value
    63.6
    """
    if scorer == "multiple_choice":
        return read_choice(answer, choices)
    if scorer == "yes_no_maybe":
        return read_label(answer, tuple(c.lower() for c in choices) if choices else ("yes", "no", "maybe"))
    if scorer == "numeric_tolerance":
        return read_number(answer)
    if scorer == "set_f1":
        return read_codes(answer)
    raise ValueError(f"scorer {scorer!r} does not read answers; readers: {', '.join(sorted(READERS))}")
