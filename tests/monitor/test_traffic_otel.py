"""Real traffic end to end: the official OpenAI instrumentation, the real OTLP exporter, a running ``medmon serve``.

An application instruments a real ``openai`` client with ``opentelemetry-instrumentation-openai-v2``,
calls the simulator, and exports its spans with the OTLP/HTTP exporter to ``medmon serve``'s
receiver. medmon must see them as the task's traffic, raise a cost alert when the simulator's
answers grow dearer, and store a completion that quotes patient identifiers redacted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from sqlmodel import Session, col, func, select

from medmon.alerts import Alert
from medmon.baselines.canary import canary_from_dict
from medmon.monitor.models import FindingRecord, TrafficReference, TrafficRollup, TrafficSpan
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.monitor.service_helpers import KEY_ENV, reader, start_medmon, wait_for

TOKEN = "traffic-test-token-0123456789abcdefghij"
PHI_NOTE = "Summarize the discharge note for the patient in bed 4."
PHI_ANSWER = "Patient: John Smith, MRN 00123456, DOB: 03/14/1950, call 555-123-4567. Rest and fluids."
PLAIN = "Write discharge instructions for an ankle sprain."
PLAIN_ANSWER = "Rest, ice, compression and elevation; return if numbness or severe pain."
REFERENCE_CALLS = 120


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The official instrumentation, content capture on (the application's opt-in), undone afterwards."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    yield
    OpenAIInstrumentor().uninstrument()


def _plan(path: Path, sim_url: str, db_url: str) -> Path:
    data = plan_dict(
        deployment={
            "base_url": f"{sim_url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": KEY_ENV,
            "price": {"input_per_mtok": 5.0, "output_per_mtok": 15.0},
        },
        tasks=[
            {
                "id": "discharge",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1d",
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7},
            }
        ],
        storage={"url": db_url},
        traffic={
            "token_env": "MEDMON_TRAFFIC_TOKEN",
            "detect_every": "0.5s",
            "reference_window": "1s",
            "reference_min_calls": REFERENCE_CALLS,
            "routes": [{"task": "discharge", "service": "discharge-app", "model": "medmon-simulator/*"}],
        },
    )
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.process
def test_instrumented_openai_traffic_becomes_task_streams_alerts_and_redacted_rows(
    tmp_path: Path, db_url: str, serve, instrumented
) -> None:
    canaries = [
        canary_from_dict(
            {
                "id": "phi",
                "messages": [{"role": "user", "content": PHI_NOTE}],
                "references": [PHI_ANSWER],
                "scorer": "jury",
            }
        ),
        canary_from_dict(
            {
                "id": "plain",
                "messages": [{"role": "user", "content": PLAIN}],
                "references": [PLAIN_ANSWER],
                "scorer": "jury",
            }
        ),
    ]
    # The answers turn 60 tokens longer after the reference: a cost rise of about 2.5x per call.
    sim = serve(
        create_simulator(
            canaries,
            [
                Phase(accuracy=1.0),
                Phase(after_requests=REFERENCE_CALLS + 20, accuracy=1.0, extra_completion_tokens=60, label="cost rise"),
            ],
        )
    )
    served = start_medmon(
        ["serve", str(_plan(tmp_path / "plan.yaml", sim.url, db_url)), "--traffic-port", "0"],
        tmp_path / "serve.log",
        env={"MEDMON_TRAFFIC_TOKEN": TOKEN},
    )
    try:
        url = served.wait_log(r"receiving OTLP/HTTP traces on (http://\S+)/v1/traces").group(1)
        served.wait_log("leading as")
        provider = TracerProvider(resource=Resource.create({"service.name": "discharge-app"}))
        provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}),
                schedule_delay_millis=200,
            )
        )
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        client = openai.OpenAI(base_url=f"{sim.url}/v1", api_key="app-key", max_retries=0)
        db = reader(db_url)

        def call(n: int) -> None:
            for i in range(n):
                prompt = PHI_NOTE if i % 10 == 0 else PLAIN
                client.chat.completions.create(
                    model="medmon-simulator/clinical-v1", messages=[{"role": "user", "content": prompt}]
                )
            provider.force_flush()

        call(REFERENCE_CALLS)
        with Session(db) as s:
            spans = wait_for(
                lambda: (
                    s.exec(
                        select(func.count()).select_from(TrafficSpan).where(TrafficSpan.task_id == "discharge")
                    ).one()
                    >= REFERENCE_CALLS
                ),
                what="the reference calls stored as the task's traffic",
            )
        assert spans
        ref = wait_for(lambda: _reference(db), timeout=20, what="the traffic reference")
        assert ref.calls >= REFERENCE_CALLS and ref.models == ["medmon-simulator/clinical-v1"]

        def cost_alert() -> Alert | None:
            with Session(db) as s:
                return s.exec(select(Alert).where(Alert.rule == "traffic_cost_rise")).first()

        for _ in range(30):  # at most 30 x 20 calls; the alert comes well before
            call(20)
            if cost_alert() is not None:
                break
        alert = wait_for(cost_alert, timeout=10, what="a cost alert raised from real traffic")
        assert alert.task_id == "discharge" and alert.labels["metric"] == "traffic_cost"
        with Session(db) as s:
            finding = s.exec(select(FindingRecord).where(FindingRecord.metric == "traffic_cost")).one()
            assert finding.task_id == "discharge" and finding.estimate > finding.null_mean
            phi = s.exec(select(TrafficSpan).where(col(TrafficSpan.completion).contains("MRN"))).first()
            assert phi is not None
            assert phi.completion.startswith("Patient: [NAME], MRN [MRN], DOB: [DOB], call [PHONE]")
            assert "John Smith" not in phi.completion and "00123456" not in phi.completion
            assert phi.prompt == PHI_NOTE
            assert phi.service == "discharge-app" and phi.input_tokens and phi.output_tokens
            assert phi.cost_usd == pytest.approx((phi.input_tokens * 5 + phi.output_tokens * 15) / 1e6)
            everywhere = " ".join(r.completion or "" for r in s.exec(select(TrafficSpan)).all())
            assert "John Smith" not in everywhere
            rolled = s.exec(select(func.sum(TrafficRollup.calls)).where(TrafficRollup.task_id == "discharge")).one()
            assert rolled and rolled >= REFERENCE_CALLS
    finally:
        assert served.stop() == 0


def _reference(db) -> TrafficReference | None:  # type: ignore[no-untyped-def]
    with Session(db) as s:
        return s.get(TrafficReference, "discharge")
