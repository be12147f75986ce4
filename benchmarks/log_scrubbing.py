"""Benchmark: what masking secrets in log lines costs per record.

Formats the same records through a ``logging.StreamHandler`` writing to an in-memory stream,
with and without :class:`medmon.scrub.SecretFilter`, as the service's handler is set up
(``setup_logging`` format), holding the secrets a plan with a jury and three routes refers to.
Records: a short line with arguments (httpx's request line), a long one (a 2 KB error body) and
one carrying a traceback (``exc_info``), mixed 8:1:1.

Usage::

    .venv/bin/python benchmarks/log_scrubbing.py [--records 50000] [--secrets 10]
"""

from __future__ import annotations

import argparse
import io
import logging
import time

from medmon.scrub import FORMAT, SecretFilter


def _records(n: int) -> list[logging.LogRecord]:
    try:
        raise RuntimeError("Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-live-0000'}}")
    except RuntimeError as exc:
        failure = (type(exc), exc, exc.__traceback__)
    body = "x" * 2000
    out = []
    for i in range(n):
        if i % 10 == 8:
            out.append(
                logging.LogRecord("medmon.client", logging.WARNING, __file__, 1, "endpoint said: %s", (body,), None)
            )
        elif i % 10 == 9:
            out.append(
                logging.LogRecord(
                    "medmon.service", logging.ERROR, __file__, 1, "probe of task %s failed", ("knowledge-qa",), failure
                )
            )
        else:
            out.append(
                logging.LogRecord(
                    "httpx",
                    logging.INFO,
                    __file__,
                    1,
                    'HTTP Request: %s %s "%s %d %s"',
                    ("POST", "http://127.0.0.1:8000/v1/chat/completions", "HTTP/1.1", 200, "OK"),
                    None,
                )
            )
    return out


def _time(records: list[logging.LogRecord], flt: SecretFilter | None) -> float:
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(logging.Formatter(FORMAT))
    if flt is not None:
        handler.addFilter(flt)
    started = time.perf_counter()
    for record in records:
        handler.handle(record)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--secrets", type=int, default=10, help="configured secret values held by the filter")
    args = parser.parse_args()
    secrets = [f"sk-live-{i:04d}-{'k' * 40}" for i in range(args.secrets)]
    plain = _time(_records(args.records), None)
    masked = _time(_records(args.records), SecretFilter(secrets))
    print(f"records: {args.records:,} (8:1:1 short / 2 KB body / traceback), secrets held: {args.secrets}")
    print(f"without the filter: {plain / args.records * 1e6:7.1f} us per record ({args.records / plain:,.0f}/s)")
    print(f"with the filter:    {masked / args.records * 1e6:7.1f} us per record ({args.records / masked:,.0f}/s)")
    print(f"added per record:   {(masked - plain) / args.records * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
