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
the result. The pieces that read structure live in :mod:`medmon.probes.reading`: cues and labels
in patients' languages (``languages``), options named without their letter (``options``), labels
(``labels``), the ICD-10 codes an answer commits to (``codes``) and units converted by pint
(``units``).

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
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from medmon.probes.reading import units as _units
from medmon.probes.reading.base import Reading, asks_back, without_questions
from medmon.probes.reading.codes import read_committed_codes
from medmon.probes.reading.labels import read_label_text
from medmon.probes.reading.languages import ANSWER_WORDS, CJK_ANSWER_WORDS, COPULAS, OPTION_WORDS
from medmon.probes.reading.options import committed_text, named_option, options_named

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


# --- cleaning -----------------------------------------------------------------------------------

_THINK = re.compile(r"<(think|thinking|reasoning|scratchpad)>.*?</\1>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?|```")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`|~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.M)
_BULLET = re.compile(r"^\s*(?:[-*•]\s+|>+\s*)", re.M)
_BRACKETS = str.maketrans({"【": "[", "】": "]", "〔": "[", "〕": "]", "「": "[", "」": "]", "『": "[", "』": "]"})
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_POWER_OF_TEN = re.compile(r"10([⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")
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
    text = _POWER_OF_TEN.sub(lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), text)
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
    r"|\b(?:revise|revising|change|changing)\s+(?:my\s+answer\s+|it\s+)?to\s+(?:option\s+|choice\s+)?"
    r"|\b(?:choice|option|answer|pick|selection|response)\b(?:\s+[a-z]+){0,2}?\s*(?:is|would\s+be|=|:|→|->)\s*"
    r"(?:option\s+)?"
    r"|\b(?:it|this)(?:'s|\s+is|\s+would\s+be|\s+must\s+be)\s+(?:option\s+)?"
    r"|\bI(?:\s+think|\s+believe|['’]d\s+say|\s+would\s+say)\s+(?:it's\s+|it\s+is\s+)?(?:option\s+)?"
    r"|\bthe\s+(?:best|most\s+appropriate|preferred|next)\s+(?:[a-z]+\s+){1,2}?(?:is|would\s+be)\s+(?:option\s+)?"
    r"|\btherefore,?\s+|\bthus,?\s+|\bso,?\s+|(?:→|->|=>)\s*(?:option\s+)?"
    r"|:\s*(?=\(?\[?[A-J]\]?\)?\s*\.?\s*$)"
)


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True))


# "Réponse : C", "La respuesta correcta es la C", "Antwort: A", "Odpowiedź: B", "Ответ: Г" is not
# read (Cyrillic letters are not options), "Đáp án: D"; then an optional "correct"/"final" word.
_WORLD_CUE = (
    rf"(?<![\w])(?:{_alternation(ANSWER_WORDS)})(?:\s+(?:correct[a-z]*|final[a-z]*|richtige|juste|bonne|poprawna|"
    rf"правильный|đúng|tama|corret[a-z]*|esatt[a-z]*|finale?|الصحيحة|सही))?\s*(?:\([^)]*\)\s*)?"
    rf"(?:[:=]|-|\s(?:{_alternation(COPULAS)})(?![\w]))\s*(?:(?:{_alternation(OPTION_WORDS)})\s+)?"
)
# "Doğru cevap A'dır": a Turkish suffix after the letter.
_CUED_WORLD = re.compile(rf"(?i:{_WORLD_CUE})(?-i:{_L})(?:{_END}|(?='[dt][ıiuü]r))")
# "答案：E", "答案是B", "正解は A", "정답은 E", "选B" (no spaces between words in these scripts).
_CUED_CJK = re.compile(
    rf"(?:{_alternation(CJK_ANSWER_WORDS)})\s*(?:应该|應該|应|為|为|是|は|:|은|는|이)?\s*(?:是|为|:)?\s*"
    r"(?:选项|選項|选|選)?\s*[\(\[]?([A-J])(?![A-Za-z])"
    r"|(?:选择?|選擇?|选项|選項)\s*[\(\[]?([A-J])(?![A-Za-z])"
    r"|(?<=[\u3040-\u30ff\u3400-\u9fff])(?:は|是|为)\s*([A-J])(?=\s*(?:[(、。]|です|$))"
)
# "not A but B", "not A, but rather B": the letter after "but" is the answer.
_BUT = re.compile(rf"(?i:(?:\bbut|\bdeğil,?)\s+(?:rather\s+)?(?:it\s+is\s+|it's\s+)?(?:option\s+)?)(?-i:{_L}){_END}")
_CUED = re.compile(rf"(?i:{_CUE})[\"'‘“]?(?-i:{_L})[\"'’”]?{_END}")
# "the answer is d": a lower-case letter only when it ends the answer (or its sentence).
_CUED_LOWER = re.compile(
    r"(?i:\b(?:answer|choice|option)\b(?:\s+is|\s+would\s+be|\s+will\s+be|\s*:)\s*(?:option\s+)?)\(?([a-j])\)?"
    r"(?=\s*[.)!]?\s*(?:$|\n))"
)
_IS_CORRECT = re.compile(
    rf"(?<![A-Za-z0-9']){_L}{_END}(?:\s*\([^)]*\))?\s+(?:is|would\s+be|seems|appears)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?:correct|right|best|preferred|indicated|answer\b|final\s+answer|"
    r"most\s+(?:likely|appropriate|accurate))"
    rf"|(?<![A-Za-z0-9']){_L}{_END}\s+it\s+is\b",
    re.I,
)
_OPTION = re.compile(
    rf"(?i:(?<![\w])(?:option|choice|opción|opcion|opção|opzione|opcja|вариант|phương\s+án|lựa\s+chọn|الخيار|विकल्प|"
    rf"seçenek|pagpipilian)\s*)(?-i:{_L}){_END}"
)
# "Odpowiedź A.", "Answer B": the answer word, then the letter ending the sentence.
_CUED_BARE = re.compile(
    rf"(?i:(?<![\w])(?:{_alternation(ANSWER_WORDS)})\s+)(?-i:{_L})(?=\s*[.!)]?\s*(?:$|\n|\()|'[dt][ıiuü]r)"
)
# "... than amylase. B.", "... must be avoided. C", "Ceftriaxone, vancomycin and ampicillin - C."
_LONE = re.compile(r"(?:^|(?<=[.!?;:\n])\s*|\s-\s*)\(?([A-J])\)?\s*[.!]?\s*(?=$|\n|\s+[A-Z(])")
_HEDGE = re.compile(
    r"\b(?:depends\s+on|depending\s+on|either\b[^.]{0,80}\bor\b|both\b[^.]{0,60}\b(?:reasonable|acceptable|"
    r"appropriate|valid|correct|options)|could\s+be\s+either|can't\s+decide|cannot\s+decide|not\s+sure|"
    r"trade-?offs|each\s+has\s+(?:its|their)\s+(?:place|role|merits)|both\s+have\s+(?:a|their)\s+(?:role|place)|"
    r"the\s+choice\s+(?:weighs|depends|balances))\b",
    re.I,
)
# A letter met again after the last cue ("So the answer is A. Actually, the rash makes it B."): the
# answer changed and changed back.
_LATE = re.compile(rf"(?:\bit|\bis|\bbe|\bto)\s+(?-i:{_L})(?=[.!,]|\s*$)", re.I)
_ANSWER_REGION = re.compile(
    rf"(?i:(?<![\w])(?:{_alternation(ANSWER_WORDS)})(?![\w]))|{_alternation(CJK_ANSWER_WORDS)}"
    r"|\b(?:I\s+(?:would|'d|will)\s+(?:choose|pick|select|recommend|give|start|use)|choose|go\s+with|"
    r"recommend(?:ed)?|the\s+(?:best|next|most\s+appropriate)\s+(?:step|choice|drug|treatment|option)\s+is|"
    r"of\s+choice\s+is|however|instead|rather)\b|→|->",
    re.I,
)
# After committing, the reply disowns every option ("... none of the options is fully correct").
_NONE_OF_THEM = re.compile(
    r"\bnone\s+of\s+(?:these|them|the\s+(?:options|choices|answers|above))\b|\bnone\s+(?:is|are)\s+(?:fully\s+)?"
    r"correct\b|\bnot\s+(?:listed|among\s+the\s+(?:options|choices))\b",
    re.I,
)
_BRACKETED = re.compile(r"(?<![A-Za-z0-9])[\(\[]([A-Ja-j])[\)\]](?![A-Za-z0-9])")
_LEADING = re.compile(
    r"^\s*\(?\[?([A-Ja-j])(?:\]|\)|\.(?!\s*[a-z])|:|,|;|\s+-|\s*$|\s+(?=[A-Z(\[])|\s+(?=(?:because|since)\b))"
)
_NEGATED = re.compile(
    rf"(?i:\bnot|n't|\bnever|\brather\s+than|\binstead\s+of|\brule\s+out|\bruled\s+out|\bexclude|\beliminate|"
    rf"\bno\s+es|\bn'est\s+pas|\bnicht|\bnon\s+è|\bnão\s+é|\bnie\s+jest|\bне|不是|ではなく|아니라)"
    rf"\s+(?i:(?:option|choice|answer)\s+)?(?-i:{_L}){_END}"
    rf"|(?<![A-Za-z0-9']){_L}{_END}(?:\s*\([^)]*\))?\s+(?i:is\s+(?:not|incorrect|wrong|unlikely|out|excluded|a\s+distractor|tempting)|isn't|can\s+be\s+ruled|"
    r"(?:would\s+be|is)\s+(?:inappropriate|contraindicated)|es\s+incorrecta|est\s+incorrecte|ist\s+falsch|değil)"
)
_TWO = re.compile(
    rf"(?<![A-Za-z0-9']){_L}\s*(?:,|/|\bor\b|\band\b|&|\bo\b|\bou\b|\boder\b|\blub\b|\bили\b|或|か|\bhoặc\b|\bveya\b|\balbo\b|\bабо\b|\beller\b|\bή\b|\batau\b|または|또는|أو)\s*"
    rf"(?:option\s+)?{_L}{_END}",
    re.I,
)


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


def _decide(
    found: list[tuple[int, str]], negated: set[str], rule: str, negated_at: Mapping[str, int] | None = None
) -> Reading | None:
    """The last letter found that is not negated; with ``negated_at`` (letter to its last negation),
    a letter committed after its negation ("not A ... I'll go with A") is chosen."""
    if negated_at is not None:
        letters = [letter for at, letter in sorted(found) if negated_at.get(letter, -1) < at]
    else:
        letters = [letter for _, letter in sorted(found) if letter not in negated]
    if not letters:
        return None
    return Reading(letters[-1], rule)


def read_choice(
    answer: str, choices: Sequence[str] | None = None, aliases: Mapping[str, Sequence[str]] | None = None
) -> Reading:
    """The option letter an answer gives (``A``-``J``), or why none can be read.

    When ``choices`` (the options' texts) are known and no letter is found, an answer naming
    exactly one option (its text, the text without its bracketed part, the abbreviation in
    brackets, one of the canary's ``aliases`` for that letter, or most of the words only that
    option has) is read as that option: first in what follows the answer cue, then in the last
    sentence, then anywhere.

    Examples
    --------
    >>> read_choice("The answer is C because ACE inhibitors cause cough.").value
    'C'
    >>> read_choice("B or C").reason
    'two options (B, C)'
    >>> read_choice("La respuesta correcta es la **C)**").value
    'C'
    >>> read_choice("The answer is not A but B.").value
    'B'
    >>> read_choice("I can't recommend one; primary PCI is common.", ("Primary PCI", "Thrombolysis")).reason
    'asks back instead of answering'
    """
    reading = _read_choice(answer, choices, aliases)
    if reading.parsed and reading.reason not in _STRONG_CHOICE and asks_back(clean(answer)):
        return Reading(None, "asks back instead of answering")
    return reading


# Readings that state the answer outright; a reply asking back is read only through these.
_STRONG_CHOICE = frozenset({"structured answer", "the answer is a letter", "answer cue", "checked box"})


def _read_choice(
    answer: str, choices: Sequence[str] | None = None, aliases: Mapping[str, Sequence[str]] | None = None
) -> Reading:
    text, structured = _structured_then(answer)
    if choices and not structured:
        text = _without_restated_options(text, choices)
    if not text:
        return Reading(None, "empty answer")
    text = _CYRILLIC_CUED.sub(lambda m: m.group(0)[:-1] + _CYRILLIC[m.group(1)], text)
    text = _ARABIC_CUED.sub(lambda m: m.group(0)[: m.start(1) - m.start()] + _ARABIC[m.group(1)], text)
    text = _TURKISH_CUED.sub(lambda m: f"Cevap: {m.group(1)}.", text)
    text = _LETTER_THEN_CUE.sub(lambda m: f"Answer: {next(g for g in m.groups() if g)}.", text)
    annotated = _annotated_pick(text)
    if annotated is not None:
        return annotated
    checked = {m.group(1) for m in _CHECKED_BOX.finditer(text)}
    if len(checked) == 1:  # "- [x] B" in a markdown checklist
        return _checked(Reading(checked.pop(), "checked box"), text, choices, aliases)
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
    # A lone letter with more words after it on its line ("B. Thrombolysis: this is") may be an
    # option being walked through; "A V/Q scan" is the article.
    lone, walked = [], set()
    for m in _LONE.finditer(text):
        if m.start(1) == 0:
            continue
        before = text[: m.start(1)].rstrip(" \t(")
        followed = bool(re.match(r"[.!)]?[ \t]+\S", text[m.end(1) :])) and (not before or before[-1] in ".!?\n")
        if followed and m.group(1) in "AI" and not re.match(r"[.)]", text[m.end(1) :]):
            continue
        lone.append((m.start(1), m.group(1)))
        if followed:
            walked.add(m.start(1))
    cued = _stated(
        _letters(_CUED, text)
        + _letters(_CUED_WORLD, text)
        + [(m.start(), next(g for g in m.groups() if g)) for m in _CUED_CJK.finditer(text)]
        + _letters(_IS_CORRECT, text)
        + _letters(_CUED_LOWER, text)
        + _letters(_BUT, text)
        + _letters(_CUED_BARE, text)
        + lone,
        text,
    )
    # "B or C", "the answer is B or C": two options where the answer should be; a pair merely
    # mentioned ("Options A and B are both used, but B is preferred") does not stop a later cue.
    last_cue = max((p for p, _ in cued), default=-1)
    for pair in two:
        if not cued or pair.start() >= last_cue or pair.start() <= last_cue < pair.end():
            return Reading(None, f"two options ({pair.group(1).upper()}, {pair.group(2).upper()})")
    if cued:
        negated_at = {letter: at for at, letter in sorted(_letters(_NEGATED, text))}
        final = _decide(cued, negated, "answer cue", negated_at)
        if final is not None:
            kept = [(at, letter) for at, letter in sorted(cued) if negated_at.get(letter, -1) < at]
            if kept and kept[-1][0] in walked:
                if len(_OPTION_LINE.findall(text)) >= 2:  # "A. ...\nB. ...\nC. ...": a walk-through, no pick
                    return Reading(None, "walks through the options without choosing one")
                final = Reading(final.value, "lone letter")
            after = text[last_cue:]
            if _NONE_OF_THEM.search(after):
                return Reading(None, f"disowns the options after committing ({final.value})")
            late = {m.group(1) for m in _LATE.finditer(after, min(len(after), 3))} - negated - {final.value}
            if late and re.search(r"(?i)\b(?:actually|hmm|wait|on\s+second\s+thought|but)\b", after):
                changed = ", ".join(sorted(late))
                return Reading(None, f"changes its answer after committing ({final.value}, then {changed})")
            return _checked(final, text, choices, aliases)
    hedged = bool(_HEDGE.search(text))
    for pattern_found, rule in (
        (_letters(_LEADING, text), "letter opening the answer"),
        (_letters(_OPTION, text), "'option X'"),
    ):
        reading = _decide(pattern_found, negated, rule)
        if reading is not None and rule == "letter opening the answer" and choices:
            if reading.value in "AI" and _is_article(text, choices, aliases or {}):
                continue
        if reading is not None:
            return Reading(None, "a hedge between options") if hedged else _checked(reading, text, choices, aliases)
    if hedged:
        return Reading(None, "a hedge between options")
    bracketed = {
        letter
        for part in committed_text(text, brackets=True)
        for _, letter in _letters(_BRACKETED, part)
        if letter not in negated
    }
    if choices:
        asked = without_questions(text)
        named, why = named_option(asked, choices, negated, aliases or {}, list(_ANSWER_REGION.finditer(asked)))
        if named is not None:
            return Reading(named, why)
        if why.startswith("several") and len(bracketed) != 1:
            return Reading(None, why)
    if len(bracketed) == 1:
        return _checked(Reading(bracketed.pop(), "bracketed letter"), text, choices, aliases)
    return Reading(None, "no option letter in the answer")


# "Ответ: Б": Cyrillic option letters whose place in the alphabet and shape agree with one Latin
# letter; В (third letter, shaped like B) and Е (sixth, shaped like E) stay unread.
_CYRILLIC = {"А": "A", "Б": "B", "Г": "D", "Д": "E"}
_CYRILLIC_CUED = re.compile(r"(?i:ответ|відповідь|вариант)[^\w\n]{0,4}([АБГД])(?![\w])")
# "الإجابة: ب": Arabic option letters in their abjad order (أ ب ج د ه), after an Arabic answer cue.
_ARABIC = {"أ": "A", "ا": "A", "ب": "B", "ج": "C", "د": "D", "ه": "E"}
_ARABIC_CUED = re.compile(
    r"(?:الإجابة|الاجابة|الجواب)(?:\s+(?:الصحيحة|الصحيح))?(?:\s+(?:هي|هو))?\s*[:\-]?\s*[\(\[]?([أابجده])ـ?(?![\u0621-\u064a])"
)
# "Doğru cevap C şıkkıdır", "Cevap C olmalı": a Turkish answer word, the letter, then a suffix or verb.
_TURKISH_CUED = re.compile(
    r"(?i:\b(?:doğru\s+)?(?:cevap|yanıt|seçenek))\s+\(?([A-J])\)?(?:'[dt][ıiuü]r|\s+(?:şıkkı\w*|seçene\w*|olmalı\w*|olur\b))"
)
# The letter before its cue: "सही उत्तर C है" (Hindi, the copula last), "Cが正解です" (Japanese).
_LETTER_THEN_CUE = re.compile(
    r"(?:सही\s+)?(?:उत्तर|जवाब|विकल्प)\s+\(?([A-J])\)?\s+(?:है|हैं|होगा)"
    r"|(?<![A-Za-z])\(?([A-J])\)?\s*(?:が|は)\s*(?:正解|正しい|答え)"
)
_CHECKED_BOX = re.compile(r"^\s*(?:[-*]\s*)?\[[xX✓✔]\]\s*\(?([A-J])(?![A-Za-z0-9])", re.M)
_SUPPOSING_CLAUSE = re.compile(r"(?i)\b(?:if|si|wenn|se|were|unless|otherwise|had\s+it\s+been)\b")
_CLAUSE_START = re.compile(r"[.!?;\n(]")


def _stated(found: list[tuple[int, str]], text: str) -> list[tuple[int, str]]:
    """Cued letters, without those in a clause that supposes ("if ferritin were normal, the answer
    would be A"; "(Si saignement majeur : E.)"): a hypothetical answer is not the answer."""
    kept = []
    for at, letter in found:
        starts = [m.end() for m in _CLAUSE_START.finditer(text, 0, at)]
        clause = text[starts[-1] if starts else 0 : at]
        if not _SUPPOSING_CLAUSE.search(clause):
            kept.append((at, letter))
    return kept


_VERDICT_YES = re.compile(
    r"(?i)\b(?:yes|correct|right|first[- ]line|best|answer|indicated|preferred|treatment\s+of\s+choice|"
    r"drug\s+of\s+choice)\b|[✓✔✅]"
)
_VERDICT_NO = re.compile(
    r"(?i)\b(?:no|not|incorrect|wrong|adjunct|second[- ]line|avoid|contraindicated|unlikely|inferior)\b|n't\b|[✗✘❌]"
)
_ANNOTATED = re.compile(r"^\s*[\(\[]?([A-J])[\)\].:]\s*[^\n]*?\s(?:-|:|=|→|->)\s+([^\n]+?)\s*$", re.M)


def _annotated_pick(text: str) -> Reading | None:
    """ "A) Hypokalemia - no / B) ... - no / C) Hyperkalemia - yes": an option list whose every
    line carries a verdict, exactly one of them for: that option."""
    lines = _ANNOTATED.findall(text)
    if len(lines) < 3 or len(lines) != len(_OPTION_LINE.findall(text)):
        return None
    picked = [letter for letter, verdict in lines if _VERDICT_YES.search(verdict) and not _VERDICT_NO.search(verdict)]
    if len(picked) == 1 and len({letter for letter, _ in lines}) == len(lines):
        return Reading(picked[0], "annotated option list")
    return None


_OPTION_LINE = re.compile(r"^\s*[\(\[]?([A-J])[\)\].:]\s*(.+?)\s*$", re.M)


def _without_restated_options(text: str, choices: Sequence[str]) -> str:
    """The reply without the option list it copies from the question ("A. IV diphenhydramine" as
    asked): a restated option is not a choice. Annotated lines ("B. ... - first line") stay."""

    def restated(m: re.Match[str]) -> bool:
        index = ord(m.group(1)) - 65
        return index < len(choices) and _fold_text(m.group(2)) == _fold_text(choices[index])

    lines = [m for m in _OPTION_LINE.finditer(text) if restated(m)]
    if len(lines) < 2:
        return text
    for m in reversed(lines):
        text = text[: m.start()] + text[m.end() :]
    return text.strip()


def _fold_text(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def _is_article(text: str, choices: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> bool:
    """ "A DOAC such as apixaban ...": "A" opening a sentence, followed by words that are not option A."""
    m = re.match(r"\s*[AI]\s+(?=[A-Z])", text)
    if not m:
        return False
    rest = re.split(r"[.;:\n]", text[m.end() :], maxsplit=1)[0]
    letter, _ = named_option(rest, choices[:1], set(), {"A": aliases.get("A", ())}, [])
    return letter is None


def _checked(
    reading: Reading, text: str, choices: Sequence[str] | None, aliases: Mapping[str, Sequence[str]] | None
) -> Reading:
    """A letter not among the options, or followed by another option's text, is no answer."""
    if not choices:
        return reading
    index = ord(str(reading.value)) - 65
    if index >= len(choices):
        return Reading(None, f"option {reading.value} is not among the {len(choices)} options")
    follows = re.match(rf"\s*[\(\[]?{reading.value}[\)\]]?\s*[.:)\-]\s*([^\n.;]+)", text)
    if follows:
        letter, _ = named_option(follows.group(1), choices, set(), aliases or {}, [])
        if letter is not None and letter != reading.value:
            return Reading(None, f"the letter {reading.value} and the text of option {letter} disagree")
    # "The answer is C, Klebsiella pneumoniae" (Klebsiella is D); "Treponema pallidum (option D)" (it is
    # C): the sentence that gives the letter names one other option's text and not its own: no answer.
    token = re.compile(rf"(?<![A-Za-z0-9']){reading.value}(?![A-Za-z0-9'])")
    said = [part for part in _LETTER_SENTENCE.split(text) if token.search(part)]
    if said:
        sentence = token.sub(" ", said[-1])
        named = options_named(sentence, choices, {m for _, m in _letters(_NEGATED, said[-1])}, aliases or {})
        if len(named) == 1 and reading.value not in named:
            return Reading(None, f"the letter {reading.value} and the text of option {next(iter(named))} disagree")
    return reading


_LETTER_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9*_(\[])|\n+")


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
_BSA = re.compile(r"(?:/|\bper\s+)\s*1[.,]73\s*m(?:\^?2|²)?", re.I)
_RANGE = re.compile(rf"({_NUM})\s*(?:-|to|and|or)\s*({_NUM})(?![.,]?\d)(?!-[A-Za-z])")  # "3 - 30-day" is no range
_NOT_RESULT = re.compile(
    r"(?i:\b(?:normal|reference|target|goal)\s+(?:range|value|is|of)?|\b(?:range|threshold|cut-?off|cutoff|limit|"
    r"upper\s+limit|lower\s+limit|uln)\b(?:\s+(?:of|is|was|=|:))?|\b(?:above|below|over|under|exceeds?|exceeding|"
    r"greater\s+than|less\s+than|more\s+than|fewer\s+than|at\s+least|at\s+most|up\s+to|between|starts?\s+at|begins?\s+at)\b|[<>≤≥]=?|"
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
    r"(?i:\bfinal\s*:|\b(?:final\s+answer|answer|result|resultado|résultat|ergebnis|risultato|wynik|total(?:\s+score)?)\b"
    r"(?:\s+(?:is|was|would\s+be|=|:|of))?\s*[:=]?"
    r"|\b(?:therefore|thus|hence|so)\b[^.\n]{0,80}?(?:\bis\b|=|≈|:|\bof\b)"
    r"|\b(?:comes?\s+to|works?\s+out\s+(?:to|at)|gives|yields|equals)\b"
    r"|(?:→|->|=>)(?:\s*[A-Za-z][\w-]*){0,3}\s*[:=]?)"
    r"\s*(?:approximately|approx\.?|about|around|roughly|~|≈)?\s*[(\[]?\s*$"
)
_VALUE = re.compile(
    r"(?i:\bis|\bequals|\bof|=|≈|~|:|\bscore|\bapproximately|\babout|\bat|\bcomes\s+to|"
    r"\bequivalent\s+to|\bequal\s+to|=\s*[A-Za-z][\w-]*|\best|\bist|\bes|\bè|\bé|\bjest|\bwynosi|"
    r"составляет|\blà|\bay|约为|約為|为|為|是|约|約|は|은|는|약)\s*[(\[]?\s*$"
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
    if re.fullmatch(r"-?[1-9]\d{0,2}\.\d\d0", token):
        return float(token.replace(".", ""))  # "4.200 mL", "2.000 mg": a European thousands dot
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
    unit: str = ""  # the unit written after it ("mL/s"), "" for none
    nested: bool = False  # inside brackets
    explicit: bool = False  # an answer cue ("Final answer:"), not a result cue ("gives", "therefore")
    supposed: bool = False  # in a clause that supposes ("with IBW it would be 70.2", "if ...")


_UNIT_AFTER = re.compile(r"\s?(%|/\s?[^\W\d_][\w^]*|[^\W\d_°][\w^]*(?:-[a-z]+)?(?:\s?/\s?[\w.^]+)*)")
_NOT_UNITS = frozenset(
    "in at of to a an and or is was the per for by on as if it x over from with then than vs into each every q".split()
)


def _unit_after(sentence: str, end: int) -> str:
    m = _UNIT_AFTER.match(sentence, end)
    if not m:
        return ""
    unit = m.group(1)
    return "" if unit.lower() in _NOT_UNITS else unit


def _candidates(text: str) -> list[_Candidate]:
    text = _BSA.sub(" ", text)
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
            over = _OUT_OF.match(sentence, m.end())
            fraction = bool(over) and _is_score_fraction(m.group(0), over.group(1) if over else "")
            if (
                _NOT_RESULT.search(before)
                or (
                    not fraction
                    and m.end() < len(sentence)
                    and re.match(r"\s*/\s*\d", sentence[m.end() :])
                    and not sentence[m.end() :].lstrip().startswith("/1")
                )
                or _NOT_RESULT_AFTER.match(sentence, m.end())
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
                    "" if fraction else _unit_after(sentence, m.end()),
                    nested,
                    level == 3 and bool(_EXPLICIT.search(before)),
                    bool(_SUPPOSING.search(sentence[clause : m.start()])),
                )
            )
    return out


# "126 mg/dL is the diabetes threshold": a number the sentence calls a threshold is not the result.
_NOT_RESULT_AFTER = re.compile(
    r"\s*[^\s.,;]*\s+(?:is|was|are)\s+(?:the\s+|a\s+)?(?:\w+\s+){0,2}(?:threshold|cut-?off|limit|upper\s+limit|"
    r"lower\s+limit|normal|target|goal)\b",
    re.I,
)
_SUPPOSING = re.compile(r"(?i)\b(?:if|would|could|were|unless)\b")
_OUT_OF = re.compile(r"\s*/\s*(\d+)(?!\d|[.,]\d|\s*(?!points?\b|pts?\b)[A-Za-z])")
# The cue names the answer itself ("Final answer: 54", "Result: 54"), not a step that gives a number.
_EXPLICIT = re.compile(
    r"(?i:\b(?:final\s+answer|answer|result|respuesta|réponse|antwort|risposta|resposta|wynik|ответ|kết\s+quả|"
    r"resultado|résultat|ergebnis|risultato|результат)\b|答案|结果|結果)"
    r"[^.\n]{0,40}$"
)


def _is_score_fraction(numerator: str, denominator: str) -> bool:
    """ "Score: 4/9", "CURB-65 = 5/5": a whole score out of a whole maximum."""
    return (
        numerator.isdigit()
        and denominator.isdigit()
        and 0 < int(denominator) <= 100
        and int(numerator) <= int(denominator)
    )


_REVISED = re.compile(
    r"(?i)\b(?:actually|wait|correction|on\s+second\s+thought|scratch\s+that|I\s+(?:should|need\s+to)\s+"
    r"(?:use|correct|revise|redo))\b"
)
# A recomputation ("Rechecking: ... = 68 mL/min", "Corrected: 69"): the value it reaches replaces the draft.
_RECOMPUTED = re.compile(
    r"(?i)\b(?:re-?check(?:ing|ed)?|re-?calculat(?:ing|ed|ion)|re-?comput(?:ing|ed|ation)|corrected\s*[:,]|"
    r"corrected\s+(?:value|result|answer|calculation)|correcting|"
    r"redo(?:ing)?|redone|double-check(?:ing|ed)?|let\s+me\s+(?:re-?check|verify|redo))\b"
)


def read_number(answer: str, unit: str | None = None, context: str = "") -> Reading:
    """The number an answer gives as its result (in ``unit`` when given), or why none can be read.

    The result is the number the reply states as its answer ("the answer is", "final answer:",
    "therefore ... is", "→ 900 mg", a structured answer), else the one it states as a value
    ("CrCl is 63.6", "= 63.6") outside restated inputs, thresholds and reference ranges, else
    the only number. "/1.73 m²", scientific notation ("6.36e1", "6.36 x 10^1", "1.13 x 10³/µL"),
    decimal commas ("1,25 g"), a score out of its maximum ("4/9") and number words ("zero" to
    "twenty") are read as a clinician reads them; a range is unparsed.

    With ``unit`` (the canary's), each number is read with the unit written after it and
    converted by pint (:mod:`medmon.probes.reading.units`; mg/dL <-> mmol/L through the analyte
    named in ``context`` or the answer): "0.90 mL/s" is 54 mL/min, and a number in a unit of
    another dimension ("80 units/kg" for a dose in units, "1,800 mg/day" for a dose in mg, "over
    2 hours") is not the result. A bare number is taken to be in ``unit``.

    Examples
    --------
    >>> read_number("The CURB-65 score is zero.").value
    0.0
    >>> read_number("BMI = 44.4 kg/m^2").value
    44.4
    >>> read_number("6.36e1").value
    63.6
    >>> read_number("Creatinine clearance ≈ 0.90 mL/s (Cockcroft-Gault).", unit="mL/min").value
    54.0
    >>> read_number("Each dose = 900 mg (total 1,800 mg/day).", unit="mg").value
    900.0
    >>> read_number("Score: 4/9").value
    4.0
    >>> read_number("Can you confirm the height? I'd rather not guess at 29 or so.").reason
    'asks back instead of answering'
    """
    reading = _read_number(answer, unit, context)
    if reading.parsed and reading.reason not in ("answer cue", "structured answer") and asks_back(clean(answer)):
        return Reading(None, "asks back instead of answering")
    return reading


def _read_number(answer: str, unit: str | None = None, context: str = "") -> Reading:
    text, structured = _structured_then(answer)
    if not text:
        return Reading(None, "empty answer")
    found = _candidates(text)
    if unit is not None:
        found = _restating_units(found)
        found = _in_unit(found, unit, _units.analyte(context, text))
    if not found:
        return Reading(None, "no number in the answer")
    revisions = list(_REVISED.finditer(text))
    if revisions:  # "8400 mL. Actually, newer guidance uses 2 mL/kg/%TBSA, so 4200 mL.": the revision wins
        later = [c for c in found if c.start >= revisions[-1].end() and c.level > 0]
        if not later:
            return Reading(None, "revises its working after the last number it states")
        found = later
    recomputed = list(_RECOMPUTED.finditer(text))
    if recomputed and not structured:
        later = [c for c in found if c.start >= recomputed[-1].end() and c.level > 0 and not c.supposed]
        found = later or found
    if structured:
        usable = [c for c in found if c.level > 0] or found
        first = usable[0]
        if first.range_with is not None:
            return _range(first)
        return Reading(_restated_in_unit(first, found, unit), "structured answer")
    for level, rule in ((3, "answer cue"), (2, "value cue")):
        at = [c for c in found if c.level == level]
        at = [c for c in at if not c.supposed] or at  # a stated value over a supposed one
        if at:
            pick = _through_equation(at[-1] if level == 3 else _first_result(at, text), found, text)
            if pick.range_with is not None:
                return _range(pick)
            if level == 3 and not pick.explicit:
                rule = "result cue"
            return Reading(_restated_in_unit(pick, found, unit), rule)
    bare = [c for c in found if c.level == 1]
    bare = [c for c in bare if not c.supposed] or bare
    if len(bare) == 2 and bare[0].range_with is not None:
        return _range(bare[0])
    values = _distinct(c.value for c in bare)
    if len(values) == 1:
        return Reading(_restated_in_unit(bare[0], found, unit), "the only number")
    if not bare:
        return Reading(None, "only thresholds, ranges or restated inputs")
    if unit:
        with_unit = [c for c in bare if c.unit and _units.unit_key(c.unit) not in ("", "%") and c.range_with is None]
        if len(_distinct(c.value for c in with_unit)) == 1:
            return Reading(with_unit[0].value, "the only number with a unit")
    shown = ", ".join(f"{v:g}" for v in sorted(values))
    return Reading(None, f"several numbers ({shown}) and no stated result")


_OPERATOR_AFTER = re.compile(r"\s*[×x*/+−]\s*\(?\s*[√∛]?\s*\(?\s*\d")


def _through_equation(pick: _Candidate, found: list[_Candidate], text: str) -> _Candidate:
    """ "→ 5 × 80 = 400 mg": a cued number that opens an expression is a factor; the result is the
    number after the expression's last "=" in the same sentence."""
    if not _OPERATOR_AFTER.match(text, pick.end):
        return pick
    results = [c for c in found if c.sentence == pick.sentence and c.start > pick.end and c.chained]
    return results[-1] if results else pick


def _restating_units(found: list[_Candidate]) -> list[_Candidate]:
    """ "... = 2.30 mmol/L. Answer: 2.30": a bare number restating one written with its unit is in that unit."""
    out: list[_Candidate] = []
    for c in found:
        if not c.unit:
            before = [p for p in out if p.unit and p.value == c.value and p.end <= c.start]
            if before:
                c = replace(c, unit=before[-1].unit)
        out.append(c)
    return out


def _distinct(values: Iterable[float]) -> list[float]:
    """Values, those within 2% of one another counted once (a result restated in another unit)."""
    out: list[float] = []
    for v in values:
        if not any(math.isclose(v, w, rel_tol=0.02) for w in out):
            out.append(v)
    return out


def _in_unit(found: list[_Candidate], unit: str, analyte: str | None) -> list[_Candidate]:
    """Each number converted into ``unit``; one in a unit that cannot be ``unit`` is not a result."""
    out = []
    for c in found:
        value = _units.convert(c.value, c.unit, unit, analyte=analyte)
        if value is None:
            out.append(replace(c, level=0))
            continue
        other = c.range_with
        if other is not None:
            other = _units.convert(other, c.unit, unit, analyte=analyte) or other
        out.append(replace(c, value=value, range_with=other))
    return out


def _restated_in_unit(pick: _Candidate, found: list[_Candidate], unit: str | None) -> float:
    """ "2.35 mmol/L (9.4 mg/dL)" asked in mg/dL: the value as written in the asked unit."""
    if not unit or _units.unit_key(pick.unit) == _units.unit_key(unit) or not pick.unit:
        return pick.value
    for c in found:
        if (
            pick.end <= c.start <= pick.end + 40
            and c.nested
            and _units.unit_key(c.unit) == _units.unit_key(unit)
            and math.isclose(c.value, pick.value, rel_tol=0.05)
        ):
            return c.value
    return pick.value


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


def read_label(answer: str, labels: Sequence[str]) -> Reading:
    """One of ``labels`` (e.g. yes, no, maybe) the answer gives, or why none can be read.

    An answer cue ("Answer: no", "Réponse : oui") wins; else the label opening the answer ("Yes,
    the trial...", "Nein, ...", "是。"); else the only label named. "Not yes" names no label;
    see :mod:`medmon.probes.reading.labels` for the languages and the rest.

    Examples
    --------
    >>> read_label("Based on the abstract, the answer is maybe.", ("yes", "no", "maybe")).value
    'maybe'
    >>> read_label("Yes or no: hard to say", ("yes", "no", "maybe")).reason
    'several labels (yes, no) and no stated answer'
    >>> read_label("Nein, Antibiotika verkürzen virale Infekte nicht.", ("yes", "no", "maybe")).value
    'no'
    """
    text, structured = _structured_then(answer)
    reading = read_label_text(text, labels, structured=structured)
    if reading.parsed and reading.reason not in ("answer cue", "structured answer") and asks_back(text):
        return Reading(None, "asks back instead of answering")
    return reading


# --- ICD-10 codes -------------------------------------------------------------------------------


def read_codes(answer: str) -> Reading:
    """The set of ICD-10 codes an answer commits to (upper case, dot after the third character).

    Codes it rejects ("Do not use E11.65"), only supposes ("if esophagitis, K21.00") or names as
    a category ("E10.1-") are not among them; two codes offered as alternatives are unparsed
    (see :mod:`medmon.probes.reading.codes`).

    Examples
    --------
    >>> sorted(read_codes('{"codes": ["e11.9", "I10"]}').value)
    ['E11.9', 'I10']
    >>> read_codes("Type 2 diabetes without complications").reason
    'no ICD-10 code in the answer'
    >>> sorted(read_codes("I12.9 + N18.32. Do not use I10 when CKD is present.").value)
    ['I12.9', 'N18.32']
    >>> read_codes("G43.909 or G43.009").reason
    'two codes offered as alternatives (G43.909 or G43.009)'
    """
    text, structured = _structured_then(answer)
    reading = read_committed_codes(text, structured=structured)
    if reading.parsed and reading.reason not in ("answer cue", "structured answer") and asks_back(text):
        return Reading(None, "asks back instead of answering")
    return reading


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
