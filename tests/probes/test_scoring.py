"""Scorers against tricky answers; each case id names the rule it pins."""

from __future__ import annotations

import math

import pytest

from medmon.baselines.canary import Canary
from medmon.probes.errors import UnknownScorer
from medmon.probes.readability import count_syllables, flesch_kincaid_grade, grade_score, text_counts
from medmon.probes.scoring import (
    SCORERS,
    extract_choice,
    extract_icd10_codes,
    extract_number,
    get_scorer,
    looks_like_refusal,
    normalize_text,
)


def canary(*references: str, tolerance: dict[str, float] | None = None, choices: int | None = None) -> Canary:
    return Canary(
        id="t-1",
        messages=({"role": "user", "content": "q"},),
        references=references,
        tolerance=tolerance,
        choices=tuple("wxyz"[:choices]) if choices else None,
    )


CRCL = canary("62.41", tolerance={"lower": 59.29, "upper": 65.53})
SCORE_3 = canary("3", tolerance={"lower": 3, "upper": 3})

# (scorer, canary, answer, expected value); the id says which rule the case checks.
CASES = [
    # quasi_exact_match: HELM normalisation, any reference
    pytest.param("quasi_exact_match", canary("yes"), "Yes.", 1.0, id="quasi-case-and-punctuation"),
    pytest.param("quasi_exact_match", canary("yes"), "  YES \n", 1.0, id="quasi-whitespace"),
    pytest.param("quasi_exact_match", canary("maybe", "possibly"), "Possibly", 1.0, id="quasi-any-reference"),
    pytest.param(
        "quasi_exact_match", canary("yes"), "Yes, because the trial was positive.", 0.0, id="quasi-extra-words"
    ),
    pytest.param("quasi_exact_match", canary("yes"), "", 0.0, id="quasi-empty"),
    pytest.param("quasi_exact_match", canary("no"), "the no", 1.0, id="quasi-articles-dropped"),
    pytest.param("quasi_exact_match", canary("A"), "A", 1.0, id="quasi-reference-normalising-to-nothing"),
    pytest.param("quasi_exact_match", canary("The"), "an", 1.0, id="quasi-articles-both-empty-as-helm"),
    # exact_match: HELM's strict metric, only surrounding white space is forgiven
    pytest.param("exact_match", canary("yes"), "yes", 1.0, id="exact-equal"),
    pytest.param("exact_match", canary("yes"), "  yes \n", 1.0, id="exact-strips-whitespace"),
    pytest.param("exact_match", canary("yes"), "Yes", 0.0, id="exact-case-matters"),
    pytest.param("exact_match", canary("yes"), "yes.", 0.0, id="exact-punctuation-matters"),
    pytest.param("exact_match", canary("A"), "A", 1.0, id="exact-letter-a"),
    pytest.param("exact_match", canary("yes"), "", 0.0, id="exact-empty"),
    # yes_no_maybe: the label the answer gives
    pytest.param("yes_no_maybe", canary("no"), "**No.** The interval includes 1.", 1.0, id="label-markdown-lead"),
    pytest.param("yes_no_maybe", canary("maybe"), "Final answer: maybe", 1.0, id="label-answer-cue"),
    pytest.param("yes_no_maybe", canary("yes"), "No", 0.0, id="label-wrong"),
    # multiple_choice: the letter wherever it is written
    pytest.param("multiple_choice", canary("B"), "The answer is (B).", 1.0, id="mc-answer-is-bracketed"),
    pytest.param("multiple_choice", canary("B"), "(b)", 1.0, id="mc-lower-bracketed"),
    pytest.param("multiple_choice", canary("B"), "Answer: B) Metformin", 1.0, id="mc-answer-colon-paren"),
    pytest.param("multiple_choice", canary("B"), "b", 1.0, id="mc-lone-lower"),
    pytest.param("multiple_choice", canary("B"), "B. Metformin", 1.0, id="mc-letter-dot-option"),
    pytest.param("multiple_choice", canary("B"), "  B  ", 1.0, id="mc-whitespace"),
    pytest.param("multiple_choice", canary("B"), "Option B is correct", 1.0, id="mc-option-word"),
    pytest.param("multiple_choice", canary("B"), "The answer is C.", 0.0, id="mc-wrong-letter"),
    pytest.param("multiple_choice", canary("B"), "**Answer: B**", 1.0, id="mc-markdown"),
    pytest.param("multiple_choice", canary("B"), "It is not C, it is B.", 1.0, id="mc-negation"),
    pytest.param("multiple_choice", canary("B"), '{"answer": "B"}', 1.0, id="mc-json"),
    # numeric_tolerance: the number inside the tolerance
    pytest.param("numeric_tolerance", CRCL, "62.4", 1.0, id="num-bare"),
    pytest.param("numeric_tolerance", CRCL, "The creatinine clearance is 62.4 mL/min.", 1.0, id="num-sentence-unit"),
    pytest.param("numeric_tolerance", CRCL, "CrCl ≈ 62 ml/min", 1.0, id="num-approx-sign"),
    pytest.param("numeric_tolerance", CRCL, "62,4", 1.0, id="num-decimal-comma"),
    pytest.param("numeric_tolerance", CRCL, " \n 65.5 \n", 1.0, id="num-upper-edge-inside"),
    pytest.param("numeric_tolerance", CRCL, "65.6", 0.0, id="num-just-outside"),
    pytest.param(
        "numeric_tolerance",
        CRCL,
        "CrCl = (140 - 70) x 72 / (72 x 1.1) = 63.6 mL/min",
        1.0,
        id="num-working-then-result",
    ),
    pytest.param(
        "numeric_tolerance",
        CRCL,
        "The answer is 63.6 mL/min, which is low for a 70-year-old.",
        1.0,
        id="num-answer-cue-beats-later-numbers",
    ),
    pytest.param(
        "numeric_tolerance",
        CRCL,
        "CrCl is 63.6 mL/min. Note the serum creatinine was 1.1 mg/dL.",
        1.0,
        id="num-result-before-restated-input",
    ),
    pytest.param(
        "numeric_tolerance",
        canary("1234.5", tolerance={"lower": 1172.8, "upper": 1296.2}),
        "1,234.5 mg",
        1.0,
        id="num-thousands-separator",
    ),
    pytest.param("numeric_tolerance", SCORE_3, "3", 1.0, id="num-score-exact"),
    pytest.param("numeric_tolerance", SCORE_3, "3.0", 1.0, id="num-score-float-form"),
    pytest.param(
        "numeric_tolerance",
        SCORE_3,
        "The CHA2DS2-VASc score is 3 (out of 9).",
        1.0,
        id="num-score-digits-in-name-ignored",
    ),
    pytest.param("numeric_tolerance", SCORE_3, "4", 0.0, id="num-score-off-by-one"),
    pytest.param("numeric_tolerance", canary("2.5"), "Wells score: 2.5", 1.0, id="num-no-tolerance-equal"),
    pytest.param("numeric_tolerance", canary("2.5"), "2", 0.0, id="num-no-tolerance-unequal"),
    pytest.param("numeric_tolerance", canary("-4"), "The base excess is −4 mEq/L", 1.0, id="num-unicode-minus"),
    pytest.param("numeric_tolerance", canary("-4"), "4", 0.0, id="num-sign-matters"),
    pytest.param("numeric_tolerance", canary("12"), "12%", 1.0, id="num-percent-sign"),
    pytest.param("numeric_tolerance", canary("Low risk"), "low risk.", 1.0, id="num-category-exact-match"),
    pytest.param("numeric_tolerance", canary("Low risk"), "high risk", 0.0, id="num-category-wrong"),
    pytest.param("numeric_tolerance", canary("nan"), "nan", 1.0, id="num-nan-is-a-category-not-a-number"),
    # token_f1: HELM's set F1 over normalised tokens, best reference
    pytest.param("token_f1", canary("the patient has pneumonia"), "Pneumonia.", 0.5, id="f1-partial"),
    pytest.param(
        "token_f1", canary("pneumonia", "the patient has pneumonia"), "Pneumonia.", 1.0, id="f1-max-over-references"
    ),
    pytest.param("token_f1", canary("pneumonia"), "pneumonia pneumonia", 1.0, id="f1-token-sets"),
    pytest.param("token_f1", canary("pneumonia"), "", 0.0, id="f1-empty"),
    pytest.param("token_f1", canary("heart failure"), "renal colic", 0.0, id="f1-no-overlap"),
    # set_f1: ICD-10 codes as sets, case and dot normalised
    pytest.param("set_f1", canary("E11.9, I10"), "E11.9, I10", 1.0, id="codes-exact"),
    pytest.param("set_f1", canary("E11.9, I10"), "e11.9; i10", 1.0, id="codes-lower-case"),
    pytest.param("set_f1", canary("E11.9, I10"), "E119 and I10.", 1.0, id="codes-without-dot"),
    pytest.param("set_f1", canary("E11.9", "I10"), "I10, E11.9", 1.0, id="codes-one-per-reference"),
    pytest.param("set_f1", canary("E11.9, I10"), "I10, I10, E11.9", 1.0, id="codes-duplicates-once"),
    # predicted {E11.9, I10, E78.5}: precision 2/3, recall 1, F1 = 2 * (2/3) / (5/3) = 0.8
    pytest.param("set_f1", canary("E11.9, I10"), "Codes: **E11.9**, I10, E78.5", 0.8, id="codes-extra-code"),
    # predicted {I10}: precision 1, recall 1/2, F1 = 2 * 0.5 / 1.5 = 0.667
    pytest.param("set_f1", canary("E11.9, I10"), "I10", 2 / 3, id="codes-missing-code"),
    pytest.param("set_f1", canary("S72.001A, W19.XXXA"), "s72.001a, W19.XXXA", 1.0, id="codes-seventh-character"),
    pytest.param("set_f1", canary("E11.9, I10"), "Z00.00", 0.0, id="codes-wrong-code"),
    # readability: grade at or under the target scores 1
    pytest.param(
        "readability",
        canary(),
        "Take one tablet twice a day with food. Call us if you feel dizzy.",
        1.0,
        id="read-plain",
    ),
    pytest.param(
        "readability",
        canary(),
        "Pharmacological anticoagulation necessitates meticulous monitoring.",
        0.0,
        id="read-dense",
    ),
    pytest.param("readability", canary(), "", 0.0, id="read-empty"),
]


