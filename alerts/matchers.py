"""Label matchers, as Alertmanager writes them: ``task=dosing``, ``severity!=info``, ``task=~dose-.*``.

Routes use them to pick the alerts they receive and silences to pick the alerts they mute.
Regular expressions are anchored at both ends, so ``task=~dose`` matches only ``dose``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

_SYNTAX = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$")


class MatchOp(str, Enum):
    equal = "="
    not_equal = "!="
    regex = "=~"
    not_regex = "!~"


@dataclass(frozen=True)
class Matcher:
    """One condition on one label; a missing label reads as the empty string.

    Examples
    --------
    >>> Matcher.parse("task=~dose-.*").matches({"task": "dose-check"})
    True
    >>> Matcher.parse("severity!=info").matches({"severity": "info"})
    False
    """

    name: str
    op: MatchOp
    value: str

    def __post_init__(self) -> None:
        if self.op in (MatchOp.regex, MatchOp.not_regex):
            try:
                re.compile(self.value)
            except re.error as exc:
                raise ValueError(
                    f"matcher {self.name}{self.op.value}{self.value!r}: invalid regular expression ({exc})"
                ) from None

    @classmethod
    def parse(cls, text: str) -> Matcher:
        """Read ``name<op>value``; raise ValueError naming the text when it is not one."""
        found = _SYNTAX.match(text)
        if not found:
            raise ValueError(f"expected a matcher like 'task=dosing' or 'task=~dose-.*', got {text!r}")
        name, op, value = found.groups()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return cls(name, MatchOp(op), value)

    @classmethod
    def from_dict(cls, data: Mapping[str, str]) -> Matcher:
        return cls(str(data["name"]), MatchOp(data["op"]), str(data["value"]))

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "op": self.op.value, "value": self.value}

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op is MatchOp.equal:
            return actual == self.value
        if self.op is MatchOp.not_equal:
            return actual != self.value
        hit = re.fullmatch(self.value, actual) is not None
        return hit if self.op is MatchOp.regex else not hit

    def __str__(self) -> str:
        return f"{self.name}{self.op.value}{self.value}"


def matches_all(matchers: Iterable[Matcher], labels: Mapping[str, str]) -> bool:
    """True when every matcher holds (an empty list matches everything)."""
    return all(m.matches(labels) for m in matchers)
