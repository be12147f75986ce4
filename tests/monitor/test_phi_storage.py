"""No patient text or secret reaches the database: a jury run on answers and verdicts that quote
PHI, against a local OpenAI-compatible peer, then a sweep of every text column of every table."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeRun, RunStatus

PHI = "Patient: zebulon quixley, MRN 88123456, DOB 1962/03/14, SSN 321 54 9876, lives at 221B Baker Street"
MARKERS = ["zebulon", "quixley", "88123456", "1962", "321 54 9876", "Baker"]


def leaked(marker: str, text: str) -> bool:
    """A marker in stored text; a number only where it stands alone (the year 1962, not the digits of a
    stored float such as a cost of 0.0019621)."""
    if marker.isdigit():
        return re.search(rf"(?<![\d.]){marker}(?!\d)", text) is not None
    return marker in text


API_KEY = "sk-live-Q7pXSECRETkeyvalue9"


def hostile_model(*, reject_key: bool = False) -> Starlette:
    """An OpenAI-compatible server whose answers and judge verdicts quote the patient's identifiers,
    or which rejects the key and echoes it, as some gateways do in their 401 messages."""

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if reject_key:
            key = request.headers.get("authorization", "").removeprefix("Bearer ")
            return JSONResponse(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key}. {PHI}",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
                401,
            )
        if body["model"].startswith("judge"):
            verdict = {
                c: {"score": 4, "explanation": f"The reply addresses {PHI} correctly."}
                for c in ("accuracy", "completeness", "clarity")
            }
            text = json.dumps(verdict)
        else:
            text = f"Dear patient, regarding {PHI}: please keep taking your medicine."
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _textual(kind: sa.types.TypeEngine[Any]) -> bool:
    """Strings, enums and JSON, including sqlmodel's AutoString (a decorator over String)."""
    return isinstance(kind, (sa.String, sa.JSON)) or isinstance(getattr(kind, "impl", None), (sa.String, sa.JSON))


def every_text(engine: Engine) -> list[tuple[str, str]]:
    """(table.column, value) for every string or JSON value stored anywhere."""
    found = []
    with engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            columns = [c for c in table.columns if _textual(c.type)]
            if not columns:
                continue
            for row in conn.execute(sa.select(*columns)):
                for column, value in zip(columns, row, strict=True):
                    if value is not None:
                        text = value if isinstance(value, str) else json.dumps(value)
                        found.append((f"{table.name}.{column.name}", text))
    return found


def jury_plan(make_plan: Callable[..., Plan], url: str, **privacy: Any) -> Plan:
    endpoint = {"base_url": f"{url}/v1", "api_key_env": "MEDMON_TEST_KEY", "timeout_s": 5, "max_retries": 0}
    return make_plan(
        deployment=endpoint | {"model": "clinic-model"},
        jury={"judges": [endpoint | {"name": f"judge-{i}", "model": f"judge-{i}"} for i in (1, 2, 3)]},
        tasks=[
            {
                "id": "replies",
                "benchmark": "med_dialog",
                "canaries": {"pack": "patient_messages"},
                "schedule": "1h",
                "sample_size": 4,
                "thresholds": {"min_score": 0.5},
            }
        ],
        privacy=privacy,
    )


@pytest.mark.parametrize("store_text", [False, True])
def test_no_phi_in_any_text_column_after_a_jury_run(
    serve: Callable[..., Any],
    make_plan: Callable[..., Plan],
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    store_text: bool,
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", API_KEY)
    server = serve(hostile_model())
    plan = jury_plan(make_plan, server.url, redactor="builtin", store_text=store_text)
    outcome = run_task_probe(
        engine,
        plan,
        load_context(plan, plan.tasks[0]),
        rng=random.Random(1),
        now=lambda: datetime(2026, 11, 1, tzinfo=UTC),
    )
    assert outcome.results == 4 and outcome.errors == 0 and outcome.mean_score == pytest.approx(0.75)
    texts = every_text(engine)
    leaks = [(where, m) for where, text in texts for m in MARKERS + [API_KEY] if leaked(m, text)]
    assert leaks == []
    stored = {where for where, _ in texts}
    assert ("proberesult.answer" in stored) is store_text
    assert ("juryverdict.explanation" in stored) is store_text
    if store_text:
        assert any("[NAME]" in t and "[MRN]" in t for w, t in texts if w == "juryverdict.explanation")


def test_an_echoed_api_key_is_blanked_from_stored_errors(
    serve: Callable[..., Any], make_plan: Callable[..., Plan], engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", API_KEY)
    server = serve(hostile_model(reject_key=True))
    plan = jury_plan(make_plan, server.url, redactor="builtin", store_text=True)
    outcome = run_task_probe(
        engine,
        plan,
        load_context(plan, plan.tasks[0]),
        rng=random.Random(1),
        now=lambda: datetime(2026, 11, 1, tzinfo=UTC),
    )
    assert outcome.errors == 4
    texts = every_text(engine)
    errors = [t for w, t in texts if w == "proberesult.error"]
    assert len(errors) == 4 and all("***" in e for e in errors)
    assert [(w, m) for w, t in texts for m in MARKERS + [API_KEY] if leaked(m, t)] == []


def test_a_redactor_that_raises_fails_the_run_instead_of_leaving_it_running(
    serve: Callable[..., Any], make_plan: Callable[..., Plan], engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import medmon.probes.runs

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("storage refused the row")

    monkeypatch.setenv("MEDMON_TEST_KEY", API_KEY)
    monkeypatch.setattr(medmon.probes.runs, "protect_results", broken)
    server = serve(hostile_model())
    plan = jury_plan(make_plan, server.url, redactor="builtin")
    with pytest.raises(RuntimeError, match="storage refused"):
        run_task_probe(
            engine,
            plan,
            load_context(plan, plan.tasks[0]),
            rng=random.Random(1),
            now=lambda: datetime(2026, 11, 1, tzinfo=UTC),
        )
    with engine.connect() as conn:
        statuses = conn.execute(sa.select(ProbeRun.status, ProbeRun.error)).all()  # type: ignore[call-overload]
    assert [s for s, _ in statuses] == [RunStatus.failed]
    assert "storage refused" in statuses[0][1]
