"""The dashboard's door: which requests are answered, who is looking, and whether they may act.

- **Host check.** Every session's ``Host`` header must name this dashboard (loopback names, the
  bind address, the host of ``alerts.dashboard_url`` and ``dashboard.hosts``); anything else is
  refused before a byte of data is read. A browser tricked by DNS rebinding sends the attacker's
  name there, so a page on another site cannot drive a dashboard on 127.0.0.1.
- **With sign-in** (an ``[auth]`` section in Streamlit's secrets) only signed-in users see data,
  and only owners the plan names, with an e-mail address the identity provider has verified
  (``email_verified``), may acknowledge, resolve or silence. A plan that says
  ``dashboard.auth: oidc`` refuses to serve anything when no ``[auth]`` section is found.
- **Without sign-in** the dashboard is read-only, unless it was started with
  ``--allow-local-actions`` *and* listens on a loopback address; acknowledging, resolving and
  silencing (``LOCAL_ACTS``, nothing else) are then recorded under the local user's name, labelled
  unauthenticated, so the record never pretends to know who clicked. Every record that names a
  person (ratings, safety events, suspension and resume, approvals, sign-offs, requeues) needs a
  verified sign-in (:func:`signed_in_owner`, :func:`signed_in_reviewer`).
- **Origin check.** A browser sends ``Origin`` on the websocket; Streamlit lets any localhost
  origin through, so a page on another localhost port could drive the dashboard from a
  clinician's browser. Each session's ``Origin`` must be this dashboard's own (:func:`origin_refusal`).
"""

from __future__ import annotations

import getpass
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from medmon.monitor.governance.roles import refusal
from medmon.monitor.plan.model import LOOPBACK_HOSTS, Plan, dashboard_hosts

UNAUTHENTICATED = "unauthenticated"
LOCAL_ACTS = frozenset({"acknowledge", "resolve", "silence"})  # all --allow-local-actions permits
LOCAL_ACTIONS_ENV = "MEDMON_DASHBOARD_LOCAL_ACTIONS"  # set by ``medmon dashboard --allow-local-actions``
READ_ONLY = (
    "read-only: no sign-in is configured (start with --allow-local-actions on 127.0.0.1 to act as "
    "the local user, or configure sign-in)"
)


@dataclass(frozen=True)
class Viewer:
    """The person using the dashboard."""

    actor: str
    email: str | None
    authenticated: bool
    can_act: bool
    why_not: str = ""
    bind: str = ""  # the address the server listens on, as the header states it
    verified: bool = False  # signed in, and the identity provider vouches for the e-mail (email_verified)
    plan: Plan | None = field(default=None, repr=False, compare=False)  # whose roles scope each act


class NotAllowed(PermissionError):
    """This viewer may not take this action (view-only, or the action needs a verified sign-in)."""


def may_act(viewer: Viewer, act: str) -> bool:
    """Whether ``viewer`` may take the incident action ``act`` (acknowledge, resolve, silence) or a
    recorded decision (anything else, which needs a verified owner's sign-in)."""
    if act in LOCAL_ACTS:
        return viewer.can_act
    return viewer.authenticated and viewer.verified and viewer.can_act and viewer.email is not None


def require_role(viewer: Viewer, act: str, task_id: str | None) -> None:
    """A signed-in viewer's act must be one their roles allow *for that task* (``medmon.monitor.
    governance.roles``): a task owner acts on their own task only. An unauthenticated local user is
    already limited to ``LOCAL_ACTS`` and recorded as unauthenticated."""
    if not viewer.authenticated or viewer.plan is None:
        return
    why = refusal(viewer.plan, viewer.email, act, task_id)
    if why is not None:
        raise NotAllowed(why)


def signed_in_owner(viewer: Viewer, what: str) -> str:
    """The verified e-mail of the signed-in owner taking a recorded decision; refuses anyone else.

    These records name a person, so an unauthenticated local user (even with
    ``--allow-local-actions``) and a sign-in without ``email_verified`` may not make them.
    """
    if not viewer.authenticated:
        raise NotAllowed(f"{what} needs a sign-in (the record names the person the identity provider verified)")
    if not may_act(viewer, what) or viewer.email is None:
        raise NotAllowed(viewer.why_not or f"{viewer.actor} may not {what}")
    return viewer.email


def signed_in_reviewer(plan: Plan, viewer: Viewer) -> str:
    """The verified e-mail of a reviewer the plan names: a rating is only ever recorded as oneself."""
    if not viewer.authenticated:
        raise NotAllowed("rating answers needs a sign-in: a rating is recorded as the verified reviewer")
    address = (viewer.email or "").strip().lower()
    if address not in {r.email.strip().lower() for r in plan.oversight.reviewers}:
        raise NotAllowed(f"{viewer.actor} is not a reviewer in the monitoring plan")
    if not viewer.verified:
        raise NotAllowed(f"the identity provider has not verified {address} (email_verified): view only")
    return address


def origin_refusal(plan: Plan, headers: Mapping[str, str]) -> str | None:
    """Why a session must be refused for its ``Origin``, or None when it may proceed.

    Same origin only: the ``Origin`` of the websocket must name the host (and port) the browser
    asked for in ``Host``, or the origin of ``alerts.dashboard_url``. A request without ``Origin``
    comes from no web page (a script, the test harness) and is judged by ``Host`` alone.
    """
    origin = headers.get("Origin") or headers.get("origin")
    if origin is None:
        return None
    host = (headers.get("Host") or headers.get("host") or "").strip().lower()
    netloc = origin.strip().lower().split("://", 1)[-1].rstrip("/")
    own = {host} if host else set()
    own.add(plan.alerts.dashboard_url.strip().lower().split("://", 1)[-1].split("/", 1)[0])
    if netloc in own:
        return None
    return f"a page at {origin!r} may not drive this dashboard (only its own origin may)"


