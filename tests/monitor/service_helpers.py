"""Helpers for the service tests: plan files, ``medmon`` subprocesses, waiting on conditions."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col, select

from medmon.monitor.models import ProbeSlot
from medmon.probes.models import ProbeRun
from tests.conftest import plan_dict

T = TypeVar("T")
MEDMON = [sys.executable, "-m", "medmon"]
KEY_ENV = "MEDMON_TEST_KEY"


def wait_for(condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, what: str = "condition") -> T:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def write_plan(
    path: Path,
    sim_url: str,
    db_url: str,
    *,
    schedule: str = "1s",
    sample_size: int = 3,
    tasks: int = 1,
    service: dict[str, Any] | None = None,
    **deployment: Any,
) -> Path:
    """A plan probing the simulator every ``schedule`` with small samples."""
    data = plan_dict(
        deployment={
            "base_url": f"{sim_url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": KEY_ENV,
            "timeout_s": 5,
            "max_retries": 0,
            **deployment,
        },
        tasks=[
            {
                "id": f"task-{i}",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": schedule,
                "sample_size": sample_size,
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
            }
            for i in range(tasks)
        ],
        storage={"url": db_url},
    )
    if service is not None:
        data["service"] = service
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass
class Served:
    """A ``medmon serve`` subprocess with its log file."""

    proc: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def health_url(self, timeout: float = 30.0) -> str:
        def found() -> str | None:
            m = re.search(r"health endpoints on (http://\S+)", self.text())
            return m.group(1) if m else None

        return wait_for(found, timeout, what=f"health URL in {self.log}")

    def wait_log(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        return wait_for(lambda: re.search(pattern, self.text()), timeout, what=f"{pattern!r} in {self.log}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def start_medmon(args: list[str], log: Path, env: dict[str, str] | None = None) -> Served:
    environ = os.environ | {KEY_ENV: "test-key", "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1"} | (env or {})
    environ.pop("MEDMON_DATABASE_URL", None)
    handle = log.open("ab")
    proc = subprocess.Popen(
        [*MEDMON, *args], stdout=handle, stderr=subprocess.STDOUT, env=environ, cwd=Path(__file__).resolve().parents[2]
    )
    handle.close()
    return Served(proc, log)


def reader(url: str) -> Engine:
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return create_engine(url)


def slots(engine: Engine, task_id: str | None = None) -> list[ProbeSlot]:
    """Claimed slots in time order ([] until the service has created its tables)."""
    q = select(ProbeSlot).order_by(col(ProbeSlot.scheduled_for))
    if task_id is not None:
        q = q.where(ProbeSlot.task_id == task_id)
    try:
        with Session(engine) as s:
            return list(s.exec(q).all())
    except DBAPIError:
        return []


def runs(engine: Engine) -> list[ProbeRun]:
    """Probe runs in id order ([] until the service has created its tables)."""
    try:
        with Session(engine) as s:
            return list(s.exec(select(ProbeRun).order_by(col(ProbeRun.id))).all())
    except DBAPIError:
        return []
