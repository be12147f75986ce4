"""Benchmark: the served-model identity test against the real model, a silent weights swap and a plain restart.

Each trial is a deployment as a user runs it: a new SQLite database, a plan whose ``identity``
section picks the method, and llama-cpp-python's OpenAI-compatible server on Gemma 3 270M
Q4_K_M (``make third-party-servers``) under the alias ``gemma-clinical``. The identity job
(``run_identity_probe``, what the service schedules) runs ``--go-live`` times on that server;
the server is stopped and started again under the same alias, on

- a *swap* trial: the same checkpoint re-quantized by llama.cpp (``--weights``, default Q8_0);
- a *null* trial: the same Q4_K_M file;

and the job runs up to ``--within`` more times, stopping at a detected change. Figures: the
share of swap trials detected as a model change within ``--within`` identity runs (power),
the share of null trials with any alarm (false alarms), the runs it took, and the wall time.
Swap and null trials alternate; only one server runs at a time.

Usage::

    .venv/bin/python benchmarks/identity_real.py [--trials 10] [--method logprobs|answers]
        [--weights q8_0|q4_0|q3_k_m] [--go-live 3] [--within 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DO_NOT_TRACK", "1")

import yaml  # noqa: E402
from sqlmodel import Session, select  # noqa: E402

from medmon.monitor.models import ChangeRecord  # noqa: E402
from medmon.monitor.plan.model import Plan, parse_plan  # noqa: E402
from medmon.monitor.runs.identity import run_identity_probe  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from tests.conftest import plan_dict  # noqa: E402
from tests.real_model.conftest import ALIAS, GGUF, SERVERS, requantize, serve_gemma  # noqa: E402

FTYPES = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "q3_k_m": "LLAMA_FTYPE_MOSTLY_Q3_K_M"}


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def plan_for(base_url: str, db: Path, method: str, go_live: int) -> Plan:
    data = plan_dict(storage={"url": f"sqlite:///{db}"})
    # each trial is another deployment (its name seeds the test's tie-breaking draws)
    data["deployment"] = {
        "name": db.parent.name,
        "base_url": base_url,
        "model": ALIAS,
        "timeout_s": 120,
        "max_retries": 1,
    }
    data["identity"] = {"method": method, "reference_runs": go_live, "false_alarm": 0.01}
    return parse_plan(yaml.safe_dump(data))


def trial(folder: Path, weights: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Go-live runs on Q4_K_M, a restart on ``weights``, then up to ``--within`` runs; what the job decided."""
    folder.mkdir(parents=True)
    started, clock = time.perf_counter(), Clock()
    db = folder / "medmon.db"
    out: dict[str, Any] = {"weights": weights.name, "go_live_alarm": False, "detected_at": None, "evidence": []}
    with serve_gemma(folder, GGUF) as server:
        plan = plan_for(server.base_url, db, args.method, args.go_live)
        engine = make_engine(plan.storage.url)
        for _ in range(args.go_live):
            outcome = run_identity_probe(engine, plan, now=clock)
            out["go_live_alarm"] |= outcome.changed
            out["missing_logprobs"] = out.get("missing_logprobs", 0) + outcome.missing_logprobs
    with serve_gemma(folder, weights) as server:
        plan = plan_for(server.base_url, db, args.method, args.go_live)
        for run in range(1, args.within + 1):
            outcome = run_identity_probe(engine, plan, now=clock)
            out["evidence"].append(round(outcome.update.evidence, 3) if outcome.update else None)
            if outcome.changed:
                out["detected_at"] = run
                break
    with Session(engine) as session:
        out["change_records"] = len(session.exec(select(ChangeRecord)).all())
    engine.dispose()
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10, help="swap trials, and as many null trials")
    parser.add_argument("--method", choices=("logprobs", "answers"), default="logprobs")
    parser.add_argument("--weights", choices=sorted(FTYPES), default="q8_0")
    parser.add_argument("--go-live", type=int, default=3, help="identity runs forming the go-live sample")
    parser.add_argument("--within", type=int, default=2, help="identity runs after the restart")
    parser.add_argument("--json", type=Path, help="write every trial's outcome here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not (SERVERS / "llama" / "bin" / "python").exists() or not GGUF.exists():
        sys.exit(f"the real model is not installed under {SERVERS}: run 'make third-party-servers'")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="medmon-identity-") as tmp:
        other = requantize(Path(tmp) / f"gemma-3-270m-{args.weights}.gguf", FTYPES[args.weights])
        trials: list[dict[str, Any]] = []
        for t in range(args.trials):
            for kind, weights in (("swap", other), ("null", GGUF)):
                result = {"kind": kind, **trial(Path(tmp) / f"{kind}{t}", weights, args)}
                trials.append(result)
                print(json.dumps(result), flush=True)
    swaps = [t for t in trials if t["kind"] == "swap"]
    nulls = [t for t in trials if t["kind"] == "null"]
    detected = [t for t in swaps if t["detected_at"] is not None]
    alarms = [t for t in nulls if t["detected_at"] is not None or t["go_live_alarm"]]
    go_live_alarms = [t for t in swaps if t["go_live_alarm"]]
    print()
    print(
        f"method {args.method}; Q4_K_M -> {args.weights} under the alias {ALIAS}; go-live {args.go_live} runs, "
        f"then up to {args.within} runs after the restart; false_alarm 0.01"
    )
    print(
        f"power: {len(detected)}/{len(swaps)} swaps detected as a model change within {args.within} identity runs"
        + (f" (runs needed: {sorted(t['detected_at'] for t in detected)})" if detected else "")
    )
    print(
        f"false alarms: {len(alarms)}/{len(nulls)} null trials (same weights, restarted); "
        f"{len(go_live_alarms)}/{len(swaps)} go-live phases of the swap trials"
    )
    print(
        f"per trial: median {statistics.median(t['seconds'] for t in trials):.0f} s; "
        f"whole benchmark {time.perf_counter() - began:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(trials, indent=1))


if __name__ == "__main__":
    main()
