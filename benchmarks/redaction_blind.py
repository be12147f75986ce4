"""Benchmark: the redactor on a hand-written set of identifiers (a blind set, or any set in its format).

The file is JSONL, one object a line: ``id``, ``text``, ``identifiers`` (a list of
``{"value", "kind"}``, exact substrings of ``text`` that must be removed) and ``keep`` (substrings
that look like identifiers but are clinical content and must survive). An identifier counts as
removed when its value no longer appears in the redacted text; a ``keep`` substring counts as
destroyed when it no longer appears. Run it once on a blind set and report that first figure.

Usage::

    .venv/bin/python benchmarks/redaction_blind.py FILE [--redactor builtin|presidio|none|module:function]
        [--json] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from medmon.probes.redaction import load_redactor


def load(path: Path) -> list[dict[str, Any]]:
    """The set's lines, each checked: a bad line is named with its number and what is wrong."""
    rows = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise SystemExit(f"{path}:{n}: expected an object with a string 'text'")
        for ident in row.get("identifiers") or []:
            if not isinstance(ident, dict) or not isinstance(ident.get("value"), str) or "kind" not in ident:
                raise SystemExit(f"{path}:{n}: each identifier needs 'value' and 'kind'")
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--redactor", default="builtin")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--show-misses", action="store_true", help="print each line that keeps an identifier")
    args = parser.parse_args()
    if not args.file.is_file():
        print(f"{args.file}: no such file", file=sys.stderr)
        return 2
    rows = load(args.file)
    redact = load_redactor(args.redactor)
    per_kind: dict[str, list[bool]] = defaultdict(list)
    kept: list[bool] = []
    misses = []
    elapsed = 0.0
    for row in rows:
        start = time.perf_counter()
        out = redact(row["text"])
        elapsed += time.perf_counter() - start
        leaked = []
        for ident in row.get("identifiers") or []:
            removed = ident["value"] not in out
            per_kind[str(ident["kind"])].append(removed)
            if not removed:
                leaked.append(ident["value"])
        destroyed = [k for k in row.get("keep") or [] if k not in out]
        kept += [k in out for k in row.get("keep") or []]
        if leaked or destroyed:
            misses.append((row.get("id"), row["text"], out, leaked, destroyed))
    total = [ok for oks in per_kind.values() for ok in oks]
    figures = {
        "file": str(args.file),
        "redactor": args.redactor,
        "lines": len(rows),
        "identifiers": len(total),
        "recall": sum(total) / len(total) if total else None,
        "by_kind": {k: {"removed": sum(v), "of": len(v)} for k, v in sorted(per_kind.items())},
        "keep": len(kept),
        "over_redaction": (len(kept) - sum(kept)) / len(kept) if kept else None,
        "ms_per_text": 1000 * elapsed / len(rows) if rows else None,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"redactor {args.redactor} on {args.file}: {len(rows)} lines, {len(total)} identifiers")
        if total:
            print(f"recall: {sum(total)}/{len(total)} = {sum(total) / len(total):.1%} of identifiers removed")
        for kind, v in figures["by_kind"].items():
            print(f"  {kind:14} {v['removed']:4}/{v['of']:<4} {v['removed'] / v['of']:.0%}")
        if kept:
            print(
                f"over-redaction: {len(kept) - sum(kept)}/{len(kept)} = {figures['over_redaction']:.1%} of keep substrings destroyed"  # noqa: E501
            )
        print(f"time: {figures['ms_per_text']:.2f} ms per text")
    if args.show_misses:
        for rid, text, out, leaked, destroyed in misses:
            print(f"- {rid}: {text}\n  -> {out}\n  leaked {leaked} destroyed {destroyed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
