"""Worked examples for the calculators, each checked by hand in the comments."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from medmon.probes import calculators as calc


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # 70 kg / (1.75 m)^2 = 70 / 3.0625 = 22.857
        pytest.param(calc.bmi(70, 175), 22.857142857, id="bmi"),
        # (140 - 70) * 72 / (72 * 1.1) = 70 / 1.1 = 63.636
        pytest.param(calc.cockcroft_gault(70, 72, 1.1, female=False), 63.636363636, id="crcl-male"),
        # (140 - 60) * 60 / (72 * 0.8) = 4800 / 57.6 = 83.333; * 0.85 = 70.833
        pytest.param(calc.cockcroft_gault(60, 60, 0.8, female=True), 70.833333333, id="crcl-female-0.85"),
        # 140 - (104 + 24) = 12
        pytest.param(calc.anion_gap(140, 104, 24), 12.0, id="anion-gap"),
        # (120 + 2 * 80) / 3 = 280 / 3 = 93.333
        pytest.param(calc.mean_arterial_pressure(120, 80), 93.333333333, id="map"),
        # 8.0 + 0.8 * (4.0 - 2.0) = 9.6 mg/dL
        pytest.param(calc.corrected_calcium(8.0, 2.0), 9.6, id="calcium-mg-dl"),
        # 2.10 + 0.02 * (40 - 30) = 2.30 mmol/L
        pytest.param(calc.corrected_calcium_mmol(2.10, 30), 2.30, id="calcium-mmol-l"),
        # RR = 60 / 60 = 1 s, so QTc = QT
        pytest.param(calc.qtc_bazett(400, 60), 400.0, id="bazett-hr-60"),
        # RR = 60 / 75 = 0.8 s; sqrt(0.8) = 0.894427; 400 / 0.894427 = 447.214
        pytest.param(calc.qtc_bazett(400, 75), 447.213595, id="bazett-hr-75"),
        # cbrt(0.8) = 0.928318; 400 / 0.928318 = 430.887
        pytest.param(calc.qtc_fridericia(400, 75), 430.886938, id="fridericia-hr-75"),
        # 3.78 ln 2 + 11.2 ln 1.5 + 9.57 ln 1.8 + 6.43
        #   = 3.78 * 0.693147 + 11.2 * 0.405465 + 9.57 * 0.587787 + 6.43
        #   = 2.620096 + 4.541208 + 5.625121 + 6.43 = 19.216
        pytest.param(calc.meld(2.0, 1.5, 1.8), 19.216423936, id="meld"),
        # every value below 1 counts as 1 and ln 1 = 0, leaving the constant
        pytest.param(calc.meld(0.5, 0.9, 0.6), 6.43, id="meld-floor-1"),
        # creatinine 5.2 capped at 4: 9.57 ln 4 + 6.43 = 9.57 * 1.386294 + 6.43 = 19.697
        pytest.param(calc.meld(1.0, 1.0, 5.2), 19.696837035, id="meld-creatinine-cap-4"),
        # dialysis sets creatinine to 4 whatever was measured
        pytest.param(calc.meld(1.0, 1.0, 1.0, dialysis=True), 19.696837035, id="meld-dialysis"),
    ],
)
def test_continuous_worked_examples(value: float, expected: float) -> None:
    assert math.isclose(value, expected, rel_tol=1e-8)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # age >= 75 (2) + female (1) + hypertension (1) = 4
        pytest.param(calc.cha2ds2_vasc(76, female=True, hypertension=True), 4, id="chads-76F-htn"),
        # age 65-74 (1) + diabetes (1) + stroke/TIA (2) = 4
        pytest.param(calc.cha2ds2_vasc(70, female=False, diabetes=True, stroke_or_tia=True), 4, id="chads-70M"),
        pytest.param(calc.cha2ds2_vasc(64, female=False), 0, id="chads-64M-none"),
        pytest.param(calc.cha2ds2_vasc(65, female=False), 1, id="chads-age-65-boundary"),
        # every item: 2 + 2 + 1 (CHF) + 1 (HTN) + 1 (vascular) + 1 (DM) + 1 (female) = 9
        pytest.param(
            calc.cha2ds2_vasc(
                80,
                female=True,
                heart_failure=True,
                hypertension=True,
                stroke_or_tia=True,
                vascular_disease=True,
                diabetes=True,
            ),
            9,
            id="chads-max-9",
        ),
        # elderly (70 > 65) + drugs + labile INR = 3
        pytest.param(calc.has_bled(age=70, drugs=True, labile_inr=True), 3, id="hasbled-3"),
        pytest.param(calc.has_bled(age=65), 0, id="hasbled-age-65-not-elderly"),
        # heart rate 110 (1.5) + previous VTE (1.5) + PE most likely (3) = 6
        pytest.param(calc.wells_pe(heart_rate_bpm=110, previous_vte=True, pe_most_likely=True), 6.0, id="wells-6"),
        pytest.param(calc.wells_pe(heart_rate_bpm=100), 0.0, id="wells-hr-100-not-tachycardic"),
        # confusion + urea 8 > 7 + RR 30 + diastolic 60 <= 60 + age 70 = 5
        pytest.param(
            calc.curb65(confusion=True, urea_mmol_l=8, respiratory_rate=30, systolic=100, diastolic=60, age=70),
            5,
            id="curb65-5",
        ),
        # urea exactly 7, RR 29, BP 90/61 and age 64 are all just under their thresholds
        pytest.param(
            calc.curb65(urea_mmol_l=7, respiratory_rate=29, systolic=90, diastolic=61, age=64),
            0,
            id="curb65-boundaries",
        ),
    ],
)
def test_point_scores(value: float, expected: float) -> None:
    assert value == expected


def test_point_scores_are_ints() -> None:
    assert isinstance(calc.cha2ds2_vasc(70, female=True), int)
    assert isinstance(calc.has_bled(age=70), int)
    assert isinstance(calc.curb65(age=70), int)


def test_calcium_conventions_agree() -> None:
    # 8.0 mg/dL = 8.0 / 4.008 mmol/L and 2.0 g/dL = 20 g/L: the two rules give the same
    # correction up to rounding of 0.8 mg/dL per g/dL = 0.0200 mmol/L per g/L.
    si = calc.corrected_calcium_mmol(8.0 / 4.008, 20.0)
    conventional = calc.corrected_calcium(8.0, 2.0)
    assert math.isclose(si * 4.008, conventional, rel_tol=0.01)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        pytest.param(lambda: calc.bmi(0, 170), "weight_kg", id="bmi-weight"),
        pytest.param(lambda: calc.bmi(70, -1), "height_cm", id="bmi-height"),
        pytest.param(lambda: calc.cockcroft_gault(50, 70, 0, female=False), "creatinine_mg_dl", id="crcl-cr"),
        pytest.param(lambda: calc.qtc_bazett(400, 0), "heart_rate_bpm", id="bazett-hr"),
        pytest.param(lambda: calc.meld(1.0, 0, 1.0), "inr", id="meld-inr"),
        pytest.param(lambda: calc.mean_arterial_pressure(80, 120), "diastolic", id="map-inverted"),
        pytest.param(lambda: calc.corrected_calcium(9.0, 0), "albumin_g_dl", id="calcium-albumin"),
    ],
)
def test_invalid_inputs_name_the_argument(call: Callable[[], object], argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        call()
