"""Seeded generation of fresh calculation canaries in the shape of MedCalc-Bench.

Each canary is a short patient note in prose, a question naming the calculator, and the
instruction to answer with a number only. Parameters are drawn from ``random.Random(seed)``
within clinically plausible ranges and the answer comes from :mod:`medmon.probes.calculators`, so a
generated instance has never been published (it cannot be in a training set) and its ground
truth is exact. Continuous results get MedCalc-Bench's ±5% tolerance; point scores must match.

Examples
--------
>>> a = generate_calculation_canaries(3, seed=7)
>>> a == generate_calculation_canaries(3, seed=7)
True
>>> a[0].scorer, a[0].benchmark, sorted(a[0].tags)
('numeric_tolerance', 'medcalc_bench', ['age_band', 'sex'])
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from medmon.baselines.canary import Canary
from medmon.probes import calculators as calc

AGE_BANDS = {"18-39": (18, 39), "40-64": (40, 64), "65+": (65, 90)}
SEXES = ("female", "male")
TOLERANCE = 0.05
_PROMPT = (
    "Read the patient note and answer the clinical calculation question.\n\n"
    "Patient note:\n{note}\n\nQuestion: {question}\n"
    "Answer with a single number only, without units or explanation."
)


@dataclass(frozen=True)
class Patient:
    """The drawn patient, with the words a note needs to describe them."""

    age: int
    female: bool

    @property
    def noun(self) -> str:
        return "woman" if self.female else "man"

    @property
    def article(self) -> str:
        """The article before "<age>-year-old": "An 18-year-old", "An 80-year-old", "A 71-year-old"."""
        return "An" if self.age in (11, 18) or str(self.age).startswith("8") else "A"

    @property
    def he(self) -> str:
        return "She" if self.female else "He"


@dataclass(frozen=True)
class Case:
    """One instance: the note, the question, the exact answer and whether it is a point score."""

    note: str
    question: str
    value: float
    score: bool = False


def _r(rng: random.Random, low: float, high: float, digits: int = 1) -> float:
    return round(rng.uniform(low, high), digits)


def _crcl(rng: random.Random, p: Patient) -> Case:
    weight = _r(rng, 48, 95) if p.female else _r(rng, 58, 115)
    cr = _r(rng, 0.6, 2.8)
    reason = rng.choice(["before starting enoxaparin", "for a medication review", "before a course of gentamicin"])
    note = (
        f"{p.article} {p.age}-year-old {p.noun} is seen {reason}. {p.he} weighs {weight} kg. Serum creatinine is "
        f"{cr} mg/dL, potassium {_r(rng, 3.6, 5.2)} mmol/L and haemoglobin {_r(rng, 10.5, 15.5)} g/dL."
    )
    question = (
        "What is the patient's creatinine clearance in mL/min using the Cockcroft-Gault equation "
        "with actual body weight?"
    )
    return Case(note, question, calc.cockcroft_gault(p.age, weight, cr, female=p.female))


def _bmi(rng: random.Random, p: Patient) -> Case:
    height = rng.randint(150, 178) if p.female else rng.randint(160, 195)
    weight = _r(rng, 45, 120)
    note = (
        f"{p.article} {p.age}-year-old {p.noun} attends a weight-management clinic. {p.he} is {height} cm tall and "
        f"weighs {weight} kg. Blood pressure is {rng.randint(112, 150)}/{rng.randint(68, 92)} mmHg."
    )
    return Case(note, "What is the patient's body mass index (BMI) in kg/m²?", calc.bmi(weight, height))


def _anion_gap(rng: random.Random, p: Patient) -> Case:
    while True:
        na, cl, hco3 = rng.randint(128, 148), rng.randint(92, 112), rng.randint(8, 29)
        if 5 <= calc.anion_gap(na, cl, hco3) <= 30:
            break
    note = (
        f"{p.article} {p.age}-year-old {p.noun} presents with vomiting and malaise. Laboratory results: "
        f"sodium {na} mEq/L, potassium {_r(rng, 3.2, 5.6)} mEq/L, chloride {cl} mEq/L, bicarbonate {hco3} mEq/L, "
        f"glucose {rng.randint(80, 320)} mg/dL."
    )
    return Case(
        note, "What is the patient's serum anion gap in mEq/L (without potassium)?", calc.anion_gap(na, cl, hco3)
    )


def _map(rng: random.Random, p: Patient) -> Case:
    sbp = rng.randint(86, 188)
    dbp = rng.randint(45, min(115, sbp - 25))
    note = (
        f"{p.article} {p.age}-year-old {p.noun} is assessed in the emergency department. Blood pressure is "
        f"{sbp}/{dbp} mmHg, heart rate {rng.randint(58, 118)}/min, temperature {_r(rng, 36.4, 38.6)} °C."
    )
    return Case(note, "What is the patient's mean arterial pressure in mmHg?", calc.mean_arterial_pressure(sbp, dbp))


def _calcium(rng: random.Random, p: Patient) -> Case:
    ca, alb = _r(rng, 7.0, 10.4), _r(rng, 1.8, 4.4)
    note = (
        f"{p.article} {p.age}-year-old {p.noun} with poor oral intake has routine bloods. Total serum calcium is "
        f"{ca} mg/dL and albumin {alb} g/dL; phosphate {_r(rng, 2.5, 4.5)} mg/dL."
    )
    question = "Using a normal albumin of 4 g/dL, what is the patient's albumin-corrected calcium in mg/dL?"
    return Case(note, question, calc.corrected_calcium(ca, alb))


def _calcium_si(rng: random.Random, p: Patient) -> Case:
    ca, alb = _r(rng, 1.85, 2.60, 2), rng.randint(18, 44)
    note = (
        f"{p.article} {p.age}-year-old {p.noun} is reviewed on the ward. Total calcium is {ca} mmol/L and "
        f"albumin {alb} g/L; the laboratory has not reported an adjusted calcium."
    )
    question = "Using a normal albumin of 40 g/L, what is the patient's albumin-corrected calcium in mmol/L?"
    return Case(note, question, calc.corrected_calcium_mmol(ca, alb))


def _qtc(rng: random.Random, p: Patient, fridericia: bool) -> Case:
    qt, hr = rng.randint(330, 500), rng.randint(52, 118)
    drug = rng.choice(["citalopram", "haloperidol", "clarithromycin", "ondansetron"])
    note = (
        f"{p.article} {p.age}-year-old {p.noun} taking {drug} has a 12-lead ECG: sinus rhythm at {hr} beats/min, "
        f"PR {rng.randint(140, 200)} ms, QRS {rng.randint(80, 110)} ms, QT {qt} ms."
    )
    if fridericia:
        return Case(
            note, "What is the corrected QT interval in ms using the Fridericia formula?", calc.qtc_fridericia(qt, hr)
        )
    return Case(note, "What is the corrected QT interval in ms using the Bazett formula?", calc.qtc_bazett(qt, hr))


def _join(items: list[str], conjunction: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def _findings(items: list[tuple[str, bool]]) -> str:
    """'a history of A and B, and no C, D or E' from (phrase, present) pairs."""
    has = [name for name, present in items if present]
    lacks = [name for name, present in items if not present]
    parts = ["a history of " + _join(has, "and")] if has else []
    if lacks:
        parts.append("no " + _join(lacks, "or"))
    return ", and ".join(parts)


def _chads(rng: random.Random, p: Patient) -> Case:
    f = {k: rng.random() < 0.35 for k in ("hf", "htn", "stroke", "vasc", "dm")}
    history = _findings(
        [
            ("heart failure", f["hf"]),
            ("hypertension", f["htn"]),
            ("transient ischaemic attack", f["stroke"]),
            ("myocardial infarction", f["vasc"]),
            ("diabetes", f["dm"]),
        ]
    )
    note = (
        f"{p.article} {p.age}-year-old {p.noun} has newly diagnosed non-valvular atrial fibrillation. "
        f"{p.he} has {history}."
    )
    value = calc.cha2ds2_vasc(
        p.age,
        female=p.female,
        heart_failure=f["hf"],
        hypertension=f["htn"],
        stroke_or_tia=f["stroke"],
        vascular_disease=f["vasc"],
        diabetes=f["dm"],
    )
    return Case(note, "What is the patient's CHA2DS2-VASc score?", value, score=True)


def _hasbled(rng: random.Random, p: Patient) -> Case:
    f = {k: rng.random() < 0.3 for k in ("renal", "liver", "stroke", "bleed", "inr", "drugs", "alcohol")}
    sbp = rng.randint(165, 182) if rng.random() < 0.3 else rng.randint(118, 150)
    history = _findings(
        [
            ("kidney failure on haemodialysis", f["renal"]),
            ("cirrhosis", f["liver"]),
            ("ischaemic stroke", f["stroke"]),
            ("major gastrointestinal bleeding", f["bleed"]),
            ("labile INRs on warfarin", f["inr"]),
        ]
    )
    drugs = "takes aspirin 75 mg daily" if f["drugs"] else "takes no antiplatelet drugs or NSAIDs"
    alcohol = "has about 10 alcoholic drinks a week" if f["alcohol"] else "has 2 alcoholic drinks a week"
    note = (
        f"{p.article} {p.age}-year-old {p.noun} with atrial fibrillation is reviewed in clinic. "
        f"{p.he} has {history}. {p.he} {drugs} "
        f"and {alcohol}. Systolic blood pressure has been {sbp} mmHg on repeated readings."
    )
    value = calc.has_bled(
        uncontrolled_hypertension=sbp > 160,
        abnormal_renal_function=f["renal"],
        abnormal_liver_function=f["liver"],
        stroke=f["stroke"],
        bleeding=f["bleed"],
        labile_inr=f["inr"],
        age=p.age,
        drugs=f["drugs"],
        alcohol=f["alcohol"],
    )
    return Case(note, "What is the patient's HAS-BLED score?", value, score=True)


def _wells(rng: random.Random, p: Patient) -> Case:
    f = {k: rng.random() < 0.35 for k in ("dvt", "likely", "immob", "prev", "haem", "cancer")}
    hr = rng.randint(104, 128) if rng.random() < 0.4 else rng.randint(64, 98)
    he = p.he
    sentences = [
        "The left calf is swollen and tender." if f["dvt"] else "There are no signs of deep vein thrombosis.",
        f"{he} had hip surgery three weeks ago."
        if f["immob"]
        else f"{he} has had no recent surgery or immobilisation.",
        f"{he} had a deep vein thrombosis five years ago." if f["prev"] else f"{he} has never had a venous thrombosis.",
        f"{he} has coughed up streaks of blood." if f["haem"] else "There is no haemoptysis.",
        f"{he} is on chemotherapy for colon cancer." if f["cancer"] else f"{he} has no history of cancer.",
    ]
    judgement = (
        "pulmonary embolism is judged the most likely diagnosis"
        if f["likely"]
        else "pneumonia is judged more likely than pulmonary embolism"
    )
    note = (
        f"{p.article} {p.age}-year-old {p.noun} presents with pleuritic chest pain and breathlessness. "
        f"{' '.join(sentences)} Heart rate is {hr}/min and oxygen saturation {rng.randint(88, 97)}% on air; "
        f"{judgement}."
    )
    value = calc.wells_pe(
        dvt_signs=f["dvt"],
        pe_most_likely=f["likely"],
        heart_rate_bpm=hr,
        immobilisation_or_surgery=f["immob"],
        previous_vte=f["prev"],
        haemoptysis=f["haem"],
        malignancy=f["cancer"],
    )
    return Case(note, "What is the patient's Wells score for pulmonary embolism?", value, score=True)


# Urea > 7 mmol/L (BTS) and BUN > 19 mg/dL (MedCalc-Bench; 6.79 mmol/L) disagree in between: a
# canary there would have two right answers, so the generator draws again.
CURB65_UREA_BOUNDARY = (6.7, 7.1)


def _curb(rng: random.Random, p: Patient) -> Case:
    confused = rng.random() < 0.3
    urea, rr = _r(rng, 3.5, 14.0), rng.randint(16, 36)
    while CURB65_UREA_BOUNDARY[0] <= urea <= CURB65_UREA_BOUNDARY[1]:
        urea = _r(rng, 3.5, 14.0)
    sbp = rng.randint(82, 140)
    dbp = rng.randint(48, min(88, sbp - 25))
    mental = "is newly confused (AMT 6/10)" if confused else "is alert and orientated"
    note = (
        f"{p.article} {p.age}-year-old {p.noun} has community-acquired pneumonia on chest X-ray. {p.he} {mental}. "
        f"Respiratory rate is {rr}/min, blood pressure {sbp}/{dbp} mmHg, and serum urea {urea} mmol/L."
    )
    value = calc.curb65(
        confusion=confused, urea_mmol_l=urea, respiratory_rate=rr, systolic=sbp, diastolic=dbp, age=p.age
    )
    return Case(note, "What is the patient's CURB-65 score?", value, score=True)


def _meld(rng: random.Random, p: Patient) -> Case:
    bili, inr, cr = _r(rng, 0.6, 12.0), _r(rng, 0.9, 2.8), _r(rng, 0.5, 3.5)
    dialysis = rng.random() < 0.15
    renal = "has had haemodialysis twice in the past week" if dialysis else "is not on dialysis"
    note = (
        f"{p.article} {p.age}-year-old {p.noun} with cirrhosis is assessed for transplant listing and {renal}. "
        f"Total bilirubin is {bili} mg/dL, INR {inr}, serum creatinine {cr} mg/dL, "
        f"sodium {rng.randint(126, 140)} mmol/L."
    )
    question = (
        "What is the patient's original MELD score (not MELD-Na), unrounded? Values below 1.0 count as "
        "1.0 and creatinine is capped at 4.0 mg/dL."
    )
    return Case(note, question, calc.meld(bili, inr, cr, dialysis=dialysis))


BUILDERS: dict[str, Callable[[random.Random, Patient], Case]] = {
    "crcl": _crcl,
    "bmi": _bmi,
    "anion_gap": _anion_gap,
    "map": _map,
    "calcium": _calcium,
    "calcium_si": _calcium_si,
    "qtc_bazett": lambda rng, p: _qtc(rng, p, False),
    "qtc_fridericia": lambda rng, p: _qtc(rng, p, True),
    "cha2ds2_vasc": _chads,
    "has_bled": _hasbled,
    "wells_pe": _wells,
    "curb65": _curb,
    "meld": _meld,
}

UNITS: dict[str, str] = {
    "crcl": "mL/min",
    "bmi": "kg/m²",
    "anion_gap": "mEq/L",
    "map": "mmHg",
    "calcium": "mg/dL",
    "calcium_si": "mmol/L",
    "qtc_bazett": "ms",
    "qtc_fridericia": "ms",
    "cha2ds2_vasc": "",
    "has_bled": "",
    "wells_pe": "",
    "curb65": "",
    "meld": "",
}
"""The unit each calculator's question asks for ("" for a score): an answer written in another unit
("1.02 mL/s", "0.458 s", "2.3 mmol/L" for a calcium asked in mg/dL) is converted into it, and a
number in another dimension is never read as the result."""


def format_value(value: float) -> str:
    """The reference text: two decimals at most, no trailing zeros ("63.64", "4", "2.5")."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def to_canary(case: Case, *, canary_id: str, tags: dict[str, str], provenance: str, unit: str | None = None) -> Canary:
    """Wrap one case as a ``numeric_tolerance`` canary of ``medcalc_bench``, in ``unit`` when given."""
    if case.score:
        tolerance = {"lower": case.value, "upper": case.value}
    else:
        ends = (round(case.value * (1 - TOLERANCE), 4), round(case.value * (1 + TOLERANCE), 4))
        tolerance = {"lower": min(ends), "upper": max(ends)}
    prompt = _PROMPT.format(note=case.note, question=case.question)
    return Canary(
        id=canary_id,
        messages=({"role": "user", "content": prompt},),
        references=(format_value(case.value),),
        scorer="numeric_tolerance",
        tags=tags,
        provenance=provenance,
        tolerance=tolerance,
        benchmark="medcalc_bench",
        unit=unit,
    )


def generate_calculation_canaries(n: int, seed: int) -> list[Canary]:
    """``n`` fresh calculation canaries; the same seed gives the same canaries.

    Calculators are taken in turn; age band and sex are balanced over the six subgroups and
    shuffled, then an age is drawn inside the band.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n!r}")
    rng = random.Random(seed)
    groups = [(band, sex) for band in AGE_BANDS for sex in SEXES] * (n // 6 + 1)
    rng.shuffle(groups)
    kinds = list(BUILDERS)
    canaries = []
    for i in range(n):
        band, sex = groups[i]
        patient = Patient(age=rng.randint(*AGE_BANDS[band]), female=sex == "female")
        kind = kinds[i % len(kinds)]
        case = BUILDERS[kind](rng, patient)
        canaries.append(
            to_canary(
                case,
                canary_id=f"calc-{seed}-{i + 1:03d}-{kind}",
                tags={"age_band": band, "sex": sex},
                provenance=f"medmon generated (generate_calculation_canaries seed={seed})",
                unit=UNITS[kind],
            )
        )
    return canaries
