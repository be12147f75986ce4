"""Which ICD-10 codes an answer commits to: not every code it mentions.

A coder's reply names codes it rejects ("Do not use E11.65", "Not I10", "B95.0 is not
required"), codes it only supposes ("if esophagitis, K21.00", "M17.12 would be the left",
"e.g. R35.1"), categories ("category I12", "E10.1-"), and revisions ("L20.9. Actually, use
L20.89"). The committed codes are the others. Two codes offered as alternatives ("G43.909 or
G43.009", "Either E11.65 or E11.9 depending on payer") are a hedge: no reading, not partial
credit; so is a reply whose every code is supposed or that asks itself a question.
"""

from __future__ import annotations

import re

from medmon.probes.reading.base import Reading

__all__ = ["ICD10", "read_committed_codes"]

# ICD-10-CM: a letter, two digits (or the C4A/D3A/M1A/Z3A categories), then up to four
# characters after an optional dot (S72.001A, T78.40XA); case and the dot are normalised.
ICD10 = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]\d{2}|[CDMZcdmz]\d[Aa])(?:\.?([0-9A-Za-z]{1,4}))?(?![A-Za-z0-9])")
_CLAUSE = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<=[.!?;])\s+|\n+|\s+(?:but|however|whereas)\s+", re.I)
_NEGATION = re.compile(
    r"\b(?:not|never|avoid|instead\s+of|rather\s+than|exclude[sd]?|no\s+need|rule\s+out|ruled\s+out|"
    r"I\s+considered|considered\s+but\s+rejected)\b|n't\b"
    r"|\b(?:no|nicht|kein|pas)\b|\b(?:rejected|ruled\s+out|draft)\s*:",
    re.I,
)
_NEGATED_AFTER = re.compile(
    r"^[\s,)]*(?:\([^)]*\)\s*)?(?:is|are|was|would\s+be|should\s+be|has\s+been)?\s*(?:not|n't|no\s+longer|invalid|"
    r"incorrect|wrong|unnecessary|inappropriate|redundant|deleted|excluded)\b"
    r"|^[\s,)]*(?:is|are)\s+(?:not|n't)\b|^[\s,)]*should\s+not\b|^[\s,)]*(?:is|are)\s+(?:only\s+)?for\b"
    r"|^[\s,)]*(?:is|are)\s+reserved\b|^[\s,)]*(?:has|have)\s+been\s+(?:invalid|deleted|retired)",
    re.I,
)
_SUPPOSED_BEFORE = re.compile(
    r"\b(?:if|when|unless|whether|should\s+the|in\s+case|such\s+as|for\s+example|for\s+instance|"
    r"would|could|might|category|categories|subcategory|block|range|chapter|si|wenn|falls)\b|\be\.?g\.",
    re.I,
)
_SUPPOSED_AFTER = re.compile(
    r"^[\s,)]*(?:\([^)]*\)\s*)?(?:would|could|might|only\s+if|if|when|unless|applies|is\s+used\s+(?:only\s+)?"
    r"(?:for|when)|is\s+for|depending)"
    r"|^-",
    re.I,
)
# Later in the code's own clause: "G47.30 is unspecified ... and should not be used here",
# "add B96.20 only if E. coli is documented".
_LATER_NEGATION = re.compile(
    r"\b(?:should\s+not|must\s+not|shouldn't|is\s+not|isn't|are\s+not|not\s+(?:be\s+)?(?:used|needed|required|"
    r"coded|appropriate|indicated))\b",
    re.I,
)
_LATER_CONDITION = re.compile(r"\b(?:only\s+if|if|unless|only\s+when|in\s+case)\b", re.I)
_REVISION = re.compile(r"^\W*(?:actually|on\s+second\s+thought|correction|wait|rather|instead)\b", re.I)
_FINAL_CUE = re.compile(
    r"\b(?:final(?:\s+(?:answer|codes?))?|correct\s+codes?|codes?\s+to\s+(?:use|assign|report)|assign(?:ed)?|answer)"
    r"\s*[:=-]",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:either|depending|depends|not\s+sure|unsure|uncertain|can't\s+be\s+sure|cannot\s+be\s+sure)\b"
    r"|\?\s*(?:$|\n|or\b)",
    re.I,
)
# Between two codes of one list: "E11.65 (no hyperglycaemia) or E11.8", "F10.239, F10.231".
_JOINER = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:,|or|and|nor|/|\+)?\s*(?:\([^)]*\)\s*)?$", re.I)
_OR = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:,\s*)?(?:or|/|vs\.?|versus|oder|ou|o|lub|или|或)\s*$", re.I)


def _code(category: str, suffix: str) -> str:
    code = category.upper()
    return f"{code}.{suffix.upper()}" if suffix else code


