"""Who is looking at the dashboard, and whether they may act on alerts.

With OIDC configured (an ``[auth]`` section in Streamlit's secrets), only signed-in users see
data and only the owners the plan names may acknowledge, resolve or silence. Without it the
dashboard is bound to 127.0.0.1 and says so; actions are then recorded under the local user's
name, labelled unauthenticated, so the record never pretends to know who clicked.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from medmon.monitor.plan.model import Plan

UNAUTHENTICATED = "unauthenticated"


@dataclass(frozen=True)
class Viewer:
    """The person using the dashboard."""

    actor: str
    email: str | None
    authenticated: bool
    can_act: bool
    why_not: str = ""


def owner_emails(plan: Plan) -> frozenset[str]:
    """Everyone the plan makes accountable: clinical and technical owners and task owners."""
    people = [plan.owners.clinical, plan.owners.technical] + [t.owner for t in plan.tasks if t.owner is not None]
    return frozenset(p.email.strip().lower() for p in people)


class SecretsUnreadable(RuntimeError):
    """A secrets file exists but cannot be read: sign-in may be meant, so nothing is shown."""


def secret_files() -> list[Path]:
    """Where Streamlit looks for ``secrets.toml``."""
    return [Path(p) for p in st.get_option("secrets.files")]


def auth_configured() -> bool:
    """Whether Streamlit's secrets hold an ``[auth]`` section.

    No secrets file means no. A secrets file that exists but cannot be parsed raises
    :class:`SecretsUnreadable`: it may hold the sign-in settings, so the dashboard fails closed
    rather than serving data unauthenticated.
    """
    try:
        return "auth" in st.secrets
    except (StreamlitSecretNotFoundError, FileNotFoundError) as exc:
        present = [str(p) for p in secret_files() if p.exists()]
        if present:
            raise SecretsUnreadable(f"cannot read {', '.join(present)}: {exc}") from exc
        return False


def local_actor(environ: dict[str, str] | None = None) -> str:
    """The local account name for actions taken on an unauthenticated dashboard."""
    env = os.environ if environ is None else environ
    name = env.get("USER") or env.get("USERNAME")
    if not name:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):
            name = "local"
    return f"{name} ({UNAUTHENTICATED})"


def viewer_for(plan: Plan, *, authenticated: bool, email: str | None,
               environ: dict[str, str] | None = None) -> Viewer:
    """Decide who the viewer is and whether they may act (pure: tested without Streamlit)."""
    if not authenticated:
        return Viewer(local_actor(environ), None, False, True)
    address = (email or "").strip().lower()
    if address and address in owner_emails(plan):
        return Viewer(address, address, True, True)
    return Viewer(address or "unknown", address or None, True, False,
                  f"{address or 'this account'} is not an owner in the monitoring plan: view only")


def require_viewer(plan: Plan) -> Viewer:
    """Gate the app: with auth configured, stop here until the user signs in."""
    try:
        configured = auth_configured()
    except SecretsUnreadable as exc:
        st.error(f"Sign-in settings could not be read, so no data is shown: {exc}")
        st.stop()
    if not configured:
        return viewer_for(plan, authenticated=False, email=None)
    if not st.user.is_logged_in:
        st.title("medmon")
        st.info("Sign in to see the monitoring of this deployment.")
        st.button("Sign in", on_click=st.login, type="primary", key="login")
        st.stop()
    email = st.user.get("email")
    return viewer_for(plan, authenticated=True, email=str(email) if email else None)
