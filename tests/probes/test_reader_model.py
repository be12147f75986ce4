"""The reader model: a strict JSON schema over real HTTP, redacted text only, never overruling the rules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from medmon.baselines.canary import Canary
from medmon.monitor.service.webserver import RunningServer
from medmon.probes.client import ModelClient, ModelSettings
from medmon.probes.extraction import read_choice
from medmon.probes.reading.base import Reading
from medmon.probes.reading.reader_model import (
    READER_MODEL,
    agreement,
    decide,
    parse_reader_answer,
    read_with_model,
    response_format,
)
from medmon.probes.redaction import redact

CANARY = Canary(
    id="mc-1",
    messages=({"role": "user", "content": "Patient John Smith, MRN 00123456: which drug for anaphylaxis?"},),
    references=("B",),
    scorer="multiple_choice",
    choices=("Diphenhydramine", "Epinephrine", "Methylprednisolone"),
)


def _reader(answer: str, seen: list[dict[str, Any]]) -> Starlette:
    async def chat(request: Request) -> JSONResponse:
        seen.append(await request.json())
        message = {"role": "assistant", "content": answer}
        return JSONResponse(
            {
                "id": "r-1",
                "object": "chat.completion",
                "model": "reader",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _ask(url: str, reply: str, *, store_text: bool = True) -> Reading:
    settings = ModelSettings(f"{url}/v1", "reader", "k", max_retries=0, timeout_s=5)
    client = ModelClient(settings)

    async def go() -> Reading:
        try:
            return await read_with_model(client, "multiple_choice", CANARY, reply, redact=redact, store_text=store_text)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_the_reader_model_is_asked_in_a_strict_schema_with_redacted_text(
    serve: Callable[[object], RunningServer],
) -> None:
    seen: list[dict[str, Any]] = []
    server = serve(_reader('{"answer": "B", "committed": true}', seen))
    reply = "Call 555-123-4567 if worse. Adrenaline IM, thigh, now."
    got = _ask(server.url, reply)
    assert got == Reading("B", READER_MODEL)
    body = seen[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["answer", "committed"] and schema["additionalProperties"] is False
    assert schema["properties"]["answer"]["enum"] == ["A", "B", "C", None]
    sent = json.dumps(body["messages"])
    assert "John Smith" not in sent and "00123456" not in sent and "555-123-4567" not in sent
    assert "[NAME]" in sent and "[PHONE]" in sent


def test_nothing_is_sent_when_the_plan_stores_no_text(serve: Callable[[object], RunningServer]) -> None:
    seen: list[dict[str, Any]] = []
    server = serve(_reader('{"answer": "B", "committed": true}', seen))
    got = _ask(server.url, "Adrenaline", store_text=False)
    assert got.value is None and "not sent" in got.reason and seen == []


def test_an_answer_off_the_schema_or_uncommitted_is_no_reading(serve: Callable[[object], RunningServer]) -> None:
    for text, why in (
        ("B", "not JSON"),
        ('{"answer": "B"}', "off the schema"),
        ('{"answer": null, "committed": false}', "no committed answer"),
        ('{"answer": 3, "committed": true}', "off the schema"),
    ):
        server = serve(_reader(text, []))
        got = _ask(server.url, "hmm")
        assert got.value is None and why in got.reason, (text, got)
    assert parse_reader_answer("numeric_tolerance", '{"answer": 54.0, "committed": true}').value == 54.0
    assert parse_reader_answer("set_f1", '{"answer": ["e11.9"], "committed": true}').value == frozenset({"E11.9"})


def test_the_rules_decide_and_the_reader_model_only_fills_what_they_leave_unparsed() -> None:
    rules = read_choice("The answer is A.", CANARY.choices)
    overruled = decide(rules, Reading("B", READER_MODEL))
    assert overruled.reading.value == "A" and overruled.path == "rules"  # never overruled
    unparsed = read_choice("Adrenaline, intramuscular, into the thigh - no letter given, by the way", ("x", "y"))
    assert not unparsed.parsed
    filled = decide(unparsed, Reading("B", READER_MODEL))
    assert filled.path == READER_MODEL and filled.reading.value == "B" and "could not" in filled.why
    neither = decide(unparsed, Reading(None, "reader model: no committed answer"))
    assert neither.path == "none" and not neither.reading.parsed


def test_agreement_counts_only_replies_both_read() -> None:
    pairs = [
        (Reading("A", "answer cue"), Reading("A", READER_MODEL)),
        (Reading("B", "answer cue"), Reading("C", READER_MODEL)),
        (Reading(None, "no option letter"), Reading("D", READER_MODEL)),
        (Reading(54.0, "value cue"), Reading(54.0, READER_MODEL)),
    ]
    assert agreement(pairs) == (2 / 3, 3)
    assert agreement([]) == (None, 0)
    assert response_format("numeric_tolerance", CANARY)["json_schema"]["schema"]["properties"]["answer"] == {
        "type": ["number", "null"]
    }
