"""Benchmark: how much PHI each redactor removes, on a labelled synthetic set (not real patients).

The set is generated here, seeded: clinical sentences in the ways chat models and clinicians
write, each carrying one or more identifiers of a known kind (names in several casings and
positions, MRNs, SSNs, dates of birth in many formats, phone numbers, e-mail and street
addresses in US and European forms, ages over 89, partial ids). An identifier counts as
caught when no 3-or-more-character token of it survives in the output (a half-masked date or a
surname left behind is a miss). Also reported: how many PHI-free clinical sentences each
redactor altered (false alarms that would damage stored answers).

This is a measure on synthetic text, not a de-identification certificate: real notes contain
forms no generator imagines.

Usage::

    .venv/bin/python benchmarks/redaction_recall.py [--n 2000] [--seed 7] [--presidio]
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable

from medmon.probes.redaction import load_redactor

FIRST = ["John", "Mary", "Ana María", "Wei", "Oluwaseun", "Siobhán", "Jean-Luc", "Fatima", "Dmitri", "Aiko"]
LAST = ["Smith", "García-López", "O'Connor", "Nguyen", "Okafor", "Müller", "Kowalski", "Haddad", "Tanaka", "Brown"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
LONG_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
STREETS = ["Oak Tree Lane", "Main Street", "Baker Street", "Elm Avenue", "Harbour Road"]
CLINICAL = [
    "Creatinine clearance is 78.5 mL/min; adjust the dose of enoxaparin accordingly.",
    "The answer is B. Warfarin's effect rises with fluconazole.",
    "BP 142/88 mmHg, HR 96, SpO2 94% on room air; start 500 mg amoxicillin three times daily.",
    "A 67-year-old man with INR 2.5-3.5 target and CHA2DS2-VASc of 4.",
    "Give 0.5 mg/kg IV over 10 minutes, then 1,000,000 units daily for 14 days.",
    "The patient has type 2 diabetes; HbA1c 8.1% and eGFR 52.",
    "Grade 3 of 4 toxicity; ECOG 1; 2 of 3 criteria met on day 5.",
    "**Assessment:** likely community-acquired pneumonia (CURB-65 = 2).",
]


def _name(rng: random.Random) -> str:
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    return rng.choice([name, name.lower(), name.upper()])


def _date(rng: random.Random) -> str:
    y, m, d = rng.randint(1925, 2005), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice(
        [
            f"{m:02d}/{d:02d}/{y}",
            f"{y}-{m:02d}-{d:02d}",
            f"{y}/{m:02d}/{d:02d}",
            f"{d}-{MONTHS[m - 1]}-{y}",
            f"{LONG_MONTHS[m - 1]} {d}, {y}",
            f"{d} {LONG_MONTHS[m - 1]} {y}",
            f"{d}.{m}.{y}",
        ]
    )


GENERATORS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "name (labelled)": lambda r: (
        v := _name(r),
        r.choice(["Patient: {}", "patient: {}", "Name: {}", "Patient name: {}"]).format(v),
    ),
    "name (titled)": lambda r: (v := f"{r.choice(LAST)}", f"{r.choice(['Mr.', 'Mrs.', 'Ms.', 'Dr.', 'Sr.'])} {v}"),
    "name (running text)": lambda r: (
        v := f"{r.choice(FIRST)} {r.choice(LAST)}",
        r.choice(
            ["The patient {} was seen today", "Spoke with {} about the results", "patient named {} called"]
        ).format(v),
    ),
    "mrn": lambda r: (
        v := f"{r.randint(10**6, 10**9)}",
        r.choice(["MRN {}", "MRN: {}", "medical record number {}", "chart no. {}"]).format(v),
    ),
    "ssn": lambda r: (
        v := r.choice("- .").join([str(r.randint(100, 899)), str(r.randint(10, 99)), str(r.randint(1000, 9999))]),
        r.choice(["SSN {}", "social security number {}", "SSN: {}"]).format(v),
    ),
    "date of birth": lambda r: (
        v := _date(r),
        r.choice(["DOB {}", "DOB: {}", "born {}", "date of birth {}"]).format(v),
    ),
    "date": lambda r: (v := _date(r), f"admitted on {v} with chest pain"),
    "phone": lambda r: (
        v := r.choice(
            [
                f"({r.randint(200, 999)}) {r.randint(200, 999)}-{r.randint(1000, 9999)}",
                f"{r.randint(200, 999)}-{r.randint(200, 999)}-{r.randint(1000, 9999)}",
                f"+44 20 {r.randint(1000, 9999)} {r.randint(1000, 9999)}",
            ]
        ),
        f"call {v}",
    ),
    "email": lambda r: (v := f"{r.choice(FIRST).split()[0].lower()}.{r.randint(1, 99)}@example.org", f"email {v}"),
    "address": lambda r: (
        v := r.choice(
            [
                f"{r.randint(1, 9999)} {r.choice(STREETS)}",
                f"Hauptstraße {r.randint(1, 99)}",
                f"{r.randint(1, 99)} rue de la Paix",
            ]
        ),
        f"lives at {v}",
    ),
    "age over 89": lambda r: (
        v := str(r.randint(90, 104)),
        r.choice(["a {}-year-old woman", "aged {}", "{} yo man"]).format(v),
    ),
    "partial id": lambda r: (
        v := str(r.randint(1000, 9999)),
        r.choice(["MRN ending in {}", "SSN ***-**-{}", "last four digits of the SSN are {}"]).format(v),
    ),
}


def leaked(value: str, output: str) -> bool:
    output = re.sub(r"\[[A-Z0-9 +]+\]|<[A-Z_]+>", " ", output)  # the redactors' own labels ("[AGE 90+]")
    tokens = [t for t in re.split(r"[\s,./()\-+:]+", value) if len(t) >= 3 or t.isdigit() and len(t) >= 2]
    return any(re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", output, re.IGNORECASE) for t in tokens)


def measure(name: str, redactor: Callable[[str], str], n: int, seed: int) -> None:
    rng = random.Random(seed)
    caught: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    for _ in range(n):
        kind = rng.choice(sorted(GENERATORS))
        value, phrase = GENERATORS[kind](rng)
        sentence = f"{rng.choice(CLINICAL)} {phrase}. {rng.choice(CLINICAL)}"
        caught[kind][1] += 1
        caught[kind][0] += not leaked(value, redactor(sentence))
    altered = sum(redactor(c) != c for c in CLINICAL)
    seconds = time.perf_counter() - started
    total = sum(c for c, _ in caught.values()), sum(t for _, t in caught.values())
    print(
        f"\n{name}: recall {total[0] / total[1]:.1%} ({total[0]}/{total[1]} identifiers removed), "
        f"{altered}/{len(CLINICAL)} PHI-free clinical sentences altered, {n / seconds:,.0f} sentences/s"
    )
    for kind in sorted(caught):
        ok, all_ = caught[kind]
        print(f"  {kind:<20} {ok / all_:6.1%}  ({ok}/{all_})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--presidio", action="store_true", help="also measure the presidio redactor")
    args = parser.parse_args()
    measure("builtin", load_redactor("builtin"), args.n, args.seed)
    if args.presidio:
        measure("presidio (builtin + Presidio pattern recognisers)", load_redactor("presidio"), args.n, args.seed)


if __name__ == "__main__":
    main()
