"""Scorers against tricky answers; each case id names the rule it pins."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from medmon.baselines.canary import Canary
from medmon.probes.errors import UnknownScorer
from medmon.probes.extraction import read_choice, read_codes, read_label, read_number
from medmon.probes.readability import count_syllables, flesch_kincaid_grade, grade_score, text_counts
from medmon.probes.scoring import (
    SCORERS,
    extract_choice,
    extract_icd10_codes,
    extract_number,
    get_scorer,
    looks_like_refusal,
    normalize_text,
    score_reply,
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


# --- reading that generalizes: structure, languages, units, truncation ---------------------------

MCQ_OPTIONS = (
    "Primary sclerosing cholangitis",
    "Primary biliary cholangitis",
    "Autoimmune hepatitis",
    "Choledocholithiasis",
)


def mcq(
    answer: str, choices: tuple[str, ...] = MCQ_OPTIONS, aliases: dict[str, tuple[str, ...]] | None = None
) -> str | None:
    value = read_choice(answer, choices, aliases).value
    return None if value is None else str(value)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param("Réponse : C.", "C", id="french-cue"),
        pytest.param("Antwort: A", "A", id="german-cue"),
        pytest.param("La respuesta correcta es la **C)**", "C", id="spanish-cue-article"),
        pytest.param("答案：D", "D", id="chinese-cue"),
        pytest.param("正解は A です。", "A", id="japanese-cue"),
        pytest.param("정답은 D입니다.", "D", id="korean-cue"),
        pytest.param("Odpowiedź B.", "B", id="polish-bare-cue"),
        pytest.param("Đáp án: C", "C", id="vietnamese-cue"),
        pytest.param("B is the answer.", "B", id="letter-is-the-answer"),
        pytest.param("B; cholestasis with AMA", "B", id="letter-semicolon"),
        pytest.param("answer would be d", "D", id="lower-case-would-be"),
        pytest.param("The answer is not A but B.", "B", id="not-a-but-b"),
        pytest.param("A is incorrect because of the AMA; so the answer is B.", "B", id="a-incorrect-so-b"),
        pytest.param("Not A, not C or D. -> B", "B", id="rejected-letters-then-arrow"),
        pytest.param("PSC goes with ulcerative colitis; AMA points to PBC.\n\nB", "B", id="lone-letter-closing"),
        pytest.param("PBC", "B", id="abbreviation-of-option"),
        pytest.param("Primary biliary cholangitis.", "B", id="option-text"),
        pytest.param("A. Primary biliary cholangitis", None, id="letter-and-text-disagree"),
        pytest.param("I think B.", "B", id="i-think"),
        pytest.param("PSC is first to consider; however, with AMA positive, PBC is the diagnosis.", "B", id="however"),
        pytest.param("E. Primary biliary cholangitis", None, id="letter-not-among-options"),
        pytest.param("Either PSC or PBC would fit; it depends on the cholangiogram.", None, id="hedge-by-text"),
        pytest.param(
            "So the answer is A. Actually, the AMA makes it B. Hmm, but the UC makes it A.", None, id="flip-flop"
        ),
    ],
)
def test_choice_reading_generalizes(answer: str, expected: str | None) -> None:
    assert mcq(answer) == expected


def test_the_article_a_is_not_option_a_and_aliases_name_options() -> None:
    anticoagulation = ("Aspirin", "Aspirin plus clopidogrel", "A direct oral anticoagulant (e.g., apixaban)")
    assert mcq("A DOAC such as apixaban is preferred over warfarin.", anticoagulation) == "C"
    assert mcq("Apixaban 5 mg twice daily.", anticoagulation) == "C"
    stemi = ("Thrombolysis", "Percutaneous coronary intervention", "Watchful waiting")
    assert mcq("Primary PCI within 90 minutes.", stemi) == "B"  # the option's initials
    stroke = ("Aspirin", "Alteplase", "Heparin")
    assert mcq("Give tPA now, within the window.", stroke, {"B": ("tPA", "rtPA")}) == "B"  # the canary's alias
    assert mcq("Give tPA now, within the window.", stroke) is None  # without it, not guessed
    vaccines = ("Tdap", "Influenza (inactivated)", "MMR (live vaccine)")
    assert mcq("Tdap and influenza are safe; the live vaccine - MMR - must be avoided. C", vaccines) == "C"


@pytest.mark.parametrize(
    ("answer", "labels", "expected"),
    [
        pytest.param("Sí, está contraindicada.", ("yes", "no", "maybe"), "yes", id="spanish-si"),
        pytest.param("Nein, Antibiotika helfen nicht.", ("yes", "no", "maybe"), "no", id="german-nein"),
        pytest.param("Peut-être : les données sont insuffisantes.", ("yes", "no", "maybe"), "maybe", id="french"),
        pytest.param("是。eGFR低于30时禁用。", ("yes", "no", "maybe"), "yes", id="chinese-shi"),
        pytest.param("Não. Não há evidência.", ("yes", "no", "maybe"), "no", id="portuguese-nao"),
        pytest.param("Hindi. Walang epekto.", ("yes", "no", "maybe"), "no", id="tagalog-hindi"),
        pytest.param("No doubt about it: yes.", ("yes", "no", "maybe"), "yes", id="no-doubt-idiom"),
        pytest.param("Not positive - repeat in 48 h.", ("positive", "negative"), "negative", id="binary-negation"),
        pytest.param("Not urgent - primary care.", ("emergent", "urgent", "non-urgent"), "non-urgent", id="not-urgent"),
        pytest.param("In pregnancy, yes. But for this patient, no.", ("yes", "no", "maybe"), "no", id="contrast"),
        pytest.param("Yes.\n\nWait, it depends. Maybe.", ("yes", "no", "maybe"), None, id="flip-flop"),
        pytest.param("No - wait, yes.", ("yes", "no", "maybe"), "yes", id="revised-final-statement"),
        pytest.param("Não sei.", ("yes", "no", "maybe"), None, id="i-dont-know-is-not-no"),
    ],
)
def test_label_reading_generalizes(answer: str, labels: tuple[str, ...], expected: str | None) -> None:
    assert read_label(answer, labels).value == expected


@pytest.mark.parametrize(
    ("answer", "unit", "expected"),
    [
        pytest.param("0.90 mL/s (54 mL/min)", "mL/min", 54.0, id="ml-per-s-then-asked-unit"),
        pytest.param("Creatinine clearance = 0.93 mL/s.", "mL/min", 55.8, id="ml-per-s-only"),
        pytest.param("2.35 mmol/L (9.4 mg/dL)", "mg/dL", 9.4, id="calcium-restated-in-asked-unit"),
        pytest.param("Corrected calcium = 2.30 mmol/L.", "mg/dL", 9.22, id="calcium-molar-mass"),
        pytest.param("The result is 5.5 mmol/L of glucose.", "mg/dL", 99.09, id="glucose-molar-mass"),
        pytest.param("171 lb (77.6 kg)", "kg", 77.56, id="pounds"),
        pytest.param("QTc = 0.49 s", "ms", 490.0, id="seconds"),
        pytest.param("Dose per administration: 1,25 g", "mg", 1250.0, id="decimal-comma-grams"),
        pytest.param("Total: 5,000 mL", "L", 5.0, id="thousands-millilitres"),
        pytest.param("ANC = 1.125 × 10^9/L", "cells/µL", 1125.0, id="scientific-per-litre"),
        pytest.param("WBC 7.2 x 10^3", "", 7200.0, id="scientific-x-ten"),
        pytest.param("Score: 4/9", "", 4.0, id="score-fraction"),
        pytest.param("Annual stroke risk is 4.8%, CHA2DS2-VASc score 4.", "", 4.0, id="percent-is-not-the-score"),
        pytest.param("Each dose = 900 mg (total 1,800 mg/day).", "mg", 900.0, id="daily-total-is-not-the-dose"),
        pytest.param("Weight-based: 80 units/kg bolus, i.e. 6400 units.", "units", 6400.0, id="per-kg-is-not-the-dose"),
        pytest.param("2 g IV over 2 hours", "mg", 2000.0, id="duration-is-not-the-dose"),
        pytest.param("2.000 mg (25 mg/kg × 80 kg)", "mg", 2000.0, id="european-thousands-dot"),
        pytest.param("126 mg/dL is the diabetes threshold.", "mmol/L", None, id="threshold-only"),
    ],
)
def test_numbers_are_read_with_their_units(answer: str, unit: str, expected: float | None) -> None:
    value = read_number(answer, unit).value
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, rel=0.005)


def test_a_canary_carries_its_unit_and_the_scorer_converts() -> None:
    crcl = Canary(
        id="c",
        messages=({"role": "user", "content": "CrCl?"},),
        references=("54",),
        scorer="numeric_tolerance",
        tolerance={"lower": 51.3, "upper": 56.7},
        unit="mL/min",
    )
    assert get_scorer("numeric_tolerance")(crcl, "0.90 mL/s").correct is True
    assert get_scorer("numeric_tolerance")(crcl, "0.5 mL/s").correct is False
    assert (
        get_scorer("numeric_tolerance")(replace(crcl, unit=None), "0.90 mL/s").correct is False
    )  # no unit: as written


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param("Do not use E11.65. Correct code: E11.9.", {"E11.9"}, id="do-not-use"),
        pytest.param("E11.65 (with hyperglycemia). Not E11.9.", {"E11.65"}, id="not-code"),
        pytest.param("K21.9; if esophagitis, K21.00.", {"K21.9"}, id="hypothesis"),
        pytest.param("M17.11 - right knee (M17.12 would be the left).", {"M17.11"}, id="would-be"),
        pytest.param("Maps to E10.1-; no coma, so E10.10.", {"E10.10"}, id="category-dash"),
        pytest.param("L20.9\n\nActually, L20.89 is more specific - use L20.89.", {"L20.89"}, id="revision"),
        pytest.param("G43.909 or G43.009", None, id="hedge-two-codes"),
        pytest.param("Either E11.65 or E11.9 depending on payer guidance.", None, id="either-depending"),
        pytest.param("N20.0 if in the kidney; N20.1 if ureteral.", None, id="only-conditional"),
    ],
)
def test_codes_read_are_the_committed_ones(answer: str, expected: set[str] | None) -> None:
    value = read_codes(answer).value
    assert (set(value) if value is not None else None) == expected


def test_a_hedge_between_two_codes_is_unparsed_not_partial_credit() -> None:
    coding = Canary(id="i", messages=({"role": "user", "content": "code"},), references=("G43.909",), scorer="set_f1")
    hedge = get_scorer("set_f1")(coding, "G43.909 or G43.009")
    assert hedge.value is None and hedge.parsed is False and hedge.correct is None


@pytest.mark.parametrize(
    ("scorer", "reference", "answer", "parsed"),
    [
        pytest.param(
            "numeric_tolerance",
            "69.3",
            "Let me compute. (140-28) x 68.1 gives 7627. The denominator is",
            False,
            id="cut-mid-working",
        ),
        pytest.param(
            "multiple_choice", "B", "The answer is B. The reason is that the AMA", True, id="committed-then-cut"
        ),
        pytest.param("multiple_choice", "B", "B", True, id="helm-one-token-answer"),
        pytest.param(
            "set_f1",
            "A41.51",
            "For E. coli, that's A41.51. Then the localized infection, N39.0. Septic shock adds",
            False,
            id="codes-cut",
        ),
        pytest.param(
            "yes_no_maybe", "yes", "The categories are: I nondiagnostic, II benign, yes", False, id="label-cut"
        ),
    ],
)
def test_a_reply_cut_off_by_the_token_limit_is_read_only_for_a_committed_answer(
    scorer: str, reference: str, answer: str, parsed: bool
) -> None:
    case = Canary(
        id="t",
        messages=({"role": "user", "content": "q"},),
        references=(reference,),
        scorer=scorer,
        choices=MCQ_OPTIONS if scorer == "multiple_choice" else None,
    )
    cut = score_reply(case, answer, finish_reason="length")
    assert cut.parsed is parsed
    if not parsed:
        assert cut.correct is None and "token limit" in cut.reason
    assert score_reply(case, answer, finish_reason="stop") == get_scorer(scorer)(case, answer)


def _blind_benchmark() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "reading_blind.py"
    spec = importlib.util.spec_from_file_location("reading_blind", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_blind_development_set_is_read_as_its_clinicians_read_it() -> None:
    """596 answers hand-labelled by someone who saw neither the code nor the corpus (the
    development set: the readers were tuned on it, so this is a regression test, not a measure)."""
    result = _blind_benchmark().measure(Path(__file__).parent / "corpus" / "blind_dev.jsonl")
    figures = result["scorers"]
    assert sum(f["items"] for f in figures.values()) >= 590
    for kind, f in figures.items():
        assert f["false_correct"] == 0, (kind, [m for m in result["misread"] if m["false_correct"]])
        assert f["read_as_truth"] / f["items"] >= 0.97, (kind, [m["id"] for m in result["misread"]])


def test_the_hard_development_set_is_read_without_a_wrong_answer_scored_right() -> None:
    """538 harder answers (D2: retractions, conditionals, letters contradicting their option text,
    tables, other scripts) hand-labelled by another person who saw neither code nor data. The readers
    were tuned on it afterwards, so this is a regression floor, not a measure: never a wrong or
    unreadable answer scored correct, and no scorer below the share read after tuning."""
    result = _blind_benchmark().measure(Path(__file__).parent / "corpus" / "blind_dev2.jsonl")
    figures = result["scorers"]
    assert sum(f["items"] for f in figures.values()) == 538
    floors = {"mcq": 0.94, "number": 0.95, "label": 0.97, "icd10": 0.99}
    for kind, f in figures.items():
        assert f["false_correct"] == 0, (kind, [m for m in result["misread"] if m["false_correct"]])
        assert f["read_as_truth"] / f["items"] >= floors[kind], (kind, [m["id"] for m in result["misread"]])


SEPSIS = ("Escherichia coli", "Staphylococcus aureus", "Klebsiella pneumoniae", "Pseudomonas aeruginosa")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The answer is C, Staphylococcus aureus.", None),  # the letter's sentence names B's text
        ("Staphylococcus aureus (option A)", None),
        ("The answer is B, Staphylococcus aureus.", "B"),
        ("Answer: B\n\nOn reflection none of the options is correct.", None),  # disowned after committing
        ("Câu trả lời là B hoặc C.", None),  # a hedge in Vietnamese
        ("Likely E. coli. But if the line were infected, the answer would be B.", "A"),
        ("So not A. Not C either. Or maybe A after all... I'll go with A.", "A"),  # chosen after its negation
        ("Answer:\n- [ ] A\n- [x] B\n- [ ] C", "B"),
        ("```\nanswer = 'D'\n```", "D"),
        ("Ответ: Г", "D"),
        ("Ответ: В", None),  # Cyrillic В is the third letter but looks like B: no answer
        ("The answer is A. Hmm, actually no - I'll revise to D.", "D"),  # the revision is itself a commitment
        ("Gram-negative rod, lactose fermenter, hospital-acquired → K. pneumoniae.", "C"),
        ("Options:\nA. Escherichia coli\nB. Staphylococcus aureus\nC. Klebsiella pneumoniae\n\nThe answer is C.", "C"),
        ("Options:\nA. Escherichia coli\nB. Staphylococcus aureus\nC. Klebsiella pneumoniae", None),
    ],
)
def test_choices_read_by_the_answer_structure(answer: str, expected: str | None) -> None:
    assert read_choice(answer, SEPSIS).value == expected


@pytest.mark.parametrize(
    ("answer", "labels", "expected"),
    [
        ("Yes if the INR is above 3, no if it is in range.", ("yes", "no", "maybe"), None),
        ("Yes, if given slowly.", ("yes", "no", "maybe"), "yes"),
        ("Yes - in older guidance; current guidance differs, so no.", ("yes", "no", "maybe"), "no"),
        ("Ác tính.", ("benign", "malignant"), "malignant"),
        ("Доброкачественное.", ("benign", "malignant"), "benign"),
    ],
)
def test_labels_read_by_the_answer_structure(answer: str, labels: tuple[str, ...], expected: str | None) -> None:
    assert read_label(answer, labels).value == expected


@pytest.mark.parametrize(
    ("answer", "unit", "expected"),
    [
        ("Maintenance: 4 x 20 = 80 mL/h. Actually, using 4-2-1 for 30 kg it is 70 mL/h.", "mL/h", 70.0),
        ("Maintenance 80 mL/h. Wait, let me re-check the weight.", "mL/h", None),  # revised, no new number
        ("75 kg → 6 × 75 = 450 mg", "mg", 450.0),  # a cued factor yields to its equation's result
        ("Mỗi liều 500 mg, ngày 3 lần.", "mg", 500.0),  # a count is not a dose
        ("BMI = 31.2 kg/m² (obesity starts at 30).", "kg/m²", 31.2),
        ("**Score: 2** - 30-day mortality about 7%.", "", 2.0),
        ("In SI: 1.5 + 0.02 × 20 = 1.90 mmol/L.\n\nAnswer: 1.90", "mg/dL", 7.6),  # restated with its unit
        ("Fridericia: 400/∛0.8 = 431 ms.\n\nFinal: 431 ms", "ms", 431.0),
    ],
)
def test_numbers_read_by_the_answer_structure(answer: str, unit: str, expected: float | None) -> None:
    value = read_number(answer, unit=unit, context="corrected calcium" if unit == "mg/dL" else "").value
    assert value == expected if expected is None else math.isclose(float(value), expected, rel_tol=0.01)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("K85.90 (if alcohol-induced, it would be K85.20).", {"K85.90"}),
        ("J18.9. (J18.1 is lobar; J15.9 is bacterial - neither applies.)", {"J18.9"}),
        ("J02.0 and H66.9- (laterality needed).", None),  # a code left incomplete
        ("Type 1 DKA maps to E10.1-; no coma, so E10.10.", {"E10.10"}),  # the placeholder completed
    ],
)
def test_codes_read_by_the_answer_structure(answer: str, expected: set[str] | None) -> None:
    value = read_codes(answer).value
    assert (set(value) if value is not None else None) == expected
