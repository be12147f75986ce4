"""medmon governance dashboard (Streamlit multipage entry point).

Every page runs through here, so the sign-in gate below covers them all: with OIDC configured
nothing is read until the user has signed in. The pages live in ``views/`` (see its docstring
for why not ``pages/``) and each also asks for the viewer itself, as a second line of defence.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.auth import require_viewer, sign_in_secrets
from medmon.dashboards.data import current_plan, engine_for
from medmon.dashboards.layout import auth_note, when
from medmon.monitor.plan.privacy import secret_values
from medmon.monitor.read import suspended_tasks
from medmon.scrub import setup_logging

st.set_page_config(page_title="medmon", layout="wide")
# Streamlit's wide layout keeps 5rem either side of the page: at 1,024 px, with the sidebar open, that
# leaves tables 560 px. Narrower margins give them the room ``medmon.dashboards.tables.FIT_PX`` counts on.
st.html(
    "<style>[data-testid='stMainBlockContainer'] {padding-left: 2rem; padding-right: 2rem; max-width: 1200px;}</style>"
)
plan = current_plan()
# Streamlit's loggers and the root logger of this process mask every secret (plan and sign-in).
setup_logging(secrets=secret_values(plan) + sign_in_secrets())
viewer = require_viewer(plan)
with st.sidebar:
    st.caption(f"{auth_note(viewer)} · {viewer.actor}")
    if viewer.authenticated:
        st.button("Sign out", on_click=st.logout, key="logout")
    with Session(engine_for(plan)) as session:
        held = suspended_tasks(session)
    for task_id, held_by in held.items():  # shown on every page while it lasts
        st.error(
            f"{task_id}: SUSPENDED since {when(held_by.suspended_at)} ({held_by.reason})"
            if held_by.status == "suspended"
            else f"{task_id}: suspension awaiting a second owner"
        )


def _overview_at_its_own_address() -> None:
    """``/overview`` shows the Overview too: Streamlit serves the default page only at ``/``, so a
    bookmarked or linked ``/overview`` would otherwise be "Page not found"."""
    runpy.run_path(str(Path(__file__).parent / "views" / "overview.py"), run_name="__main__")


st.navigation(
    [
        st.Page("views/overview.py", title="Overview", url_path="home", default=True),  # served at /
        st.Page(_overview_at_its_own_address, title="Overview", url_path="overview", visibility="hidden"),
        st.Page("views/task.py", title="Task", url_path="task"),
        st.Page("views/alerts.py", title="Alerts", url_path="alerts"),
        st.Page("views/costs.py", title="Cost and latency", url_path="costs"),
        st.Page("views/traffic.py", title="Production traffic", url_path="traffic"),
        st.Page("views/jury.py", title="Jury", url_path="jury"),
        st.Page("views/baselines.py", title="Baselines", url_path="baselines"),
        st.Page("views/changes.py", title="Model changes", url_path="changes"),
        st.Page("views/governance.py", title="Governance", url_path="governance"),
        st.Page("views/review.py", title="Clinician review", url_path="review"),
        st.Page("views/safety.py", title="Safety", url_path="safety"),
    ]
).run()
