"""The dashboard's connection to medmon: the plan and the engine, cached for the process."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
from sqlalchemy.engine import Engine

from medmon.db import resolve_url
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.storage import make_engine

PLAN_ENV = "MEDMON_PLAN"
REFRESH_ENV = "MEDMON_DASHBOARD_REFRESH"
DEFAULT_REFRESH = "10s"


@st.cache_resource
def get_engine(url: str) -> Engine:
    """One engine per database URL for the whole Streamlit process (its pool serves every session)."""
    return make_engine(url)


def plan_path() -> Path:
    """The plan file the dashboard was started with; stops the page with a hint when unset."""
    path = os.environ.get(PLAN_ENV)
    if not path:
        st.error("MEDMON_PLAN is not set: start the dashboard with `medmon dashboard plan.yaml`.")
        st.stop()
    return Path(path)


def current_plan() -> Plan:
    """The validated plan (read on every run, so an edited plan shows without a restart)."""
    return load_plan(plan_path())


def plan_text() -> str:
    """The plan file as written: the monitoring plan as approved."""
    return plan_path().read_text("utf-8")


def engine_for(plan: Plan) -> Engine:
    return get_engine(resolve_url(plan.storage.url))


def refresh_every() -> str:
    """How often live sections re-read the database while the service writes (``MEDMON_DASHBOARD_REFRESH``)."""
    return os.environ.get(REFRESH_ENV) or DEFAULT_REFRESH
