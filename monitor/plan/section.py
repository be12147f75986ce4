"""The base of every plan section, and the value types several sections share."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from medmon.monitor.plan.intervals import parse_interval

_HTTP_URL = re.compile(r"^https?://[^\s/]+")


class Section(BaseModel):
    """A part of the plan: an unknown key is an error (a typo must not silently mean a default),
    and a loaded plan is never changed in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_interval(value: str) -> str:
    parse_interval(value)  # raises ValueError naming the expected form
    return value


def check_http_url(value: str) -> str:
    if not _HTTP_URL.match(value):
        raise ValueError(f"expected an http(s) URL, got {value!r}")
    return value


Interval = Annotated[str, AfterValidator(check_interval)]
"""A duration written as in the plan: '90s', '15m', '4h', '1d'."""

HttpUrl = Annotated[str, AfterValidator(check_http_url)]
"""An http or https URL with a host (kept as written)."""