@pytest.mark.parametrize(("scorer", "case", "answer", "expected"), CASES)
def test_scorer_cases(scorer: str, case: Canary, answer: str, expected: float) -> None:
    score = get_scorer(scorer)(case, answer)
    assert score.value is not None, score.reason
    assert math.isclose(score.value, expected, abs_tol=1e-9), score.detail
    assert 0.0 <= score.value <= 1.0


UNPARSED = [
    pytest.param("multiple_choice", canary("B"), "B or C", "two options", id="mc-two-letters"),
    pytest.param("multiple_choice", canary("B"), "", "empty answer", id="mc-empty"),
    pytest.param(
        "multiple_choice",
        canary("E"),
        "E. coli is the likely organism.",
        "no option letter",
        id="mc-e-coli-is-not-option-e",
    ),
    pytest.param("numeric_tolerance", CRCL, "60-65 mL/min", "a range", id="num-range"),
    pytest.param(
        "numeric_tolerance",
        CRCL,
        "I cannot determine this from the information given.",
        "no number",
        id="num-no-number",
    ),
    pytest.param("numeric_tolerance", CRCL, "", "empty answer", id="num-empty"),
    pytest.param("yes_no_maybe", canary("yes"), "It could be yes or no.", "several labels", id="label-two"),
    pytest.param(
        "set_f1", canary("E11.9"), "Type 2 diabetes without complications", "no ICD-10 code", id="codes-prose-only"
    ),
    pytest.param("set_f1", canary("E11.9, I10"), "", "empty answer", id="codes-empty"),
]


