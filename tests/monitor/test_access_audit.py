"""Every command of ``medmon`` that prints or exports stored text leaves one access entry.

In the manner of datasette's documentation tests: the commands are enumerated from the command
line itself, and each one must be listed here either as a reader of stored text (run below on a
database holding answers, a reviewer's note, a safety narrative and a near miss: it must record
exactly one ``answers_viewed`` entry naming the OS user, the command and how many records) or as
a command that shows none (several of those are run too, and must not print the stored text). A
new command fails :func:`test_every_command_is_classified` until someone decides which it is.
"""

from __future__ import annotations

import getpass
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.db import session_scope, utcnow
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.cli.app import app
from medmon.monitor.governance import safety
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.governance.review import record_review
from medmon.monitor.models import ReviewItem
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from tests.conftest import plan_dict
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT, store_answers

NOTE = "Reviewer note: the dose advice ignored the renal impairment"
NARRATIVE = "Narrative: the same wrong dosing advice reached two wards"
NEAR_MISS = "Near miss: a pharmacist caught the doubled dose"
ANSWER = "Stored answer: start the first-line option"


@dataclass
class Stored:
    plan: Path
    engine: Engine
    event: int
    tmp: Path


# Commands that print or export stored text, with the arguments that make them do so.
READS_STORED_TEXT: dict[str, Callable[[Stored], list[str]]] = {
    "oversight events": lambda s: ["oversight", "events", str(s.plan)],
    "oversight export": lambda s: [
        "oversight",
        "export",
        str(s.plan),
        str(s.event),
        "--output",
        str(s.tmp / "event.json"),
        "--no-pdf",
    ],
    "oversight freeze-judge-set": lambda s: [
        "oversight",
        "freeze-judge-set",
        str(s.plan),
        "--task",
        "knowledge-qa",
        "--output",
        str(s.tmp / "frozen.jsonl"),
    ],
    "report": lambda s: ["report", str(s.plan), "--output", str(s.tmp / "report.html"), "--no-pdf"],
    "audit list": lambda s: ["audit", "list", str(s.plan), "--json", "--limit", "500"],
}

# Commands that show no stored text, and why. The ones that take a plan and run in a moment are
# run below against the same database: their output must not carry the stored text.
NO_STORED_TEXT: dict[str, str] = {
    "init": "writes a starter plan",
    "check": "validates a plan",
    "serve": "the service: the dashboard pages it feeds record their own views",
    "dashboard": "starts the dashboard, whose pages record each view (medmon.dashboards.actions)",
    "demo": "a simulated deployment; prints incident lines and counts",
    "worker": "runs probe jobs; prints nothing stored",
    "simulate": "serves a simulated model",
    "score": "scores text given on the command line, never stored text",
    "probe run": "prints each run's counts, mean score and failure causes",
    "probe identity": "prints the identity run's counts, served model and evidence; answers are never shown",
    "baseline import": "imports HELM evidence (benchmark text, not this deployment's)",
    "baseline list": "baseline figures",
    "baseline show": "baseline figures",
    "baseline approve": "a governance act on figures",
    "baseline proposals": "baseline figures",
    "approvals list": "thresholds and approvals",
    "approvals thresholds": "a governance act on thresholds",
    "approvals go-live": "a governance act",
    "db upgrade": "schema migrations",
    "db current": "schema revision",
    "audit verify": "hashes and counts",
    "change record": "a change record",
    "change list": "change records (settings, not stored answers)",
    "change reevaluations": "re-evaluation figures",
    "drift report": "distributions of length, latency, score and cost",
    "drift list": "drift report figures",
    "oversight pass": "review counts and alert summaries",
    "oversight agreement": "agreement statistics",
    "oversight clinician-scale": "clinician-scale estimates",
    "traffic import": "stores spans; prints counts",
    "traffic status": "traffic counts",
    "retention purge": "deletes past retention; prints counts",
}

RUN_QUIETLY = {
    "audit verify": lambda s: ["audit", "verify", str(s.plan)],
    "audit list (table)": lambda s: ["audit", "list", str(s.plan)],
    "oversight events --json": lambda s: ["oversight", "events", str(s.plan), "--json"],
    "oversight agreement": lambda s: ["oversight", "agreement", str(s.plan)],
    "oversight clinician-scale": lambda s: ["oversight", "clinician-scale", str(s.plan)],
    "approvals list": lambda s: ["approvals", "list", str(s.plan)],
    "change list": lambda s: ["change", "list", str(s.plan)],
    "retention purge --dry-run": lambda s: ["retention", "purge", str(s.plan), "--dry-run"],
}


