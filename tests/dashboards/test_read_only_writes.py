"""The review's attacks on the "read-only" dashboard, re-run: without sign-in (even with
``--allow-local-actions``) nobody rates answers as a named reviewer, opens or grades safety events,
suspends or resumes; reviewers are verified and rate only as themselves; a page on another
localhost port is refused by the Origin check."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from medmon.dashboards.actions import rate_answer
from medmon.dashboards.auth import NotAllowed, may_act, origin_refusal, signed_in_owner, viewer_for
from medmon.db import session_scope, utcnow
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.models import ClinicianReview, SafetyEvent
from medmon.monitor.plan.model import Plan, load_plan
from tests.dashboards.conftest import AUTH_SECRETS
from tests.dashboards.seed import OWNER, Seeded

REVIEWER = "dr.ana@hospital.example"


def _with_reviewer(seeded: Seeded) -> Plan:
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["tasks"][0]["human_review_required"] = True
    data["oversight"] = {
        "reviewers": [{"name": "Dr. Ana", "email": REVIEWER, "tasks": [data["tasks"][0]["id"]]}],
        "review": {"rate": 1.0, "weekly_quota": 10, "double_rate": 0.0},
    }
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_plan(seeded.plan_path)


def _queued(seeded: Seeded, engine: Engine) -> Plan:
    plan = _with_reviewer(seeded)
    with session_scope(engine) as s:
        oversight_pass(s, plan, utcnow())
    return plan


def test_local_actions_reach_only_acknowledge_resolve_and_silence(seeded: Seeded) -> None:
    plan = load_plan(seeded.plan_path)
    local = viewer_for(plan, authenticated=False, email=None, local_actions=True)
    assert all(may_act(local, a) for a in ("acknowledge", "resolve", "silence"))
    for act in ("record safety decisions", "suspend", "resume", "requeue notifications", "approve thresholds"):
        assert not may_act(local, act)
        with pytest.raises(NotAllowed, match="needs a sign-in"):
            signed_in_owner(local, act)
    unverified = viewer_for(plan, authenticated=True, email=OWNER, email_verified=False)
    with pytest.raises(NotAllowed, match="email_verified"):
        signed_in_owner(unverified, "suspend")


def test_unauthenticated_review_page_offers_no_rating_and_names_no_reviewer(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    _queued(seeded, seeded_engine)
    at = open_page("review")  # as `medmon dashboard --allow-local-actions` serves it, no sign-in
    assert not at.exception
    assert [s for s in at.selectbox if s.key == "review_as"] == []  # no choosing whom to rate as
    assert all(b.label != "Submit rating" for b in at.button)
    assert any("verified sign-in" in w.value for w in at.warning)


def test_rating_needs_the_verified_reviewer_and_is_recorded_as_them(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    plan = _queued(seeded, seeded_engine)
    unverified: dict[str, Any] = {"is_logged_in": True, "email": REVIEWER, "email_verified": False}
    at = open_page("review", secrets=AUTH_SECRETS, user=unverified)
    assert all(b.label != "Submit rating" for b in at.button)
    assert any("email_verified" in w.value for w in at.warning)
    at = open_page("review", secrets=AUTH_SECRETS, user=unverified | {"email_verified": True})
    for radio in at.radio:
        radio.set_value(4)
    at.checkbox[0].check()  # a safety concern: opens a safety event as the reviewer
    next(b for b in at.button if b.label == "Submit rating").click().run()
    assert not at.exception
    with Session(seeded_engine) as s:
        [review] = s.exec(select(ClinicianReview)).all()
        [event] = s.exec(select(SafetyEvent)).all()
    assert review.reviewer == REVIEWER and event.severity == "serious"
    # The function the page calls refuses on its own: no viewer but the verified reviewer rates.
    local = viewer_for(plan, authenticated=False, email=None, local_actions=True)
    with pytest.raises(NotAllowed):
        rate_answer(seeded_engine, plan, local, review.item_id, {"accuracy": 1}, "", True, utcnow())


def test_local_actions_do_not_reach_the_safety_page_writes(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["oversight"] = {"suspend": {"url": "http://127.0.0.1:9/flag"}}
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))
    at = open_page("safety")
    assert not at.exception
    keys = {b.key for b in at.button}
    for write in ("open_event", "do_suspend", "do_confirm", "do_resume", "mark_reported", "do_regrade", "do_miss"):
        assert write not in keys, write
    owner = open_page(
        "safety", secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": OWNER, "email_verified": True}
    )
    assert {"open_event", "do_suspend"} <= {b.key for b in owner.button}


@pytest.mark.parametrize(
    ("origin", "host", "refused"),
    [
        ("http://localhost:9999", "127.0.0.1:8501", True),  # another localhost port (the attack)
        ("http://127.0.0.1:8000", "127.0.0.1:8501", True),
        ("https://evil.example", "127.0.0.1:8501", True),
        ("http://127.0.0.1:8501", "127.0.0.1:8501", False),  # the dashboard itself
        ("https://medmon.hospital.example", "medmon.hospital.example", False),  # behind its proxy
        (None, "127.0.0.1:8501", False),  # no web page: a script, judged by Host alone
    ],
)
def test_the_websocket_origin_must_be_the_dashboards_own(
    seeded: Seeded, origin: str | None, host: str, refused: bool
) -> None:
    plan = load_plan(seeded.plan_path)
    headers = {"Host": host} | ({"Origin": origin} if origin else {})
    assert (origin_refusal(plan, headers) is not None) is refused


def test_a_task_owner_acts_on_their_own_task_only(seeded: Seeded, seeded_engine: Engine) -> None:
    from medmon.alerts import Alert, Incident
    from medmon.dashboards.actions import acknowledge_incidents, silence_matching
    from medmon.monitor.governance.roles import Role, roles
    from tests.dashboards.seed import CALC_OWNER

    plan = load_plan(seeded.plan_path)
    assert roles(plan, CALC_OWNER, "dose-calc") == {Role.task_owner}
    assert roles(plan, CALC_OWNER, "knowledge-qa") == frozenset()
    assert Role.clinical_owner in roles(plan, OWNER, "knowledge-qa")
    pharmacist = viewer_for(plan, authenticated=True, email=CALC_OWNER, email_verified=True)
    with Session(seeded_engine) as s:
        alert = s.exec(select(Alert).where(Alert.task_id == "knowledge-qa", Alert.rule == "drift_drop")).one()
        other = alert.incident_id
        assert other is not None and s.get(Incident, other) is not None
    with pytest.raises(NotAllowed, match="may not acknowledge on task 'knowledge-qa'"):
        acknowledge_incidents(seeded_engine, plan, pharmacist, [other], "not mine", utcnow())
    with pytest.raises(NotAllowed, match="may not silence"):
        silence_matching(seeded_engine, pharmacist, "cause=accuracy", "all of them", timedelta(hours=1), utcnow())
    silence_matching(seeded_engine, pharmacist, "task=dose-calc", "pharmacy on it", timedelta(hours=1), utcnow())
    owner = viewer_for(plan, authenticated=True, email=OWNER, email_verified=True)
    assert acknowledge_incidents(seeded_engine, plan, owner, [other], "clinical owner on it", utcnow())
