"""Medical calculators with exact ground truth, the answer key of the calculation canaries.

Each calculator is a small pure function of the values a patient note states, in the units the
note uses. Continuous results are returned unrounded (rounding belongs to whoever prints them);
point scores are returned as ``int`` (or ``float`` when the score has half points, as Wells).
Invalid inputs (a non-positive weight, a heart rate of zero) raise ``ValueError`` naming the
argument, because a canary built from them would have no meaningful answer.

Examples
--------
>>> round(cockcroft_gault(age=70, weight_kg=72, creatinine_mg_dl=1.1, female=False), 1)
63.6
>>> cha2ds2_vasc(age=76, female=True, hypertension=True)
4
"""

from __future__ import annotations

import math


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


def bmi(weight_kg: float, height_cm: float) -> float:
    """Body mass index in kg/m².

    BMI = weight (kg) / height (m)².

    References
    ----------
    World Health Organization. Obesity: preventing and managing the global epidemic.
    WHO Technical Report Series 894, 2000.
    """
    _positive("weight_kg", weight_kg)
    _positive("height_cm", height_cm)
    return weight_kg / (height_cm / 100) ** 2


def cockcroft_gault(age: float, weight_kg: float, creatinine_mg_dl: float, *, female: bool) -> float:
    """Creatinine clearance in mL/min by the Cockcroft-Gault equation, with actual body weight.

    CrCl = (140 − age) × weight (kg) / (72 × serum creatinine (mg/dL)), × 0.85 for women.

    References
    ----------
    Cockcroft DW, Gault MH. Prediction of creatinine clearance from serum creatinine.
    Nephron 1976;16(1):31-41.
    """
    _positive("weight_kg", weight_kg)
    _positive("creatinine_mg_dl", creatinine_mg_dl)
    clearance = (140 - age) * weight_kg / (72 * creatinine_mg_dl)
    return clearance * 0.85 if female else clearance


def anion_gap(sodium: float, chloride: float, bicarbonate: float) -> float:
    """Serum anion gap in mEq/L (potassium not included).

    AG = Na⁺ − (Cl⁻ + HCO₃⁻).

    References
    ----------
    Kraut JA, Madias NE. Serum anion gap: its uses and limitations in clinical medicine.
    Clin J Am Soc Nephrol 2007;2(1):162-174.
    """
    return sodium - (chloride + bicarbonate)


def mean_arterial_pressure(systolic: float, diastolic: float) -> float:
    """Mean arterial pressure in mmHg from a cuff reading.

    MAP = (SBP + 2 × DBP) / 3, i.e. DBP + one third of the pulse pressure.

    References
    ----------
    Sesso HD et al. Systolic and diastolic blood pressure, pulse pressure, and mean arterial
    pressure as predictors of cardiovascular disease risk in men. Hypertension 2000;36(5):801-807.
    """
    if diastolic > systolic:
        raise ValueError(f"diastolic ({diastolic}) must not exceed systolic ({systolic})")
    return (systolic + 2 * diastolic) / 3


def corrected_calcium(calcium_mg_dl: float, albumin_g_dl: float, *, normal_albumin_g_dl: float = 4.0) -> float:
    """Albumin-corrected total calcium in mg/dL (conventional units).

    Corrected Ca (mg/dL) = Ca + 0.8 × (4.0 − albumin (g/dL)).
    The SI form of the same rule is :func:`corrected_calcium_mmol`.

    References
    ----------
    Payne RB, Little AJ, Williams RB, Milner JR. Interpretation of serum calcium in patients
    with abnormal serum proteins. Br Med J 1973;4(5893):643-646.
    """
    _positive("albumin_g_dl", albumin_g_dl)
    return calcium_mg_dl + 0.8 * (normal_albumin_g_dl - albumin_g_dl)


def corrected_calcium_mmol(calcium_mmol_l: float, albumin_g_l: float, *, normal_albumin_g_l: float = 40.0) -> float:
    """Albumin-corrected total calcium in mmol/L (SI units).

    Corrected Ca (mmol/L) = Ca + 0.02 × (40 − albumin (g/L)); the conventional-unit rule
    (0.8 mg/dL per g/dL) converted with 1 mmol/L Ca = 4.008 mg/dL and 1 g/dL = 10 g/L.

    References
    ----------
    Payne RB et al. Br Med J 1973;4(5893):643-646 (see :func:`corrected_calcium`).
    """
    _positive("albumin_g_l", albumin_g_l)
    return calcium_mmol_l + 0.02 * (normal_albumin_g_l - albumin_g_l)


def qtc_bazett(qt_ms: float, heart_rate_bpm: float) -> float:
    """Heart-rate-corrected QT interval in ms by Bazett's formula.

    QTc = QT / √RR, with RR = 60 / heart rate, in seconds.

    References
    ----------
    Bazett HC. An analysis of the time-relations of electrocardiograms. Heart 1920;7:353-370.
    """
    _positive("heart_rate_bpm", heart_rate_bpm)
    return qt_ms / math.sqrt(60 / heart_rate_bpm)


def qtc_fridericia(qt_ms: float, heart_rate_bpm: float) -> float:
    """Heart-rate-corrected QT interval in ms by Fridericia's formula.

    QTc = QT / ∛RR, with RR = 60 / heart rate, in seconds.

    References
    ----------
    Fridericia LS. Die Systolendauer im Elektrokardiogramm bei normalen Menschen und bei
    Herzkranken. Acta Med Scand 1920;53:469-486.
    """
    _positive("heart_rate_bpm", heart_rate_bpm)
    return qt_ms / (60 / heart_rate_bpm) ** (1 / 3)


