"""A governance tally read from the record: a demo database, human acts on it, then only what was stored.

    .venv/bin/python benchmarks/governance_record.py [--workdir DIR] [--json]

1. ``medmon demo --no-dashboard`` builds a database on the simulated model (probes, drift, alerts).
2. People act on it as they would: Ed25519 keys are registered in the plan beside the clinical and
   technical owners, a threshold and a task's decoding are edited and ``medmon check`` records
   the plan; ``medmon approvals thresholds`` once without ``--key`` and once signed; a baseline
   imported and approved (``baseline import``/``approve --key``); a report rendered before
   go-live, then ``approvals go-live --key``; a committee decision and a high-risk suspension
   (request and a second owner's confirmation) through the functions the dashboard calls after
   sign-in (neither has a command line); a safety event exported (``oversight export``: an access
   read); the report signed (``report --sign --hash --key``); and, the OS clock set 6 years ahead
   with ``faketime`` when it is installed, ``medmon retention purge``.
3. Tampering on copies of the database (a score edited, a result deleted, one inserted) and
   ``medmon audit verify`` on each; the report rendered on the edited copy.
4. The tally, from the stored records only (``medmon audit list --json``, ``medmon change list
   --json``, ``medmon audit verify --json``, the rendered reports): for each "Done when" item of
   issue 29 and for R11, R13, R14 and R21, met / partly / not, with the audit seqs and record ids.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MEDMON = str(Path(sys.executable).with_name("medmon"))
CLINICAL, TECHNICAL = "cmio@hospital.example", "ds-team@hospital.example"


@dataclass
class Step:
    what: str
    argv: list[str]
    code: int
    out: str


@dataclass
class Run:
    work: Path
    plan: Path
    days: int = 0  # the demo's clock ran ahead: people act this many days after today (faketime)
    steps: list[Step] = field(default_factory=list)

    def cli(self, what: str, *args: str, expect: tuple[int, ...] = (0,), later_days: int = 0) -> Step:
        return self.run(what, [MEDMON, *args], expect=expect, later_days=later_days)

    def run(self, what: str, command: list[str], *, expect: tuple[int, ...] = (0,), later_days: int = 0) -> Step:
        argv = ["faketime", "-f", f"+{self.days + later_days}d", *command]
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=self.work, env=os.environ | {"TZ": "UTC"}, timeout=600
        )
        step = Step(what, command, done.returncode, done.stdout + done.stderr)
        self.steps.append(step)
        if done.returncode not in expect:
            raise SystemExit(f"{what}: exit {done.returncode}, expected {expect}\n{step.out}")
        return step


def _key(folder: Path, name: str) -> tuple[Path, str]:
    key = Ed25519PrivateKey.generate()
    path = folder / name
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, f"{public.decode('ascii')} {name}"


def _db(plan: Path) -> Path:
    url = yaml.safe_load(plan.read_text())["storage"]["url"]
    return Path(url.removeprefix("sqlite:///"))


def act(run: Run) -> dict[str, Any]:
    """Every human act, through the command line where one exists; what each returned."""
    facts: dict[str, Any] = {}
    clinical_key, clinical_pub = _key(run.work, "id_cmio")
    technical_key, technical_pub = _key(run.work, "id_ds")
    data = yaml.safe_load(run.plan.read_text())
    data["owners"]["clinical"]["keys"] = [clinical_pub]
    data["owners"]["technical"]["keys"] = [technical_pub]
    task = data["tasks"][0]
    task["owner"]["keys"] = [clinical_pub]
    task["thresholds"]["min_score"] = 0.72  # a proposal until an owner approves it
    task["decoding"] = {"temperature": 0.2}  # a change of what is sent: a change record
    data["governance"]["change_control"] = {
        "anticipated": [
            {
                "kind": "decoding",
                "protocol": "re-evaluate once; the task owner adopts",
                "acceptance": "within tolerated_drop of the baseline",
                "max_drop": 0.05,
                "full_review_when": "the intended use changes",
            }
        ]
    }
    data.setdefault("oversight", {})["suspend"] = {
        "type": "command",
        "command": [sys.executable, "-c", "import sys; sys.stdin.read()"],  # the gateway's switch, local
    }
    run.plan.write_text(yaml.safe_dump(data, sort_keys=False))
    plan = str(run.plan)
    run.cli("record the edited plan", "check", plan)
    pre = run.work / "report-before-go-live.html"
    run.cli("report before go-live", "report", plan, "--output", str(pre), "--no-pdf")
    facts["report_before_go_live"] = pre
    tid = task["id"]
    reason = ("--reason", "fewer missed drops; committee minute 12")
    run.cli(
        "threshold approval, unauthenticated",
        *("approvals", "thresholds", plan, "--task", tid, "--by", CLINICAL, *reason),
        expect=(3,),
    )
    run.cli(
        "threshold approval, signed",
        *("approvals", "thresholds", plan, "--task", tid, "--by", CLINICAL, *reason, "--key", str(clinical_key)),
    )
    scores = run.work / "vendor.csv"
    scores.write_text(
        f"model,benchmark,metric,value,n,source\n{data['deployment']['model']},med_qa,exact_match,0.86,1273,"
        "vendor model card\n"
    )
    run.cli("baseline import", "baseline", "import", str(scores), "--db", data["storage"]["url"])
    proposals = json.loads(run.cli("baseline proposals", "baseline", "proposals", plan, "--json").out)
    proposed = next(p["baseline_id"] for p in proposals if p["task"] == tid)
    run.cli(
        "baseline approval, signed",
        *("baseline", "approve", plan, "--task", tid, "--baseline", str(proposed), "--by", CLINICAL),
        *("--reason", "vendor's certified figure", "--key", str(clinical_key)),
    )
    run.cli(
        "go-live approval, signed",
        *("approvals", "go-live", plan, "--by", CLINICAL, "--reason", "committee minute 12", "--key"),
        str(clinical_key),
    )
    acts = run.run(
        "committee decision, suspension, safety event (dashboard functions)",
        [sys.executable, __file__, "--dashboard-acts", str(run.plan), tid],
    )
    facts.update(json.loads(acts.out.strip().splitlines()[-1]))
    run.cli(
        "safety event export (an access read)",
        *("oversight", "export", plan, str(facts["safety_event"]), "--output", str(run.work / "event.json")),
        "--no-pdf",
    )
    period = f"{datetime.now(UTC) + timedelta(days=run.days):%Y-%m}"
    summary = json.loads(run.cli("report figures", "report", plan, "--period", period, "--json").out)
    run.cli(
        "report sign-off, signed",
        *("report", plan, "--period", period, "--output", str(run.work / "report.html"), "--no-pdf"),
        *("--sign", CLINICAL, "--hash", summary["sha256"], "--key", str(clinical_key)),
    )
    facts["period"] = period
    run.cli(  # six years on, less the demo's days: its first days are past retention.results
        "retention purge (OS clock 6 years ahead)", "retention", "purge", plan, "--json", later_days=2190 - run.days + 2
    )
    final = run.work / "report-final.html"
    run.cli("final report", "report", plan, "--period", period, "--output", str(final), "--no-pdf")
    facts["report_final"] = final
    return facts


def _dashboard_acts(run: Run, tid: str) -> dict[str, Any]:
    """A committee decision, a high-risk suspension and a safety event: the dashboard's acts after a
    verified sign-in, through the same functions its pages call (no command line records them)."""
    from medmon.dashboards.auth import Viewer
    from medmon.dashboards.decide import record_committee_decision
    from medmon.db import session_scope, utcnow
    from medmon.monitor.governance import safety, suspension
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.storage import make_engine

    plan = load_plan(run.plan)
    engine = make_engine(plan.storage.url)
    owner = Viewer(CLINICAL, CLINICAL, True, True, verified=True, plan=plan)
    decision = record_committee_decision(
        engine,
        plan,
        owner,
        task=tid,
        decision="restrict",
        why="accuracy below minimum",
        terms="pharmacist verifies",
        recommendation=None,
        now=utcnow(),
    )
    with session_scope(engine) as session:
        asked = suspension.request(session, plan, tid, "accuracy incident open", CLINICAL, utcnow())
        sid = asked.id or 0
    with session_scope(engine) as session:
        confirmed = suspension.confirm(session, plan, sid, TECHNICAL, utcnow())
        status = confirmed.status
    with session_scope(engine) as session:
        event = safety.open_event(
            session,
            plan,
            task_id=tid,
            severity="serious",
            source="person",
            what_happened="Wrong interaction advice reached a ward pharmacist",
            actor=CLINICAL,
            now=utcnow(),
        )
        event_id = event.id
    engine.dispose()
    return {"decision": decision.seq, "suspension": [sid, status], "safety_event": event_id}


def tamper(run: Run) -> dict[str, Any]:
    """Edit a score, delete a result, insert one, each on a copy; verify each; render the report on the first."""
    found: dict[str, Any] = {}
    source = _db(run.plan)
    for name, sql in (
        ("edit a score", "UPDATE proberesult SET score = 0.123 WHERE id = (SELECT MAX(id) FROM proberesult)"),
        ("delete a result", "DELETE FROM proberesult WHERE id = (SELECT MAX(id) FROM proberesult)"),
        ("insert a result", "INSERT"),  # a copy of the newest result, scored 1.0
    ):
        folder = Path(tempfile.mkdtemp(prefix="medmon-tamper-", dir=run.work))
        copy = folder / "medmon.db"
        shutil.copy(source, copy)
        with sqlite3.connect(copy) as conn:
            if sql == "INSERT":
                names = [r[1] for r in conn.execute("PRAGMA table_info(proberesult)") if r[1] != "id"]
                picked = ", ".join("1.0" if n == "score" else n for n in names)
                sql = (
                    f"INSERT INTO proberesult ({', '.join(names)}) SELECT {picked} FROM proberesult "
                    "WHERE id = (SELECT MAX(id) FROM proberesult)"
                )
            conn.execute(sql)
        plan = folder / "plan.yaml"
        data = yaml.safe_load(run.plan.read_text())
        data["storage"]["url"] = f"sqlite:///{copy}"
        plan.write_text(yaml.safe_dump(data, sort_keys=False))
        checked = run.cli(f"audit verify after: {name}", "audit", "verify", str(plan), "--json", expect=(0, 1))
        report = json.loads(checked.out[checked.out.index("{") :])
        found[name] = {"exit": checked.code, "problems": [p["what"] for p in report["problems"]]}
        if name == "edit a score":
            html = folder / "report.html"
            run.cli("report on the edited copy", "report", str(plan), "--output", str(html), "--no-pdf")
            found["report_says"] = _text(html, "audit-failed")
    return found


def _text(html: Path, element_id: str) -> str:
    page = html.read_text("utf-8")
    m = re.search(rf'<(p|div)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    return " ".join(re.sub("<[^>]+>", " ", m.group(2)).split()) if m else ""


def _approved_words(html: Path) -> list[str]:
    """Each place a report says 'approved' other than 'not yet approved' / 'unapproved'."""
    text = " ".join(re.sub("<[^>]+>", " ", html.read_text("utf-8")).split())
    out = []
    for m in re.finditer(r"approved", text, re.I):
        before = text[max(0, m.start() - 12) : m.start()].lower()
        if before.endswith("not yet ") or before.endswith("un") or before.endswith("not "):
            continue
        out.append(text[max(0, m.start() - 60) : m.end() + 40])
    return out


def tally(run: Run, facts: dict[str, Any], tampered: dict[str, Any]) -> list[dict[str, Any]]:
    plan = str(run.plan)
    log = json.loads(run.cli("read the audit log", "audit", "list", plan, "--json", "--limit", "100000").out)
    changes = json.loads(run.cli("read the change records", "change", "list", plan, "--json").out)
    check = run.cli("audit verify", "audit", "verify", plan, "--json", expect=(0, 1))
    verified = json.loads(check.out[check.out.index("{") :])
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for e in log:
        by_kind.setdefault(e["kind"], []).append(e)

    def seqs(kind: str, **match: Any) -> list[int]:
        return [e["seq"] for e in by_kind.get(kind, []) if all(e["details"].get(k) == v for k, v in match.items())]

    rows: list[dict[str, Any]] = []

    def row(item: str, status: str, evidence: str) -> None:
        rows.append({"item": item, "status": status, "evidence": evidence})

    unproven = [e["seq"] for e in by_kind.get("unproven_act", []) if e["details"].get("act") == "threshold_approved"]
    signed = [e["seq"] for e in by_kind.get("threshold_approved", []) if e["details"].get("authenticated")]
    final = facts["report_final"]
    page = " ".join(re.sub("<[^>]+>", " ", final.read_text("utf-8")).split())
    says_unauth = "unauthenticated" in page
    row(
        "Done 1: unauthenticated vs signed CLI approval; only the signed one counts; report says which",
        "met" if unproven and signed and says_unauth else "partly" if unproven and signed else "not",
        f"unproven_act seq {unproven}, threshold_approved (authenticated) seq {signed}; report names "
        f"'unauthenticated': {says_unauth}; dashboard pages not read by this script; other acts recorded: "
        f"committee_decision seq {seqs('committee_decision')}, suspension seq {seqs('suspension')}, "
        f"report_signed seq {seqs('report_signed')}",
    )
    tamper_ok = all(
        tampered[k]["exit"] == 1 and any("run " in p for p in tampered[k]["problems"])
        for k in ("edit a score", "delete a result", "insert a result")
    )
    row(
        "Done 2: an edited, a deleted and an inserted result each fail verify naming the run; the report says so",
        "met"
        if tamper_ok and "did not verify" in tampered.get("report_says", "")
        else "partly"
        if tamper_ok
        else "not",
        "; ".join(f"{k}: exit {v['exit']}, {v['problems'][:1]}" for k, v in tampered.items() if k != "report_says")
        + f"; report on the edited copy: {tampered.get('report_says', '')[:160]!r}",
    )
    decoding = [c for c in changes if c["kind"] == "decoding"]
    row(
        "Done 3: each change kind opens a change record",
        "partly",
        f"from the record: the decoding edit opened change record(s) {[c['id'] for c in decoding]}; kinds recorded: "
        f"{sorted({c['kind'] for c in changes})}; the per-kind check is tests/monitor/test_change_kinds.py, not a "
        "record",
    )
    before = _approved_words(facts["report_before_go_live"])
    row(
        "Done 4: before go-live approval no surface says 'approved'",
        ("partly" if not before else "not"),
        f"report before go-live: {len(before)} 'approved' outside 'not yet approved'"
        + (f", e.g. {before[:2]}" if before else "")
        + "; alerts and pages not read by this script",
    )
    row(
        "Done 5: R1-R30 tally from real records",
        "partly",
        "this tally covers the Done-when items and R11, R13, R14, R21 only: "
        "the full R1-R30 list is not on this machine",
    )
    model = seqs("model_change")
    model_changes = [c["id"] for c in changes if c["kind"] in ("model", "fingerprint")]
    row(
        "R11 model changes",
        "met" if model and model_changes else "partly" if model or model_changes else "not",
        f"model_change audit seq {model[:5]}; change records {model_changes[:5]}",
    )
    declared = [e for e in by_kind.get("change_declared", []) if (e["details"].get("change_control") or {})]
    cited = [e["seq"] for e in declared if (e["details"]["change_control"].get("entry") is not None)]
    full = [e["seq"] for e in declared if e["details"]["change_control"].get("full_review")]
    row(
        "R13 change-control plan",
        "met" if cited else "partly" if declared else "not",
        f"plan record plan_change seq {seqs('plan_change')[-1:]} carries governance.change_control; change_declared "
        f"seq {cited} cite an anticipated entry; seq {full} are marked for full re-review",
    )
    baseline = by_kind.get("baseline_approved", [])
    golive = by_kind.get("go_live_approved", [])
    row(
        "R14 versioned baselines",
        "met" if baseline and golive and golive[-1]["details"].get("authenticated") else "partly",
        f"baseline_approved seq {[e['seq'] for e in baseline]} "
        f"(baseline {[e['details'].get('baseline_id') for e in baseline]}, previous "
        f"{[e['details'].get('previous_baseline_id') for e in baseline]}); go_live_approved seq "
        f"{[e['seq'] for e in golive]}",
    )
    purges = [e for e in by_kind.get("retention_purge", []) if e["details"].get("status") == "done"]
    reads = by_kind.get("answers_viewed", [])
    purged_line = _text(final, "audit-purged")
    row(
        "R21 retention (and access to stored text)",
        "met"
        if purges and verified["ok"] and verified.get("runs_purged") and purged_line and reads
        else "partly"
        if purges or reads
        else "not",
        f"retention_purge seq {[e['seq'] for e in purges]} ({sum(len(e['details']['run_ids']) for e in purges)} runs); "
        f"verify ok={verified['ok']} names {len(verified.get('runs_purged') or {})} purged run(s); report: "
        f"{purged_line[:90]!r}; answers_viewed seq {[e['seq'] for e in reads]} via "
        f"{sorted({str(e['details'].get('command') or e['details'].get('page')) for e in reads})}",
    )
    return rows


def _demo_days(plan: Path) -> int:
    """How many days past today the demo's accelerated clock stored its last run, plus one."""
    with sqlite3.connect(_db(plan)) as conn:
        (last,) = conn.execute("SELECT MAX(finished_at) FROM proberun").fetchone()
    ahead = datetime.fromisoformat(last).replace(tzinfo=UTC) - datetime.now(UTC)
    return max(0, ahead.days) + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None, help="folder for the demo (default: a new temp folder)")
    parser.add_argument("--json", action="store_true", help="print the tally as JSON")
    parser.add_argument("--dashboard-acts", nargs=2, metavar=("PLAN", "TASK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dashboard_acts:  # run under faketime by act(), so its acts fall on the same clock as the CLI's
        print(json.dumps(_dashboard_acts(Run(Path.cwd(), Path(args.dashboard_acts[0])), args.dashboard_acts[1])))
        return
    if shutil.which("faketime") is None:
        raise SystemExit("needs faketime (apt-get install faketime): people act after the demo's accelerated days")
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="medmon-record-"))).resolve()
    if work.exists() and any(p.name != "demo" for p in work.iterdir()):
        raise SystemExit(f"{work} is not empty")
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "demo" / "plan.yaml").exists():
        subprocess.run(
            [MEDMON, "demo", "--no-dashboard", "--workdir", str(work / "demo"), "--json"],
            check=False,
            capture_output=True,
            timeout=600,
        )
    run = Run(work, work / "demo" / "plan.yaml")
    run.days = _demo_days(run.plan)
    facts = act(run)
    tampered = tamper(run)
    rows = tally(run, facts, tampered)
    if args.json:
        print(json.dumps({"workdir": str(work), "rows": rows}, indent=2, default=str))
        return
    print(f"demo database and records: {work} (people act {run.days} day(s) after today, after the demo's clock)")
    for s in run.steps:
        print(f"  exit {s.code}  {s.what}")
    print()
    for r in rows:
        print(f"{r['status']:7} {r['item']}\n        {r['evidence']}")


if __name__ == "__main__":
    main()
