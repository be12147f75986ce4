"""Errors of the baselines package; import errors name the file and the key.

Tree::

    BaselineError
    ├── CanaryFormatError        a canary file line that breaks the canary JSONL format
    └── SourceError              bad evidence at ``file`` / ``key``
        ├── SourceFileMissing    a file the source needs is absent (key: the file's role)
        ├── MalformedJSON        a file is not valid JSON (key: ``line L col C``)
        ├── HelmFormatError      a HELM file lacks a key or has the wrong shape
        ├── NoMainMetric         a run has no metric medmon can use as its main metric
        ├── UnknownMetric        a metric name HELM did not write (or does not write for that benchmark)
        ├── ManualFormatError    a manual CSV/YAML row that cannot be used (key: ``row N field F``)
        └── NotHelmOutput        a path that is no HELM output tree, suite or run directory
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from medmon.errors import MedmonError
from medmon.files import UnsafeInput, json_line, read_text


class BaselineError(MedmonError):
    """Baseline evidence that cannot be imported; the message names the file and key."""


class CanaryFormatError(BaselineError):
    """A canary file line that does not follow the canary JSONL format."""


class SourceError(BaselineError):
    """Evidence that cannot be imported, located by ``file`` and ``key``."""

    def __init__(self, file: Path | str, key: str, message: str, *, line: int | None = None) -> None:
        self.file = str(file)
        self.key = key
        self.detail = message
        self.line = line
        where = f"{self.file}: line {line}" if line is not None else self.file
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


class SourceFileMissing(SourceError):
    """A file the source needs does not exist."""


class MalformedJSON(SourceError):
    """A JSON file that does not parse; ``key`` is ``line L col C``."""


class HelmFormatError(SourceError):
    """A HELM file without an expected key, or with a value of the wrong shape.

    ``at`` is the JSON key path of the value (``[3, "mean"]``); the file is then read again to
    name the line, which costs nothing until something is wrong.
    """

    def __init__(self, file: Path | str, key: str, message: str, *, at: Sequence[str | int] | None = None) -> None:
        line = None
        if at is not None:
            try:
                line = json_line(read_text(Path(file)), at)
            except (OSError, UnsafeInput):
                line = None
        super().__init__(file, key, message, line=line)


class NoMainMetric(SourceError):
    """A run that wrote no metric medmon can use as its main metric."""


class UnknownMetric(SourceError):
    """A metric name HELM did not write for the run (or does not write for the benchmark)."""


class ManualFormatError(SourceError):
    """A row of a manual baseline file that cannot be used."""


class NotHelmOutput(SourceError):
    """A path that is not a ``benchmark_output`` tree, a ``runs/<suite>`` dir or a run dir."""