def cha2ds2_vasc(
    age: float,
    *,
    female: bool,
    heart_failure: bool = False,
    hypertension: bool = False,
    stroke_or_tia: bool = False,
    vascular_disease: bool = False,
    diabetes: bool = False,
) -> int:
    """CHA₂DS₂-VASc stroke risk score in atrial fibrillation (0-9).

    Congestive heart failure 1, Hypertension 1, Age ≥ 75 2, Diabetes 1, prior Stroke/TIA/
    thromboembolism 2, Vascular disease (MI, PAD, aortic plaque) 1, Age 65-74 1, Sex category
    female 1.

    References
    ----------
    Lip GYH, Nieuwlaat R, Pisters R, Lane DA, Crijns HJGM. Refining clinical risk stratification
    for predicting stroke and thromboembolism in atrial fibrillation using a novel risk
    factor-based approach. Chest 2010;137(2):263-272.
    """
    score = 2 if age >= 75 else 1 if age >= 65 else 0
    score += 2 * stroke_or_tia
    score += heart_failure + hypertension + vascular_disease + diabetes + female
    return int(score)


def has_bled(
    *,
    uncontrolled_hypertension: bool = False,
    abnormal_renal_function: bool = False,
    abnormal_liver_function: bool = False,
    stroke: bool = False,
    bleeding: bool = False,
    labile_inr: bool = False,
    age: float = 0,
    drugs: bool = False,
    alcohol: bool = False,
) -> int:
    """HAS-BLED major bleeding risk score on anticoagulation (0-9).

    One point each: Hypertension (uncontrolled, systolic > 160 mmHg), Abnormal renal function,
    Abnormal liver function, Stroke, Bleeding history or predisposition, Labile INR, Elderly
    (age > 65), Drugs (antiplatelets or NSAIDs), alcohol (≥ 8 drinks a week).

    References
    ----------
    Pisters R, Lane DA, Nieuwlaat R, de Vos CB, Crijns HJGM, Lip GYH. A novel user-friendly
    score (HAS-BLED) to assess 1-year risk of major bleeding in patients with atrial
    fibrillation. Chest 2010;138(5):1093-1100.
    """
    flags = (
        uncontrolled_hypertension,
        abnormal_renal_function,
        abnormal_liver_function,
        stroke,
        bleeding,
        labile_inr,
        age > 65,
        drugs,
        alcohol,
    )
    return sum(1 for flag in flags if flag)


def wells_pe(
    *,
    dvt_signs: bool = False,
    pe_most_likely: bool = False,
    heart_rate_bpm: float = 0,
    immobilisation_or_surgery: bool = False,
    previous_vte: bool = False,
    haemoptysis: bool = False,
    malignancy: bool = False,
) -> float:
    """Wells score for pulmonary embolism (0-12.5).

    Clinical signs of DVT 3, PE the most likely diagnosis 3, heart rate > 100/min 1.5,
    immobilisation ≥ 3 days or surgery in the previous 4 weeks 1.5, previous DVT or PE 1.5,
    haemoptysis 1, active malignancy 1.

    References
    ----------
    Wells PS et al. Derivation of a simple clinical model to categorize patients probability of
    pulmonary embolism. Thromb Haemost 2000;83(3):416-420.
    """
    return (
        3.0 * dvt_signs
        + 3.0 * pe_most_likely
        + 1.5 * (heart_rate_bpm > 100)
        + 1.5 * immobilisation_or_surgery
        + 1.5 * previous_vte
        + 1.0 * haemoptysis
        + 1.0 * malignancy
    )


def curb65(
    *,
    confusion: bool = False,
    urea_mmol_l: float = 0,
    respiratory_rate: float = 0,
    systolic: float = 120,
    diastolic: float = 80,
    age: float = 0,
) -> int:
    """CURB-65 severity score for community-acquired pneumonia (0-5).

    One point each: Confusion, Urea > 7 mmol/L (BUN > 19 mg/dL), Respiratory rate ≥ 30/min,
    Blood pressure systolic < 90 or diastolic ≤ 60 mmHg, age ≥ 65.

    References
    ----------
    Lim WS et al. Defining community acquired pneumonia severity on presentation to hospital:
    an international derivation and validation study. Thorax 2003;58(5):377-382.
    """
    flags = (confusion, urea_mmol_l > 7, respiratory_rate >= 30, systolic < 90 or diastolic <= 60, age >= 65)
    return sum(1 for flag in flags if flag)


def meld(bilirubin_mg_dl: float, inr: float, creatinine_mg_dl: float, *, dialysis: bool = False) -> float:
    """Original (pre-sodium) MELD score, unrounded.

    MELD = 3.78 × ln(bilirubin mg/dL) + 11.2 × ln(INR) + 9.57 × ln(creatinine mg/dL) + 6.43,
    with UNOS bounds: any value below 1.0 is set to 1.0, creatinine is capped at 4.0 mg/dL, and
    dialysis twice in the past week (or 24 h of CVVHD) sets creatinine to 4.0. UNOS reports the
    score rounded to an integer and capped at 40; this function leaves both to the caller.

    References
    ----------
    Kamath PS et al. A model to predict survival in patients with end-stage liver disease.
    Hepatology 2001;33(2):464-470.
    """
    for name, value in (("bilirubin_mg_dl", bilirubin_mg_dl), ("inr", inr), ("creatinine_mg_dl", creatinine_mg_dl)):
        _positive(name, value)
    creatinine = 4.0 if dialysis else min(max(creatinine_mg_dl, 1.0), 4.0)
    return (
        3.78 * math.log(max(bilirubin_mg_dl, 1.0)) + 11.2 * math.log(max(inr, 1.0)) + 9.57 * math.log(creatinine) + 6.43
    )
