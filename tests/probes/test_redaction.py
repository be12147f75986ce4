"""Redaction before storage: identifiers are masked, clinical content is not, and the plan can
keep no text at all while every score is still stored."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeResult, ProbeResultBase
from medmon.probes.packs import load_pack
from medmon.probes.redaction import PATTERNS, RedactorError, TextPolicy, keep, load_redactor, protect_results, redact
from medmon.probes.simulator import Phase, create_simulator

IDENTIFIERS = {
    # pattern: (text, redacted)
    "email": ("Send results to jane.doe@hospital.org today.", "Send results to [EMAIL] today."),
    "ssn": ("SSN 123-45-6789 on file", "SSN [SSN] on file"),
    "dob": ("DOB: 03/14/1950, allergic to penicillin", "DOB: [DOB], allergic to penicillin"),
    "date": ("Admitted on 2025-03-04 and again March 3, 2024.", "Admitted on [DATE] and again [DATE]."),
    "mrn": ("MRN: A1234567 and medical record number 00987654", "MRN: [MRN] and medical record number [MRN]"),
    "phone": ("Call (555) 123-4567 or +44 20 7946 0958", "Call [PHONE] or [PHONE]"),
    "long_id": ("Account 12345678 closed", "Account [ID] closed"),
    "address": ("Lives at 1234 Oak Tree Lane, Springfield", "Lives at [ADDRESS], Springfield"),
    "zip": ("Mail to IL 62704 or zip code 02115", "Mail to IL [ZIP] or zip code [ZIP]"),
    "city_zip": ("Springfield, IL 62704", "[ADDRESS]"),
    "lower_titled_name": ("hi dr smith, is mr. ivan king ok", "hi [NAME], is [NAME] ok"),
    "labelled_name": (
        "Patient: John Q. Public, 45, presents with chest pain",
        "Patient: [NAME], 45, presents with chest pain",
    ),
    "titled_name": ("Mrs. Ana María Lopez-Smith was seen", "[NAME] was seen"),
    "patient_name": ("Spoke with the patient John Smith today", "Spoke with the patient [NAME] today"),
    "partial_id": ("MRN ending in 4567; SSN xxx-xx-6789", "MRN [ID]; SSN [ID]"),
    "postcode": ("221B Baker Street, London NW1 6XE", "[ADDRESS], London [POSTCODE]"),
    "age_over_89": ("A 92-year-old woman", "A [AGE 90+]-year-old woman"),
    "url": ("See https://portal.example.org/p/123 today", "See [URL] today"),
    "ip": ("Login from 192.168.10.4 at 08:00", "Login from [IP] at 08:00"),
    "labelled_id": ("Insurance member ID: XYZ123456789, DEA AB1234563", "Insurance member ID: [ID], DEA [ID]"),
    "vin": ("Car 1HGCM82633A004352 towed", "Car [ID] towed"),
    "labelled_phone": ("Call me at 96 586625 please", "Call me at [PHONE] please"),
    "said_name": ("My name is Debra Neal.", "My name is [NAME]."),
    "signature": ("Seen today. Jane Doe, RN", "Seen today. [NAME], RN"),
}

# Kinds the built-in redactor missed on the Presidio-derived development set and in the issue-30
# review (benchmarks/redaction_independent.py): (text, what must not survive).
MISSED_IN_ISSUE_30 = [
    ("Please have the manager call me at 96 586625", ["586625"]),
    ("I would like to stop receiving messages to 434 6815", ["434 6815"]),
    ("Can someone call me on 0394 9130281?", ["9130281"]),
    ("Fax: (617) 555-0199 ext. 12", ["555-0199", "12"]),
    ("Reach the clinic on +44 20 7946 0958 or 617.555.0142 x23", ["7946", "0142", "23"]),
    ("How do I change my address to Via Pisanelli 104, 48020 Traversara?", ["Pisanelli", "48020", "Traversara"]),
    ("new address is Rostsestraat 222, 6440 Froidchapelle", ["Rostsestraat", "6440", "Froidchapelle"]),
    ("User: 96 rue de Penthièvre, 95000 PONTOISE", ["Penthièvre", "95000", "PONTOISE"]),
    ("Rua Doutor Afrânio Junqueira 1460, 04581-040 São Paulo", ["Junqueira", "04581-040", "São Paulo"]),
    ("Meet me at 29 Wattle St, 5601 King William's Town", ["Wattle", "5601", "King William"]),
    ("send it to P.O. Box 255, 3910 Kangerlussuaq", ["Box 255", "Kangerlussuaq"]),
    ("Hello, this is Ms. Riitta Hahl. Who are you?", ["Riitta", "Hahl"]),
    ("My name is Charlie Campbell but everyone calls me Charlie", ["Charlie", "Campbell"]),
    ("Her maiden name is Jomphe", ["Jomphe"]),
    ("Thanks,\nMaria Lopez", ["Maria", "Lopez"]),
    ("vu le 3 mars et le 4 de marzo de 2024", ["3 mars", "4 de marzo"]),
    ("follow-up on March 4th; born 3 Apr 59", ["March 4th", "3 Apr 59"]),
    ("入院 2024年3月5日", ["2024年3月5日"]),
    ("Madame Dupont, 92 ans", ["Dupont", "92"]),
    ("SSN 123456789 on file", ["123456789"]),
    ("Account #: AC-99812, Med Rec #: A-55321", ["AC-99812", "A-55321"]),
    ("NPI 1234567893, licence plate 7ABC123", ["1234567893", "7ABC123"]),
    ("pacemaker serial number PM44821X", ["PM44821X"]),
    ("Login from 10.0.0.12 via www.example.org/me", ["10.0.0.12", "example.org"]),
    ("ZIP code 02115", ["02115"]),
]


@pytest.mark.parametrize("text, leaked", MISSED_IN_ISSUE_30, ids=[t for t, _ in MISSED_IN_ISSUE_30])
def test_builtin_redactor_catches_what_issue_30_found_missing(text: str, leaked: list[str]) -> None:
    out = redact(text)
    assert not [w for w in leaked if w in out], out


# What the built-in redactor used to miss, each case as found: (text, what must not survive).
MISSED_BEFORE = [
    ("the patient: john smith, seen today", ["john", "smith"]),
    ("Patient: JOHN SMITH presents with chest pain", ["JOHN", "SMITH"]),
    ("patient: maría lópez-garcía reports nausea", ["maría", "lópez"]),
    ("The patient John Smith was admitted", ["John", "Smith"]),
    ("patient named mary jones called back", ["mary", "jones"]),
    ("Dr. Gregory House signed the note", ["Gregory", "House"]),
    ("Sr. Alberto Garcia was seen", ["Alberto", "Garcia"]),
    ("SSN 123 45 6789 on file", ["123 45 6789"]),
    ("SSN 123.45.6789 on file", ["123.45.6789"]),
    ("DOB 1962/03/14", ["1962"]),
    ("born 14-Mar-1962 in Ohio", ["1962"]),
    ("admitted 14 March 1962", ["1962"]),
    ("Lives at 221B Baker Street, London NW1 6XE", ["Baker", "NW1 6XE"]),
    ("Adresse: Hauptstraße 5, 10115 Berlin", ["Hauptstraße", "10115"]),
    ("habite 12 rue de la Paix, 75002 Paris", ["rue de la Paix", "75002"]),
    ("Toronto, ON M5V 2T6", ["M5V 2T6"]),
    ("a 92-year-old man", ["92"]),
    ("aged 97 with CKD", ["97"]),
    ("101 yo woman", ["101"]),
    ("MRN ending in 4567", ["4567"]),
    ("last four digits of her SSN are 6789", ["6789"]),
    ("SSN ***-**-6789", ["6789"]),
]


@pytest.mark.parametrize("text, leaked", MISSED_BEFORE, ids=[t for t, _ in MISSED_BEFORE])
def test_builtin_redactor_catches_what_it_used_to_miss(text: str, leaked: list[str]) -> None:
    out = redact(text)
    assert not [w for w in leaked if w in out], out


def test_every_builtin_pattern_has_a_case() -> None:
    assert {name for name, _, _ in PATTERNS} == set(IDENTIFIERS)


@pytest.mark.parametrize("name", sorted(IDENTIFIERS))
def test_builtin_redactor_masks_identifiers(name: str) -> None:
    raw, expected = IDENTIFIERS[name]
    assert redact(raw) == expected


CLINICAL = [
    "B",
    "The answer is C. Warfarin's effect rises with fluconazole.",
    "Creatinine clearance is 78.5 mL/min; BP 120/80 mmHg; Na 135-145 mmol/L.",
    "Give 0.5 mg/kg IV over 10 minutes, then 1,000,000 units daily.",
    "QTc (Bazett) = 452 ms. CHA2DS2-VASc = 4, HAS-BLED = 2, MELD 23.",
    "Patient: 67-year-old man with INR 2.5-3.5 target.",
    "The doctor recommends a ratio of 1:2 and a dose of 3.1415926 mg.",
    "A 67-year-old woman, aged 45 at diagnosis, 89 years now; the patient has diabetes.",
    "Patient education: take with food; Dose 1962 mg over 24 h.",
    "Grade 3 of 4, stage 2; ECOG 1; 2 of 3 criteria met.",
    "Take metformin 500 mg at 08:00 and 20:00; HbA1c 7.2% in 2019; ICD-10 E11.9 and I10; BP 120/80.",
    "Start lisinopril 10 mg daily; K 4.1 mmol/L; eGFR 58; recheck in 2 weeks; Parkinson disease.",
    "Tome 1 comprimido de 5 mg cada 8 horas; glucosa 110 mg/dL; diagnóstico J45.909.",
    "Warfarin 5 mg on Mon/Wed/Fri, 2.5 mg other days; INR 2.0-3.0; call the clinic if bleeding.",
]


@pytest.mark.parametrize("answer", CLINICAL)
def test_clinical_content_is_left_alone(answer: str) -> None:
    assert redact(answer) == answer


def shout(text: str) -> str:
    return "[checked] " + text.upper()


def explode(text: str) -> str:
    raise RuntimeError(f"cannot handle {text}")


NOT_CALLABLE = 42


def test_redactors_are_resolved_by_name() -> None:
    assert load_redactor("builtin") is redact and load_redactor("none") is keep
    assert load_redactor("tests.probes.test_redaction:shout")("ok") == "[checked] OK"
    with pytest.raises(RedactorError, match="cannot import module 'no.such.module'"):
        load_redactor("no.such.module:f")
    with pytest.raises(RedactorError, match="has no callable 'NOT_CALLABLE'"):
        load_redactor("tests.probes.test_redaction:NOT_CALLABLE")


def _result(**fields: Any) -> ProbeResultBase:
    return ProbeResultBase(task_id="t", canary_id="c", score=1.0, correct=True, **fields)


def test_protect_results_redacts_drops_or_fails_closed() -> None:
    results = [_result(answer="Call 555-123-4567"), _result(error_type="timeout", error="no answer within 5s")]
    redacted = protect_results(results, TextPolicy(redact))
    assert redacted[0].answer == "Call [PHONE]" and redacted[1].error == "no answer within 5s"
    dropped = protect_results(results, TextPolicy(redact, store_text=False))
    assert [r.answer for r in dropped] == [None, None] and [r.score for r in dropped] == [1.0, 1.0]
    assert dropped[1].error == "no answer within 5s"  # errors say why a call failed: kept, redacted
    closed = protect_results(results, TextPolicy(explode))
    assert closed[0].answer is None  # a failing plug-in never lets the raw text through
    assert closed[1].error == "timeout"
    assert results[0].answer == "Call 555-123-4567"  # the caller's results are not modified


@pytest.mark.parametrize(
    "privacy, expect",
    [
        ({"redactor": "tests.probes.test_redaction:shout", "store_text": True}, "shouted"),
        ({"redactor": "builtin", "store_text": False}, "none"),
    ],
)
def test_pipeline_stores_only_what_the_plan_allows(
    serve: Callable[..., Any], make_plan: Callable[..., Plan], engine: Engine, privacy: dict[str, Any], expect: str
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.9)], seed=1))
    plan = make_plan(
        privacy=privacy,
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
    )
    outcome = run_task_probe(
        engine,
        plan,
        load_context(plan, plan.tasks[0]),
        rng=random.Random(3),
        now=lambda: datetime(2026, 11, 1, tzinfo=UTC),
    )
    with Session(engine) as session:
        rows = session.exec(select(ProbeResult).where(ProbeResult.run_id == outcome.run_id)).all()
    assert len(rows) == 20 and all(r.score is not None for r in rows)
    assert outcome.mean_score == pytest.approx(sum(r.score or 0 for r in rows) / 20)
    if expect == "shouted":
        assert all(r.answer is not None and r.answer.startswith("[checked] ") for r in rows)
    else:
        assert all(r.answer is None for r in rows)


def test_the_presidio_redactor_adds_presidios_recognisers_to_the_builtin_patterns() -> None:
    presidio = load_redactor("presidio")
    out = presidio(
        "Patient: john smith paid with 4111 1111 1111 1111 from IBAN GB82 WEST 1234 5698 7654 32; "
        "DOB 1962/03/14, ip 10.20.30.40"
    )
    for leaked in ("john", "4111", "GB82", "1962", "10.20.30.40"):
        assert leaked not in out, out
    assert "<CREDIT_CARD>" in out and "<IBAN_CODE>" in out and "Patient: [NAME]" in out
    assert presidio(CLINICAL[2]) == CLINICAL[2]
