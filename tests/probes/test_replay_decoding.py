"""A HELM canary is asked the way HELM asked it (temperature, max tokens, stop), unless the plan overrides."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from medmon.baselines.canary import Canary
from medmon.monitor.governance.checks import plan_notes
from medmon.monitor.plan.model import Plan
from medmon.monitor.service.webserver import RunningServer
from medmon.probes.client import ModelClient, ModelSettings
from medmon.probes.runner import probe_canary, replay_decoding
from medmon.probes.simulator import create_simulator

HELM = {"temperature": 0.0, "max_tokens": 1, "stop_sequences": ["\n"]}
CANARY = Canary(
    id="c1",
    messages=({"role": "user", "content": "Pick one.\nA. yes\nB. no"},),
    references=("A",),
    scorer="multiple_choice",
    choices=("yes", "no"),
    decoding=HELM,
)


def _sent(serve: Callable[[object], RunningServer], overrides: dict[str, object] | None) -> dict[str, object]:
    app = create_simulator([CANARY])
    server = serve(app)
    settings = ModelSettings(
        base_url=f"{server.url}/v1",
        model="medmon-simulator/clinical-v1",
        api_key="k",
        temperature=0.7,
        max_tokens=512,
        max_retries=0,
    )

    async def go() -> None:
        async with ModelClient(settings) as client:
            await probe_canary(client, CANARY, "t", "multiple_choice", decoding=overrides)

    asyncio.run(go())
    body: dict[str, object] = app.state.sim.recent[-1]
    return body


def test_helm_decoding_is_replayed(serve: Callable[[object], RunningServer]) -> None:
    body = _sent(serve, None)
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.0, 1, ["\n"])


def test_plan_override_wins_and_is_shown(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan]
) -> None:
    body = _sent(serve, {"max_tokens": 64})
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.0, 64, ["\n"])
    task = {
        "id": "knowledge-qa",
        "benchmark": "med_qa",
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "thresholds": {"min_score": 0.7},
        "decoding": {"max_tokens": 64},
    }
    plan = make_plan(tasks=[task])
    assert any("decoding overridden by the plan (max_tokens 64)" in n for n in plan_notes(plan))


def test_a_canary_without_decoding_uses_the_deployment_settings(serve: Callable[[object], RunningServer]) -> None:
    plain = Canary(id="c2", messages=CANARY.messages, references=("A",))
    assert replay_decoding(plain) is None
    assert replay_decoding(plain, {"temperature": 0.2}) == {"temperature": 0.2}
    assert replay_decoding(CANARY, {"stop_sequences": []}) == {**HELM, "stop_sequences": []}
