"""What every page shows first: the deployment, who is looking, and whether that is authenticated."""

from __future__ import annotations

from datetime import datetime

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.dashboards.auth import Viewer, require_viewer
from medmon.dashboards.data import current_plan, engine_for
from medmon.dashboards.tables import set_display_zone, shown_time
from medmon.monitor.plan.masking import masked_plan
from medmon.monitor.plan.model import Plan
from medmon.monitor.read import served_now

__all__ = ["auth_note", "fmt", "header", "interval", "masked_plan", "page", "when"]


def header(plan: Plan, viewer: Viewer, title: str, engine: Engine | None = None) -> None:
    """Page title plus one caption line saying what is monitored (the model served now) and under whose identity."""
    st.title(title)
    model = plan.deployment.model
    if engine is not None:
        with Session(engine) as session:
            served = served_now(session)
        if served and served != [model]:
            model = f"serving {', '.join(served)} (approved: {model})"
    deployment = (
        f"The deployment is a SIMULATED model ({model})."
        if "simulator" in model
        else f"Deployment: {plan.deployment.name} · {model}"
    )
    if viewer.authenticated:
        who = f"Signed in as {viewer.actor}" + ("" if viewer.can_act else " (view only)")
    elif viewer.can_act:
        who = f"Unauthenticated, listening on {viewer.bind}; actions are recorded as {viewer.actor}."
    else:
        who = f"Unauthenticated, listening on {viewer.bind}: read-only."
    st.caption(f"{plan.use_case.name} · {deployment} · {who}")


def page(title: str) -> tuple[Plan, Viewer, Engine]:
    """A page's start: the plan, the viewer (the page stops for one not signed in), its database
    and the header under ``title``."""
    plan = current_plan()
    set_display_zone(plan.display_timezone)
    viewer = require_viewer(plan)
    engine = engine_for(plan)
    header(plan, viewer, title, engine)
    return plan, viewer, engine


def auth_note(viewer: Viewer) -> str:
    """A short sentence for the sidebar about the access mode."""
    if viewer.authenticated:
        return "Sign-in: OIDC"
    return f"Sign-in: none ({'local actions' if viewer.can_act else 'read-only'}, {viewer.bind})"


def fmt(value: float | None, spec: str = ".2f") -> str:
    """A number for a table cell, or "—" when unknown (as every table shows a missing value)."""
    return "—" if value is None else format(value, spec)


def when(value: datetime | None) -> str:
    """A moment as people read it, in the plan's zone (``2026-12-03 15:00 CET``); ``never`` when unknown."""
    return shown_time(value)


def interval(low: float | None, high: float | None) -> str:
    """A 95% interval for a table cell, or "—" when there is none yet."""
    return "—" if low is None or high is None else f"{low:.2f}–{high:.2f}"
