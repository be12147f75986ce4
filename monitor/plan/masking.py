"""The plan's text as it may be shown: a route's ``url:`` can carry its token (Slack, Teams webhooks),
so wherever the plan is printed (the dashboard, the committee report) those values are masked."""

from __future__ import annotations

import re

_ROUTE_URL = re.compile(r"(?<![\w])(url:\s*)([^\s,}#]+)")


def masked_plan(text: str) -> str:
    """The plan text with every route ``url:`` value masked (``base_url``/``dashboard_url`` kept).

    Examples
    --------
    >>> masked_plan("routes: [{name: hook, url: https://hooks.slack.com/T0/B0/xyz}]")
    'routes: [{name: hook, url: •••• (masked)}]'
    """
    return _ROUTE_URL.sub(lambda m: m.group(1) + "•••• (masked)", text)