def read_committed_codes(text: str, *, structured: bool) -> Reading:
    """The codes ``text`` (a cleaned reply) commits to, or why none can be read."""
    if not text:
        return Reading(None, "empty answer")
    if structured:
        codes = {_code(c, s) for c, s in ICD10.findall(text)}
        return (
            Reading(frozenset(codes), "structured answer") if codes else Reading(None, "no ICD-10 code in the answer")
        )
    text = _BRACKET.sub(_set_aside, text)
    final = list(_FINAL_CUE.finditer(text))
    scope = text[final[-1].end() :] if final and ICD10.search(text[final[-1].end() :]) else text
    clauses = [c for c in _CLAUSE.split(scope) if c and c.strip()]
    committed: dict[str, str] = {}
    mentioned = 0
    hedged: list[tuple[str, str]] = []
    placeholders: list[str] = []  # "H66.9-" left for the coder to complete
    for clause in clauses:
        if _REVISION.search(clause) and ICD10.search(clause):
            committed.clear()  # "Actually, L20.89 ...": what came before is replaced
        supposed_clause = bool(
            re.match(r"^\W*(?:if|when|unless|whether|should|in\s+case|si|wenn|falls)\b", clause, re.I)
        )
        previous: tuple[int, str, bool, bool] | None = None  # end, code, kept, negated
        for m in ICD10.finditer(clause):
            mentioned += 1
            code = _code(m.group(1), m.group(2) or "")
            start = previous[0] if previous is not None else 0
            segment = clause[start : m.start()]
            local = re.split(r"[,;:]\s*", segment)[-1] if previous is None else segment
            after = clause[m.end() : m.end() + 60]
            rest = ICD10.split(clause[m.end() :], maxsplit=1)[0][:90]  # up to the next code
            joined = previous is not None and bool(_JOINER.match(segment))
            negated = (
                bool(_NEGATION.search(local[-40:]))
                or bool(_NEGATED_AFTER.search(after))
                or bool(_LATER_NEGATION.search(rest))
                or (joined and previous is not None and previous[3])
            )
            supposed = (
                supposed_clause
                or bool(_SUPPOSED_BEFORE.search(local[-60:]))
                or bool(_SUPPOSED_AFTER.search(after))
                or bool(_LATER_CONDITION.search(rest))
                or segment.endswith("-")  # the far end of a range, "J20-J22"
                or _inside_aside(segment, after)
            )
            placeholder = bool(re.match(r"-(?!\s*[A-Za-z]\d)", after))  # "H66.9-": a code left incomplete
            if placeholder and not negated and not (supposed_clause or _SUPPOSED_BEFORE.search(local[-60:])):
                placeholders.append(code)
            asked = after.lstrip().startswith("?")  # "R65.20? No - ...": a code the answer questions
            keep = not negated and not supposed and not asked
            if previous is not None and _OR.match(segment) and (keep or asked) and previous[2]:
                hedged.append((previous[1], code))
            if keep:
                committed[code] = clause
            previous = (m.end(), code, keep, negated)
    incomplete = [p for p in placeholders if not any(c.startswith(p) and c != p for c in committed)]
    if incomplete:  # "J02.0 and H66.9- (laterality needed)"; "E10.1- ... so E10.10" is completed
        return Reading(None, f"an incomplete code ({incomplete[-1]}-)")
    if hedged:
        first, second = hedged[-1]
        return Reading(None, f"two codes offered as alternatives ({first} or {second})")
    if not mentioned:
        return Reading(None, "no ICD-10 code in the answer")
    if not committed:
        return Reading(None, "every code is rejected or only supposed")
    if _HEDGE.search(text) and not final:
        return Reading(None, "the answer hedges between codes")
    return Reading(frozenset(committed), "answer cue" if final else "codes in the answer")


_BRACKET = re.compile(r"\([^()]*\)")
_ASIDE_WORDS = re.compile(r"\b(?:would|could|might|if|unless|neither|nor|not|never|instead|otherwise)\b|n't\b", re.I)


def _set_aside(m: re.Match[str]) -> str:
    """A bracketed aside that supposes or rejects ("(if alcohol-induced, it would be K85.20)", "(J15.9 is
    bacterial - neither applies)") holds no committed code, and its condition stays inside it."""
    inside = m.group(0)
    if ICD10.search(inside) and _ASIDE_WORDS.search(inside):
        return " " * len(inside)
    return inside


def _inside_aside(before: str, after: str) -> bool:
    """A code that opens a bracketed aside with a verb: "(I26.93 is for single subsegmental only)"."""
    opened = before.rstrip().endswith("(")
    return opened and bool(re.match(r"\s*(?:is|are|would|applies|covers|means)\b", after, re.I))
