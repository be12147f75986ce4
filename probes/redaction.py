"""Redaction before storage: what the model said may quote patient data from the user's canaries.

Bundled canaries carry no patient data, but a health system's own canaries can, and a model
echoes what it is given. Every answer (and error message) passes through a redactor before it
is stored; the plan's ``privacy`` section picks it:

- ``builtin``: :func:`redact`, a pattern redactor for common identifiers: e-mail addresses,
  phone numbers, SSN-like numbers, MRN-like numbers (labelled, or bare runs of 7+ digits),
  dates of birth and full dates, names after ``Patient:``/``Name:`` labels or titles
  (``Mrs. Smith``), street addresses and ZIP codes after a state code. It is best-effort:
  patterns miss names in running text and unusual formats. Use it as a safety net, not as
  de-identification.
- ``none``: store text as answered.
- ``module:function``: any importable callable from str to str (a site's own de-identifier).

``store_text: false`` stores no answer text at all; scores, tokens and costs are kept. A
plug-in redactor that raises stores nothing for that text rather than the raw text.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Sequence

from medmon.probes.errors import ProbeError
from medmon.probes.models import ProbeResultBase

log = logging.getLogger("medmon.redaction")

Redactor = Callable[[str], str]


class RedactorError(ProbeError):
    """A ``privacy.redactor`` that cannot be imported or is not callable."""


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DATE = (rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})"
         rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}})")
_WORD = r"[A-ZÀ-ÖØ-Þ][^\W\d_]+(?:['\-][^\W\d_]+)*"
_NAME = rf"{_WORD}(?:\s+[A-Z]\.(?=\s))?(?:\s+{_WORD}){{0,2}}"
_STREET = (r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace"
           r"|Circle|Cir|Highway|Hwy|Parkway|Pkwy)")

# Order matters: labelled forms first, so "DOB: 01/02/1950" becomes "DOB: [DOB]", not "[DATE]".
PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("email", re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"), "[EMAIL]"),
    ("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), "[SSN]"),
    ("dob", re.compile(rf"\b(DOB|D\.O\.B\.|[Dd]ate of [Bb]irth|[Bb]orn(?: on)?)(\s*[:\-]?\s*){_DATE}"), r"\1\2[DOB]"),
    ("date", re.compile(rf"\b{_DATE}\b"), "[DATE]"),
    ("mrn", re.compile(r"\b(MRN|MR#|[Mm]edical [Rr]ecord(?: [Nn]umber| [Nn]o\.?| #)?|[Pp]atient ID|[Pp]t ID"
                       r"|[Cc]hart (?:[Nn]o\.?|[Nn]umber))(\s*[:#]?\s*)[A-Z0-9][A-Z0-9\-]{3,}"), r"\1\2[MRN]"),
    ("phone", re.compile(r"(?<![\w+])(?:\+?1[\s.\-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.\-])\d{3}[\s.\-]\d{4}\b"
                         r"|\+\d{1,3}(?:[\s.\-]\d{2,4}){2,4}\b"), "[PHONE]"),
    ("long_id", re.compile(r"(?<![\d.,])\d{7,}(?![\d]|[.,]\d)"), "[ID]"),
    ("address", re.compile(rf"\b\d{{1,6}}\s+(?:[A-Z][a-z]+\s+){{1,4}}{_STREET}\b\.?"), "[ADDRESS]"),
    ("zip", re.compile(r"\b([A-Z]{2})\s+\d{5}(?:-\d{4})?\b"), r"\1 [ZIP]"),
    ("labelled_name", re.compile(rf"\b(Patient|Patient [Nn]ame|Name|Pt)(\s*:\s*){_NAME}"), r"\1\2[NAME]"),
    ("titled_name", re.compile(rf"\b(?:Mr|Mrs|Ms|Miss|Mx)\.?\s+{_NAME}"), "[NAME]"),
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
    """Resolve the plan's ``privacy.redactor``: ``builtin``, ``none`` or ``module:function``."""
    if spec == "builtin":
        return redact
    if spec == "none":
        return keep
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise RedactorError(f"privacy.redactor: expected 'builtin', 'none' or 'module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RedactorError(f"privacy.redactor: cannot import module {module_name!r}: {exc}") from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise RedactorError(f"privacy.redactor: {module_name!r} has no callable {attr!r}")
    return func  # type: ignore[no-any-return]


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


def protect_results(results: Sequence[ProbeResultBase], redactor: Redactor, *,
                    store_text: bool = True) -> list[ProbeResultBase]:
    """Copies of ``results`` fit for storage: text redacted, or dropped when ``store_text`` is false.

    Scores were computed on the raw answer before this runs, so redaction never changes a score.
    """
    out = []
    for r in results:
        answer = protect_text(redactor, r.answer, "answer") if store_text else None
        error = protect_text(redactor, r.error, "error") if r.error is not None else None
        if r.error is not None and error is None:
            error = r.error_type or "error"
        out.append(r.model_copy(update={"answer": answer, "error": error}))
    return out
