"""GenAI spans made by the real OpenTelemetry SDK and encoded by its own OTLP encoder (not a test module)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from medmon.monitor.plan.model import Plan
from tests.conftest import plan_dict

MODEL = "medmon-simulator/clinical-v1"


def genai_attributes(*, model: str = MODEL, served: str | None = MODEL, tokens: tuple[int, int] = (40, 60),
                     finish: str = "stop", **extra: Any) -> dict[str, Any]:
    """Attributes as the OpenAI instrumentation writes them for one chat call."""
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": model,
            **({"gen_ai.response.model": served} if served else {}),
            "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1],
            "gen_ai.response.finish_reasons": (finish,), **extra}


def make_spans(specs: Sequence[dict[str, Any]], *, service: str = "discharge-app",
               duration_s: float = 0.8, end_ns: int | None = None) -> list[ReadableSpan]:
    """Finished SDK spans, one per attribute dict (``_error`` marks a failed call, ``_end_ns`` its end)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for attrs in specs:
        attrs = dict(attrs)
        error = attrs.pop("_error", None)
        end = attrs.pop("_end_ns", end_ns) or time.time_ns()
        span = tracer.start_span(f"chat {attrs.get('gen_ai.request.model', '')}", kind=SpanKind.CLIENT,
                                 attributes=attrs, start_time=end - int(duration_s * 1e9))
        if error:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end)
    provider.shutdown()
    return list(memory.get_finished_spans())


def export_body(spans: Sequence[ReadableSpan]) -> bytes:
    """The protobuf body the SDK's OTLP/HTTP exporter sends for ``spans``."""
    return encode_spans(spans).SerializePartialToString()


def traffic_plan(db_url: str, **traffic: Any) -> Plan:
    data = plan_dict(
        deployment={"base_url": "http://127.0.0.1:9/v1", "model": MODEL,
                    "price": {"input_per_mtok": 5.0, "output_per_mtok": 15.0}},
        tasks=[{"id": "discharge", "benchmark": "med_qa", "canaries": {"pack": "clinical_knowledge_mcq"},
                "baseline": {"value": 0.85, "n": 500}, "thresholds": {"min_score": 0.7}},
               {"id": "triage", "benchmark": "med_qa", "canaries": {"pack": "clinical_knowledge_mcq"},
                "baseline": {"value": 0.85, "n": 500}, "thresholds": {"min_score": 0.7}}],
        storage={"url": db_url},
        traffic={"token_env": None, "routes": [{"task": "triage", "attributes": {"medmon.task": "triage"}},
                                               {"task": "discharge", "service": "discharge-app"}], **traffic},
    )
    return Plan.model_validate(data)
