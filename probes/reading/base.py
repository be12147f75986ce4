"""What a reader returns: the value read and the rule that read it, or no value and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Reading"]


@dataclass(frozen=True)
class Reading:
    """What a reader found: ``value`` and the rule that found it, or ``None`` and why not."""

    value: Any
    reason: str

    @property
    def parsed(self) -> bool:
        return self.value is not None
