"""Answer styles a clinician reads one way and a pattern-matcher another (issue 27).

Each case is written for this file (none is copied from a blind or development set): replies
that ask back or decline while naming an option, letter-less commitments against discussions
of several options, cut-off walk-throughs, drafts and recomputed values, scores out of their
maximum, units, cues in Hindi, Japanese, Arabic, Russian and Turkish, negation and hypothesis.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from medmon.baselines.canary import Canary
from medmon.probes.extraction import read_choice, read_codes, read_label, read_number
from medmon.probes.scoring import score_reply

ASTHMA = ("Nebulised salbutamol", "Intravenous magnesium sulfate", "Oral montelukast", "Inhaled fluticasone")
STROKE = (
    "Intravenous alteplase",
    "Mechanical thrombectomy",
    "Aspirin 300 mg",
    "Dual antiplatelet therapy with clopidogrel",
)
LABELS = ("yes", "no", "maybe")


@pytest.mark.parametrize(
    "answer",
    [
        "Has he had three back-to-back salbutamol nebs? If so, would you like me to go with magnesium?",
        "Could you confirm the peak flow? Intravenous magnesium sulfate depends on severity.",
        "I can't recommend a treatment for a real patient. Nebulised salbutamol is widely used, but ask the team.",
        "Do you mean the first drug in the ED or at home? Oral montelukast?",
        "I'm not comfortable choosing for an actual child; inhaled fluticasone needs a prescriber's review.",
    ],
)
def test_a_reply_that_asks_back_or_declines_is_no_answer_whatever_option_it_names(answer: str) -> None:
    reading = read_choice(answer, ASTHMA)
    assert reading.value is None, reading


def test_a_committed_answer_stays_read_when_the_reply_also_offers_more() -> None:
    assert read_choice("The answer is A. Let me know if you want the dosing.", ASTHMA).value == "A"
    assert read_choice("Answer: B. Could you confirm the weight so I can give the dose?", ASTHMA).value == "B"


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("Go with thrombectomy.", "B"),
        ("Thrombectomy - large-vessel occlusion inside 6 hours.", "B"),
        ("Start IV alteplase now.", "A"),
        ("My pick: aspirin 300 mg, since the window has passed.", "C"),
        ("Alteplase is inferior here; mechanical thrombectomy is the way.", "B"),
        ("Nebulised albuterol first, back to back.", "A"),
    ],
)
def test_an_option_named_without_its_letter_is_read_when_the_reply_commits_to_it(answer: str, letter: str) -> None:
    assert (
        read_choice(answer, STROKE if "salbutamol" not in answer and "albuterol" not in answer else ASTHMA).value
        == letter
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Intravenous alteplase suits the early window, whereas mechanical thrombectomy suits large vessels. "
        "Each has its place.",
        "Aspirin 300 mg is cheap; clopidogrel adds bleeding. The choice depends on the imaging.",
    ],
)
def test_a_discussion_of_several_options_without_commitment_is_unread(answer: str) -> None:
    assert read_choice(answer, STROKE).value is None


def _mcq(reference: str = "B") -> Canary:
    return Canary(
        id="stroke",
        scorer="multiple_choice",
        messages=({"role": "user", "content": "?"},),
        references=(reference,),
        choices=STROKE,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Option by option:\nA. Intravenous alteplase: within 4.5 hours.\nB. Mechanical thrombectomy: for",
        "Intravenous alteplase needs a CT first. Mechanical thrombectomy",
        "Consider each. A Thrombectomy would",
    ],
)
def test_a_cut_off_walk_through_is_not_read_as_the_option_it_stopped_on(answer: str) -> None:
    score = score_reply(_mcq(), answer, finish_reason="length")
    assert score.parsed is False and score.correct is None, score


def test_a_cut_off_reply_that_already_committed_is_read() -> None:
    score = score_reply(_mcq(), "Answer: B. Thrombectomy is indicated because the occlusion", finish_reason="length")
    assert (score.parsed, score.correct) == (True, True)


def test_an_option_list_with_one_verdict_for_reads_as_that_option() -> None:
    answer = "A) Alteplase - no, outside window\nB) Thrombectomy - yes\nC) Aspirin - not yet\nD) DAPT - no"
    assert read_choice(answer, STROKE).value == "B"
    assert read_choice("A) Alteplase\nB) Thrombectomy\nC) Aspirin", STROKE).value is None


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("उत्तर: D", "D"),
        ("सही उत्तर C है।", "C"),
        ("正解は D です。", "D"),
        ("答えはB", "B"),
        ("الإجابة: ج", "C"),
        ("الإجابة الصحيحة هي B", "B"),
        ("Ответ: D.", "D"),
        ("Cevap: C", "C"),
        ("Doğru cevap B'dir.", "B"),
        ("Cevap A değil, D.", "D"),
    ],
)
def test_answer_cues_in_hindi_japanese_arabic_russian_and_turkish(answer: str, letter: str) -> None:
    assert read_choice(answer, STROKE).value == letter


@pytest.mark.parametrize(
    ("answer", "label"),
    [("हाँ, यह सुरक्षित है।", "yes"), ("いいえ。", "no"), ("ربما", "maybe"), ("Нет, не нужно.", "no"), ("Evet.", "yes")],
)
def test_labels_in_those_languages(answer: str, label: str) -> None:
    assert read_label(answer, LABELS).value == label


@pytest.mark.parametrize(
    ("answer", "unit", "value"),
    [
        (
            "Na deficit = 0.6 x 70 x 10 = 400. Rechecking with 0.5 for an older woman: 0.5 x 70 x 10 = 350 mEq.",
            "mEq",
            350,
        ),
        ("First estimate 52 mL/min. Recalculating with ideal body weight: 47 mL/min.", "mL/min", 47),
        ("HAS-BLED: 3/9", "", 3),
        ("Total = 11/15 points (E3 V3 M5).", "", 11),
        ("QTc ≈ 0.47 s", "ms", 470),
        ("That is about 198 lb.", "kg", 89.8),
    ],
)
def test_numbers_take_the_final_value_the_score_and_the_asked_unit(answer: str, unit: str, value: float) -> None:
    reading = read_number(answer, unit=unit)
    assert reading.value == pytest.approx(value, rel=0.01), reading


def test_a_number_in_a_hypothetical_after_the_result_does_not_replace_it() -> None:
    answer = "Corrected calcium = 8.0 + 0.8 x (4 - 2.5) = 9.2. If albumin were 2.0, corrected would be 9.6."
    assert read_number(answer, unit="mg/dL").value == pytest.approx(9.2)


def test_a_number_in_a_reply_that_asks_back_is_no_answer() -> None:
    assert read_number("Is that 70 kg actual or ideal? I'd rather not guess; roughly 60 either way.").value is None


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("If she were pregnant the answer would be no. As asked: yes.", "yes"),
        ("I wouldn't say yes. Maybe, with monitoring.", "maybe"),
    ],
)
def test_a_supposed_or_denied_label_is_not_the_answer(answer: str, label: str) -> None:
    assert read_label(answer, LABELS).value == label


def test_a_label_in_a_reply_that_declines_is_no_answer() -> None:
    assert read_label("I can't answer yes or no without the full abstract.", LABELS).value is None


@pytest.mark.parametrize(
    ("answer", "codes"),
    [
        ("N39.0 - rule out N30.00, no cystitis findings.", {"N39.0"}),
        ("J45.901. I considered J45.902 but there is no status asthmaticus.", {"J45.901"}),
    ],
)
def test_codes_ruled_out_or_considered_are_not_assigned(answer: str, codes: set[str]) -> None:
    assert read_codes(answer).value == frozenset(codes)


def test_codes_asked_back_or_set_against_each_other_are_no_answer() -> None:
    assert read_codes("Which side? S82.101A vs S82.102A - please specify.").value is None


def test_an_option_deferred_to_later_or_called_unhelpful_is_not_the_pick() -> None:
    assert (
        read_choice("Clopidogrel later once the bleed is excluded; now, mechanical thrombectomy.", STROKE).value == "B"
    )
    assert read_choice("Oral montelukast is unhelpful acutely. Magnesium IV.", ASTHMA).value == "B"


def test_the_fifth_development_set_keeps_its_floor() -> None:
    """87 answers written for issue 27's open classes (benchmarks/data/reading_dev5.jsonl). The
    readers were changed for them, so this is a regression floor, not a measure."""
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("reading_blind", root / "benchmarks" / "reading_blind.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.measure(root / "benchmarks" / "data" / "reading_dev5.jsonl")
    for kind, f in result["scorers"].items():
        assert f["false_correct"] == 0, (kind, [m for m in result["misread"] if m["false_correct"]])
        assert f["read_as_truth"] / f["items"] >= 0.97, (kind, [m["id"] for m in result["misread"]])
