"""The plan's privacy settings and configured secrets, as the one text policy every store uses.

Secrets are read from the environment variables the plan names (model and judge API keys,
route URLs, signing keys and routing keys, the broker URL) and from the storage URL's password,
so any of them a remote service echoes back (a 401 message quoting the key) is blanked before a
text is stored, logged or printed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from medmon.db import ENV_URL as DATABASE_URL_ENV
from medmon.monitor.plan.model import Plan
from medmon.probes.redaction import TextPolicy, load_redactor
from medmon.scrub import mask_text, secret_filter


def scrub_plan_secrets(text: str, plan: Plan) -> str:
    """``text`` with every secret the plan refers to blanked (for pages and reports)."""
    return mask_text(text, secret_values(plan))


def secret_values(plan: Plan, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of every secret the plan refers to, as set in the environment now.

    API keys and secret headers of the model and judges, route URLs, signing secrets and routing
    keys, the suspend route's URL and secret, the traffic receiver's token, the broker URL, and
    the password of the storage URL (the plan's, or ``MEDMON_DATABASE_URL`` which wins over it).
    """
    env = os.environ if environ is None else environ
    names = [*plan.deployment.variables(), plan.service.broker_url_env]
    if plan.jury is not None:
        names += [name for judge in plan.jury.judges for name in judge.variables()]
    for route in plan.alerts.routes:
        names += [n for n in (route.url_env, route.secret_env, route.routing_key_env) if n]
    suspend = plan.oversight.suspend
    if suspend is not None:
        names += [n for n in (suspend.url_env, suspend.secret_env) if n]
    if plan.traffic is not None:
        names += plan.traffic.token_variables()
    values = [env.get(n, "") for n in names]
    values += [
        str(route.url) for route in plan.alerts.routes if route.url is not None and route.type in ("slack", "teams")
    ]
    if suspend is not None and suspend.url is not None:
        values.append(str(suspend.url))
    for url in (plan.storage.url, env.get(DATABASE_URL_ENV, "")):
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            values.append(password)
    return tuple(sorted({v for v in values if v}))


def mask_logs(plan: Plan) -> None:
    """Mask every secret this plan refers to in the log lines of this process from now on."""
    secret_filter().add(secret_values(plan))


def text_policy(plan: Plan) -> TextPolicy:
    """What every stored text of this plan's runs passes: redactor, ``store_text``, secrets."""
    return TextPolicy(
        redactor=load_redactor(plan.privacy.redactor), store_text=plan.privacy.store_text, secrets=secret_values(plan)
    )
