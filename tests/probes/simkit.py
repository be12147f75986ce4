"""Helpers shared by the client, jury, runner, simulator and telemetry tests (not a test module)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.applications import Starlette

from medmon.baselines.canary import Canary, canary_from_dict
from medmon.probes.client import ModelSettings
from medmon.probes.simulator import SimulatorState

T = TypeVar("T")

MCQ = tuple(
    canary_from_dict(
        {
            "id": f"mcq-{i}",
            "messages": [{"role": "user", "content": f"Question {i}: which option is right? A, B, C or D."}],
            "references": ["B"],
            "choices": ["a", "b", "c", "d"],
            "scorer": "multiple_choice",
            "tags": {"age_band": "65+" if i % 2 else "18-64", "sex": "female" if i % 3 else "male"},
        }
    )
    for i in range(12)
)

NOTES = tuple(
    canary_from_dict(
        {
            "id": f"note-{i}",
            "scorer": "jury",
            "messages": [
                {"role": "user", "content": f"Write discharge instructions for case {i}: ankle sprain, day {i}."}
            ],
            "references": [f"Rest, ice, compression and elevation for case {i}; return if numbness or severe pain."],
            "tags": {"age_band": "18-64", "sex": "female"},
        }
    )
    for i in range(8)
)

JUDGE_MODELS = ("medmon-simulator/judge-a", "medmon-simulator/judge-b", "medmon-simulator/judge-c")


def settings(url: str, **overrides: Any) -> ModelSettings:
    """Production settings for a simulator at ``url``: short timeouts, quick backoff, a price table."""
    values: dict[str, Any] = {
        "base_url": f"{url}/v1",
        "model": "medmon-simulator/clinical-v1",
        "api_key": "sk-test-secret-value",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "input_per_mtok": 5.0,
        "output_per_mtok": 15.0,
    }
    return ModelSettings(**(values | overrides))


def judge_settings(url: str, **overrides: Any) -> tuple[ModelSettings, ...]:
    """Three judges on the simulator, told apart by model name, each with its own price."""
    return tuple(
        settings(
            url, model=m, name=f"judge-{m[-1]}", max_retries=0, input_per_mtok=1.0, output_per_mtok=2.0, **overrides
        )
        for m in JUDGE_MODELS
    )


def sim_state(app: Starlette) -> SimulatorState:
    state = app.state.sim
    assert isinstance(state, SimulatorState)
    return state


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@dataclass
class FakeClock:
    """Monotonic seconds under the test's control."""

    t: float = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class RecordingSleep:
    """Records every wait asked for; optionally moves a fake clock instead of waiting."""

    clock: FakeClock | None = None
    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.clock is not None:
            self.clock.advance(seconds)
        await asyncio.sleep(0)


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` until it holds or ``timeout`` passes (no fixed sleeps in tests)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.01)


def canaries_of(*groups: tuple[Canary, ...]) -> list[Canary]:
    return [c for g in groups for c in g]
