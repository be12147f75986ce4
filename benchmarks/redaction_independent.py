"""Benchmark: the redactor's recall on identifiers nobody at medmon wrote.

The sentences are Microsoft Presidio's evaluation templates (presidio-research,
``presidio_evaluator/data_generator/raw_data/templates.txt``, MIT licence: the 43 whose slots
are names, addresses, phone numbers, e-mail addresses and birthdays, taken whole and unedited);
the values are the first 27 records of the same project's ``FakeNameGenerator.com_3000.csv``
(international names, street addresses, phone numbers in national formats, US-style birthdays).
Template *i* is filled with record *i* mod 27, so the set is fixed: 43 probes, 47 identifiers
(courtesy titles are filled in but not counted).
Neither was written with medmon's patterns in view. The first pass (21.3%) was measured before
any tuning; the patterns were then tuned on this set, so it is a development set now and its
figure an upper bound. ``benchmarks/redaction_blind.py`` scores a blind set.

An identifier counts as caught when no 3-or-more-character token of it survives (the criterion
of ``redaction_recall.py``).

Usage::

    .venv/bin/python benchmarks/redaction_independent.py [--redactor builtin|presidio] [--show-misses]
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from pathlib import Path

from medmon.probes.redaction import load_redactor

DATA = Path(__file__).parent / "data"
SLOT = re.compile(r"\[([A-Z_]+)\]")


def _value(kind: str, r: dict[str, str]) -> str:
    return {
        "PERSON": f"{r['GivenName']} {r['Surname']}",
        "FIRST_NAME": r["GivenName"],
        "LAST_NAME": r["Surname"],
        "TITLE": r["Title"],
        "ADDRESS": f"{r['StreetAddress']}, {r['ZipCode']} {r['City']}",
        "PHONE_NUMBER": r["TelephoneNumber"],
        "EMAIL_ADDRESS": r["EmailAddress"],
        "BIRTHDAY": r["Birthday"],
    }[kind]


def probes() -> list[tuple[str, list[tuple[str, str]]]]:
    """(sentence, [(kind, identifier)]) for each template, filled with its record."""
    with (DATA / "fakename_records.csv").open(encoding="utf-8") as fh:
        records = list(csv.DictReader(fh))
    out = []
    for i, template in enumerate((DATA / "presidio_templates.txt").read_text("utf-8").splitlines()):
        record = records[i % len(records)]
        found: list[tuple[str, str]] = []

        def fill(m: re.Match[str], record: dict[str, str] = record, found: list[tuple[str, str]] = found) -> str:
            value = _value(m.group(1), record)
            if m.group(1) != "TITLE":  # a courtesy title is not an identifier
                found.append((m.group(1), value))
            return value

        out.append((SLOT.sub(fill, template), found))
    return out


def caught(identifier: str, redacted: str) -> bool:
    tokens = [t for t in re.split(r"[\s,.;:()/\-@]+", identifier) if len(t) >= 3]
    return not any(t.lower() in redacted.lower() for t in tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redactor", default="builtin")
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    redact = load_redactor(args.redactor)
    per_kind: dict[str, list[bool]] = defaultdict(list)
    kept_any = 0
    misses = []
    sets = probes()
    for sentence, identifiers in sets:
        out = redact(sentence)
        flags = [caught(value, out) for _, value in identifiers]
        for (kind, _), ok in zip(identifiers, flags, strict=True):
            per_kind[kind].append(ok)
        if not all(flags):
            kept_any += 1
            misses.append((sentence, out))
    total = [ok for oks in per_kind.values() for ok in oks]
    print(f"redactor {args.redactor}: {len(sets)} probes, {len(total)} identifiers")
    print(f"recall: {sum(total) / len(total):.1%} of identifiers removed; {kept_any} of {len(sets)} probes keep one")
    for kind in sorted(per_kind):
        oks = per_kind[kind]
        print(f"  {kind.lower():14} {sum(oks):3}/{len(oks):<3} {sum(oks) / len(oks):.0%}")
    if args.show_misses:
        for sentence, out in misses:
            print(f"- {sentence}\n  -> {out}")


if __name__ == "__main__":
    main()
