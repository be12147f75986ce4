"""Redaction before storage: what the model said may quote patient data from the user's canaries.

Bundled canaries carry no patient data, but a health system's own canaries can, and a model
echoes what it is given. Every answer (and error message) passes through a redactor before it
is stored; the plan's ``privacy`` section picks it:

- ``builtin``: :func:`redact`, a pattern redactor for common identifiers: e-mail addresses,
  phone numbers, SSNs (any separator), MRN-like numbers (labelled, or bare runs of 7+ digits),
  partial ids ("ending in 4567"), dates of birth and dates in US, ISO, year-first and
  day-month-name forms, names after ``patient:``/``name:`` labels (any case), after "the
  patient" or titles (``Mrs. Smith``, ``Dr.``, ``Sr.``), US and common European street
  addresses, ZIP codes and UK/Canadian postcodes, and ages over 89; since issue 30 also phone
  and fax numbers through libphonenumber (US, UK, German, French national forms and every ``+``
  form, extensions) or after a label ("call me at"), European "Street 12, 12345 City" lines,
  P.O. boxes, dates in Spanish, French, German, Italian, Portuguese, Dutch, Chinese and
  Vietnamese, labelled account/insurance/licence/DEA/NPI/device/plate numbers, VINs, URLs, IPv4
  addresses, and names after "my name is", greetings and sign-offs, or before a credential
  (", RN"). It is best-effort: patterns
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

import phonenumbers

from medmon.probes.errors import ProbeError
from medmon.probes.jury import JuryOutcome
from medmon.probes.models import ProbeResultBase
from medmon.scrub import mask_text, scrub_secrets

log = logging.getLogger("medmon.redaction")

Redactor = Callable[[str], str]


class RedactorError(ProbeError):
    """A ``privacy.redactor`` that cannot be imported or is not callable."""


_MONTH = (
    r"(?:(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?|May"
    # Spanish, Portuguese, French, German, Italian, Dutch month names (any case)
    r"|(?i:enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre"
    r"|diciembre|janeiro|fevereiro|março|maio|junho|julho|setembro|outubro|novembro|dezembro"
    r"|janvier|février|fevrier|mars|avril|mai|juin|juillet|août|aout|septembre|octobre|novembre|décembre"
    r"|decembre|januar|februar|märz|maerz|juni|juli|oktober|dezember|gennaio|febbraio|aprile|maggio"
    r"|giugno|luglio|settembre|ottobre|dicembre|januari|februari|maart|mei|augustus))"
)
_ORD = r"(?:st|nd|rd|th|er|º|°|\.)?"
_DATE = (
    rf"(?:\d{{4}}[/.-]\d{{1,2}}[/.-]\d{{1,2}}|\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:\d{{4}}|\d{{2}})"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+(?:\d{{4}}|'?\d{{2}}))?(?![\d:.,]\d|\s*(?:mg|mcg|ml|mL|g|kg|units?|%)\b)"
    rf"|\d{{1,2}}{_ORD}\s+(?:(?:of|de|di|del)\s+)?{_MONTH}(?:,?\s+(?:(?:de|del)\s+)?(?:\d{{4}}|'?\d{{2}}))?(?![\w])"
    rf"|\d{{1,2}}-{_MONTH}-\d{{2,4}}|\d{{4}}\s*年\s*\d{{1,2}}\s*月(?:\s*\d{{1,2}}\s*[日号])?|\d{{1,2}}\s*月\s*\d{{1,2}}\s*[日号]"
    rf"|(?i:ngày)\s+\d{{1,2}}(?:\s+tháng\s+\d{{1,2}}(?:\s+năm\s+\d{{4}})?|/\d{{1,2}}(?:/\d{{2,4}})?))"
)
_WORD = r"[A-ZÀ-ÖØ-Þ](?:['’][A-ZÀ-ÖØ-Þ])?[^\W\d_]++(?:['’\-][^\W\d_]+)*+(?!\d)"
_INITIAL = r"[A-Z]\.(?:\s?[A-Z]\.)*"
_NAME = rf"(?:{_INITIAL}\s*)?{_WORD}(?:\s+[A-Z]\.(?=\s))?(?:\s+(?:{_WORD}|(?:van|von|de|der|den|da|del|di|du|la|le|bin|ibn|al)(?=\s+[A-Z]))){{0,3}}"  # noqa: E501 (one alternation)
# After an explicit label with a colon ("patient: john smith") a name may be in any case.
_ANY_WORD = r"[^\W\d_]+(?:['\-][^\W\d_]+)*"
_NOT_NAME = (
    r"(?!(?:is|was|has|had|and|or|with|who|reports|presents|presented|denies|states|came|comes|complains"
    r"|the|a|an|age|aged|dob|mrn|born|of|in|on|at|for|to|male|female|man|woman|boy|girl|not|unknown"
    r"|none|n/a|here|feeling|having|calling|writing|still|so|very|sorry|just|also|going|sure|fine)\b)"
)
_ANY_NAME = (
    rf"(?i:{_NOT_NAME}){_ANY_WORD}(?:\s+[^\W\d_]\.(?=\s))?"
    rf"(?:\s+(?i:{_NOT_NAME}){_ANY_WORD}){{0,2}}"
)
_STREET = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace"
    r"|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Close|Crescent|Cres|Gardens|Grove|Square|Sq|Row|Mews|Trail|Trl"
    r"|Loop|Pike|Alley|Walk|Hill|Park)"
)
_TITLE = (
    r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Sr|Sra|Srta|Prof|Mme|Mlle|Herr|Frau|Herrn|Dott|Dra|Drs|Mevr|Dhr"
    r"|Doctor|Señor|Señora|Senhor|Senhora|Monsieur|Madame|Nurse|Rev|Fr|Sister|Capt)"
)
_ID = r"(?=[A-Z0-9\-]*\d)[A-Z0-9][A-Z0-9\-/]{2,}[A-Z0-9]"

# Order matters: labelled forms first, so "DOB: 01/02/1950" becomes "DOB: [DOB]", not "[DATE]".
PATTERNS: tuple[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    ("url", re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]"), "[URL]"),
    ("email", re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"), "[EMAIL]"),
    (
        "ip",
        re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.]*\d)"),
        "[IP]",
    ),
    (
        "ssn",
        re.compile(
            r"\b\d{3}[-. ]\d{2}[-. ]\d{4}\b|(?i:\b(?:SSN|social security(?: number| no\.?)?)\s*[:#]?\s*)\d{9}\b"
        ),
        "[SSN]",
    ),
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
    ("date", re.compile(rf"(?<![\w/.-]){_DATE}(?![\w/]|\.\d)"), "[DATE]"),
    (
        "mrn",
        re.compile(
            r"(?i:\b(MRN|MR#|Med\.? ?Rec(?:ord)?\.?(?: (?:Number|No\.?|#))?|Medical Record(?: Number| No\.?| #)?"
            r"|Patient ID|Pt ID|Chart (?:No\.?|Number)|Hospital (?:No\.?|Number)|Unit (?:No\.?|Number)))"
            r"(\s*[:#]?\s*#?\s*)[A-Z0-9][A-Z0-9\-]{3,}"
        ),
        r"\1\2[MRN]",
    ),
    (
        "labelled_id",
        re.compile(
            r"(?i:\b((?:account|acct|a/c|billing|invoice|claim|policy|member|subscriber|group|insurance|insurer|plan"
            r"|medicare|medicaid|beneficiary|health card|carte vitale|versicherten|license|licence|lic|driver'?s?"
            r"|DL|DEA|NPI|registration|reg|serial|S/N|SN|device|implant|pacemaker|plate|licen[cs]e plate|VIN"
            r"|passport|certificate|cert|case|ticket|reference|ref|booking|order|visit|encounter|FIN|CSN|HAR"
            r"|tag|badge|employee|student|national id|id card|identity)"
            r"(?:\s+(?:id|ID|number|num|no\.?|nr\.?|#|code|card))?)"
            r"(\s*(?:is|was|:|#|=)?\s*(?:no\.?|#)?\s*))" + _ID + r"\b"
        ),
        r"\1\2[ID]",
    ),
    ("vin", re.compile(r"\b(?=[A-HJ-NPR-Z0-9]*\d)(?=[A-HJ-NPR-Z0-9]*[A-HJ-NPR-Z])[A-HJ-NPR-Z0-9]{17}\b"), "[ID]"),
    (
        "labelled_phone",
        re.compile(
            r"(?i:\b((?:call(?:\s+(?:me|us|him|her))?(?:\s+(?:at|on))?|phone|ph|tel|telephone|téléphone|teléfono|telefon"
            r"|telefono|fax|cell|mobile|mob|pager|beeper|whatsapp|text(?:\s+me)?(?:\s+at)?|reach(?:\s+(?:me|us))?\s+(?:at|on)"
            r"|messages\s+to|number(?:\s+is)?|contact|điện thoại|sđt|电话|手机)\s*(?:no\.?|number|#)?\s*[:.]?\s*))"
            r"(\+?\(?\d[\d ()./\-]{4,}\d(?:\s*(?:ext\.?|x|extension|poste|durchwahl)\s*\d{1,5})?)"
        ),
        r"\1[PHONE]",
    ),
    (
        "phone",
        re.compile(
            r"(?<![\w+])(?:\+?1[\s.\-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.\-])\d{3}[\s.\-]\d{4}\b"
            r"(?:\s*,?\s*(?i:ext\.?|x|extension)\s*\d{1,5}\b)?"
            r"|\+\d{1,3}(?:[\s.\-]?\(?\d{1,4}\)?){2,5}\b"
        ),
        "[PHONE]",
    ),
    ("long_id", re.compile(r"(?<![\d.,])\d{7,}(?![\d]|[.,]\d)"), "[ID]"),
    (
        "address",
        re.compile(
            rf"\b\d{{1,6}}[A-Za-z]?,?\s+(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:[A-Z0-9][\w'’]*\s+){{1,4}}{_STREET}\b\.?"
            rf"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|#)\.?\s*#?\w+)?"
            r"|\b\d{1,5}(?:\s?(?:bis|ter))?,?\s+(?i:rue|avenue|av\.|boulevard|bd|chemin|place|allée|impasse|quai|route"
            r"|calle|c/|avenida|avda\.?|paseo|plaza|carrera|rua|travessa|via|viale|piazza|corso)\s+"
            r"(?:[\w'’\-]+\s+){0,4}[\w'’\-]+"
            r"|\b(?i:calle|c/|avenida|avda\.?|paseo|plaza|carrera|rua|travessa|via|viale|piazza|corso|rue|avenue|chemin"
            r"|boulevard)\s+(?:[\w'’\-]+\s+){0,4}?(?:nº\s*|n\.\s*|no\.\s*)?\d{1,5}[a-z]?\b(?:,?\s*\d{1,2}º?\s*[A-Z]?\b)?"
            r"|\b[A-ZÄÖÜ][\wäöüß\-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|laan|gade|vej|straat|plein|gracht|dijk|ring|damm|ufer)"
            r"\s+\d{1,5}[a-z]?\b"
            r"|\b(?i:P\.?\s?O\.?\s?Box|Postfach|Apartado|Casilla)\s+\d+"
            # a "Street 12, 12345 City" line of the European kind
            r"|\b(?:[A-ZÀ-Þ][\w'’\-]*\s+){1,4}\d{1,5}[a-z]?,\s*(?:[A-Z]{1,2}-)?\d{4,5}(?:-\d{3})?\s+[A-ZÀ-Þ][\w'’\-]+(?:\s+[A-ZÀ-Þ][\w'’\-]+){0,2}"
        ),
        "[ADDRESS]",
    ),
    # "City, ST 12345": the city goes with the ZIP code
    ("city_zip", re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2},\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?\b"), "[ADDRESS]"),
    (
        "zip",
        re.compile(
            r"\b([A-Z]{2}|(?i:zip(?: code)?|zipcode|postal code|postcode|code postal|PLZ|CP|CAP)[:#]?)\s+\d{5}(?:-\d{4})?\b"  # noqa: E501 (one alternation)
        ),
        r"\1 [ZIP]",
    ),
    (
        "postcode",
        re.compile(
            r"\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b|\b[A-Z]\d[A-Z]\s?\d[A-Z]\d\b"
            # "12345 City" after a street: the city goes with its postcode
            r"|(?<=,\s)(?:[A-Z]{1,2}-)?\d{4,5}(?:-\d{3})?\s+[A-ZÀ-Þ][\w'’\-]+(?:\s+[A-ZÀ-Þ][\w'’\-]+){0,2}"
            r"|\b\d{5}-\d{3}\b|\b\d{3}-\d{4}(?=\s+(?:東京|大阪|[\u3040-\u30ff\u4e00-\u9fff]))"
        ),
        "[POSTCODE]",
    ),
    (
        "age_over_89",
        re.compile(
            r"(?i)\b(?:9\d|1[0-2]\d)(?=(?:\s*|-)(?:years?|yrs?|y/?o|-year|ans|años|anos|jahre|jährige?r?|anni|jaar|tuổi|岁|歳)\b)"
            r"|(?i:\b(?:aged?|age:|âgée?|edad|alter|età|de)\s*)(?:9\d|1[0-2]\d)\b(?!\s*(?:mg|kg|%|mm|/))"
            r"|(?:9\d|1[0-2]\d)(?=\s*(?:岁|歳))"
        ),
        "[AGE 90+]",
    ),
    (
        "labelled_name",
        re.compile(
            rf"(?i:\b(patient|patient name|name|pt|nom|nombre|paciente|patient\(e\)|patiente|user|signed|from|to|attn|cc|contact|guardian|next of kin|nok|caregiver|emergency contact|referring(?: physician| doctor)?|pcp)(\s*:\s*)){_ANY_NAME}"  # noqa: E501 (one alternation)
        ),
        r"\1\2[NAME]",
    ),
    (
        "patient_name",
        re.compile(
            rf"\b((?i:the patient|patient|pt\.?|paciente|patiente|Patientin|Patient),?\s+(?i:named\s+|called\s+)?){_NAME}"  # noqa: E501 (one alternation)
            rf"|\b((?i:patient|pt\.?)\s+(?i:named|called)\s+){_ANY_NAME}"
        ),
        lambda m: (m.group(1) or m.group(2)) + "[NAME]",
    ),
    # chat in lower case: "dr smith", "mr. ivan king" (not "ms": "452 ms. CHA2DS2-VASc")
    (
        "lower_titled_name",
        re.compile(
            rf"\b(?:dr|mr|mrs|miss|mme)\.?\s+(?i:{_NOT_NAME})[a-z][a-z'\-]+(?:\s+(?i:{_NOT_NAME})[a-z][a-z'\-]+)?\b"
        ),
        "[NAME]",
    ),
    ("titled_name", re.compile(rf"\b(?:{_TITLE}|(?i:mr|mrs|miss|dr|mme|mlle|sra|srta|prof))\.?\s+{_NAME}"), "[NAME]"),
    (
        "said_name",
        re.compile(
            rf"\b((?i:my name is|my name's|name is|name's|i am|i'm|this is|call me|calls me|me llamo|je m'appelle|je suis"  # noqa: E501 (one alternation)
            rf"|ich bin|ich heiße|mein name ist|mi nombre es|sono|mi chiamo|tôi là|tên tôi là|maiden name is|"
            rf"under(?: the name)?|on behalf of|mother|father|son|daughter|wife|husband|partner|brother|sister|kid|child"  # noqa: E501 (one alternation)
            rf"|caregiver|guardian|dear|hi|hello|hola|bonjour|hallo|thanks|thank you|regards|sincerely|cheers"
            rf"|best|cordialement|saludos|atentamente|gracias|merci|danke|grüße|cc|from|signed|per|spoke with|seen by"
            rf"|referred by|referred to|cosigned by|dictated by)[,:]?\s+(?:(?i:is|was|named|called)\s+)?)"
            rf"(?!(?:The|This|That|It|We|You|He|She|They|I|A|An|Our|Your|My|His|Her|Monday|Tuesday|Wednesday|Thursday|Friday"
            rf"|Saturday|Sunday|Team|All|Everyone|Doctor|Nurse|Clinic|Hospital|Care|Pharmacy|There|Here|Again|Yes|No"
            rf"|Please|Thanks|Regards|Ok|OK|Okay|Sir|Madam|Madame|Monsieur|Señor|Señora|Patient|Emergency|Urgent)\b){_NAME}"
        ),
        r"\1[NAME]",
    ),
    (
        "signature",
        re.compile(
            rf"(?m)(^|\n|[,.;!]\s+|—\s*|--\s*)(?=[A-Z])(?:{_INITIAL}\s*)?{_WORD}(?:\s+[A-Z]\.)?\s+{_WORD}(?=\s*(?:,\s*)?(?:MD|M\.D\.|RN|NP|PA|PA-C|DO|PharmD|PhD|DNP|FNP|MSN|BSN|LPN|CNA|DDS|MBBS|FRCP)\b)"
        ),
        r"\1[NAME]",
    ),
)


def redact_phones(text: str) -> str:
    """Phone and fax numbers as libphonenumber knows them (US, UK, German and French national forms,
    and every international ``+`` form), extensions included."""
    if sum(c.isdigit() for c in text) < 7:
        return text
    spans: list[tuple[int, int]] = []
    # Other countries' national forms start with a trunk 0: only then are their regions worth a pass.
    regions = PHONE_REGIONS if _TRUNK_ZERO.search(text) else PHONE_REGIONS[:1]
    for region in regions:
        for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            spans.append((m.start, m.end))
    if not spans:
        return text
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            last = max(last, end)
            continue
        out += [text[last:start], "[PHONE]"]
        last = end
    out.append(text[last:])
    return "".join(out)


PHONE_REGIONS = ("US", "GB", "DE", "FR")
_TRUNK_ZERO = re.compile(r"(?<![\d.,])0\d")


def redact(text: str) -> str:
    """Replace common identifiers with bracketed labels (best-effort, see the module notes).

    Examples
    --------
    >>> redact("Patient: John Smith, MRN 00123456, DOB: 03/14/1950, call 555-123-4567")
    'Patient: [NAME], MRN [MRN], DOB: [DOB], call [PHONE]'
    >>> redact("B. Creatinine clearance is 78.5 mL/min; BP 120/80 mmHg.")
    'B. Creatinine clearance is 78.5 mL/min; BP 120/80 mmHg.'
    """
    for name, pattern, replacement in PATTERNS:
        if name == "phone":  # labelled numbers first, then libphonenumber, then the US pattern
            text = redact_phones(text)
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
            # a reader model's reading is a model's output: redacted like any stored text it wrote
            "reader_extracted": policy.error(r.reader_extracted, "unreadable"),
            "reader_reason": policy.error(r.reader_reason, "reader model"),
        }
        outcome = getattr(r, "jury", None)
        if isinstance(outcome, JuryOutcome):
            update["jury"] = policy.jury(outcome)
        out.append(r.model_copy(update=update))
    return out
