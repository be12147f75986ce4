"""Which label (yes, no, maybe; or a canary's own) an answer gives, in the patient's language.

The label may open the reply ("Nein, ...", "是。", "Tak."), follow an answer cue ("Answer: no",
"Réponse : oui", "答案：否"), be the only one named, or close a contrast ("In pregnancy, yes.
But for this patient, no."). "not positive" is "negative" when those are the only two labels;
"No doubt about it: yes" is yes. A reply that opens with one label and later states another on
its own ("Yes. Wait, it depends. Maybe.") has changed its answer: unparsed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from medmon.probes.reading.base import Reading
from medmon.probes.reading.languages import ANSWER_WORDS, CJK_ANSWER_WORDS, CUED_ONLY, LABEL_WORDS, PHRASES

__all__ = ["read_label_text"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# "No doubt about it: yes" is yes; "Não sei" / "No sé" / "Nie wiem" (I don't know) name no label.
_IDIOM = re.compile(
    r"\bno\s+(?:doubt|question|wonder|matter)(?:\s+about\s+it)?\b"
    r"|\b(?:não|nao)\s+sei\b|\bno\s+(?:lo\s+)?s[ée]\b|\bnie\s+wiem\b|\bnon\s+lo\s+so\b|\bnon\s+so\b"
    r"|\bje\s+ne\s+sais\s+pas\b|\bich\s+weiß\s+(?:es\s+)?nicht\b|\bkhông\s+biết\b|\bне\s+знаю\b",
    re.I,
)
_CUE_WORDS = tuple(ANSWER_WORDS) + ("decision", "verdict", "conclusion", "label", "classification", "category")


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True))


@lru_cache(maxsize=64)
def _vocabulary(labels: tuple[str, ...]) -> tuple[dict[str, str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """word -> label, then patterns: any word (non-CJK), a cued word, a word opening the reply."""
    words: dict[str, str] = {}
    for label in labels:
        forms = [label, *LABEL_WORDS.get(label, ()), *PHRASES.get(label, ())]
        if label.startswith("non-") or label.startswith("non "):
            rest = label[4:]
            forms += [f"non{rest}", f"non {rest}", f"not {rest}"]
        for form in forms:
            words.setdefault(form.lower(), label)
    latin = [w for w in words if not _CJK.search(w)]
    cjk = [w for w in words if _CJK.search(w)]
    plain = [w for w in latin if w not in CUED_ONLY]
    any_word = re.compile(rf"(?<![\w-])({_alternation(plain)})(?![\w-])", re.I) if plain else re.compile(r"(?!x)x")
    every = _alternation(latin) + ("|" + _alternation(cjk) if cjk else "")
    word = rf"(?:(?<![\w-])(?:{_alternation(latin)})(?![\w-])" + (f"|(?:{_alternation(cjk)})" if cjk else "") + ")"
    cued = re.compile(
        rf"(?i:(?<![\w])(?:final\s+)?(?:{_alternation(_CUE_WORDS)})(?![\w])(?:\s+(?:is|would\s+be|es|est|ist|è|é))?"
        rf"\s*[:=-]?\s*|(?:{_alternation(CJK_ANSWER_WORDS)})\s*[:是为は은는]?\s*)[\"'(\[]?({word})",
        re.I,
    )
    lead = re.compile(rf"^\s*[\"'(\[]?({every})(?:(?![\w-])|(?<=[^\x00-\u024f]))", re.I)
    return words, any_word, cued, lead


# "I wouldn't say no", "It is not true that the answer is no": the label is denied, not given.
_NOT_SAYING = re.compile(
    r"(?i)\b(?:wouldn't|would\s+not)\s+say\s+"
    r"(?:(?:that\s+)?(?:it's|it\s+is)\s+)?[\"'(\[]?[^\W\d_]+|\bnot\s+true\s+that\s+the\s+answer\s+is\s+[^\W\d_]+"
)
_SUPPOSED_CUE = re.compile(r"(?i)\b(?:if|were|unless|had\s+it|otherwise|suppose|supposing|assuming)\b|\bsi\b|\bwenn\b")


def _label_of(words: dict[str, str], found: str) -> str:
    return words[re.sub(r"\s+", " ", found.lower())]


def read_label_text(text: str, labels: Sequence[str], *, structured: bool) -> Reading:
    """The label a cleaned reply gives, or why none can be read."""
    if not text:
        return Reading(None, "empty answer")
    key = tuple(label.lower() for label in labels)
    words, any_word, cued, lead = _vocabulary(key)
    text = _IDIOM.sub(" ", text)
    if len(key) == 2:  # "Not positive" is negative when there are only two
        for label in key:
            other = key[1] if label == key[0] else key[0]
            text = re.sub(rf"(?i)\bnot\s+{re.escape(label)}\b", other, text)
    else:
        for label in key:  # "Not urgent" is non-urgent when that is a label
            if label.startswith("non-") and label[4:] in key:
                text = re.sub(rf"(?i)\bnot\s+{re.escape(label[4:])}\b", label, text)
        text = re.sub(rf"(?i)\bnot\s+(?:{_alternation(key)})(?![\w-])", " ", text)
    text = _NOT_SAYING.sub(" ", text)
    found_cued = []
    for m in list(cued.finditer(text)):
        sentence = re.split(r"[.!?\n]", text[: m.start()])[-1]
        declined = re.search(r"(?i)\b(?:can't|cannot|can\s+not|unable\s+to|not|won't)\s+$", text[: m.start()])
        if (
            _SUPPOSED_CUE.search(sentence) or declined
        ):  # "If it were cardioembolic, the answer would be no": not the answer
            text = text[: m.start(1)] + " " * (m.end(1) - m.start(1)) + text[m.end(1) :]
        else:
            found_cued.append(_label_of(words, m.group(1)))
    closing = re.search(
        rf"(?i:(?:\b(?:it|this)(?:'s|\s+is)\s+|:\s*))[\"'(\[]?((?<![\w-])(?:{_alternation(list(words))}))(?![\w-])"
        r"[\"')\]]?\s*[.!]?\s*$",
        text,
    )
    if closing and not found_cued:
        found_cued = [_label_of(words, closing.group(1))]
    if found_cued:
        return Reading(found_cued[-1], "structured answer" if structured else "answer cue")
    revised = re.findall(
        rf"(?i:\b(?:wait|actually|on\s+second\s+thought|correction|scratch\s+that)\b[\s,:;.!-]*"
        rf"(?:(?:it's|it\s+is|the\s+answer\s+is)\s+)?)((?<![\w-])(?:{_alternation(list(words))}))(?![\w-])",
        text,
    )
    if revised:  # "No - wait, yes.": the final statement wins over the draft
        return Reading(_label_of(words, revised[-1]), "the label the answer settles on")
    opening = lead.match(text)
    named = [(m.start(), _label_of(words, m.group(1))) for m in any_word.finditer(text)]
    alternatives = re.compile(
        rf"(?i:(?<![\w-])({_alternation(list(words))})(?![\w-])[\s,]*(?:only\s+)?(?:if|when|unless)\b)"
    )
    conditional = {_label_of(words, m.group(1)) for m in alternatives.finditer(text)}
    if len(conditional) > 1:  # "Yes if pneumococcal, no if meningococcal."
        return Reading(None, f"a conditional answer ({', '.join(sorted(conditional))} under conditions)")
    concluded = re.findall(
        rf"(?i:(?<!\bif\s)\b(?:so|therefore|thus|hence|overall)\b[\s,:]*(?:(?:the\s+answer\s+is|it's|it\s+is)\s+)?)"
        rf"((?<![\w-])(?:{_alternation(list(words))}))(?![\w-])",
        text,
    )
    if concluded:  # "Yes - although ..., so no.": the conclusion is the final statement
        return Reading(_label_of(words, concluded[-1]), "the label the answer concludes with")
    if opening:
        label = _label_of(words, opening.group(1))
        later = {lab for at, lab in named if at > opening.end() and lab != label and _standalone(text, at, len(text))}
        if later:
            return Reading(None, f"changes its answer ({label}, then {', '.join(sorted(later))})")
        pair = re.match(rf"\s*(?:or|/|and|o|ou|oder)\s*({_alternation(list(words))})", text[opening.end() :], re.I)
        if pair and _label_of(words, pair.group(1)) != label:
            return Reading(None, f"several labels ({label}, {_label_of(words, pair.group(1))}) and no stated answer")
        return Reading(label, "structured answer" if structured else "label opening the answer")
    distinct = sorted({lab for _, lab in named})
    if len(distinct) == 1:
        return Reading(distinct[0], "the only label named")
    if not distinct:
        return Reading(None, f"none of {', '.join(labels)} in the answer")
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    last = sentences[-1] if sentences else ""
    if re.match(r"\W*(?:but|however|yet|still|overall|in\s+short|so|therefore)\b", last, re.I):
        in_last = {_label_of(words, m.group(1)) for m in any_word.finditer(last)}
        if len(in_last) == 1:
            return Reading(in_last.pop(), "the label the answer concludes with")
    return Reading(None, f"several labels ({', '.join(distinct)}) and no stated answer")


def _standalone(text: str, at: int, end: int) -> bool:
    """A label standing as its own sentence ("... Maybe."), not a word within one."""
    before = text[:at].rstrip()
    after = re.match(r"[\w-]+", text[at:end])
    rest = text[at + (after.end() if after else 0) :].lstrip()
    return (not before or before[-1] in ".!?\n-:") and (not rest or rest[0] in ".!?\n,")
