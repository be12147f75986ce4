"""Finding HELM runs on disk, reading their JSON files and fingerprinting them.

A path given to the importer is one of three things HELM writes (see ``helm-format.md`` §1):

* a run directory: it holds ``run_spec.json``;
* a suite directory, ``benchmark_output/runs/<suite>``: subdirectories holding ``run_spec.json``;
* a ``benchmark_output`` directory: it holds ``runs/<suite>/...``.

Run directory names carry commas and colons (``med_dialog,subset=healthcaremagic``); they are
never parsed. Everything about a run is read from its files.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from medmon.baselines.errors import HelmFormatError, MalformedJSON, NotHelmOutput, SourceFileMissing
from medmon.files import UnsafeInput, decode, loads_json, read_bytes

RUN_SPEC = "run_spec.json"
REQUIRED_RUN_FILES = ("run_spec.json", "stats.json", "per_instance_stats.json")
OPTIONAL_RUN_FILES = ("scenario.json", "scenario_state.json")


@dataclass(frozen=True)
class SuiteLocation:
    """A suite directory and the run directories in it, sorted by name."""

    suite: str
    path: Path
    runs: tuple[Path, ...]
    is_suite_dir: bool


def load_json(path: Path, *, role: str = "") -> Any:
    """Decode a JSON file; a missing or malformed file raises an error naming it.

    ``role`` describes what the file is for (e.g. ``"run statistics"``) in the missing-file
    message.
    """
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise SourceFileMissing(path, path.name, f"file missing{f' ({role})' if role else ''}") from None
    except OSError as exc:
        raise SourceFileMissing(path, path.name, f"cannot read: {exc.strerror}") from exc
    except UnsafeInput as exc:
        raise MalformedJSON(path, "<file>", exc.message) from None
    try:
        return orjson.loads(data)  # about 1.5x faster than json on HELM's files, the same values
    except orjson.JSONDecodeError:
        pass  # what orjson refuses but Python writes (NaN, Infinity, integers past 64 bits), or bad JSON
    try:
        # Strict but for NaN: HELM may write it; each value's reader checks finiteness.
        return loads_json(decode(data), allow_nan=True)
    except UnsafeInput as exc:
        where = (f"line {exc.line}" + (f" col {exc.column}" if exc.column else "")) if exc.line else "<file>"
        raise MalformedJSON(path, where, exc.message) from None


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_sources(files: dict[str, str]) -> str:
    """One SHA-256 over ``{relative path: sha256}``, independent of dict order.

    Examples
    --------
    >>> digest_sources({"b": "2", "a": "1"}) == digest_sources({"a": "1", "b": "2"})
    True
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\n".encode())
    return digest.hexdigest()


def _inside(run_dir: Path, path: Path) -> None:
    """Refuse a run file that is (or passes through) a link leading out of its run directory."""
    root = run_dir.resolve()
    if not path.resolve().is_relative_to(root):
        raise NotHelmOutput(
            path,
            path.name,
            f"a symbolic link leading outside the run directory {run_dir} (evidence must be the run's own files)",
        )


def run_source_files(run_dir: Path) -> dict[str, str]:
    """``{file name: sha256}`` of a run's evidence files (required ones must exist, inside the run)."""
    files: dict[str, str] = {}
    for name in REQUIRED_RUN_FILES + OPTIONAL_RUN_FILES:
        if (run_dir / name).exists():
            _inside(run_dir, run_dir / name)
    for name in REQUIRED_RUN_FILES:
        path = run_dir / name
        if not path.is_file():
            raise SourceFileMissing(path, name, "file missing (a HELM run needs " + ", ".join(REQUIRED_RUN_FILES) + ")")
        files[name] = sha256_file(path)
    for name in OPTIONAL_RUN_FILES:
        path = run_dir / name
        if path.is_file():
            files[name] = sha256_file(path)
    return files


def get_key(data: Any, dotted: str, file: Path, *, expected: type | tuple[type, ...] | None = None) -> Any:
    """``data[a][b]...`` for ``dotted = "a.b"``; a missing key or wrong type names file and key."""
    value = data
    parts = dotted.split(".")
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            raise HelmFormatError(file, dotted, "key missing", at=parts)
        value = value[part]
    if expected is not None and not isinstance(value, expected):
        names = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
        raise HelmFormatError(file, dotted, f"expected {names}, got {_json_type(value)}", at=parts)
    return value


def _json_type(value: Any) -> str:
    """The value's kind as the file spells it (``NaN`` is a float to Python, not a number to JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    return type(value).__name__


def _run_dirs(suite_dir: Path) -> tuple[Path, ...]:
    """The suite's run directories; one that is a link leading out of the suite is refused."""
    runs = tuple(sorted(p for p in suite_dir.iterdir() if p.is_dir() and (p / RUN_SPEC).is_file()))
    root = suite_dir.resolve()
    for run in runs:
        if not run.resolve().is_relative_to(root):
            raise NotHelmOutput(
                run,
                run.name,
                f"a symbolic link leading outside the suite {suite_dir} (evidence must be the suite's own runs)",
            )
    return runs


def _suite_name(suite_dir: Path) -> str:
    """HELM's own record of the suite name (``summary.json``), else the directory's name."""
    summary = suite_dir / "summary.json"
    if summary.is_file():
        data = load_json(summary)
        if isinstance(data, dict) and isinstance(data.get("suite"), str) and data["suite"]:
            return str(data["suite"])
    return suite_dir.name


def locate(path: Path, *, suite: str | None = None) -> SuiteLocation:
    """Find the runs under ``path`` (a run dir, a ``runs/<suite>`` dir or ``benchmark_output``).

    A ``benchmark_output`` tree with several suites needs ``suite`` to say which one.
    """
    path = path.expanduser()
    if not path.exists():
        raise SourceFileMissing(path, "path", "does not exist")
    if not path.is_dir():
        raise NotHelmOutput(
            path, "path", "not a directory (expected benchmark_output, runs/<suite> or a run directory)"
        )
    if (path / RUN_SPEC).is_file():
        return SuiteLocation(
            suite=suite or _suite_name(path.parent), path=path.parent, runs=(path,), is_suite_dir=False
        )
    runs_root = path / "runs"
    if runs_root.is_dir():
        suites = sorted(p for p in runs_root.iterdir() if p.is_dir() and _run_dirs(p))
        if suite is not None:
            chosen = [p for p in suites if p.name == suite]
            if not chosen:
                raise NotHelmOutput(
                    runs_root, "suite", f"no suite {suite!r}; found: {', '.join(p.name for p in suites) or 'none'}"
                )
            path = chosen[0]
        elif len(suites) == 1:
            path = suites[0]
        elif not suites:
            raise NotHelmOutput(runs_root, "runs", "no suite directories with runs")
        else:
            raise NotHelmOutput(
                runs_root, "suite", f"several suites; choose one with --suite: {', '.join(p.name for p in suites)}"
            )
    runs = _run_dirs(path)
    if not runs:
        raise NotHelmOutput(path, "path", f"no {RUN_SPEC} here or in any subdirectory, and no runs/ directory")
    return SuiteLocation(suite=suite or _suite_name(path), path=path, runs=runs, is_suite_dir=True)
