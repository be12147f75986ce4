"""Serve an ASGI app on 127.0.0.1 in a background thread (simulator, receiver, service endpoints)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn


@dataclass
class RunningServer:
    url: str
    port: int
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)


def serve_in_thread(
    app: Callable[..., Any], *, host: str = "127.0.0.1", port: int = 0, timeout: float = 15.0
) -> RunningServer:
    """Start ``app`` on ``host:port`` (0 picks a free port) and wait until it accepts requests."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    actual = sock.getsockname()[1]
    # log_config=None: uvicorn's records propagate to the root handlers, where secrets are masked,
    # instead of going to handlers of its own.
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2, log_config=None
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"http-{actual}")
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"server on {host}:{actual} did not start")
        time.sleep(0.01)
    return RunningServer(url=f"http://{host}:{actual}", port=actual, server=server, thread=thread)
