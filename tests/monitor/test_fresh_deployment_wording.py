"""A fresh deployment, before go-live approval, never says "approved" where nothing was approved.

The record has a plan recorded by `medmon check` and real probe runs against the simulator
(below the minimum, so the below-minimum alert fires), and no approval of any kind. Every
surface a user reads is collected: the committee report (HTML), its JSON, the alerts' text,
`medmon approvals list` and `medmon check`. Each "approved" in them must be a "not approved",
"not yet approved" or an instruction ("once approved", "until ... approved", "approve").
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from medmon.alerts import open_alerts
from medmon.monitor.cli.app import app
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

runner = CliRunner()
# What may stand before "approved" without claiming an approval.
HONEST = re.compile(
    r"(not yet|not|no|un|once|until (?:an owner |it is |go-live is )?|awaiting|is|be|been|proven go-live)\s*$",
    re.IGNORECASE,
)


def claims(text: str) -> list[str]:
    """Each "approved" in ``text`` whose preceding words do not say it is not (yet) approved."""
    flat = " ".join(re.sub(r"<[^>]+>", " ", text).split()).replace('"approved": false', "")
    out = []
    for m in re.finditer(r"approved", flat, re.IGNORECASE):
        before = flat[max(0, m.start() - 40) : m.start()]
        if not HONEST.search(before) and "unapproved" not in flat[m.start() - 2 : m.end()]:
            out.append(flat[max(0, m.start() - 60) : m.end() + 30])
    return out


def test_before_go_live_no_surface_says_approved(
    tmp_path: Path, engine: Engine, db_url: str, serve: Callable[..., Any]
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.3)], seed=4))
    data = plan_dict(
        storage={"url": db_url},
        deployment={"base_url": f"{sim.url}/v1", "model": "medmon-simulator/clinical-v1", "api_key_env": "X"},
    )
    data["tasks"][0] |= {"sample_size": 30, "thresholds": {"min_score": 0.9}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    checked = runner.invoke(app, ["check", str(path)])
    assert checked.exit_code == 0, checked.output
    plan = load_plan(path)
    ctx = load_context(plan, plan.tasks[0])
    t = datetime(2026, 11, 2, tzinfo=UTC)
    for i in range(3):
        at = t + timedelta(hours=i)
        run_task_probe(engine, plan, ctx, rng=random.Random(i), now=lambda at=at: at)
    with Session(engine) as session:
        alerts = open_alerts(session)
    below = [a for a in alerts if "minimum" in (a.summary or "")]
    assert below, [a.summary for a in alerts]  # the below-minimum alert fired
    html = tmp_path / "nov.html"
    made = runner.invoke(app, ["report", str(path), "--period", "2026-11", "--output", str(html), "--no-pdf"])
    assert made.exit_code == 0, made.output
    summary = runner.invoke(app, ["report", str(path), "--period", "2026-11", "--json"]).stdout
    listed = runner.invoke(app, ["approvals", "list", str(path)]).output
    surfaces = {
        "report": html.read_text("utf-8"),
        "report --json": json.dumps(json.loads(summary)),
        "alerts": "\n".join(a.summary or "" for a in alerts),
        "approvals list": listed,
        "check": runner.invoke(app, ["check", str(path)]).output,
    }
    assert "go-live not yet approved" in " ".join(listed.split())
    assert "not yet approved" in surfaces["alerts"]
    found = {name: claims(text) for name, text in surfaces.items()}
    assert found == {name: [] for name in surfaces}