@pytest.mark.parametrize(("scorer", "case", "answer", "reason"), UNPARSED)
def test_unreadable_answers_are_unparsed_not_wrong(scorer: str, case: Canary, answer: str, reason: str) -> None:
    score = get_scorer(scorer)(case, answer)
    assert score.value is None and score.correct is None and score.parsed is False
    assert reason in score.reason


def test_a_read_answer_says_what_was_read_and_how() -> None:
    score = get_scorer("multiple_choice")(canary("B"), "Let me think... Therefore, the answer is **B**.")
    assert (score.parsed, score.extracted, score.correct) == (True, "B", True)
    assert score.reason == "answer cue"
    number = get_scorer("numeric_tolerance")(CRCL, "CrCl is 63.6 mL/min, above the threshold of 30 mL/min")
    assert (number.extracted, number.correct) == ("63.6", True)
    assert get_scorer("quasi_exact_match")(canary("yes"), "Yes").parsed is None


def test_every_registered_scorer_is_documented_and_tested() -> None:
    tested = {p.values[0] for p in CASES}
    for name, fn in SCORERS.items():
        assert fn.__doc__, f"scorer {name!r} has no docstring"
        assert name in tested, f"scorer {name!r} has no case in CASES"


def test_jury_is_not_registered_here() -> None:
    assert "jury" not in SCORERS or SCORERS["jury"].__module__ != "medmon.probes.scoring"


