"""Reading the files people hand to medmon (plans, canaries, HELM output) without trusting them.

Every reader here refuses, with the file and line, what would otherwise hang, exhaust memory or
end in a traceback: files over a size limit, bytes that are not UTF-8, YAML alias bombs, duplicate
keys, nesting deeper than any real file, integers too long to convert, and JSON's ``NaN`` and
``Infinity`` (not JSON, but Python's decoder accepts them). Errors never echo the offending value,
which for an alias bomb is the expansion itself.

Limits: a plan (or any YAML file) may be at most ``MAX_YAML_BYTES`` (1 MiB) and expand to at most
``MAX_YAML_NODES`` nodes; a canary or HELM JSON file at most ``MAX_DATA_BYTES`` (256 MiB); no file
may nest deeper than ``MAX_DEPTH`` (64) levels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

MAX_YAML_BYTES = 1 << 20
MAX_YAML_NODES = 100_000
MAX_DATA_BYTES = 256 << 20
MAX_DEPTH = 64

__all__ = [
    "MAX_DATA_BYTES",
    "MAX_DEPTH",
    "MAX_YAML_BYTES",
    "MAX_YAML_NODES",
    "UnsafeInput",
    "decode",
    "json_line",
    "load_yaml",
    "loads_json",
    "read_bytes",
    "read_text",
    "split_lines",
]


class UnsafeInput(ValueError):
    """A file refused before it is used; ``line`` and ``column`` are 1-based when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def read_bytes(path: Path, *, limit: int = MAX_DATA_BYTES) -> bytes:
    """The file's bytes; over ``limit`` is ``UnsafeInput``. ``OSError`` passes through."""
    size = path.stat().st_size
    if size > limit:
        raise UnsafeInput(f"file is {size:,} bytes; the limit is {limit:,}")
    return path.read_bytes()


def read_text(path: Path, *, limit: int = MAX_DATA_BYTES) -> str:
    """The file as UTF-8 text (a leading BOM dropped); too large or not UTF-8 is ``UnsafeInput``.

    ``OSError`` (missing, unreadable) passes through for the caller to word.
    """
    return decode(read_bytes(path, limit=limit))


