"""Shared fixtures: a temporary database, a plan factory, the simulator and receiver on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine

from monitor.plan import Plan, parse_plan
from monitor.storage import make_engine
from monitor.webserver import RunningServer, serve_in_thread

os.environ.setdefault("DO_NOT_TRACK", "1")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'medmon.db'}"


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def plan_dict(**overrides: Any) -> dict[str, Any]:
    """A valid plan as a dict; tests change one thing at a time."""
    data: dict[str, Any] = {
        "version": 1,
        "use_case": {"name": "Test use case", "intended_use": "Answer knowledge questions", "risk_tier": "high"},
        "owners": {"clinical": {"name": "Dr. Owner", "email": "owner@hospital.example"},
                   "technical": {"name": "Tech", "email": "tech@hospital.example"}},
        "deployment": {"base_url": "http://127.0.0.1:9/v1", "model": "medmon-simulator/clinical-v1",
                       "api_key_env": "MEDMON_TEST_KEY", "price": {"input_per_mtok": 5, "output_per_mtok": 15},
                       "timeout_s": 5, "max_retries": 0},
        "tasks": [{"id": "knowledge-qa", "benchmark": "med_qa", "canaries": {"pack": "clinical_knowledge_mcq"},
                   "schedule": "1h", "sample_size": 20,
                   "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5}}],
        "alerts": {"routes": [], "repeat_interval": "4h"},
    }
    for key, value in overrides.items():
        data[key] = value
    return data


@pytest.fixture
def make_plan() -> Callable[..., Plan]:
    def build(**overrides: Any) -> Plan:
        return parse_plan(yaml.safe_dump(plan_dict(**overrides)))

    return build


@pytest.fixture
def serve() -> Iterator[Callable[[object], RunningServer]]:
    servers: list[RunningServer] = []

    def start(app: object) -> RunningServer:
        server = serve_in_thread(app)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()
