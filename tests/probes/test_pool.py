"""Long-lived model clients: one per endpoint per process, reused by every probe run.

Checked over real HTTP against the simulator on 127.0.0.1: the server sees the same few TCP
connections however many runs there are, runs from several threads share them, a jury's judges
stay open after the jury, and closing the pool closes the connections.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from medmon.probes.client import ModelClient
from medmon.probes.jury import JurySettings
from medmon.probes.pool import ClientPool
from medmon.probes.runner import probe_canaries
from medmon.probes.simulator import JudgeBehaviour, Phase, create_simulator
from tests.probes.simkit import MCQ, NOTES, judge_settings, settings


class PeerPorts:
    """ASGI middleware recording the client port of every request: one port per TCP connection."""

    def __init__(self, app: Any) -> None:
        self.app, self.ports, self.requests = app, set(), 0
        self.state = app.state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.ports.add(scope["client"][1])
            self.requests += 1
        await self.app(scope, receive, send)


@pytest.fixture
def sim(serve: Callable) -> tuple[PeerPorts, str]:
    app = PeerPorts(create_simulator(MCQ, [Phase(accuracy=1.0)], seed=3))
    return app, serve(app).url


@pytest.fixture
def pool() -> Any:
    p = ClientPool()
    yield p
    p.close()


def _probe(pool: ClientPool, url: str, n: int = 5, **overrides: Any) -> list[Any]:
    s = settings(url, max_concurrency=4, **overrides)

    async def work() -> list[Any]:
        return list(await probe_canaries(pool.client(s), MCQ[:n], "t", "multiple_choice"))

    return pool.run(work)


def test_runs_reuse_one_client_and_its_connections(pool: ClientPool, sim: tuple[PeerPorts, str]) -> None:
    app, url = sim
    for _ in range(30):
        results = _probe(pool, url)
        assert [r.error_type for r in results] == [None] * 5
    assert app.requests == 150
    assert pool.open_clients == 1
    assert len(app.ports) <= 4  # the connections of one client (max_concurrency), not one set per run


def test_runs_from_several_threads_share_the_client(pool: ClientPool, sim: tuple[PeerPorts, str]) -> None:
    app, url = sim
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(5):
                assert all(r.error_type is None for r in _probe(pool, url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and app.requests == 4 * 5 * 5
    assert pool.open_clients == 1 and len(app.ports) <= 4


def test_other_settings_get_their_own_client(pool: ClientPool, sim: tuple[PeerPorts, str]) -> None:
    _, url = sim
    _probe(pool, url)
    _probe(pool, url, temperature=0.7)
    assert pool.open_clients == 2


def test_a_pooled_jury_leaves_its_judges_open(pool: ClientPool, serve: Callable) -> None:
    judges = {
        "medmon-simulator/judge-a": JudgeBehaviour(),
        "medmon-simulator/judge-b": JudgeBehaviour(),
        "medmon-simulator/judge-c": JudgeBehaviour(),
    }
    url = serve(create_simulator(NOTES, [Phase()], seed=1, judges=judges)).url
    jury_settings = JurySettings(judge_settings(url))

    async def judge_once() -> tuple[int, bool]:
        async with pool.jury(jury_settings) as jury:
            outcome = await jury.judge(NOTES[0], NOTES[0].references[0])
        clients: list[ModelClient] = list(jury.clients.values())
        return outcome.judges_answered, all(not c._openai.is_closed() for c in clients)

    assert pool.run(judge_once) == (3, True)
    assert pool.run(judge_once) == (3, True)
    assert pool.open_clients == 3


def test_close_closes_the_clients_and_the_pool_opens_again(pool: ClientPool, sim: tuple[PeerPorts, str]) -> None:
    app, url = sim
    _probe(pool, url)
    client = pool.run(_client_of(pool, url))
    pool.close()
    assert client._openai.is_closed() and pool.open_clients == 0
    assert all(r.error_type is None for r in _probe(pool, url))  # a new loop and client
    assert pool.open_clients == 1


def _client_of(pool: ClientPool, url: str) -> Callable[[], Any]:
    async def get() -> ModelClient:
        return pool.client(settings(url, max_concurrency=4))

    return get


def test_run_refuses_to_wait_on_its_own_loop(pool: ClientPool, sim: tuple[PeerPorts, str]) -> None:
    _, url = sim

    async def nested() -> None:
        pool.run(_client_of(pool, url))

    with pytest.raises(RuntimeError, match="own loop"):
        pool.run(nested)