def test_unknown_scorer_names_the_known_ones() -> None:
    with pytest.raises(UnknownScorer, match="exact_match"):
        get_scorer("no_such_scorer")


def test_right_or_wrong_scorers_set_correct() -> None:
    assert get_scorer("numeric_tolerance")(CRCL, "62.4").correct is True
    assert get_scorer("numeric_tolerance")(CRCL, "99").correct is False
    assert get_scorer("set_f1")(canary("I10"), "I10").correct is True
    assert get_scorer("yes_no_maybe")(canary("no"), "no").correct is True
    assert get_scorer("token_f1")(canary("x"), "x").correct is None


def test_numeric_detail_reports_extraction_and_bounds() -> None:  # noqa: D103
    detail = get_scorer("numeric_tolerance")(CRCL, "about 70").detail
    assert detail == {"extracted": 70.0, "lower": 59.29, "upper": 65.53}


def test_set_f1_detail() -> None:
    detail = get_scorer("set_f1")(canary("E11.9, I10"), "I10, E78.5").detail
    assert detail["predicted"] == ["E78.5", "I10"]
    assert detail["reference"] == ["E11.9", "I10"]
    assert detail["precision"] == 0.5 and detail["recall"] == 0.5


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("62.4", 62.4, id="bare"),
        pytest.param("1,234", 1234.0, id="thousands"),
        pytest.param("0,125", 0.125, id="zero-comma-is-decimal"),
        pytest.param("-3", -3.0, id="negative"),
        pytest.param("140-70", None, id="hyphen-between-digits-is-a-range-not-a-sign"),
        pytest.param("BMI is 24.2 kg/m2", 24.2, id="unit-digit-ignored"),
        pytest.param("eGFR 54 mL/min/1.73 m2", 54.0, id="bsa-unit-dropped"),
        pytest.param("The score of 3 out of 9", 3.0, id="out-of-not-a-cue"),
        pytest.param("Step 1: 140 - 70 = 70. Step 2: 70 x 72 = 5040. Result: 63.6", 63.6, id="result-cue"),
        pytest.param("Final answer: **63.6** mL/min (weight 72 kg, age 70)", 63.6, id="answer-cue-markdown"),
        pytest.param("The answer depends on weight: with 72 kg, CrCl is 63.6", 63.6, id="answer-cue-needs-number"),
        pytest.param("The answer is approximately 63.6, e.g. for an age of 70", 63.6, id="answer-cue-beats-value-cue"),
        pytest.param("62.4 mL/min (normal 90-120)", 62.4, id="reference-range-is-not-the-result"),
        pytest.param("CrCl is 63.6 mL/min, above the threshold of 30 mL/min", 63.6, id="threshold-is-not-the-result"),
        pytest.param("44.4 kg/m^2", 44.4, id="unit-power-is-not-a-number"),
        pytest.param("The CURB-65 score is zero.", 0.0, id="number-word-and-score-name"),
        pytest.param("6.36e1", 63.6, id="scientific-notation"),
        pytest.param("6.36 x 10^1", 63.6, id="times-ten-to-the"),
        pytest.param("no number here", None, id="none"),
    ],
)
def test_extract_number(text: str, expected: float | None) -> None:
    assert extract_number(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("I am not sure", None, id="pronoun-i-is-not-option-i"),
        pytest.param("A beta blocker", None, id="article-a-is-not-option-a"),
        pytest.param("c) warfarin", "C", id="lower-paren"),
        pytest.param("I think it is (C)", "C", id="bracketed-anywhere"),
        pytest.param("the answer is d", "D", id="answer-is-lower"),
    ],
)
def test_extract_choice(text: str, expected: str | None) -> None:
    assert extract_choice(text) == expected


def test_extract_icd10_codes_normalises() -> None:
    assert extract_icd10_codes("z79.84 N183 T78.40xa") == {"Z79.84", "N18.3", "T78.40XA"}
    assert extract_icd10_codes("Z3A.28 and M1A.0") == {"Z3A.28", "M1A.0"}


def test_normalize_text_unchanged() -> None:
    assert normalize_text("  The Answer: Metformin. ") == "answer metformin"


