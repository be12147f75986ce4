"""Who may act: owners named in the plan when signed in; the local user, labelled, without sign-in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from medmon.dashboards import auth
from medmon.dashboards.auth import local_actor, owner_emails, viewer_for
from medmon.dashboards.layout import masked_plan
from medmon.monitor.plan.model import Plan

TASK_OWNER = {"name": "Pharmacy Lead", "email": "Pharmacy-Lead@hospital.example"}


@pytest.fixture
def plan(make_plan: Callable[..., Plan]) -> Plan:
    base = make_plan()
    task = base.tasks[0].model_dump(mode="json") | {"owner": TASK_OWNER}
    return make_plan(tasks=[task])


def test_owners_are_the_clinical_technical_and_task_owners(plan: Plan) -> None:
    assert owner_emails(plan) == {"owner@hospital.example", "tech@hospital.example", "pharmacy-lead@hospital.example"}


@pytest.mark.parametrize(
    ("email", "can_act"),
    [
        ("owner@hospital.example", True),
        ("  TECH@hospital.example ", True),
        ("pharmacy-lead@HOSPITAL.example", True),
        ("visitor@hospital.example", False),
        (None, False),
    ],
    ids=["clinical-owner", "technical-owner-case-and-space", "task-owner", "not-an-owner", "no-email-claim"],
)
def test_signed_in_users_act_only_when_the_plan_names_them(plan: Plan, email: str | None, can_act: bool) -> None:
    viewer = viewer_for(plan, authenticated=True, email=email, email_verified=True)
    assert viewer.authenticated and viewer.can_act is can_act
    if can_act:
        assert viewer.actor == (email or "").strip().lower()
    else:
        assert "not an owner" in viewer.why_not


def test_without_sign_in_actions_carry_the_local_account_labelled_unauthenticated(plan: Plan) -> None:
    viewer = viewer_for(plan, authenticated=False, email=None, local_actions=True, environ={"USER": "cmio"})
    assert (viewer.actor, viewer.email, viewer.authenticated, viewer.can_act) == (
        "cmio (unauthenticated)",
        None,
        False,
        True,
    )
    assert not viewer_for(plan, authenticated=False, email=None).can_act  # read-only by default
    assert local_actor({"USERNAME": "quality"}) == "quality (unauthenticated)"


def test_route_urls_are_masked_but_model_and_dashboard_urls_stay() -> None:
    text = (
        "deployment:\n  base_url: http://llm.internal/v1\nalerts:\n  routes:\n"
        "    - {name: slack, type: slack, url: https://hooks.slack.com/services/T0/B0/SECRET}\n"
        "    - name: hook\n      url: https://hooks.example/abc?token=SECRET # on-call\n"
        "  dashboard_url: http://127.0.0.1:8501\n"
    )
    masked = masked_plan(text, None)
    assert "SECRET" not in masked
    assert masked.count("•••• (masked)") == 2
    assert "base_url: http://llm.internal/v1" in masked and "dashboard_url: http://127.0.0.1:8501" in masked


class _Unparsable:
    def __contains__(self, key: object) -> bool:
        raise StreamlitSecretNotFoundError("secrets.toml: invalid TOML")


def test_an_unreadable_secrets_file_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "secrets.toml"
    monkeypatch.setattr(st, "secrets", _Unparsable())
    monkeypatch.setattr(auth, "secret_files", lambda: [secrets])
    assert auth.auth_configured() is False  # no file at all: plainly unauthenticated
    secrets.write_text("[auth\nclient_id = 'x'\n")
    with pytest.raises(auth.SecretsUnreadable, match="secrets.toml"):
        auth.auth_configured()
