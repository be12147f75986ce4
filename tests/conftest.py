"""Shared fixtures: a temporary database, a plan factory, the simulator and receiver on 127.0.0.1."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine

from monitor.plan import Plan, parse_plan
from monitor.storage import make_engine
from monitor.webserver import RunningServer, serve_in_thread

os.environ.setdefault("DO_NOT_TRACK", "1")

# MEDMON_TEST_DATABASE=postgresql runs every db_url/engine test on a fresh PostgreSQL database
# (created per test, dropped after) on the server at MEDMON_TEST_PG_URL; the default is SQLite.
TEST_DATABASE = os.environ.get("MEDMON_TEST_DATABASE", "sqlite").lower()
PG_SERVER = os.environ.get("MEDMON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432")


@contextmanager
def fresh_postgres_database(prefix: str = "medmon_test") -> Iterator[str]:
    """A new, empty PostgreSQL database for one test; dropped (connections and all) afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    server = make_url(PG_SERVER)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = server.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database whatever MEDMON_TEST_DATABASE says (for PostgreSQL-only tests)."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    if TEST_DATABASE in ("postgresql", "postgres"):
        with fresh_postgres_database() as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path / 'medmon.db'}"


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


def pytest_report_header(config: pytest.Config) -> str:
    return f"medmon test database: {TEST_DATABASE}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass, run only the tests that use the database fixtures.

    The others do not touch a database and already ran on the SQLite pass; set
    MEDMON_TEST_PG_ALL=1 to run them again anyway.
    """
    if TEST_DATABASE not in ("postgresql", "postgres") or os.environ.get("MEDMON_TEST_PG_ALL"):
        return
    keep, drop = [], []
    for item in items:
        uses_db = {"db_url", "postgres_url"} & set(getattr(item, "fixturenames", ()))
        (keep if uses_db else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
