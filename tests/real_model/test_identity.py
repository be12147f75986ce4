"""The real model's weights swapped under the same alias: the identity job sees it; a plain restart it does not.

Gemma 3 270M Q4_K_M behind llama-cpp-python's server; the go-live sample is three identity runs
(ten canaries at temperature 0 with ``top_logprobs``). The server is then restarted under the same
alias on the same file (no alarm), then on the same checkpoint re-quantized to Q8_0 by llama.cpp
(a model change within two runs). Over repeated trials: ``benchmarks/identity_real.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.monitor.models import ChangeRecord, FindingRecord
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.runs.identity import run_identity_probe
from tests.conftest import plan_dict
from tests.real_model.conftest import ALIAS, GGUF, Gemma

pytestmark = pytest.mark.process  # a real server started as a process


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def _plan(base_url: str, db_url: str) -> Plan:
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {"base_url": base_url, "model": ALIAS, "timeout_s": 120, "max_retries": 1}
    data["identity"] = {"method": "logprobs", "false_alarm": 0.01}
    return parse_plan(yaml.safe_dump(data))


def test_requantized_weights_under_the_same_alias_are_a_model_change_and_a_restart_is_not(
    tmp_path: Path, engine: Engine, db_url: str, gemma_q8: Path, serve: Callable[..., AbstractContextManager[Gemma]]
) -> None:
    clock = Clock()
    with serve(tmp_path, GGUF) as server:
        plan = _plan(server.base_url, db_url)
        for _ in range(3):  # the go-live sample
            outcome = run_identity_probe(engine, plan, now=clock)
            assert not outcome.changed and outcome.errors == 0 and outcome.missing_logprobs == 0
            assert outcome.served_model == ALIAS
    with serve(tmp_path, GGUF) as server:  # restarted, same weights
        outcome = run_identity_probe(engine, _plan(server.base_url, db_url), now=clock)
        assert not outcome.changed and outcome.update is not None and outcome.update.finding is None
    with serve(tmp_path, gemma_q8) as server:  # same alias, other weights
        plan = _plan(server.base_url, db_url)
        outcomes = [run_identity_probe(engine, plan, now=clock)]
        if not outcomes[0].changed:
            outcomes.append(run_identity_probe(engine, plan, now=clock))
    assert outcomes[-1].changed and all(o.served_model == ALIAS for o in outcomes)  # nothing in the name says so
    with Session(engine) as s:
        found = s.exec(select(FindingRecord).where(FindingRecord.task_id == "served_identity")).one()
        assert found.kind == "model_change" and found.statistic is not None and found.statistic >= 100
        assert found.estimate is not None and found.estimate > 0.01  # nats the log-probabilities moved
        change = s.exec(select(ChangeRecord)).one()
        assert (change.kind, change.source) == ("model", "detected")
