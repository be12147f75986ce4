"""Units of numeric answers, converted by pint: a result written in another unit is still the result.

A numeric canary carries the unit its reference is in (``"mL/min"``, ``"mg/dL"``, ``"kg"``). A
reply may state its result in another one ("0.90 mL/s", "2.35 mmol/L", "171 lb", "0.49 s",
"1.25 g"); :func:`convert` turns it into the canary's unit with pint, and says when it cannot:
a unit of another dimension (``80 units/kg`` when the canary asks for units, a daily total in
``mg/day`` when it asks for a dose in ``mg``) is not the result at all.

Mass concentrations and amount concentrations (mg/dL and mmol/L) convert through the analyte's
molar mass, which :func:`analyte` finds in the question or the answer (glucose, creatinine,
cholesterol, calcium, ...): pint does the arithmetic, the molar mass is chemistry.

Examples
--------
>>> convert(0.90, "mL/s", "mL/min")
54.0
>>> round(convert(2.35, "mmol/L", "mg/dL", analyte="calcium"), 2)
9.42
>>> convert(80, "units/kg", "units") is None
True
"""

from __future__ import annotations

import re
from functools import lru_cache

import pint

__all__ = ["MOLAR_MASS", "analyte", "compatible", "convert", "unit_key"]

_REGISTRY: pint.UnitRegistry[float] = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
# Drug units (insulin, heparin) are counted, not measured: a dimension of their own, so that
# "units/kg" is not "units".
_REGISTRY.define("drug_unit = [drug_unit] = IU")

# g/mol, for mg/dL <-> mmol/L (and µmol/L). Triglycerides as triolein, urea nitrogen (BUN) as N2.
MOLAR_MASS: dict[str, float] = {
    "glucose": 180.156,
    "creatinine": 113.118,
    "cholesterol": 386.654,
    "triglycerides": 885.7,
    "calcium": 40.078,
    "magnesium": 24.305,
    "phosphate": 30.974,
    "urea nitrogen": 28.014,
    "urea": 60.056,
    "bilirubin": 584.66,
    "uric acid": 168.11,
    "lactate": 90.08,
}
_ANALYTE = re.compile(
    r"\b(glucose|glyc[a-z]*|sugar|creatinine|cholesterol|ldl|hdl|triglycerides?|calcium|ca2?\+?|magnesium|"
    r"phosph[a-z]*|bun|urea\s+nitrogen|urea|bilirubin|uric\s+acid|urate|lactate)\b",
    re.I,
)
_ANALYTE_NAME = {
    "glyc": "glucose",
    "sugar": "glucose",
    "ldl": "cholesterol",
    "hdl": "cholesterol",
    "trigl": "triglycerides",
    "ca": "calcium",
    "phosph": "phosphate",
    "bun": "urea nitrogen",
    "urea n": "urea nitrogen",
    "urate": "uric acid",
}

# How clinicians write units that pint spells otherwise (spellings, not conversions).
_SPELLING = {
    "units": "IU",
    "unit": "IU",
    "u": "IU",
    "iu": "IU",
    "points": "",
    "point": "",
    "pts": "",
    "pt": "",
    "score": "",
    "mcg": "microgram",
    "µg": "microgram",
    "μg": "microgram",
    "ug": "microgram",
    "cc": "mL",
    "bpm": "1/min",
    "beats/min": "1/min",
    "breaths/min": "1/min",
    "yr": "year",
    "yrs": "year",
    "years": "year",
    "wk": "week",
    "wks": "week",
    "weeks": "week",
    "hrs": "hour",
    "hr": "hour",
    "lbs": "lb",
    "ore": "hour",
    "ora": "hour",
    "horas": "hour",
    "hora": "hour",
    "heures": "hour",
    "heure": "hour",
    "stunden": "hour",
    "stunde": "hour",
    "std": "hour",
    "godz": "hour",
    "godzin": "hour",
    "часов": "hour",
    "час": "hour",
    "giờ": "hour",
    "ui": "IU",
    "UI": "IU",
    "E": "IU",
    "cells": "1",
    "cell": "1",
    "células": "1",
    "sec": "s",
    "secs": "s",
    "msec": "ms",
    "l": "L",
    "ml": "mL",
    "dl": "dL",
    "mg/dl": "mg/dL",
    "g/dl": "g/dL",
    "mmol/l": "mmol/L",
    "umol/l": "umol/L",
    "µmol/l": "umol/L",
    "μmol/l": "umol/L",
    "µmol/L": "umol/L",
    "μmol/L": "umol/L",
    "ml/min": "mL/min",
    "ml/s": "mL/s",
    "ml/h": "mL/h",
    "ml/hr": "mL/h",
    "ml/kg": "mL/kg",
    "meq/l": "mmol/L",
    "meq/L": "mmol/L",
    "mEq/L": "mmol/L",
    "mEq": "mmol",
    "meq": "mmol",
    "mmhg": "mmHg",
    "kg/m2": "kg/m^2",
    "kg/m²": "kg/m^2",
    "m2": "m^2",
    "m²": "m^2",
}


