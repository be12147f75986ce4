"""Text from outside medmon, shown as text: a served model's name, a HELM run's model, an incident
title, never as Markdown a page would follow (a link) or fetch (a remote image)."""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$])")


def plain(text: object) -> str:
    """``text`` with every Markdown character escaped, for labels, captions and messages.

    Examples
    --------
    >>> plain("gpt-4o ![x](https://evil.example/p.png)")
    'gpt\\\\-4o \\\\!\\\\[x\\\\]\\\\(https\\\\://evil\\\\.example/p\\\\.png\\\\)'
    """
    return _MARKDOWN.sub(r"\\\1", str(text))
