"""Fixtures for the dashboard tests: one seeded database per session, a private copy per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from medmon.dashboards.auth import LOCAL_ACTIONS_ENV
from medmon.monitor.storage import make_engine
from tests.conftest import database_under_test
from tests.dashboards.seed import Seeded, copy_seeded, seed

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")
AUTH_SECRETS = {
    "auth": {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
        "cookie_secret": "test-cookie",
        "client_id": "medmon",
        "client_secret": "test-secret",
        "server_metadata_url": "https://idp.hospital.example/.well-known/openid-configuration",
    }
}


@pytest.fixture(scope="session")
def seeded_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The pipeline run once against the simulator, on the backend under test; tests copy the result."""
    folder = tmp_path_factory.mktemp("seed")
    with database_under_test(folder, "seed") as url:
        yield seed(folder, db_url=url)


@pytest.fixture
def seeded(seeded_master: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Seeded]:
    """A private copy of the seeded database, with the dashboard's environment pointing at it."""
    with copy_seeded(seeded_master, tmp_path / "dash") as copy, local_dashboard():
        monkeypatch.setenv("MEDMON_PLAN", str(copy.plan_path))
        monkeypatch.setenv("MEDMON_DATABASE_URL", copy.db_url)
        # As `medmon dashboard --allow-local-actions` starts it; tests of the door unset it.
        monkeypatch.setenv(LOCAL_ACTIONS_ENV, "1")
        yield copy


@contextmanager
def local_dashboard(address: str = "127.0.0.1") -> Iterator[None]:
    """The in-process app listening on ``address``, as ``streamlit run --server.address`` sets it."""
    before = st_config.get_option("server.address")
    st_config.set_option("server.address", address)
    try:
        yield
    finally:
        st_config.set_option("server.address", before)


@pytest.fixture
def seeded_engine(seeded: Seeded) -> Iterator[Engine]:
    eng = make_engine(seeded.db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def open_page() -> Callable[..., AppTest]:
    """Run the app, then switch to a page: ``open_page("alerts", user={...}, secrets={...})``."""

    def run(page: str, *, user: dict[str, Any] | None = None, secrets: dict[str, Any] | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        if user is not None:
            at.user = user
        if secrets is not None:
            at.secrets = secrets
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if page != "overview":
            at.switch_page(f"views/{page}.py").run()
            assert not at.exception, [e.value for e in at.exception]
        return at

    return run