def host_name(header: str) -> str:
    """The host of a ``Host`` header, lower-cased, without port or IPv6 brackets.

    Examples
    --------
    >>> host_name("Attacker.Example:8501"), host_name("[::1]:8501"), host_name("127.0.0.1")
    ('attacker.example', '::1', '127.0.0.1')
    """
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_loopback(address: str) -> bool:
    if address in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def host_refusal(plan: Plan, bind: str, headers: Mapping[str, str]) -> str | None:
    """Why a session must be refused for its ``Host`` header, or None when it may proceed.

    Every browser request carries ``Host`` (HTTP/1.1 requires it); only Streamlit's in-process
    test harness runs a page without one.
    """
    host = headers.get("Host") or headers.get("host")
    if host is None:
        return None
    name = host_name(host)
    if name in dashboard_hosts(plan, bind):
        return None
    return (
        f"this dashboard does not answer to the host {name!r}; add it to the plan's dashboard.hosts "
        "if it is a name your reverse proxy uses"
    )


def owner_emails(plan: Plan) -> frozenset[str]:
    """Everyone the plan makes accountable: clinical and technical owners, the chair and task owners
    (what each may do, and on which task, is ``medmon.monitor.governance.roles``)."""
    people = [plan.owners.clinical, plan.owners.technical] + [t.owner for t in plan.tasks if t.owner is not None]
    if plan.owners.chair is not None:
        people.append(plan.owners.chair)
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


def sign_in_secrets() -> tuple[str, ...]:
    """The secret values of the ``[auth]`` section (client and cookie secrets, at any depth), to
    keep out of the dashboard's log lines; nothing when there is no readable section."""
    found: list[str] = []

    def walk(section: Mapping[str, object]) -> None:
        for key, value in section.items():
            if isinstance(value, Mapping):
                walk(value)
            elif isinstance(value, str) and "secret" in key.lower():
                found.append(value)

    try:
        if "auth" in st.secrets:
            walk(st.secrets["auth"])
    except (StreamlitSecretNotFoundError, FileNotFoundError):
        pass
    return tuple(found)


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


def local_actions_allowed(bind: str, environ: Mapping[str, str] | None = None) -> bool:
    """Unauthenticated actions: only when asked for explicitly and only on a loopback address."""
    env = os.environ if environ is None else environ
    return env.get(LOCAL_ACTIONS_ENV) == "1" and is_loopback(bind)


def viewer_for(
    plan: Plan,
    *,
    authenticated: bool,
    email: str | None,
    email_verified: bool = False,
    local_actions: bool = False,
    bind: str = "127.0.0.1",
    environ: dict[str, str] | None = None,
) -> Viewer:
    """Decide who the viewer is and whether they may act (pure: tested without Streamlit)."""
    if not authenticated:
        return Viewer(local_actor(environ), None, False, local_actions, "" if local_actions else READ_ONLY, bind)
    address = (email or "").strip().lower()
    if address and address in owner_emails(plan):
        if email_verified:
            return Viewer(address, address, True, True, bind=bind, verified=True, plan=plan)
        return Viewer(
            address,
            address,
            True,
            False,
            f"the identity provider has not verified {address} (email_verified): view only",
            bind,
            plan=plan,
        )
    return Viewer(
        address or "unknown",
        address or None,
        True,
        False,
        f"{address or 'this account'} is not an owner in the monitoring plan: view only",
        bind,
        verified=bool(address) and email_verified,
        plan=plan,
    )


def bind_address() -> str:
    """The address Streamlit listens on ("0.0.0.0" when none was given: every interface)."""
    return str(st.get_option("server.address") or "0.0.0.0")


def require_viewer(plan: Plan) -> Viewer:
    """Gate the app: refuse foreign hosts; with sign-in expected or configured, stop until signed in."""
    bind = bind_address()
    headers = dict(st.context.headers)
    refusal = host_refusal(plan, bind, headers) or origin_refusal(plan, headers)
    if refusal is not None:
        st.error(f"Request refused: {refusal}.")
        st.stop()
    try:
        configured = auth_configured()
    except SecretsUnreadable as exc:
        st.error(f"Sign-in settings could not be read, so no data is shown: {exc}")
        st.stop()
    if not configured and plan.dashboard.auth == "oidc":
        looked = ", ".join(str(p) for p in secret_files())
        st.error(
            f"The plan requires sign-in (dashboard.auth: oidc) but no [auth] section was found in {looked}; "
            "nothing is shown."
        )
        st.stop()
    if not configured:
        return viewer_for(plan, authenticated=False, email=None, local_actions=local_actions_allowed(bind), bind=bind)
    if not st.user.is_logged_in:
        st.title("medmon")
        st.info("Sign in to see the monitoring of this deployment.")
        st.button("Sign in", on_click=st.login, type="primary", key="login")
        st.stop()
    email = st.user.get("email")
    return viewer_for(
        plan,
        authenticated=True,
        email=str(email) if email else None,
        email_verified=st.user.get("email_verified") is True,
        bind=bind,
    )
