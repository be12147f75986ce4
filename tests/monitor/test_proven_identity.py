"""Who really acted: an unauthenticated command-line act is recorded and never counts; a signed one does.

The keys are real Ed25519 keys made by the ``cryptography`` library and written as OpenSSH
files, the form ``ssh-keygen -t ed25519`` writes; the plan lists the public key beside the person.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.engine import Engine
from sqlmodel import Session
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.governance.effective import effective_tasks
from medmon.monitor.plan.model import load_plan
from tests.conftest import plan_dict

runner = CliRunner()
OWNER = "owner@hospital.example"


def make_key(folder: Path, name: str) -> tuple[Path, str]:
    """An Ed25519 private key file (OpenSSH format) and its public key line."""
    key = Ed25519PrivateKey.generate()
    path = folder / name
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, public.decode("ascii") + f" {name}"


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def flat(text: str) -> str:
    return " ".join(text.split())


def setup(tmp_path: Path, db_url: str) -> tuple[Path, dict[str, Any], Path]:
    key, public = make_key(tmp_path, "id_owner")
    data = plan_dict(storage={"url": db_url})
    data["owners"]["clinical"]["keys"] = [public]
    path = write(tmp_path / "plan.yaml", data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    return path, data, key


def test_only_the_signed_threshold_approval_counts_and_the_report_says_which(
    tmp_path: Path, db_url: str, engine: Engine
) -> None:
    path, data, key = setup(tmp_path, db_url)
    data["tasks"][0]["thresholds"]["min_score"] = 0.8
    write(path, data)
    base = ["approvals", "thresholds", str(path), "--task", "knowledge-qa", "--by", OWNER, "--reason", "validated"]

    typed = runner.invoke(app, base)
    assert typed.exit_code == 3, typed.output
    assert "NOT counted" in flat(typed.output) and "unauthenticated" in typed.output
    plan = load_plan(path)
    with Session(engine) as session:
        [effective] = effective_tasks(session, plan)
        [claim] = list_events(session, kind=AuditKind.unproven_act)
        assert list_events(session, kind=AuditKind.threshold_approved) == []
    assert effective.thresholds.min_score == 0.7 and not effective.thresholds_approved
    assert "not yet approved" in effective.in_force_words
    assert claim.actor.endswith("(unauthenticated)") and "via medmon approvals thresholds" in claim.actor
    assert claim.details["claimed_by"] == OWNER and claim.details["authenticated"] is False

    stranger_key, _ = make_key(tmp_path, "id_stranger")
    refused = runner.invoke(app, [*base, "--key", str(stranger_key)])
    assert refused.exit_code == 2 and "not registered to owner@hospital.example" in flat(refused.output)

    signed = runner.invoke(app, [*base, "--key", str(key), "--json"])
    assert signed.exit_code == 0, signed.output
    assert "signed with key SHA256:" in json.loads(signed.stdout)["identity"]
    with Session(engine) as session:
        [effective] = effective_tasks(session, plan)
        [approval] = list_events(session, kind=AuditKind.threshold_approved)
    assert effective.thresholds.min_score == 0.8 and effective.thresholds_approved
    assert approval.actor == OWNER and approval.details["via"] == "cli-key" and approval.details["signature"]
    assert approval.details["os_user"].endswith("via medmon approvals thresholds")

    html = tmp_path / "report.html"
    period = f"{approval.at:%Y-%m}"
    made = runner.invoke(app, ["report", str(path), "--period", period, "--output", str(html), "--no-pdf"])
    assert made.exit_code == 0, made.output
    page = flat(html.read_text("utf-8"))
    assert "NOT COUNTED: threshold_approved claimed for owner@hospital.example without proof of identity" in page
    assert "unauthenticated (" in page and ": not counted" in page
    assert "signed with key SHA256:" in page


def test_a_report_sign_off_counts_only_when_signed(tmp_path: Path, db_url: str, engine: Engine) -> None:
    path, _, key = setup(tmp_path, db_url)
    html = tmp_path / "report.html"
    made = runner.invoke(app, ["report", str(path), "--period", "2026-11", "--json"])
    digest = json.loads(made.stdout)["sha256"]
    sign = ["report", str(path), "--period", "2026-11", "--output", str(html), "--no-pdf", "--sign", OWNER]
    typed = runner.invoke(app, [*sign, "--hash", digest])
    assert typed.exit_code == 3, typed.output
    page = flat(html.read_text("utf-8"))
    assert "Claimed without proof of identity, not counted as signatures: owner@hospital.example" in page
    assert "Not yet signed" in page
    signed = runner.invoke(app, [*sign, "--hash", digest, "--key", str(key)])
    assert signed.exit_code == 0, signed.output
    page = flat(html.read_text("utf-8"))
    assert 'id="signatures"' in page and "signed with key SHA256:" in page and "Not yet signed" not in page
    with Session(engine) as session:
        signed_entries = list_events(session, kind=AuditKind.report_signed)
        generated = list_events(session, kind=AuditKind.report_generated)
    assert [e.actor for e in signed_entries] == [OWNER]
    assert all("via medmon report" in e.actor for e in generated)  # generated by the OS account, not a typed e-mail


def test_go_live_is_not_yet_approved_until_a_signed_approval(tmp_path: Path, db_url: str, engine: Engine) -> None:
    path, _, key = setup(tmp_path, db_url)
    listed = runner.invoke(app, ["approvals", "list", str(path), "--json"])
    assert json.loads(listed.stdout)["go_live"]["approved"] is False
    assert "go-live not yet approved" in json.loads(listed.stdout)["go_live"]["words"]
    base = ["approvals", "go-live", str(path), "--by", OWNER, "--reason", "AI committee 2026-11-12, minute 3"]
    assert runner.invoke(app, base).exit_code == 3
    listed = json.loads(runner.invoke(app, ["approvals", "list", str(path), "--json"]).stdout)
    assert listed["go_live"]["approved"] is False and "1 claim(s) without proof" in listed["go_live"]["words"]
    done = runner.invoke(app, [*base, "--key", str(key)])
    assert done.exit_code == 0, done.output
    listed = json.loads(runner.invoke(app, ["approvals", "list", str(path), "--json"]).stdout)
    assert listed["go_live"]["approved"] is True and listed["go_live"]["by"] == OWNER
    with Session(engine) as session:
        [effective] = effective_tasks(session, load_plan(path))
    assert effective.thresholds_source == "go-live approved" and "approved at go-live by" in effective.in_force_words