def unit_key(text: str) -> str:
    """A unit as pint reads it: clinicians' spellings mapped, powers and "per" normalised."""
    text = text.strip().rstrip(".,;:)")
    text = re.sub(r"/\s*1[.,]73\s*m(?:\^?2|²)?", "", text)  # per 1.73 m² of body surface: same unit
    text = re.sub(r"(?<=[A-Za-z])([23])$", r"^\1", text)  # cm2, m3
    if text.startswith("/"):
        text = "1" + text  # "× 10^9/L"
    if text in _SPELLING:
        return _SPELLING[text]
    lowered = text.lower()
    if lowered in _SPELLING:
        return _SPELLING[lowered]
    parts = re.split(r"(/)", text)
    return "".join(_SPELLING.get(p, _SPELLING.get(p.lower(), p)) if p != "/" else p for p in parts)


@lru_cache(maxsize=1024)
def _units(text: str) -> pint.Unit | None:
    key = unit_key(text)
    if key in ("", "%"):
        return None
    try:
        return _REGISTRY.parse_units(key.replace("µ", "u").replace("μ", "u"))
    except (pint.errors.PintError, ValueError, TypeError, AttributeError, AssertionError, SyntaxError):
        return None


# How many times or doses ("ngày 2 lần", "twice: 2 times", "3 tablets"): a count of something,
# never a quantity in the asked unit.
_COUNTS = frozenset(
    "times dose doses tablet tablets tabs capsule capsules lần liều veces vez fois mal volte razy раза раз "
    "次 回 번 kez keer beses".split()
)


def _kind(text: str) -> str:
    """'' (a score), '%' (a share), 'count' (times, doses), 'unit' (pint knows it) or '?' (unknown)."""
    key = unit_key(text)
    if key == "":
        return ""
    if key.lower() in _COUNTS:
        return "count"
    if key == "%":
        return "%"
    return "unit" if _units(text) is not None else "?"


@lru_cache(maxsize=1024)
def _factor(source: str, target: str, analyte_name: str | None) -> float | None:
    src, dst = _units(source), _units(target)
    if src is None or dst is None:
        return None
    quantity = _REGISTRY.Quantity(1.0, src)
    try:
        return float(quantity.to(dst).magnitude)
    except pint.errors.DimensionalityError:
        pass
    if analyte_name is None or analyte_name not in MOLAR_MASS:
        return None
    molar = _REGISTRY.Quantity(MOLAR_MASS[analyte_name], "g/mol")
    for candidate in (quantity / molar, quantity * molar):
        try:
            return float(candidate.to(dst).magnitude)
        except pint.errors.DimensionalityError:
            continue
    return None


def convert(value: float, source: str, target: str, *, analyte: str | None = None) -> float | None:
    """``value`` in ``source`` units expressed in ``target`` units, or None when they do not convert.

    An empty or unknown ``source`` is taken to be in ``target`` (a bare number is in the unit the
    question asked for); a count or score (``""``, "points") and a share (``%``) convert only to
    themselves.
    """
    if not source.strip() or unit_key(source) == unit_key(target):
        return value
    src, dst = _kind(source), _kind(target)
    if src == "?":
        return value
    if src != "unit" or dst != "unit":
        return value if src == dst or dst == "?" else None
    factor = _factor(source, target, analyte)
    if factor is None:
        return None
    if not 1e-4 <= abs(factor) <= 1e4 and _mass(source) and _mass(target):
        return None  # nobody writes a dose in mg as kg: a weight beside a dose is not the dose
    return value * factor


def _mass(text: str) -> bool:
    unit = _units(text)
    return unit is not None and unit.dimensionality == _REGISTRY.kilogram.dimensionality


def compatible(source: str, target: str, *, analyte: str | None = None) -> bool:
    """True when a number written in ``source`` can be the result asked for in ``target``."""
    return convert(1.0, source, target, analyte=analyte) is not None


def analyte(*texts: str) -> str | None:
    """The analyte a question or answer measures (for mg/dL <-> mmol/L), or None."""
    for text in texts:
        m = _ANALYTE.search(text or "")
        if m:
            word = m.group(1).lower()
            for prefix, name in _ANALYTE_NAME.items():
                if word.startswith(prefix):
                    return name
            return "triglycerides" if word.startswith("trigl") else re.sub(r"\s+", " ", word)
    return None
