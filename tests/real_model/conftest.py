"""A real language model for the tests: Google's base Gemma 3 270M (Q4_K_M) behind llama-cpp-python's server.

``make third-party-servers`` (part of ``make test``) builds the server into ``.servers/llama`` and
assembles the GGUF into ``.servers/models``. Without them these tests are skipped, naming the
reason, except under ``make test`` (``MEDMON_TEST_REQUIRE_SERVERS=1``) or CI, where their
absence fails. The server is started on a free 127.0.0.1 port once per session and stopped after;
a test that swaps weights starts its own.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.monitor.third_party import SERVERS, free_port, running

GGUF = SERVERS / "models" / "gemma-3-270m-q4_k_m.gguf"
ALIAS = "gemma-clinical"  # the name the hospital's gateway would show: nothing in it says which weights
N_CTX = 1024  # the longest prompt (a jury rubric with an answer) fits; small keeps memory and start-up low


@dataclass(frozen=True)
class Gemma:
    """A running server: its OpenAI base URL (``.../v1``), the alias it serves and the weights file."""

    base_url: str
    alias: str
    weights: Path


def _python() -> Path:
    path = SERVERS / "llama" / "bin" / "python"
    if not path.exists() or not GGUF.exists():
        missing = path if not path.exists() else GGUF
        if os.environ.get("CI") or os.environ.get("MEDMON_TEST_REQUIRE_SERVERS"):
            pytest.fail(f"{missing} is missing: 'make third-party-servers' builds the real model's server")
        why = f"the real model is not installed ({missing}): run 'make third-party-servers' (make test does)"
        pytest.skip(reason=why)
    return path


@contextmanager
def serve_gemma(tmp: Path, weights: Path = GGUF, alias: str = ALIAS) -> Iterator[Gemma]:
    """``python -m llama_cpp.server`` on ``weights`` under ``alias``, until the block ends."""
    port = free_port()
    cmd = [
        str(_python()),
        "-m",
        "llama_cpp.server",
        "--model",
        str(weights),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        "2",
        "--model_alias",
        alias,
        "--chat_format",
        "gemma",
    ]
    with running(cmd, f"http://127.0.0.1:{port}/v1/models", tmp / f"llama-{port}.log", timeout=180):
        yield Gemma(f"http://127.0.0.1:{port}/v1", alias, weights)


def requantize(target: Path, ftype: str = "LLAMA_FTYPE_MOSTLY_Q8_0") -> Path:
    """Re-quantize the Q4_K_M weights with llama.cpp (about 5 s), inside the server's own environment."""
    script = (
        "import ctypes, sys, llama_cpp\n"
        "p = llama_cpp.llama_model_quantize_default_params()\n"
        f"p.ftype = llama_cpp.{ftype}\n"
        "p.allow_requantize = True\n"
        "sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))\n"
    )
    if not target.exists():
        subprocess.run([str(_python()), "-c", script, str(GGUF), str(target)], check=True, capture_output=True)
    return target


@pytest.fixture(scope="session")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gemma]:
    """The real model, served once for the session's real-model tests."""
    with serve_gemma(tmp_path_factory.mktemp("gemma")) as server:
        yield server


@pytest.fixture(scope="session")
def gemma_q8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same model re-quantized to Q8_0: other weights for the same alias."""
    _python()
    return requantize(tmp_path_factory.mktemp("weights") / "gemma-3-270m-q8_0.gguf")


@pytest.fixture
def serve() -> Callable[..., AbstractContextManager[Gemma]]:
    return serve_gemma
