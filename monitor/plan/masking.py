"""The plan's text as it may be shown, the one masking the dashboard and the reports both use.

A route's ``url:`` can carry its token (Slack, Teams webhooks) and the storage URL a password,
so every ``url:`` value is masked (``base_url`` and ``dashboard_url`` are kept: the model's and
the dashboard's addresses are not secrets); then every secret value the plan refers to, and
any credential shape (a URL password, a bearer token, an api-key value) left elsewhere in the
text, is blanked as in stored texts and log lines.
"""

from __future__ import annotations

import re

from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.privacy import secret_values
from medmon.scrub import mask_text

_URL_VALUE = re.compile(r"(?<![\w])(url:\s*)([^\s,}#]+)")
MASK = "•••• (masked)"


def masked_plan(text: str, plan: Plan | None) -> str:
    """``text`` (a plan file) as the dashboard and the committee report show it.

    ``plan`` is the plan whose secrets (as set in the process's environment) are blanked; ``None``
    masks only ``url:`` values and credential shapes.

    Examples
    --------
    >>> masked_plan("routes: [{name: s, url: https://hooks.slack.com/T/B/x}], base_url: http://llm/v1", None)
    'routes: [{name: s, url: •••• (masked)}], base_url: http://llm/v1'
    """
    urls_masked = _URL_VALUE.sub(lambda m: m.group(1) + MASK, text)
    return mask_text(urls_masked, secret_values(plan) if plan is not None else ())
