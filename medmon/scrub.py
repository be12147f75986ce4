"""Secrets masked out of text, and out of every log line the process writes.

A remote service can echo what it was sent (a 401 body quoting the API key), a library can log
the URL it connects to (a broker or database URL with its password) and a traceback can carry
any of these in an exception's message. Two kinds of masking apply to every text:

- **configured secrets**: the values of the variables the plan names (API keys, route URLs,
  signing secrets, routing keys, the traffic token), the storage URL's password and the
  dashboard's sign-in secrets, replaced wherever they appear (:func:`scrub_secrets`);
- **credential shapes**, whatever their value (:func:`mask_credentials`): ``Bearer`` tokens,
  ``Authorization``/``api-key`` header values, passwords in URLs (``scheme://user:***@host``)
  and key or token query parameters.

:class:`SecretFilter` applies both to each log record (its message with the arguments merged,
its traceback, its stack and its ``extra`` fields) before any handler formats it;
:func:`setup_logging` installs it on the root logger's handlers and on every handler already
attached to another logger (Streamlit's, Celery's task logger), and every medmon entry point
calls it. Handlers that a library adds later to a logger that does not propagate are not
covered unless :func:`install_filter` is called again (the Celery worker does so from Celery's
logging signals).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "SECRET_MASK",
    "SecretFilter",
    "install_filter",
    "mask_credentials",
    "mask_text",
    "scrub_secrets",
    "secret_filter",
    "setup_logging",
]

SECRET_MASK = "***"
_MIN_SECRET = 4  # shorter values would blank ordinary words; no real key is that short


def scrub_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***`` (longest first, so none is half-masked).

    Examples
    --------
    >>> scrub_secrets("401: invalid key sk-live-123", ["sk-live-123"])
    '401: invalid key ***'
    """
    for value in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(value, SECRET_MASK)
    return text


# Each pattern with the lower-case words one of which must be in a text for it to match: most
# log lines hold none, and a substring test costs far less than a regular expression.
_CREDENTIALS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # scheme://user:password@host (database, broker and proxy URLs)
    (("@",), re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)([^\s@/'\"]+)(?=@)")),
    # Authorization / Proxy-Authorization values: after their scheme word, or as a quoted header
    (
        ("authorization",),
        re.compile(
            r"(?i)(\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token|digest)\s+)"
            r"([^\s'\",;})\]]+)"
        ),
    ),
    (
        ("authorization",),
        re.compile(
            r"(?i)(['\"](?:proxy-)?authorization['\"]\s*[:=]\s*['\"])(?!(?:bearer|basic|token|digest)\s)([^'\"]+)"
        ),
    ),
    # api-key style headers and fields (Azure's api-key, x-api-key, api_key=...)
    (
        ("key", "secret", "token"),
        re.compile(
            r"(?i)(\b(?:x-)?(?:api[-_]?key|subscription-key|client[-_]secret|cookie[-_]secret|access[-_]token)"
            r"""['"]?\s*[:=]\s*['"]?)([^\s'",;})\]&]{6,})"""
        ),
    ),
    # a bearer token anywhere else
    (("bearer",), re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9\-._~+/]{8,}=*)")),
    # key, token, secret or signature query parameters
    (
        ("=",),
        re.compile(
            r"(?i)([?&](?:api[-_]?key|key|token|access_token|secret|sig|signature|password|code)=)"
            r"([^&\s#'\"]+)"
        ),
    ),
)


def mask_credentials(text: str) -> str:
    """``text`` with bearer tokens, authorization and api-key values and URL passwords masked.

    Examples
    --------
    >>> mask_credentials("redis://:hunter22@broker:6379/0")
    'redis://:***@broker:6379/0'
    >>> mask_credentials("{'Authorization': 'Bearer sk-abc123456789'}")
    "{'Authorization': 'Bearer ***'}"
    >>> mask_credentials("api-key: 0123456789abcdef")
    'api-key: ***'
    """
    lowered = text.lower()
    for words, pattern in _CREDENTIALS:
        if any(word in lowered for word in words):
            text = pattern.sub(lambda m: m.group(1) + SECRET_MASK, text)
    return text


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the configured ``secrets`` blanked, then every credential shape masked."""
    return mask_credentials(scrub_secrets(text, secrets))


# What every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))) | {"message", "asctime"}
# Variables whose names say they hold a secret, masked even before a plan is read.
_SECRET_NAME = re.compile(r"(?i)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|_KEY)$")


def _environment_secrets(environ: dict[str, str] | os._Environ[str]) -> set[str]:
    return {v for k, v in environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}


class SecretFilter(logging.Filter):
    """Masks secrets in each record before it is formatted; never drops a record.

    The message is formatted once (arguments merged) and masked; a traceback is formatted,
    masked and kept as ``exc_text`` with ``exc_info`` cleared, so no handler can render the raw
    exception again; ``extra`` values are masked (non-strings whose text holds a secret are
    replaced by their masked text).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: frozenset[str] = frozenset(s for s in secrets if s)

    def add(self, secrets: Iterable[str]) -> None:
        """Mask these values too (the plan's secrets, once it is read)."""
        self.secrets = self.secrets | {s for s in secrets if s}

    def mask(self, text: str) -> str:
        return mask_text(text, self.secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: keep both, masked
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = self.mask(message), ()
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        for name, value in list(vars(record).items()):
            if name in _STANDARD or value is None or isinstance(value, (bool, int, float)):
                continue
            text = value if isinstance(value, str) else str(value)
            masked = self.mask(text)
            if masked != text:
                setattr(record, name, masked)
        return True


_FILTER = SecretFilter()
_explicit_level: int | None = None
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def secret_filter() -> SecretFilter:
    """The process's one filter (every entry point adds its secrets to it)."""
    return _FILTER


def install_filter(logger: logging.Logger | None = None) -> None:
    """Put the filter on ``logger``'s handlers, or on every handler of every logger when None."""
    loggers = (
        [logger]
        if logger is not None
        else [logging.getLogger()]
        + [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    )
    for lg in loggers:
        for handler in lg.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)


def _level(value: str | int | None) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    level = logging.getLevelName(value.strip().upper())
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {value!r}; expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return level


def setup_logging(
    level: str | int | None = None,
    *,
    default: int = logging.WARNING,
    secrets: Iterable[str] = (),
    log_file: Path | None = None,
) -> int:
    """Log to stderr (and ``log_file``) with every secret masked; returns the level in force.

    ``level`` (or ``MEDMON_LOG_LEVEL``) is the operator's choice and wins over any later
    ``default`` (a command's own: INFO for the service, WARNING for one-off commands). Calling
    it again adds secrets and handlers' filters without adding a second handler.
    """
    global _explicit_level
    chosen = _level(level) or _level(os.environ.get("MEDMON_LOG_LEVEL"))
    if chosen is not None:
        _explicit_level = chosen
    _FILTER.add(_environment_secrets(os.environ) | set(secrets))
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
    if log_file is not None and not any(
        isinstance(h, logging.FileHandler) and Path(h.baseFilename) == log_file.resolve() for h in root.handlers
    ):
        file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(file_handler)
    effective = _explicit_level if _explicit_level is not None else default
    root.setLevel(effective)
    install_filter()
    return effective
