"""The dashboard's connection to medmon: the plan and the engine, cached for the session."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
from sqlalchemy.engine import Engine

from monitor.plan import Plan, load_plan
from monitor.storage import make_engine, resolve_url


@st.cache_resource
def get_engine(url: str) -> Engine:
    return make_engine(url)


def current_plan() -> Plan:
    path = os.environ.get("MEDMON_PLAN")
    if not path:
        st.error("MEDMON_PLAN is not set: start the dashboard with `medmon dashboard plan.yaml`.")
        st.stop()
    return load_plan(Path(path))


def engine_for(plan: Plan) -> Engine:
    return get_engine(resolve_url(plan.storage.url))
