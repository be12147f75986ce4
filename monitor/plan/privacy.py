"""The plan's privacy settings and configured secrets, as the one text policy every store uses.

Secrets are read from the environment variables the plan names (model and judge API keys,
route URLs, signing keys and routing keys, the broker URL) and from the storage URL's password,
so any of them a remote service echoes back (a 401 message quoting the key) is blanked before a
text is stored, logged or printed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from medmon.monitor.plan.model import Plan
from medmon.probes.redaction import TextPolicy, load_redactor, scrub_secrets

# A route's webhook URL can carry its token (Slack, Teams) and the storage URL a password: every
# ``url:`` value is masked wherever plan text is shown (``base_url`` and ``dashboard_url`` kept).
_URL_VALUE = re.compile(r"(?<![\w])(url:\s*)([^\s,}#]+)")
MASK = "•••• (masked)"


def mask_plan_text(text: str) -> str:
    """The plan text with every ``url:`` value masked, as the dashboard and the reports show it.

    Examples
    --------
    >>> mask_plan_text("routes: [{name: s, url: https://hooks.slack.com/T/B/x}], base_url: http://llm/v1")
    'routes: [{name: s, url: •••• (masked)}], base_url: http://llm/v1'
    """
    return _URL_VALUE.sub(lambda m: m.group(1) + MASK, text)


def scrub_plan_secrets(text: str, plan: Plan, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret the plan refers to blanked (for pages and reports)."""
    return scrub_secrets(text, secret_values(plan, environ))


def secret_values(plan: Plan, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of every secret the plan refers to, as set in the environment now."""
    env = os.environ if environ is None else environ
    names = [plan.deployment.api_key_env, plan.service.broker_url_env]
    if plan.jury is not None:
        names += [j.api_key_env for j in plan.jury.judges]
    for route in plan.alerts.routes:
        names += [n for n in (route.url_env, route.secret_env, route.routing_key_env) if n]
    values = [env.get(n, "") for n in names]
    values += [str(route.url) for route in plan.alerts.routes if route.url is not None and route.type in ("slack", "teams")]
    try:
        password = urlsplit(plan.storage.url).password
    except ValueError:
        password = None
    if password:
        values.append(password)
    return tuple(sorted({v for v in values if v}))


def text_policy(plan: Plan, environ: Mapping[str, str] | None = None) -> TextPolicy:
    """What every stored text of this plan's runs passes: redactor, ``store_text``, secrets."""
    return TextPolicy(redactor=load_redactor(plan.privacy.redactor), store_text=plan.privacy.store_text,
                      secrets=secret_values(plan, environ))