@pytest.mark.parametrize(
    ("word", "syllables"),
    [
        ("take", 1),
        ("table", 2),
        ("medicine", 3),
        ("stopped", 1),
        ("wanted", 2),
        ("glasses", 2),
        ("times", 1),
        ("changes", 2),
        ("day", 1),
        ("free", 1),
        ("people", 2),
        ("monitoring", 4),
        ("a", 1),
        ("12", 1),
        ("while", 1),
        ("male", 1),
        ("female", 2),
        ("schedule", 2),
        ("follow-up", 3),
    ],
)
def test_count_syllables(word: str, syllables: int) -> None:
    assert count_syllables(word) == syllables


def test_flesch_kincaid_hand_computed() -> None:
    text = "Take one tablet twice a day with food. Call us if you feel dizzy."
    # sentence 1: take 1, one 1, tablet 2, twice 1, a 1, day 1, with 1, food 1 -> 8 words, 9 syllables
    # sentence 2: call 1, us 1, if 1, you 1, feel 1, dizzy 2 -> 6 words, 7 syllables
    assert text_counts(text) == (2, 14, 16)
    # 0.39 * 14/2 + 11.8 * 16/14 - 15.59 = 2.73 + 13.4857 - 15.59 = 0.6257
    assert flesch_kincaid_grade(text) == pytest.approx(0.39 * 7 + 11.8 * 16 / 14 - 15.59)
    # 5 words, 1 sentence, syllables 6 + 7 + 4 + 4 + 4 = 25 (CMU dictionary; pyphen for anticoagulation)
    dense = "Pharmacological anticoagulation necessitates meticulous monitoring."
    assert text_counts(dense) == (1, 5, 25)
    # 0.39 * 5 + 11.8 * 25/5 - 15.59 = 1.95 + 59.0 - 15.59 = 45.36
    assert flesch_kincaid_grade(dense) == pytest.approx(45.36)


def test_bullets_count_as_sentences() -> None:
    assert text_counts("- Rest today\n- Drink water")[0] == 2
    assert flesch_kincaid_grade("   ") is None


@pytest.mark.parametrize(
    ("grade", "target", "expected"),
    [(5.0, 8.0, 1.0), (8.0, 8.0, 1.0), (11.0, 8.0, 0.5), (14.0, 8.0, 0.0), (20.0, 8.0, 0.0), (9.0, 6.0, 0.5)],
)
def test_grade_score(grade: float, target: float, expected: float) -> None:
    assert grade_score(grade, target_grade=target) == pytest.approx(expected)


def test_grade_score_rejects_bad_span() -> None:
    with pytest.raises(ValueError, match="span"):
        grade_score(8.0, span=0)


def test_readability_detail_and_target_from_tolerance() -> None:
    text = "Take one tablet twice a day with food. Call us if you feel dizzy."
    score = get_scorer("readability")(canary(), text)
    assert score.detail["grade"] == pytest.approx(0.6257, abs=1e-4)
    assert score.detail["target_grade"] == 8.0
    # a grade 43 text against target 6: far above target + 6, so 0
    strict = canary(tolerance={"upper": 6})
    dense = get_scorer("readability")(strict, "Pharmacological anticoagulation necessitates meticulous monitoring.")
    assert dense.value == 0.0 and dense.detail["target_grade"] == 6.0
    assert get_scorer("readability")(canary(), "").detail["grade"] is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("I'm sorry, but I can't help with that.", True, id="cant-help"),
        pytest.param(
            "As an AI language model, I cannot provide medical advice. Please consult a healthcare professional.",
            True,
            id="as-an-ai-and-deferral",
        ),
        pytest.param(
            "I’m unable to provide a diagnosis. If this is an emergency, call 911.", True, id="unable-curly-apostrophe"
        ),
        pytest.param("Please consult your doctor.", True, id="deferral-only"),
        pytest.param("You should seek immediate medical attention.", True, id="seek-attention-only"),
        pytest.param(
            "Your CrCl is 63.6 mL/min. Please check the dose with a pharmacist.", False, id="deferral-with-answer"
        ),
        pytest.param("Yes. Consult your doctor before stopping it.", False, id="one-word-answer-with-deferral"),
        pytest.param(
            "As an AI, I can't examine you, but your CrCl is 63.6 mL/min.", False, id="disclaimer-then-answer"
        ),
        pytest.param("I cannot determine this from the information given.", False, id="abstention-not-refusal"),
        pytest.param("Your doctor will call you tomorrow about the results.", False, id="mentions-doctor"),
        pytest.param("B", False, id="plain-answer"),
        pytest.param("", False, id="empty-is-not-refusal"),
    ],
)
def test_looks_like_refusal(text: str, expected: bool) -> None:
    assert looks_like_refusal(text) is expected
