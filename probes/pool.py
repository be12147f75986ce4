"""One long-lived model client per endpoint per process, on an event loop of its own.

A probe run used to open a client of its own (``asyncio.run`` around ``async with
ModelClient(...)``): a new ``AsyncOpenAI`` with a new aiohttp session, a new connection pool and
the CA bundle loaded again, about 17 ms before the first byte is sent, and no connection reused
from one run to the next. That capped one process at 25-35 probe runs a second.

Here the clients live as long as the process does. They are bound to one event loop, which runs
in a daemon thread; callers in any thread (the scheduler's job threads, a Celery worker, the CLI)
hand it a coroutine with :meth:`ClientPool.run` and wait for its result. Rate limits and the
circuit breaker were already shared per endpoint (``ModelSettings.guard``); now so are the
connections and the ``max_concurrency`` slots. :meth:`ClientPool.close` closes every client and
stops the loop: the service and the worker call it on shutdown, and it is registered ``atexit``
for everything else.
"""

from __future__ import annotations

import asyncio
import atexit
import random
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import TypeVar

from medmon.probes.client import ModelClient, ModelSettings
from medmon.probes.jury import Jury, JurySettings

T = TypeVar("T")

__all__ = ["ClientPool", "shared_pool"]


class ClientPool:
    """Model clients kept open across probe runs, keyed by endpoint settings and role."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._clients: dict[tuple[ModelSettings, str], ModelClient] = {}

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="medmon-model-clients", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work()`` on the pool's loop and return its result (from any thread but that loop's)."""
        loop = self._running_loop()
        if threading.current_thread() is self._thread:
            raise RuntimeError("ClientPool.run called from the pool's own loop: await the work instead")

        async def wrapped() -> T:
            return await work()

        future: Future[T] = asyncio.run_coroutine_threadsafe(wrapped(), loop)
        return future.result()

    def client(self, settings: ModelSettings, *, role: str = "production") -> ModelClient:
        """The open client for these settings (made on first use); call it on the pool's loop."""
        key = (settings, role)
        found = self._clients.get(key)
        if found is None:
            found = self._clients[key] = ModelClient(settings, role=role)
        return found

    def jury(self, settings: JurySettings) -> Jury:
        """A jury whose judges' clients are the pool's (the jury does not close them)."""
        return Jury(
            settings, clients={j.name: self.client(j, role="judge") for j in settings.judges}, rng=random.Random()
        )

    @property
    def open_clients(self) -> int:
        """How many clients are open (one per endpoint settings and role used so far)."""
        return len(self._clients)

    def close(self) -> None:
        """Close every client and stop the loop; the pool opens afresh if used again."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
            clients, self._clients = list(self._clients.values()), {}
        if loop is None or thread is None:
            return
        if clients:

            async def close_all() -> None:
                await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)

            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


_SHARED = ClientPool()
atexit.register(_SHARED.close)


def shared_pool() -> ClientPool:
    """The process's pool: what the pipeline, re-evaluations and judge canaries call through."""
    return _SHARED
