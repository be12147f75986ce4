"""Fixtures for the alerts tests: a settable clock and a one-route notification policy."""

from __future__ import annotations

from datetime import timedelta

import pytest

from medmon.alerts import NotifyPolicy, RouteSpec
from tests.alerts.helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def policy() -> NotifyPolicy:
    return NotifyPolicy(
        routes=(RouteSpec("hook"),),
        group_wait=timedelta(0),
        group_interval=timedelta(minutes=5),
        repeat_interval=timedelta(hours=4),
    )
