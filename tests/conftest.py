"""Shared fixtures: a temporary database, a plan factory, the simulator and receiver on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine

from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.service.webserver import RunningServer, serve_in_thread
from medmon.monitor.storage import make_engine

os.environ.setdefault("DO_NOT_TRACK", "1")

# MEDMON_TEST_DATABASE=postgresql runs every test that takes a database fixture (db_url, engine,
# new_db_url, module_db_url) on fresh PostgreSQL databases
# (created per test, dropped after) on the server at MEDMON_TEST_PG_URL; the default is SQLite.
TEST_DATABASE = os.environ.get("MEDMON_TEST_DATABASE", "sqlite").lower()
ON_POSTGRES = TEST_DATABASE in ("postgresql", "postgres")
PG_SERVER = os.environ.get("MEDMON_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432")


@contextmanager
def fresh_postgres_database(prefix: str = "medmon_test", template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database for one test, empty or a copy of ``template`` (a database URL
    nobody is connected to); dropped (connections and all) afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    server = make_url(PG_SERVER)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = server.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        source = make_url(template).database if template else "template0"
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
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


@contextmanager
def database_under_test(folder: Path, name: str = "medmon") -> Iterator[str]:
    """A new, empty database on the backend this pass tests: PostgreSQL or a SQLite file in ``folder``."""
    if ON_POSTGRES:
        with fresh_postgres_database() as url:
            yield url
    else:
        yield f"sqlite:///{folder / f'{name}.db'}"


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    with database_under_test(tmp_path) as url:
        yield url


@pytest.fixture
def new_db_url(tmp_path: Path) -> Iterator[Callable[[], str]]:
    """A factory of new, empty databases, for tests that need more than one (each call: another)."""
    with ExitStack() as stack:
        count = iter(range(1_000_000))
        yield lambda: stack.enter_context(database_under_test(tmp_path, f"db{next(count)}"))


@pytest.fixture(scope="module")
def module_db_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One database shared by a module's tests (for an expensive fixture that fills it once)."""
    with database_under_test(tmp_path_factory.mktemp("db")) as url:
        yield url


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
        "owners": {
            "clinical": {"name": "Dr. Owner", "email": "owner@hospital.example"},
            "technical": {"name": "Tech", "email": "tech@hospital.example"},
        },
        "deployment": {
            "base_url": "http://127.0.0.1:9/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "MEDMON_TEST_KEY",
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
            "timeout_s": 5,
            "max_retries": 0,
        },
        "tasks": [
            {
                "id": "knowledge-qa",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "sample_size": 20,
                "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
            }
        ],
        # Most tests watch the database, not a receiver; a plan must say so to pass ``medmon check``.
        "alerts": {"routes": [], "repeat_interval": "4h", "allow_unrouted": True},
    }
    for key, value in overrides.items():
        data[key] = value
    return data


@pytest.fixture(autouse=True)
def fresh_endpoint_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no shared limiter or breaker state (a port may be reused by a later test)."""
    import medmon.probes.client

    monkeypatch.setattr(medmon.probes.client, "_GUARDS", {})


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


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM a helper process (a server the test started), SIGKILL it if it will not go."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def pytest_report_header(config: pytest.Config) -> str:
    return f"medmon test database: {TEST_DATABASE}"


# Fixtures that give a test a database of the backend under test; "seeded_master" is the
# dashboards' seeded database.
DATABASE_FIXTURES = {"db_url", "new_db_url", "module_db_url", "postgres_url", "seeded_master"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass, run only the tests that use the database fixtures.

    The others do not touch a database and already ran on the SQLite pass; set
    MEDMON_TEST_PG_ALL=1 to run them again anyway.
    """
    if not ON_POSTGRES or os.environ.get("MEDMON_TEST_PG_ALL"):
        return
    keep, drop = [], []
    for item in items:
        uses_db = DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
        (keep if uses_db else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