def cli_commands() -> list[str]:
    """Every command of ``medmon`` as typed (``oversight export``), read from the command line itself."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)

    def walk(command: Any, prefix: tuple[str, ...]) -> Iterator[str]:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                yield from walk(command.get_command(ctx, name), (*prefix, name))
        else:
            yield " ".join(prefix)

    return list(walk(root, ()))


def test_every_command_is_classified() -> None:
    commands = set(cli_commands())
    unclassified = sorted(commands - set(READS_STORED_TEXT) - set(NO_STORED_TEXT))
    assert not unclassified, (
        f"medmon {', medmon '.join(unclassified)}: say in {__file__} whether it shows stored text; a command "
        "that does must record it with medmon.monitor.governance.access.record_text_read"
    )
    assert not set(READS_STORED_TEXT) & set(NO_STORED_TEXT)
    assert not (set(READS_STORED_TEXT) | set(NO_STORED_TEXT)) - commands, "a listed command no longer exists"


@pytest.fixture(scope="module")
def stored(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    tmp = tmp_path_factory.mktemp("access")
    data = plan_dict(storage={"url": module_db_url}, oversight={**OVERSIGHT, "review": {"rate": 1.0}})
    data["tasks"][0] |= {"human_review_required": True}
    plan_path = tmp / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(data))
    plan = parse_plan(plan_path.read_text())
    engine = make_engine(module_db_url)
    now = utcnow()
    pack = load_pack("clinical_knowledge_mcq").canaries
    with session_scope(engine) as s:
        ids = store_answers(s, "knowledge-qa", 4, now - timedelta(hours=1))
        for rid, canary in zip(ids, pack, strict=False):
            result = s.get(ProbeResult, rid)
            assert result is not None
            result.canary_id, result.answer = canary.id, ANSWER
        oversight_pass(s, plan, now)
    with session_scope(engine) as s:
        for item in s.exec(select(ReviewItem)).all():
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=item.reviewer,
                scores=dict.fromkeys(CRITERIA, 4),
                note=NOTE,
                safety_concern=False,
                actor=item.reviewer,
                now=now,
            )
        event = safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="serious",
            source="person",
            what_happened=NARRATIVE,
            actor="owner@hospital.example",
            now=now,
            result_ids=ids[:1],
        )
        safety.record_near_miss(s, plan, "knowledge-qa", NEAR_MISS, "owner@hospital.example", now)
        event_id = event.id or 0
    random.seed(0)
    yield Stored(plan_path, engine, event_id, tmp)
    engine.dispose()


def _reads(engine: Engine) -> list[Any]:
    with Session(engine) as session:
        return list_events(session, kind=AuditKind.answers_viewed)


def _shown(result: Any, stored: Stored) -> str:
    written = "".join(p.read_text("utf-8") for p in stored.tmp.iterdir() if p.suffix in (".json", ".jsonl", ".html"))
    return result.output + written


@pytest.mark.parametrize("command", sorted(READS_STORED_TEXT))
def test_each_command_that_reads_stored_text_records_one_access_entry(command: str, stored: Stored) -> None:
    for old in stored.tmp.iterdir():
        if old.suffix != ".yaml":
            old.unlink()
    before = len(_reads(stored.engine))
    result = CliRunner().invoke(app, READS_STORED_TEXT[command](stored))
    assert result.exit_code in (0, 1), result.output  # 1: something needs attention (a due clock)
    shown = _shown(result, stored)
    assert any(text in shown for text in (NOTE, NARRATIVE, NEAR_MISS, ANSWER)), shown[:2000]  # it did read text
    reads = _reads(stored.engine)[before:]
    assert len(reads) == 1, [r.details for r in reads]  # one entry per invocation, not one per row
    [read] = reads
    assert read.details["via"] == "cli" and read.details["authenticated"] is False
    assert read.details["command"].startswith(f"medmon {command}")
    assert read.details["os_user"].startswith(f"{getpass.getuser()}@") and read.actor.endswith("(unauthenticated)")
    assert read.details["rows"] >= 1 and read.details["what"]


@pytest.mark.parametrize("command", sorted(RUN_QUIETLY))
def test_commands_listed_as_showing_no_stored_text_show_none_and_record_nothing(command: str, stored: Stored) -> None:
    before = len(_reads(stored.engine))
    result = CliRunner().invoke(app, RUN_QUIETLY[command](stored))
    assert result.exit_code in (0, 1), result.output
    assert not any(text in result.output for text in (NOTE, NARRATIVE, NEAR_MISS, ANSWER)), result.output
    assert len(_reads(stored.engine)) == before
