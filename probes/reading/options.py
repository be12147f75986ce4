"""An option named without its letter: by its text, an abbreviation, a synonym or a paraphrase.

"PBC" is "Primary biliary cholangitis", "IM adrenaline" is "Intramuscular epinephrine",
"Hyperkalemia" is "Hyperkalaemia", "Ceftriaxone + vancomycin" is "Ceftriaxone plus vancomycin",
"LTOT" is "Long-term oxygen therapy". Only what the answer commits to counts: options named in
brackets, in conditions and sequels ("if equivocal, HIDA", "then switch to methimazole"), in
sentences about the other options ("PCC or FFP are reserved for major bleeding", "HIDA is
second-line") or after "skip", "avoid", "not" are set aside. Two options left named is no reading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

__all__ = ["committed_text", "named_option"]

_STOP = frozenset(
    "the a an of and or with without to in on for by at is are be it its this that than then from as into "
    "over under after before which who due plus alone only both each other any all none most more less "
    "give given start use e g eg such".split()
)
# British and US names, routes and abbreviations clinicians use for the same thing (one word each).
_SAME = {
    "adrenaline": "epinephrine",
    "noradrenaline": "norepinephrine",
    "salbutamol": "albuterol",
    "paracetamol": "acetaminophen",
    "frusemide": "furosemide",
    "lignocaine": "lidocaine",
    "pethidine": "meperidine",
    "ciclosporin": "cyclosporine",
    "im": "intramuscular",
    "iv": "intravenous",
    "sc": "subcutaneous",
    "subcut": "subcutaneous",
    "po": "oral",
    "ptu": "propylthiouracil",
    "nac": "acetylcysteine",
    "doac": "direct oral anticoagulant",
    "doacs": "direct oral anticoagulant",
    "noac": "direct oral anticoagulant",
    "lmwh": "low molecular weight heparin",
    "ufh": "unfractionated heparin",
    "ppi": "proton pump inhibitor",
    "us": "ultrasound",
    "ultrasonography": "ultrasound",
    "sonography": "ultrasound",
    "ct": "ct",
    "ecg": "electrocardiogram",
    "pci": "percutaneous coronary intervention",
    "cabg": "coronary artery bypass grafting",
    "vanc": "vancomycin",
    "vanco": "vancomycin",
    "mtx": "methotrexate",
    "ekg": "electrocardiogram",
}
# Directions: "It rises", "INR increases", "it will go up" say the same.
_SAME |= dict.fromkeys(("rise", "rises", "rising", "increase", "increases", "increased", "elevated", "raised"), "rises")
_SAME |= dict.fromkeys(("fall", "falls", "falling", "decrease", "decreases", "decreased", "drops", "lowered"), "falls")
_ASIDE = re.compile(
    r"\b(?:would\s+(?:be|give|only|have|show)|is\s+for|are\s+for|reserved|second-line|second\s+line|"
    r"is\s+optional|are\s+adjuncts?|is\s+an\s+adjunct|teratogenic|must\s+be\s+avoided|should\s+be\s+avoided|"
    r"is\s+(?:wrong|incorrect|not\s+indicated)|are\s+(?:wrong|incorrect|not\s+indicated)|"
    r"(?:is|are)\s+(?:inferior|unhelpful|unreliable|useless|harmful|dangerous|inadequate|insufficient|"
    r"less\s+(?:effective|appropriate|suitable|useful)|not\s+(?:preferred|first-line|needed|helpful|useful|"
    r"appropriate|the\s+best)))\b",
    re.I,
)
_CONDITION = re.compile(
    r"\b(?:if|unless|only\s+if|whereas|while|then|followed\s+by|later|afterwards|otherwise)\b[^.;\n]*", re.I
)
_BRACKETED = re.compile(r"\([^()]*\)")
_NEGATED = re.compile(
    r"(?:\bnot|\bno|n't|\bnever|\bavoid|\bagainst|\bthan|\binstead\s+of|\brule\s+out|\bexclude|\bskip|"
    r"\bwithout|\bstop|\bhold\s+off|\bdiscontinue|\bover|\bno\s+es|\bpas|\bnicht|\bkein[a-z]*|\bnie|\bне)"
    r"(?:\s+\w+){0,2}\s*$",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")


_VQ = re.compile(r"\bv\s*/\s*q\b|\bvq\b")  # "V/Q scan" is a ventilation-perfusion scan
# Route abbreviations are not an option's own name ("IV" is in many options).
_ROUTES = frozenset({"iv", "im", "sc", "po", "pr", "sl"})


def _acronyms(choice: str, others: Sequence[str]) -> list[str]:
    """ "Primary PCI" is named "PCI": an acronym of three letters or more that no other option has."""
    out = []
    for word in re.findall(r"\b[A-Z][A-Z0-9]{2,}\b", choice):
        folded = _fold(word)
        if word.lower() in _ROUTES or not folded.strip():
            continue
        if not any(folded in _fold(other) for other in others):
            out.append(word)
    return out


def _canonical(word: str) -> str:
    word = word.replace("ae", "e").replace("oe", "e")  # haemorrhage, hyperkalaemia, oedema
    return _SAME.get(word, word)


def _fold(text: str) -> str:
    """Lower case, words only, British spellings and synonyms mapped, small words dropped."""
    text = unicodedata.normalize("NFKC", text).lower().replace("n-acetyl", "acetyl")
    text = _VQ.sub(" ventilation perfusion ", text)
    words = [_canonical(w) for w in re.findall(r"[^\W_]+", text)]
    return " " + " ".join(w for w in " ".join(words).split() if w not in _STOP) + " "


def _initials(choice: str) -> list[str]:
    """ "Primary biliary cholangitis" -> pbc; "CT pulmonary angiography" -> ctpa; "RUQ ultrasound"."""
    words = re.findall(r"[^\W\d_]+", re.split(r"[(\d≥≤<>]", choice)[0])
    words = [w for w in words if w.lower() not in _STOP]
    if len(words) < 2:
        return []
    head = "".join(w if w.isupper() and len(w) > 1 else w[0] for w in words).lower()
    most = "".join(w if w.isupper() and len(w) > 1 else w[0] for w in words[:-1]).lower()
    if len(most) < 2 or most in _STOP:
        return [head]
    return [head, f"{most} {_canonical(words[-1].lower())}"]


def _binomial(choice: str) -> list[str]:
    """ "Treponema pallidum" is written "T. pallidum": the genus by its initial."""
    m = re.fullmatch(r"([A-Z])[a-z]+ ([a-z]{3,})", choice.strip())
    return [f"{m.group(1)} {m.group(2)}"] if m else []


def _names(choice: str, extra: Sequence[str]) -> list[str]:
    examples = re.findall(r"\b(?:e\.g\.|such\s+as)\s*,?\s*([^),;]+)", choice, re.I)
    names = [
        choice,
        _BRACKETED.sub(" ", choice),
        *re.findall(r"\(([^)]+)\)", choice),
        *examples,
        *_binomial(choice),
        # initials that are another word's abbreviation ("im" for Intravenous methylprednisolone
        # is intramuscular) are not this option's name
        *(i for i in _initials(choice) if _canonical(i) == i),
        *extra,
    ]
    folded = {_fold(n).strip() for n in names}
    return sorted((n for n in folded if len(n) >= 2), key=len, reverse=True)


# "CABG later if multivessel disease; now, PCI": an option deferred to later is a sequel.
_DEFERRED = re.compile(r"[^.;,\n]*\b(?:later|afterwards|subsequently|eventually)\b[^.;,\n]*", re.I)


def committed_text(text: str, *, brackets: bool = False) -> list[str]:
    """The sentences of ``text`` that state what to do, without asides, conditions (and brackets)."""
    out = []
    for sentence in _SENTENCE.split(_DEFERRED.sub(" ", text)):
        if not sentence.strip() or _ASIDE.search(_BRACKETED.sub(" ", sentence)):
            continue
        kept = _CONDITION.sub(" ", sentence if brackets else _BRACKETED.sub(" ", sentence))
        if kept.strip(" .;,"):
            out.append(kept)
    return out


def _named(region: str, names: Mapping[str, list[str]], negated: set[str]) -> set[str]:
    folded = _fold(region)
    spans: list[tuple[int, int, str]] = []
    for letter, option_names in names.items():
        for name in option_names:
            at = folded.find(f" {name} ")
            while at != -1:
                if not _NEGATED.search(_raw_before(region, folded, at)):
                    spans.append((at, at + len(name) + 2, letter))
                at = folded.find(f" {name} ", at + 1)
    kept = {
        letter
        for s, e, letter in spans
        if not any(s2 <= s and e <= e2 and (e2 - s2) > (e - s) and other != letter for s2, e2, other in spans)
    }
    return kept - negated


def _raw_before(region: str, folded: str, at: int) -> str:
    """The original words before a folded position (negations are small words the fold drops)."""
    words_before = folded[:at].split()
    raw_words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", region))
    kept = 0
    for i, word in enumerate(raw_words):
        if kept == len(words_before):
            return " ".join(raw_words[:i])
        if _canonical(word.lower()) not in _STOP:
            kept += 1
    return " ".join(raw_words)


def named_option(
    text: str,
    choices: Sequence[str],
    negated: set[str],
    aliases: Mapping[str, Sequence[str]],
    answer_cues: Sequence[re.Match[str]],
) -> tuple[str | None, str]:
    """The one option the answer names (and the rule), or None and why not."""
    letters = [chr(65 + i) for i in range(len(choices))]
    names = {
        letter: _names(choice, (*aliases.get(letter, ()), *_acronyms(choice, [c for c in choices if c is not choice])))
        for letter, choice in zip(letters, choices, strict=True)
    }
    committed = committed_text(text)
    regions = []
    if answer_cues:
        tail = text[answer_cues[-1].end() :]
        regions.append(_CONDITION.sub(" ", _BRACKETED.sub(" ", re.split(r"(?<=[.!?])\s|\n", tail, maxsplit=1)[0])))
    if committed:
        regions += [committed[0], committed[-1], " ".join(committed)]
    regions.append(" ".join(committed_text(text, brackets=True)))
    for region in regions:
        found = _named(region, names, negated)
        if len(found) == 1:
            return found.pop(), "option text"
        if len(found) > 1:
            return None, f"several options named ({', '.join(sorted(found))})"
    terse = len(text.split()) <= 6
    opening = re.split(r"\s[-–—:]\s|[.:;,!?\n]", text.strip(), maxsplit=1)[0]
    if (
        not terse
        and 0 < len(opening.split()) <= 4
        and not _CONDITION.match(opening)
        and not re.match(r"\s*(?:not|no|never|avoid|skip|without|stop|hold|against)\b", opening, re.I)
    ):
        # "Thrombectomy - large-vessel occlusion ...": a short opening phrase names the pick
        letter, why = _paraphrase(opening, choices, letters, negated, terse=True)
        if letter is not None:
            return letter, why
    for said in ([regions[0]] if answer_cues else []) + (committed[-1:] + committed[:1] if committed else [text]):
        letter, why = _paraphrase(said, choices, letters, negated, terse=terse)
        if letter is not None:
            return letter, why
    return None, "no option letter in the answer"


def options_named(
    text: str, choices: Sequence[str], negated: set[str], aliases: Mapping[str, Sequence[str]]
) -> set[str]:
    """Every option whose text (or alias) the committed sentences of ``text`` name, negated ones aside."""
    letters = [chr(65 + i) for i in range(len(choices))]
    names = {letter: _names(choice, aliases.get(letter, ())) for letter, choice in zip(letters, choices, strict=True)}
    return _named(" ".join(committed_text(text, brackets=True)), names, negated)


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _fold(text).split() if len(w) >= 4 and not w.isdigit()}


def _paraphrase(
    region: str, choices: Sequence[str], letters: list[str], negated: set[str], *, terse: bool
) -> tuple[str | None, str]:
    said = _stems(region)
    own = {letter: _stems(choice) for letter, choice in zip(letters, choices, strict=True)}
    hits = []
    for letter, stems in own.items():
        distinct = stems - set().union(*(v for k, v in own.items() if k != letter))
        matched = len(distinct & said)
        # "Oral vancomycin" for "IV vancomycin" (oral belongs to other options only): not this option
        foreign = said & set().union(*(v for k, v in own.items() if k != letter)) - stems
        if distinct and matched / len(distinct) >= 0.5 and (matched >= 2 or terse) and letter not in negated:
            if not (terse and foreign):
                hits.append(letter)
    if len(hits) == 1:
        return hits[0], "option paraphrase"
    return None, "no option letter in the answer"
