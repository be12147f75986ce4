"""Redaction before storage: what the model said may quote patient data from the user's canaries.

Bundled canaries carry no patient data, but a health system's own canaries can, and a model
echoes what it is given. Every answer (and error message) passes through a redactor before it
is stored; the plan's ``privacy`` section picks it:

- ``builtin``: :func:`redact`, a pattern redactor for common identifiers: e-mail addresses,
  phone numbers, SSNs (any separator), MRN-like numbers (labelled, or bare runs of 7+ digits),
  partial ids ("ending in 4567"), dates of birth and dates in US, ISO, year-first and
  day-month-name forms, names after ``patient:``/``name:`` labels (any case), after "the
  patient" or titles (``Mrs. Smith``, ``Dr.``, ``Sr.``), US and common European street
  addresses, ZIP codes and UK/Canadian postcodes, and ages over 89. It is best-effort: patterns
  miss names in running text and unusual formats. Use it as a safety net, not as
  de-identification.
- ``presidio``: the built-in patterns, then Microsoft Presidio's pattern recognisers
  (``medmon[presidio]``; see :mod:`medmon.probes.presidio_redaction`).
- ``none``: store text as answered.
- ``module:function``: any importable callable from str to str (a site's own de-identifier).

``store_text: false`` stores no answer or judge explanation at all; scores, tokens and costs are
kept, and error messages are kept redacted (they say why a call failed). A plug-in redactor that
raises stores nothing for that text rather than the raw text.

Every text medmon keeps from a run (answers, judges' explanations, the errors of calls and of
judges) goes through one :class:`TextPolicy`, which also blanks every configured secret value
(an endpoint that echoes the API key in its 401 message must not put it in the database).
Redaction is not de-identification: see the security page of the documentation.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from medmon.probes.errors import ProbeError
from medmon.probes.jury import JuryOutcome
from medmon.probes.models import ProbeResultBase
from medmon.scrub import mask_text, scrub_secrets

log = logging.getLogger("medmon.redaction")

Redactor = Callable[[str], str]


class RedactorError(ProbeError):
    """A ``privacy.redactor`` that cannot be imported or is not callable."""


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DATE = (
    rf"(?:\d{{4}}[/.-]\d{{1,2}}[/.-]\d{{1,2}}|\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|\d{{1,2}}-{_MONTH}-\d{{2,4}})"
)
_WORD = r"[A-ZÀ-ÖØ-Þ](?:['’][A-ZÀ-ÖØ-Þ])?[^\W\d_]+(?:['’\-][^\W\d_]+)*"
_NAME = rf"{_WORD}(?:\s+[A-Z]\.(?=\s))?(?:\s+{_WORD}){{0,2}}"
# After an explicit label with a colon ("patient: john smith") a name may be in any case.
_ANY_WORD = r"[^\W\d_]+(?:['\-][^\W\d_]+)*"
_NOT_NAME = (
    r"(?!(?:is|was|has|had|and|or|with|who|reports|presents|presented|denies|states|came|comes|complains"
    r"|the|a|an|age|aged|dob|mrn|born|of|in|on|at|for|to|male|female|man|woman|boy|girl)\b)"
)
_ANY_NAME = (
    rf"(?i:{_NOT_NAME}){_ANY_WORD}(?:\s+[^\W\d_]\.(?=\s))?"
    rf"(?:\s+(?i:{_NOT_NAME}){_ANY_WORD}){{0,2}}"
)
_STREET = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace"
    r"|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Close|Crescent|Cres|Gardens|Grove|Square|Sq|Row|Mews)"
)
_TITLE = r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Sr|Sra|Srta|Prof|Mme|Mlle|Herr|Frau)"

# Order matters: labelled forms first, so "DOB: 01/02/1950" becomes "DOB: [DOB]", not "[DATE]".
PATTERNS: tuple[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    ("email", re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"), "[EMAIL]"),
    ("ssn", re.compile(r"\b\d{3}[-. ]\d{2}[-. ]\d{4}\b"), "[SSN]"),
    (
        "partial_id",
        re.compile(
            r"(?i)(?:\b(?:ending|ends) (?:in|with)|\blast (?:4|four|5|five|6|six)(?: digits)?"
            r"(?: of (?:the |his |her |their )?[\w ]{2,20}?)?(?: is| are| were|:)?)\s*#?\d{3,6}\b"
            r"|(?<!\w)[Xx*#]{3}[-. ]?[Xx*#]{2}[-. ]?\d{4}\b"
        ),
        "[ID]",
    ),
    ("dob", re.compile(rf"\b(DOB|D\.O\.B\.|[Dd]ate of [Bb]irth|[Bb]orn(?: on)?)(\s*[:\-]?\s*){_DATE}"), r"\1\2[DOB]"),
    ("date", re.compile(rf"\b{_DATE}\b"), "[DATE]"),
    (
        "mrn",
        re.compile(
            r"\b(MRN|MR#|[Mm]edical [Rr]ecord(?: [Nn]umber| [Nn]o\.?| #)?|[Pp]atient ID|[Pp]t ID"
            r"|[Cc]hart (?:[Nn]o\.?|[Nn]umber))(\s*[:#]?\s*)[A-Z0-9][A-Z0-9\-]{3,}"
        ),
        r"\1\2[MRN]",
    ),
    (
        "phone",
        re.compile(
            r"(?<![\w+])(?:\+?1[\s.\-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.\-])\d{3}[\s.\-]\d{4}\b"
            r"|\+\d{1,3}(?:[\s.\-]\d{2,4}){2,4}\b"
        ),
        "[PHONE]",
    ),
    ("long_id", re.compile(r"(?<![\d.,])\d{7,}(?![\d]|[.,]\d)"), "[ID]"),
    (
        "address",
        re.compile(
            rf"\b\d{{1,6}}[A-Za-z]?,?\s+(?:[A-Z][a-z]+\s+){{1,4}}{_STREET}\b\.?"
            r"|\b\d{1,5},?\s+(?:rue|avenue|boulevard|chemin|place|calle|avenida|via|viale)\s+"
            r"(?:[\w'’\-]+\s+){0,4}[\w'’\-]+"
            r"|\b[A-ZÄÖÜ][\wäöüß\-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|laan|gade|vej)"
            r"\s+\d{1,5}[a-z]?\b"
        ),
        "[ADDRESS]",
    ),
    ("zip", re.compile(r"\b([A-Z]{2})\s+\d{5}(?:-\d{4})?\b"), r"\1 [ZIP]"),
    (
        "postcode",
        re.compile(
            r"\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b|\b[A-Z]\d[A-Z]\s?\d[A-Z]\d\b"
            r"|(?<=,\s)\d{4,5}(?=\s+[A-Z][a-zäöüé]+)"
        ),
        "[POSTCODE]",
    ),
    (
        "age_over_89",
        re.compile(
            r"(?i)\b(?:9\d|1[0-2]\d)(?=(?:\s*|-)(?:years?|yrs?|y/?o|-year)\b)"
            r"|(?i:\b(?:aged?|age:)\s*)(?:9\d|1[0-2]\d)\b"
        ),
        "[AGE 90+]",
    ),
    ("labelled_name", re.compile(rf"(?i:\b(patient|patient name|name|pt)(\s*:\s*)){_ANY_NAME}"), r"\1\2[NAME]"),
    (
        "patient_name",
        re.compile(
            rf"\b((?i:the patient|patient|pt\.?),?\s+(?i:named\s+|called\s+)?){_NAME}"
            rf"|\b((?i:patient|pt\.?)\s+(?i:named|called)\s+){_ANY_NAME}"
        ),
        lambda m: (m.group(1) or m.group(2)) + "[NAME]",
    ),
    ("titled_name", re.compile(rf"\b{_TITLE}\.?\s+{_NAME}"), "[NAME]"),
)


def redact(text: str) -> str:
    """Replace common identifiers with bracketed labels (best-effort, see the module notes).

    Examples
    --------
    >>> redact("Patient: John Smith, MRN 00123456, DOB: 03/14/1950, call 555-123-4567")
    'Patient: [NAME], MRN [MRN], DOB: [DOB], call [PHONE]'
    >>> redact("B. Creatinine clearance is 78.5 mL/min; BP 120/80 mmHg.")
    'B. Creatinine clearance is 78.5 mL/min; BP 120/80 mmHg.'
    """
    for _name, pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def keep(text: str) -> str:
    """The ``none`` redactor: text as answered."""
    return text


def load_redactor(spec: str) -> Redactor:
    """Resolve the plan's ``privacy.redactor``: ``builtin``, ``presidio``, ``none`` or ``module:function``."""
    if spec == "builtin":
        return redact
    if spec == "none":
        return keep
    if spec == "presidio":
        try:
            from medmon.probes.presidio_redaction import _engines
            from medmon.probes.presidio_redaction import redact as presidio_redact

            _engines()
        except ImportError as exc:
            raise RedactorError(
                "privacy.redactor: 'presidio' needs Microsoft Presidio: "
                f"pip install 'medmon[presidio]' ({exc.name} is missing)"
            ) from exc
        return lambda text: presidio_redact(redact(text))
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise RedactorError(
            f"privacy.redactor: expected 'builtin', 'presidio', 'none' or 'module:function', got {spec!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RedactorError(f"privacy.redactor: cannot import module {module_name!r}: {exc}") from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise RedactorError(f"privacy.redactor: {module_name!r} has no callable {attr!r}")
    return cast(Redactor, func)  # checked callable above; its signature is the plan's promise


def protect_text(redactor: Redactor, text: str | None, field: str) -> str | None:
    """``text`` redacted for storage; None when there is none or the redactor failed (never the raw text)."""
    if text is None:
        return None
    try:
        out = redactor(text)
    except Exception as exc:  # a plug-in's failure must not store the raw text
        log.warning("redactor failed on the %s (%s); storing no text", field, type(exc).__name__)
        return None
    if not isinstance(out, str):
        log.warning("redactor returned %s for the %s; storing no text", type(out).__name__, field)
        return None
    return out


@dataclass(frozen=True)
class TextPolicy:
    """What becomes of a text before it is stored: secrets blanked, then redacted or dropped.

    ``store_text`` false drops answers and explanations; errors are always kept, redacted, since
    they say why a call failed (a redactor failure keeps only ``fallback``).
    """

    redactor: Redactor = redact
    store_text: bool = True
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def content(self, text: str | None, what: str) -> str | None:
        """An answer or explanation as stored: None when text is not kept."""
        if text is None or not self.store_text:
            return None
        return protect_text(self.redactor, scrub_secrets(text, self.secrets), what)

    def error(self, text: str | None, fallback: str) -> str | None:
        """An error message as stored: redacted, or ``fallback`` when the redactor fails."""
        if text is None:
            return None
        out = protect_text(self.redactor, mask_text(text, self.secrets), "error")
        return fallback if out is None else out

    def jury(self, outcome: JuryOutcome) -> JuryOutcome:
        verdicts = tuple(
            replace(
                v,
                error=self.error(v.error, v.error_type or "error"),
                scores=tuple(replace(s, explanation=self.content(s.explanation, "explanation")) for s in v.scores),
            )
            for v in outcome.verdicts
        )
        return replace(outcome, verdicts=verdicts, error=self.error(outcome.error, "error"))


def protect_results(results: Sequence[ProbeResultBase], policy: TextPolicy) -> list[ProbeResultBase]:
    """Copies of ``results`` fit for storage under ``policy`` (the only way results reach storage).

    Scores were computed on the raw answer before this runs, so redaction never changes a score.
    """
    out = []
    for r in results:
        update: dict[str, object] = {
            "answer": policy.content(r.answer, "answer"),
            "error": policy.error(r.error, r.error_type or "error"),
        }
        outcome = getattr(r, "jury", None)
        if isinstance(outcome, JuryOutcome):
            update["jury"] = policy.jury(outcome)
        out.append(r.model_copy(update=update))
    return out
