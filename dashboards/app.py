"""medmon governance dashboard (Streamlit multipage entry point).

Every page runs through here, so the sign-in gate below covers them all: with OIDC configured
nothing is read until the user has signed in.
"""

from __future__ import annotations

import streamlit as st

from dashboards.auth import require_viewer
from dashboards.data import current_plan
from dashboards.layout import auth_note

st.set_page_config(page_title="medmon", layout="wide")
plan = current_plan()
viewer = require_viewer(plan)
with st.sidebar:
    st.caption(f"{auth_note()} · {viewer.actor}")
    if viewer.authenticated:
        st.button("Sign out", on_click=st.logout, key="logout")
st.navigation([
    st.Page("pages/overview.py", title="Overview", url_path="overview", default=True),
    st.Page("pages/task.py", title="Task detail", url_path="task"),
    st.Page("pages/alerts.py", title="Alerts", url_path="alerts"),
    st.Page("pages/costs.py", title="Cost and latency", url_path="costs"),
    st.Page("pages/jury.py", title="Jury", url_path="jury"),
    st.Page("pages/baselines.py", title="Baselines", url_path="baselines"),
    st.Page("pages/changes.py", title="Model changes", url_path="changes"),
    st.Page("pages/governance.py", title="Governance", url_path="governance"),
]).run()
