"""A model change and what followed it are one family: one page to on-call, shown as one block on the
Alerts page, and an action on the parent (acknowledge, silence) acts on its children, each audited.

Everything goes through the real functions on the seeded, stored database: ``apply_signals`` with
the plan's notification policy, the dashboard's actions, the Alerts page in Streamlit's AppTest."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from medmon.alerts import (
    AlertStatus,
    Incident,
    Notification,
    active_silences,
    apply_signals,
    incident_children,
    incident_members,
    incident_status,
    open_incidents,
    resolve_incident,
)
from medmon.alerts.rules import Rule
from medmon.dashboards.actions import acknowledge_incidents, silence_incidents
from medmon.dashboards.auth import Viewer
from medmon.db import utcnow
from medmon.monitor.governance.audit import list_events
from medmon.monitor.plan.model import load_plan
from medmon.monitor.read import live_policy
from tests.alerts.helpers import fire
from tests.dashboards.seed import OWNER, Seeded

ONCALL = Viewer(OWNER, OWNER, True, True, verified=True)


def _store_family(seeded: Seeded, engine: Engine, start: datetime) -> tuple[int, list[int]]:
    """A model change on knowledge-qa, the same change seen on dose-calc 10 minutes later, then a subgroup
    gap on dose-calc and failing calls on knowledge-qa: stored as the pipeline stores them."""
    policy = live_policy(load_plan(seeded.plan_path))
    with Session(engine) as s:
        for old in [i for i in open_incidents(s) if i.cause == "model_change" and i.parent_id is None]:
            resolve_incident(s, old.id or 0, "oncall", "the seed's change, handled", start, children=True)
        apply_signals(s, [fire("knowledge-qa", "served_model", Rule.model_change)], policy, start)
        apply_signals(s, [fire("dose-calc", "served_model", Rule.model_change)], policy, start + timedelta(minutes=10))
        apply_signals(s, [fire("dose-calc", "gap[sex=F]", Rule.subgroup_gap)], policy, start + timedelta(hours=1))
        apply_signals(s, [fire("knowledge-qa", "error_rate", Rule.probes_failing)], policy, start + timedelta(hours=2))
        s.commit()
        [parent] = [i for i in open_incidents(s) if i.cause == "model_change" and i.parent_id is None]
        return parent.id or 0, [c.id or 0 for c in incident_children(s, parent.id or 0)]


def test_the_alerts_page_shows_a_model_change_and_what_followed_as_one_family_and_one_page(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    parent_id, children = _store_family(seeded, seeded_engine, utcnow() - timedelta(hours=3))
    with Session(seeded_engine) as s:
        kids = [s.get(Incident, c) for c in children]
        assert [(k.task_id, k.cause) for k in kids if k] == [
            ("dose-calc", "model_change"),
            ("dose-calc", "subgroup_gap"),
            ("knowledge-qa", "availability"),
        ]
        parent_key = s.get(Incident, parent_id).key  # type: ignore[union-attr]
        family = {parent_id, *children}
        sent = [
            n
            for n in s.exec(select(Notification).order_by(col(Notification.id))).all()
            if n.payload.get("incident", {}).get("id") in family
        ]
    # One page to on-call: every notification about the family is in the parent's group and about the
    # parent; after the first (the page), each is an update of it (a new signal) that lists the children.
    assert sent and {n.group_key for n in sent} == {parent_key}
    assert {n.payload["incident"]["id"] for n in sent} == {parent_id}
    assert [n.payload["reason"] for n in sent[1:]] == ["new_firing"] * len(children)
    assert [c["id"] for c in sent[-1].payload["incident"]["children"]] == children

    at = open_page("alerts")
    table = next(d.value for d in at.dataframe if "part of" in d.value.columns)
    rows = table[table["id"].isin([parent_id, *children])]
    assert rows["id"].tolist()[0] == parent_id and sorted(rows["id"].tolist()[1:]) == children
    assert rows.index.tolist() == list(range(rows.index[0], rows.index[0] + len(rows)))  # the parent, then its children
    assert not rows.iloc[0]["incident"].startswith("↳") and rows.iloc[0]["part of"] in ("", "—")
    assert rows.iloc[0]["followed by"] == ", ".join(f"#{c}" for c in children)
    assert all(t.startswith("↳ ") for t in rows.iloc[1:]["incident"])
    assert set(rows.iloc[1:]["part of"]) == {f"#{parent_id}"}
    boxes = {b.key: b.label for b in at.checkbox if b.key and b.key.startswith("incident_")}
    assert boxes[f"incident_{parent_id}"].endswith("3 incident(s) followed it")
    assert all(boxes[f"incident_{c}"].endswith(f"followed model change #{parent_id}") for c in children)


def test_acknowledging_or_silencing_the_parent_acts_on_its_family_and_audits_each(
    seeded: Seeded, seeded_engine: Engine
) -> None:
    plan = load_plan(seeded.plan_path)
    now = utcnow()
    parent_id, children = _store_family(seeded, seeded_engine, now - timedelta(hours=3))

    acknowledge_incidents(seeded_engine, plan, ONCALL, [parent_id], "asking the vendor about the swap", now)
    with Session(seeded_engine) as s:
        family = [s.get(Incident, i) for i in [parent_id, *children]]
        assert {(i.acknowledged_by if i else None) for i in family} == {OWNER}
        acks = {e.subject: e.details for e in list_events(s, kind="alert_acknowledged")}
    assert set(acks) == {f"incident:{i}" for i in [parent_id, *children]}
    assert all(acks[f"incident:{c}"]["with"] == parent_id for c in children)
    assert "with" not in acks[f"incident:{parent_id}"]

    silence_incidents(seeded_engine, ONCALL, [parent_id], "vendor rollback tonight", timedelta(hours=4), now)
    later = now + timedelta(minutes=30)
    policy = live_policy(plan)
    with Session(seeded_engine) as s:  # a child that opens while the parent's silence lasts is silenced too
        apply_signals(s, [fire("dose-calc", "error_rate", Rule.probes_failing)], policy, later)
        s.commit()
        silences = active_silences(s, later)
        family = [s.get(Incident, i) for i in [parent_id, *children]]
        newest = incident_children(s, parent_id)[-1]
        assert newest.id not in children
        for inc in [*family, newest]:
            assert inc is not None
            assert incident_status(inc, incident_members(s, inc.id or 0), silences, later) == AlertStatus.silenced
        muted = {e.subject: e.details for e in list_events(s, kind="alert_silenced")}
    assert set(muted) == {f"incident:{i}" for i in [parent_id, *children]}
    assert all(muted[f"incident:{c}"]["with"] == parent_id for c in children)
    assert len({d["silence_id"] for d in muted.values()}) == len(muted)  # one silence per incident
