"""What a reader returns: the value read and the rule that read it, or no value and why.

Also what every reader needs to know before it reads a weak sign as an answer: whether the
reply asks back (a clarifying question, "please specify", "can you confirm") or declines to
answer ("I can't give a recommendation"). Such a reply commits to nothing, whatever option,
number, label or code its question mentions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Reading", "asks_back", "without_questions"]


@dataclass(frozen=True)
class Reading:
    """What a reader found: ``value`` and the rule that found it, or ``None`` and why not."""

    value: Any
    reason: str

    @property
    def parsed(self) -> bool:
        return self.value is not None


# A request for more information, or a refusal to answer: the reply asks rather than answers.
_ASKS = re.compile(
    r"\b(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:clarify|confirm|specify|tell\s+me|provide|share|check|"
    r"let\s+me\s+know|say\s+which)\b"
    r"|\bplease\s+(?:clarify|specify|confirm|provide|share|tell\s+me|let\s+me\s+know)\b"
    r"|\b(?:do|did)\s+you\s+(?:mean|want|intend)\b|\bwhich\s+(?:one\s+)?do\s+you\s+mean\b"
    r"|\bwould\s+you\s+like\s+me\s+to\b|\bneed\s+(?:more|further|additional)\s+(?:info|information|details|context)\b"
    r"|\bbefore\s+I\s+(?:choose|answer|commit|pick|decide)\b|\bI(?:'d|\s+would)\s+rather\s+not\s+guess\b"
    r"|\blet\s+me\s+know\s+(?:which|whether|and\s+I)\b"
    r"|\bI\s*(?:can't|cannot|can\s+not|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to|'m\s+not\s+able\s+to|"
    r"won't|will\s+not)\s+(?:give|provide|answer|help|recommend|make|choose|select|offer)\b"
    r"|\bI\s+(?:must|have\s+to)\s+decline\b"
    r"|\bI(?:'m|\s+am)\s+not\s+(?:comfortable|in\s+a\s+position)\s+(?:choosing|answering|recommending|making|"
    r"selecting|giving|to)\b",
    re.I,
)
_QUESTION = re.compile(r"[^.!?\n]*\?")


def asks_back(text: str) -> bool:
    """Whether the reply asks for clarification or declines to answer.

    Examples
    --------
    >>> asks_back("Could you clarify whether alteplase is contraindicated?")
    True
    >>> asks_back("The answer is B. Let me know if you want the dosing.")
    False
    """
    return bool(_ASKS.search(text))


def without_questions(text: str) -> str:
    """The reply without its questions: what a question names is not committed to.

    Examples
    --------
    >>> without_questions("Is PCI available within 120 minutes? If so, PCI.")
    '  If so, PCI.'
    """
    return _QUESTION.sub(" ", text)
