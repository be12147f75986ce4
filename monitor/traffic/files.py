"""Traffic exported to files: an OTLP/JSON export, or JSON Lines with one export per line.

The second is what the OpenTelemetry Collector's file exporter writes; the first is one
``ExportTraceServiceRequest`` as OTLP/JSON (``{"resourceSpans": [...]}``), optionally gzipped.
A line that is not an export is reported with its number and skipped; the others are stored.
Limits, as the receiver's: a file of at most ``MAX_FILE`` bytes, on disk and once un-gzipped
(inflation stops at the cap), and each export at most ``MAX_DECODED`` bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from pathlib import Path

from sqlalchemy.engine import Engine

from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.spans import JSON_TYPE, MAX_DECODED, DecodeFailure, decode, decompress, parse_export

MAX_FILE = 1024 * 1024 * 1024  # bytes of one traffic file, on disk and un-gzipped


@dataclass
class ImportResult:
    """What an import stored, refused and could not read (line number and reason)."""

    calls: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)


def _exports(path: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, export bytes)``; a whole-file export counts as line 1."""
    if path.stat().st_size > MAX_FILE:
        raise DecodeFailure(f"file over {MAX_FILE} bytes; split it")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = decompress(raw, "gzip", limit=MAX_FILE)
    text = raw.lstrip()
    if text.startswith(b"{") and b"\n{" not in text.rstrip():
        yield 1, text
        return
    for number, line in enumerate(raw.splitlines(), start=1):
        if line.strip():
            yield number, line


def import_file(
    engine: Engine, plan: Plan, path: Path, now: datetime, progress: Callable[[int], None] | None = None
) -> ImportResult:
    """Store every GenAI call in ``path`` as the receiver would (routed, priced, redacted, once each)."""
    ingestor = Ingestor.from_plan(plan)
    result = ImportResult()
    exports = _exports(path)
    try:
        first = next(exports, None)  # the size checks run here, before anything is stored
    except DecodeFailure as exc:
        result.bad_lines.append((0, f"{path}: {exc}"))
        return result
    for number, body in chain([first] if first else [], exports):
        try:
            if len(body) > MAX_DECODED:
                raise DecodeFailure(f"export over {MAX_DECODED} bytes")
            decoded = decode(parse_export(body, JSON_TYPE), now, ingestor.limits)
        except DecodeFailure as exc:
            result.bad_lines.append((number, str(exc)))
            continue
        result.calls += store_calls(engine, ingestor, decoded, now)
        result.refused += decoded.refused
        result.skipped += decoded.skipped
        if progress is not None:
            progress(len(body) + 1)
    return result
