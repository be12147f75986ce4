"""Start OpenAI-compatible servers nobody on the project wrote (llmock, fakellm, LiteLLM's proxy) on 127.0.0.1.

``make third-party-servers`` installs them in their own environments under ``.servers/`` (their
pins differ from medmon's). Without them the tests that need them are skipped, except in CI,
where ``make test`` has installed them and their absence is a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import stop_process

ROOT = Path(__file__).resolve().parents[2]
SERVERS = Path(os.environ.get("MEDMON_TEST_SERVERS", ROOT / ".servers"))


def server_bin(env: str, name: str) -> Path:
    path = SERVERS / env / "bin" / name
    if not path.exists():
        if os.environ.get("CI") or os.environ.get("MEDMON_TEST_REQUIRE_SERVERS"):
            pytest.fail(f"{path} is missing: 'make third-party-servers' installs it")
        # Only a bare `pytest` outside `make test` gets here: make test installs them and requires them.
        pytest.skip(reason=f"{name} is not installed: run 'make third-party-servers' (make test does)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(
    cmd: Sequence[str],
    ready_url: str,
    log: Path,
    *,
    cwd: Path | None = None,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server until ``ready_url`` answers, yield it, then stop it."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(cmd),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=os.environ | {"DO_NOT_TRACK": "1"} | (env or {}),
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{cmd[0]} exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                if httpx.get(ready_url, timeout=2).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{cmd[0]} did not start in {timeout}s: {log.read_text()[-2000:]}")
            time.sleep(0.25)
        yield proc
    finally:
        stop_process(proc)


@contextmanager
def llmock(tmp_path: Path, *extra: str) -> Iterator[str]:
    """llmock on a free port; yields its base URL (``/v1`` for clients, ``/_llmock`` to script faults)."""
    port = free_port()
    cmd = [
        str(server_bin("chaos", "llmock")),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *extra,
    ]
    with running(cmd, f"http://127.0.0.1:{port}/_llmock/scenario", tmp_path / f"llmock-{port}.log"):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def fakellm(tmp_path: Path, rules: Path) -> Iterator[str]:
    port = free_port()
    cmd = [
        str(server_bin("chaos", "fakellm")),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--config",
        str(rules),
    ]
    with running(cmd, f"http://127.0.0.1:{port}/v1/models", tmp_path / f"fakellm-{port}.log", cwd=tmp_path):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def litellm(tmp_path: Path, config: Path, port: int | None = None) -> Iterator[str]:
    port = port or free_port()
    cmd = [
        str(server_bin("litellm", "litellm")),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        "1",
    ]
    with running(
        cmd,
        f"http://127.0.0.1:{port}/health/liveliness",
        tmp_path / f"litellm-{port}.log",
        cwd=tmp_path,
        env={"LITELLM_TELEMETRY": "False", "LITELLM_LOG": "ERROR"},
        timeout=180,
    ):
        yield f"http://127.0.0.1:{port}"
