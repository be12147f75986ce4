"""Correlation across tasks, rule by rule: what follows a model change on the deployment is its child (one
page, one timeline); what came before, the judges and the monitor itself are not; resolving the parent
may resolve its children, a child resolved alone leaves the parent open."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.alerts import (
    Notification,
    NotifyPolicy,
    acknowledge_incident,
    apply_signals,
    get_incident,
    open_incidents,
    resolve_incident,
)
from medmon.alerts.correlation import CHANGE_WINDOW, incident_children
from medmon.alerts.rules import Rule
from medmon.monitor.plan.model import load_plan
from medmon.monitor.plan.routing import notify_policy
from medmon.monitor.read.incidents import open_incidents_view
from tests.alerts.helpers import FakeClock, fire
from tests.conftest import plan_dict


def swap(task: str = "dosing") -> list:
    return [fire(task, "served_model", Rule.model_change)]


def notifications(session: Session) -> list[Notification]:
    return list(session.exec(select(Notification).order_by(Notification.id)).all())


def _family(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> tuple[int, list[int]]:
    """A model change on dosing, the same change on triage, then a drop on each and a cost rise."""
    with Session(engine) as s:
        apply_signals(s, swap("dosing"), policy, clock())
        clock.advance(minutes=20)
        apply_signals(s, swap("triage"), policy, clock())
        clock.advance(hours=3)
        apply_signals(s, [fire("dosing", "score")], policy, clock())
        clock.advance(minutes=20)
        apply_signals(s, [fire("triage", "score"), fire("triage", "cost", Rule.cost_over_budget)], policy, clock())
        s.commit()
        [parent] = [i for i in open_incidents(s) if i.parent_id is None]
        return parent.id or 0, [c.id or 0 for c in incident_children(s, parent.id or 0)]


def test_what_follows_a_model_change_on_any_task_is_its_child_and_pages_once(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    parent_id, children = _family(engine, policy, clock)
    with Session(engine) as s:
        parent = get_incident(s, parent_id)
        assert (parent.task_id, parent.cause) == ("dosing", "model_change")
        kids = [get_incident(s, c) for c in children]
        assert [(c.task_id, c.cause) for c in kids] == [
            ("triage", "model_change"),
            ("dosing", "accuracy"),
            ("triage", "accuracy"),  # the cost rise of the same moment is one problem with the drop
        ]
        sent = notifications(s)
        assert [n.payload["reason"] for n in sent] == ["new_group"] + ["new_firing"] * (len(sent) - 1)
        assert {n.group_key for n in sent} == {parent.key}
        assert {n.payload["incident"]["id"] for n in sent} == {parent_id}
        assert [c["id"] for c in sent[-1].payload["incident"]["children"]] == children
        view = next(v for v in open_incidents_view(s, clock()) if v.id == parent_id)
    # One timeline: the children opening and their signals firing, in time order.
    assert [(e.incident, e.what, e.rule) for e in view.timeline] == [
        (parent_id, "firing", "model_change"),
        (children[0], "opened", "model_change"),
        (children[0], "firing", "model_change"),
        (children[1], "opened", "accuracy"),
        (children[1], "firing", "drift_drop"),
        (children[2], "opened", "accuracy"),
        (children[2], "firing", "drift_drop"),
        (children[2], "firing", "cost_over_budget"),
    ]
    assert [e.at for e in view.timeline] == sorted(e.at for e in view.timeline)


def test_a_child_resolved_alone_leaves_the_parent_open(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    parent_id, children = _family(engine, policy, clock)
    with Session(engine) as s:
        clock.advance(minutes=10)
        resolve_incident(s, children[1], "dr.owner", "rescored by hand: fine", clock(), routes=policy)
        s.commit()
        assert get_incident(s, children[1]).closed_at is not None
        assert get_incident(s, parent_id).closed_at is None
        last = notifications(s)[-1].payload
        assert last["event"] == "resolved" and last["incident"]["id"] == parent_id  # an update of the one page
        assert last["incident"]["status"] == "firing"


def test_resolving_the_parent_with_its_children_closes_the_family_in_one_notification(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    parent_id, children = _family(engine, policy, clock)
    with Session(engine) as s:
        before = len(notifications(s))
        clock.advance(minutes=10)
        resolve_incident(s, parent_id, "oncall", "vendor reverted to v1", clock(), routes=policy, children=True)
        s.commit()
        assert all(get_incident(s, i).closed_at is not None for i in [parent_id, *children])
        assert get_incident(s, children[0]).resolve_reason == f"with incident #{parent_id}: vendor reverted to v1"
        [done] = notifications(s)[before:]
        assert done.payload["event"] == "resolved" and done.payload["incident"]["status"] == "resolved"
        assert {c["status"] for c in done.payload["incident"]["children"]} == {"resolved"}


def test_resolving_the_parent_alone_leaves_the_children_to_page_on_their_own(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    parent_id, children = _family(engine, policy, clock)
    with Session(engine) as s:
        clock.advance(minutes=10)
        resolve_incident(s, parent_id, "oncall", "change accepted", clock(), routes=policy)
        s.commit()
        assert get_incident(s, parent_id).closed_at is not None
        assert all(get_incident(s, c).closed_at is None for c in children)
        new_pages = [n.payload for n in notifications(s) if n.payload["reason"] == "new_group"][1:]
        assert sorted(p["incident"]["id"] for p in new_pages) == children  # each child is its own page now


def test_acknowledging_the_parent_covers_its_children_and_those_that_follow(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    parent_id, children = _family(engine, policy, clock)
    with Session(engine) as s:
        acknowledge_incident(s, parent_id, "oncall", "asking the vendor", clock(), routes=policy)
        clock.advance(hours=1)
        apply_signals(s, [fire("dosing", "latency", Rule.latency_over_objective)], policy, clock())
        s.commit()
        kids = incident_children(s, parent_id)
        assert len(kids) == len(children) + 1
        assert all(c.acknowledged_by == "oncall" for c in kids)


def test_what_came_before_the_change_the_judges_and_the_monitor_stay_apart(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, [fire("dosing", "score")], policy, clock())  # before the change: not caused by it
        clock.advance(hours=1)
        apply_signals(s, swap("triage"), policy, clock())
        clock.advance(hours=1)
        apply_signals(s, [fire("triage", "jury_agreement", Rule.jury_disagreement)], policy, clock())
        apply_signals(s, [fire("", "heartbeat", Rule.heartbeat)], policy, clock())
        s.commit()
        assert all(i.parent_id is None for i in open_incidents(s))
        assert len({n.group_key for n in notifications(s) if n.payload["reason"] == "new_group"}) == 4


def test_after_the_window_a_drop_is_its_own_incident(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signals(s, swap("dosing"), policy, clock())
        clock.advance(seconds=CHANGE_WINDOW.total_seconds() + 60)
        apply_signals(s, [fire("triage", "score")], policy, clock())
        s.commit()
        assert all(i.parent_id is None for i in open_incidents(s))


def test_the_plan_sets_the_window_and_what_opens_after_it_is_its_own_incident(
    tmp_path: Path, engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    """``alerts.correlation_window: 2h`` reaches the policy; a drop 3 h after the change pages on its own,
    while one 1 h after it is the change's child."""
    (tmp_path / "default.yaml").write_text(yaml.safe_dump(plan_dict()))
    assert (
        notify_policy(load_plan(tmp_path / "default.yaml")).correlation_window == CHANGE_WINDOW == timedelta(hours=72)
    )
    data = plan_dict()
    data["alerts"]["correlation_window"] = "2h"
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    short = notify_policy(load_plan(tmp_path / "plan.yaml"))
    assert short.correlation_window == timedelta(hours=2)
    short = replace(policy, correlation_window=short.correlation_window)
    with Session(engine) as s:
        apply_signals(s, swap("dosing"), short, clock())
        clock.advance(hours=1)
        apply_signals(s, [fire("dosing", "score")], short, clock())
        clock.advance(hours=2)
        apply_signals(s, [fire("triage", "score")], short, clock())
        s.commit()
        by_task = {(i.task_id, i.cause): i for i in open_incidents(s)}
        parent = by_task[("dosing", "model_change")]
        assert by_task[("dosing", "accuracy")].parent_id == parent.id
        assert by_task[("triage", "accuracy")].parent_id is None
