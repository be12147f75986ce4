"""OpenTelemetry from probes: GenAI span attributes and histograms, with injected in-memory providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from medmon.probes.client import ModelClient
from medmon.probes.jury import Jury, JurySettings
from medmon.probes.runner import probe_canaries
from medmon.probes.simulator import Fault, Phase, create_simulator
from medmon.probes.telemetry import OPERATION_DURATION, TOKEN_USAGE, Telemetry
from tests.probes.simkit import MCQ, NOTES, canaries_of, judge_settings, run, settings, sim_state


@pytest.fixture
def otel() -> tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Telemetry(tracer_provider, MeterProvider(metric_readers=[reader])), spans, reader


@pytest.fixture
def sim(serve: Callable) -> tuple[Any, str]:
    app = create_simulator(
        canaries_of(MCQ, NOTES),
        [Phase(accuracy=1.0, model="medmon-simulator/clinical-v1-0612", fingerprint="fp_otel")],
        seed=1,
    )
    return app, serve(app).url


def probe(
    url: str, telemetry: Telemetry, canaries: Any, scorer: str = "multiple_choice", jury: bool = False, **kw: Any
) -> list[Any]:
    async def go() -> list[Any]:
        async with ModelClient(settings(url, **kw), telemetry=telemetry) as client:
            if not jury:
                return await probe_canaries(client, canaries, "knowledge-qa", scorer)
            async with Jury(JurySettings(judge_settings(url)), telemetry=telemetry) as panel:
                return await probe_canaries(client, canaries, "notes", scorer, jury=panel)

    return run(go())


def histogram(reader: InMemoryMetricReader, name: str) -> tuple[str, list[HistogramDataPoint]]:
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == name:
                    return metric.unit or "", list(metric.data.data_points)  # type: ignore[arg-type]
    raise AssertionError(f"no metric {name}")


def test_each_call_is_a_client_span_with_genai_attributes_under_the_run_span(
    sim: tuple[Any, str], otel: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    _, url = sim
    telemetry, spans, _ = otel
    results = probe(url, telemetry, MCQ[:3], temperature=0.2, max_tokens=64)
    finished = spans.get_finished_spans()
    runs = [s for s in finished if s.name == "probe knowledge-qa"]
    calls = [s for s in finished if s.name == "chat medmon-simulator/clinical-v1"]
    assert len(runs) == 1 and len(calls) == 3
    run_span = runs[0]
    assert run_span.attributes is not None and run_span.attributes["medmon.run.canaries"] == 3
    assert run_span.attributes["medmon.run.errors"] == 0
    for span in calls:
        attrs = dict(span.attributes or {})
        assert span.kind == SpanKind.CLIENT
        assert span.parent is not None and span.parent.span_id == run_span.context.span_id
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "medmon-simulator/clinical-v1"
        assert attrs["gen_ai.request.temperature"] == 0.2 and attrs["gen_ai.request.max_tokens"] == 64
        assert attrs["gen_ai.response.model"] == "medmon-simulator/clinical-v1-0612"
        assert tuple(attrs["gen_ai.response.finish_reasons"]) == ("stop",)  # type: ignore[arg-type]
        assert attrs["openai.response.system_fingerprint"] == "fp_otel"
        assert attrs["gen_ai.usage.input_tokens"] in {r.prompt_tokens for r in results}
        assert attrs["gen_ai.usage.output_tokens"] == 1
        assert "error.type" not in attrs and span.status.status_code == StatusCode.UNSET


def test_no_message_content_reaches_spans(
    sim: tuple[Any, str], otel: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    _, url = sim
    telemetry, spans, _ = otel
    probe(url, telemetry, NOTES[:2], scorer="jury", jury=True)
    texts = [c.prompt for c in NOTES[:2]] + [c.references[0] for c in NOTES[:2]]

    def values(span: ReadableSpan) -> list[str]:
        out = [str(v) for v in (span.attributes or {}).values()]
        for event in span.events:
            out += [str(v) for v in (event.attributes or {}).values()]
        return out

    everything = " ".join(v for s in spans.get_finished_spans() for v in values(s))
    assert not any(t[:40] in everything for t in texts)


def test_a_failed_call_span_carries_the_error_type(
    sim: tuple[Any, str], otel: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    app, url = sim
    telemetry, spans, reader = otel
    sim_state(app).inject(Fault("status", status=500, count=3))
    probe(url, telemetry, MCQ[:1], max_retries=2)
    [call] = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    attrs = dict(call.attributes or {})
    assert attrs["error.type"] == "unavailable" and attrs["medmon.call.attempts"] == 3
    assert call.status.status_code == StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in attrs
    [run_span] = [s for s in spans.get_finished_spans() if s.name.startswith("probe ")]
    assert (run_span.attributes or {})["medmon.run.errors"] == 1
    _, points = histogram(reader, OPERATION_DURATION)
    assert [p.attributes.get("error.type") for p in points] == ["unavailable"]  # type: ignore[union-attr]


def test_histograms_count_tokens_by_type_and_durations(
    sim: tuple[Any, str], otel: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    _, url = sim
    telemetry, _, reader = otel
    results = probe(url, telemetry, MCQ[:4])
    unit, points = histogram(reader, TOKEN_USAGE)
    assert unit == "{token}"
    by_type = {p.attributes["gen_ai.token.type"]: p for p in points}  # type: ignore[index]
    assert set(by_type) == {"input", "output"}
    assert by_type["input"].count == 4 and by_type["input"].sum == sum(r.prompt_tokens for r in results)
    assert by_type["output"].sum == sum(r.completion_tokens for r in results)
    assert by_type["input"].attributes["gen_ai.response.model"] == "medmon-simulator/clinical-v1-0612"  # type: ignore[index]
    unit, points = histogram(reader, OPERATION_DURATION)
    assert unit == "s" and len(points) == 1 and points[0].count == 4
    assert 0 < points[0].sum < 4 * 2.0


def test_judge_calls_are_spans_with_the_judge_role_and_evaluation_events(
    sim: tuple[Any, str], otel: tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    _, url = sim
    telemetry, spans, _ = otel
    probe(url, telemetry, NOTES[:2], scorer="jury", jury=True)
    finished = spans.get_finished_spans()
    judges = [s for s in finished if (s.attributes or {}).get("medmon.call.role") == "judge"]
    assert len(judges) == 2 * 3
    assert {(s.attributes or {})["gen_ai.request.model"] for s in judges} == {
        "medmon-simulator/judge-a",
        "medmon-simulator/judge-b",
        "medmon-simulator/judge-c",
    }
    [run_span] = [s for s in finished if s.name == "probe notes"]
    assert all(s.parent is not None and s.parent.span_id == run_span.context.span_id for s in judges)
    events = [e for e in run_span.events if e.name == "gen_ai.evaluation.result"]
    assert len(events) == 2 * 3
    assert {(e.attributes or {})["gen_ai.evaluation.score.label"] for e in events} == {"ok"}
    assert {(e.attributes or {})["gen_ai.evaluation.score.value"] for e in events} == {5.0}


def test_clients_share_one_telemetry_on_global_providers() -> None:
    """A long-running service makes a client per probe run: that must not grow memory.

    The OpenTelemetry API's proxy meter provider keeps every meter it hands out, so a fresh
    Telemetry per client would leak one meter (and two histograms) per probe run.
    """
    import asyncio

    from opentelemetry import metrics

    from medmon.probes.client import ModelClient, ModelSettings

    async def make_clients(count: int) -> list[object]:
        telemetries = []
        for _ in range(count):
            client = ModelClient(ModelSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key="k"))
            telemetries.append(client.telemetry)
            await client.aclose()
        return telemetries

    provider = metrics.get_meter_provider()
    before = len(getattr(provider, "_meters", []))
    telemetries = asyncio.run(make_clients(50))
    assert all(t is telemetries[0] for t in telemetries)
    assert len(getattr(provider, "_meters", [])) - before <= 1