def decode(data: bytes) -> str:
    """UTF-8 text (a leading BOM dropped); bytes that are not UTF-8 are ``UnsafeInput`` with the line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UnsafeInput(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line})", line) from None


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (``str.splitlines`` also splits inside a JSON string at U+2028)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    depth, level = 0, [value]
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        level = [
            v
            for item in level
            if isinstance(item, (dict, list))
            for v in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def loads_json(text: str, *, allow_nan: bool = False) -> Any:
    """Decode JSON strictly: no NaN or Infinity, no integer too long, no nesting beyond ``MAX_DEPTH``.

    ``allow_nan`` accepts ``NaN`` and ``Infinity`` (Python's json module writes them; HELM's files
    may hold them), leaving finiteness to the reader of each value. Raises ``UnsafeInput`` with
    the line for every refusal (``json.JSONDecodeError`` included).
    """
    try:
        value = json.loads(text, parse_constant=None if allow_nan else _reject_constant)
    except json.JSONDecodeError as exc:
        raise UnsafeInput(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise UnsafeInput(f"JSON nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as exc:  # NaN/Infinity, or an integer longer than Python converts
        reason = str(exc) if "JSON number" in str(exc) else "an integer with too many digits"
        raise UnsafeInput(f"invalid JSON: {reason}") from None
    if _depth(value) > MAX_DEPTH:
        raise UnsafeInput(f"JSON nested too deeply (more than {MAX_DEPTH} levels)")
    return value


_SPACE = re.compile(r"[ \t\n\r]*")


def _past_space(text: str, pos: int) -> int:
    """The index of the first character at or after ``pos`` that is not JSON whitespace."""
    found = _SPACE.match(text, pos)
    return found.end() if found else pos


def json_line(text: str, at: Sequence[str | int]) -> int | None:
    """The 1-based line where the value at key path ``at`` starts in the JSON ``text``.

    For error messages only (it re-scans the text with the standard library's decoder, skipping
    the values before the one sought): where a key is missing, the line of the deepest part of
    the path that exists; None when the text is not JSON of that shape.

    Examples
    --------
    >>> json_line(chr(10).join(['[', ' {"name": {"name": "x"},', '  "mean": NaN}', ']']), [0, "mean"])
    3
    """
    decoder = json.JSONDecoder(parse_constant=lambda _: 0.0)
    pos = _past_space(text, 0)
    try:
        for step in at:
            opening = text[pos]
            if isinstance(step, int) and opening == "[":
                pos = _past_space(text, pos + 1)
                for _ in range(step):
                    if text[pos] == "]":
                        return text.count("\n", 0, pos) + 1
                    pos = _past_space(text, decoder.raw_decode(text, pos)[1])
                    if text[pos] != ",":
                        return text.count("\n", 0, pos) + 1
                    pos = _past_space(text, pos + 1)
            elif isinstance(step, str) and opening == "{":
                start = pos
                pos = _past_space(text, pos + 1)
                while True:
                    if text[pos] != '"':
                        return text.count("\n", 0, start) + 1  # the key is missing: the object's line
                    key, pos = decoder.raw_decode(text, pos)  # the key, a JSON string
                    pos = _past_space(text, pos)
                    pos = _past_space(text, pos + 1)  # past ':'
                    if key == step:
                        break
                    pos = _past_space(text, decoder.raw_decode(text, pos)[1])
                    if text[pos] != ",":
                        return text.count("\n", 0, start) + 1
                    pos = _past_space(text, pos + 1)
            else:
                break  # not the shape the path expects: the line of what is there
    except (ValueError, IndexError, RecursionError):
        return None
    return text.count("\n", 0, pos) + 1


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, naming both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: SafeLoader's own error follows
            line = key_node.start_mark.line + 1
            if first is not None:
                raise UnsafeInput(f"duplicate key {str(key)[:80]!r} at lines {first} and {line}", line)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _weight(node: yaml.Node) -> int:
    """How many nodes ``node`` expands to with every alias followed (aliases share node objects)."""
    memo: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(node, 1, False)]
    while stack:
        current, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafeInput(f"YAML nested too deeply (more than {MAX_DEPTH} levels)", current.start_mark.line + 1)
        children: list[yaml.Node] = []
        if isinstance(current, yaml.SequenceNode):
            children = list(current.value)
        elif isinstance(current, yaml.MappingNode):
            children = [n for pair in current.value for n in pair]
        if done:
            memo[id(current)] = min(1 + sum(memo[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        if id(current) in memo:
            continue
        stack.append((current, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in memo)
    return memo[id(node)]


def load_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """Parse one YAML document into (data, node tree) with the refusals above.

    Raises ``UnsafeInput`` (with a line where known) for every problem, ``yaml.YAMLError`` included.
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise UnsafeInput(f"YAML text over the {MAX_YAML_BYTES:,}-byte limit")
    try:
        loader = _StrictLoader(text)
    except yaml.YAMLError as exc:  # a character YAML does not allow (a NUL, a control character)
        raise UnsafeInput(f"invalid YAML: {exc}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if _weight(node) > MAX_YAML_NODES:
            raise UnsafeInput(f"YAML expands to more than {MAX_YAML_NODES:,} nodes through aliases (an alias bomb?)")
        return loader.construct_document(node), node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise UnsafeInput(f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    except RecursionError:
        raise UnsafeInput(f"YAML nested too deeply (more than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        if isinstance(exc, UnsafeInput):
            raise
        bad = _unconvertible(loader, node) if node is not None else None
        if bad is None:
            raise UnsafeInput("invalid YAML: a value cannot be converted") from None
        what = "an integer with too many digits" if bad.tag.endswith(":int") else f"a {bad.tag.rsplit(':', 1)[-1]}"
        raise UnsafeInput(
            f"invalid YAML: {what} that cannot be converted (column {bad.start_mark.column + 1})",
            bad.start_mark.line + 1,
            bad.start_mark.column + 1,
        ) from None
    finally:
        loader.dispose()


def _unconvertible(loader: yaml.SafeLoader, root: yaml.Node) -> yaml.ScalarNode | None:
    """The first scalar (in document order) whose tag's constructor refuses it; for the error's line."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            construct = loader.yaml_constructors.get(node.tag)
            try:
                if construct is not None:
                    construct(loader, node)
            except ValueError:
                return node
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in reversed(node.value) for n in reversed(pair))
    return None
