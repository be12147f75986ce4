"""The ``presidio`` redactor: Microsoft Presidio's pattern recognisers after medmon's own patterns.

Installed with ``pip install 'medmon[presidio]'`` and chosen with ``privacy.redactor: presidio``.
Presidio's recognisers add identifiers the built-in patterns do not know (credit cards, IBANs,
US passports, driver licences, NPIs, Medicare and health-insurance member ids, UK NHS and NI
numbers, IP and MAC addresses, and Presidio's own SSN, phone and date forms, with their checksum
validation). Only pattern recognisers run: no spaCy model is loaded or downloaded, and none that
looks addresses up on the network (Presidio's e-mail and URL recognisers fetch the public suffix
list; medmon's e-mail pattern covers addresses). Names in running text still need an NER model:
a site that has one plugs in its own ``module:function``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# Pattern recognisers only (no NLP artefacts needed), none with network look-ups.
RECOGNIZERS = (
    "UsSsnRecognizer",
    "PhoneRecognizer",
    "DateRecognizer",
    "CreditCardRecognizer",
    "IbanRecognizer",
    "IpRecognizer",
    "MacAddressRecognizer",
    "MedicalLicenseRecognizer",
    "UsPassportRecognizer",
    "UsLicenseRecognizer",
    "UsItinRecognizer",
    "UsBankRecognizer",
    "UsNpiRecognizer",
    "UsMbiRecognizer",
    "UsHealthInsuranceMemberIdRecognizer",
    "NhsRecognizer",
    "UkNinoRecognizer",
    "UkPostcodeRecognizer",
    "CaPostalCodeRecognizer",
    "CaSinRecognizer",
)


@lru_cache(maxsize=1)
def _engines() -> tuple[list[Any], Any]:
    import presidio_analyzer.predefined_recognizers as predefined
    from presidio_anonymizer import AnonymizerEngine

    recognizers = [getattr(predefined, name)() for name in RECOGNIZERS if hasattr(predefined, name)]
    return recognizers, AnonymizerEngine()


def redact(text: str) -> str:
    """Presidio's pattern recognisers alone; each finding becomes ``<TYPE>`` (the ``presidio``
    redactor runs medmon's built-in patterns first)."""
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    recognizers, anonymizer = _engines()
    found: list[RecognizerResult] = []
    for recognizer in recognizers:
        found += recognizer.analyze(text, recognizer.supported_entities, None)
    found = EntityRecognizer.remove_duplicates(found)
    found = [r for r in found if r.score >= 0.3]
    if not found:
        return text
    return str(anonymizer.anonymize(text=text, analyzer_results=found).text)
