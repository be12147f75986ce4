"""GenAI spans made by the real OpenTelemetry SDK and encoded by its own OTLP encoder (not a test module)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.spans import CallRecord
from tests.conftest import plan_dict

MODEL = "medmon-simulator/clinical-v1"


def genai_attributes(
    *,
    model: str = MODEL,
    served: str | None = MODEL,
    tokens: tuple[int, int] = (40, 60),
    finish: str = "stop",
    **extra: Any,
) -> dict[str, Any]:
    """Attributes as the OpenAI instrumentation writes them for one chat call."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        **({"gen_ai.response.model": served} if served else {}),
        "gen_ai.usage.input_tokens": tokens[0],
        "gen_ai.usage.output_tokens": tokens[1],
        "gen_ai.response.finish_reasons": (finish,),
        **extra,
    }


def make_spans(
    specs: Sequence[dict[str, Any]],
    *,
    service: str = "discharge-app",
    duration_s: float = 0.8,
    end_ns: int | None = None,
) -> list[ReadableSpan]:
    """Finished SDK spans, one per attribute dict (``_error`` marks a failed call, ``_end_ns`` its end)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for attrs in specs:
        attrs = dict(attrs)
        error = attrs.pop("_error", None)
        end = attrs.pop("_end_ns", end_ns) or time.time_ns()
        span = tracer.start_span(
            f"chat {attrs.get('gen_ai.request.model', '')}",
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=end - int(duration_s * 1e9),
        )
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
        deployment={
            "base_url": "http://127.0.0.1:9/v1",
            "model": MODEL,
            "price": {"input_per_mtok": 5.0, "output_per_mtok": 15.0},
        },
        tasks=[
            {
                "id": "discharge",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7},
            },
            {
                "id": "triage",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7},
            },
        ],
        storage={"url": db_url},
        traffic={
            "token_env": None,
            "routes": [
                {"task": "triage", "attributes": {"medmon.task": "triage"}},
                {"task": "discharge", "service": "discharge-app"},
            ],
            **traffic,
        },
    )
    return Plan.model_validate(data)


def clinic_rate(hour: datetime, peak: float, weekends: bool = False) -> float:
    """Expected calls in one hour of a clinical application: busy 8:00-18:00, quiet at night.

    ``weekends``: Saturdays and Sundays see 40% of a weekday's traffic.
    """
    h = hour.hour
    share = 1.0 if 8 <= h < 18 else 0.5 if h in (7, 18, 19) else 0.25 if 20 <= h < 23 else 0.05
    return peak * share * (0.4 if weekends and hour.weekday() >= 5 else 1.0)


def working_hour(hour: datetime) -> bool:
    return 8 <= hour.hour < 18


def clinic_counts(
    seed: int,
    start: datetime,
    hours: int,
    peak: float,
    *,
    weekends: bool = False,
    change_at: datetime | None = None,
    change: float = 1.0,
    when: Callable[[datetime], bool] = working_hour,
) -> list[tuple[datetime, int]]:
    """Simulated calls per hour: the clinic's rhythm, a day-to-day and an hour-to-hour factor (5% SD each,
    so more spread than Poisson), Poisson counts; from ``change_at`` the hours ``when`` selects get
    ``change`` times their calls."""
    rng = np.random.default_rng(seed)
    out, day_factor, day = [], 1.0, None
    for i in range(hours):
        hour = start + timedelta(hours=i)
        if hour.date() != day:
            day, day_factor = hour.date(), float(rng.lognormal(0.0, 0.05))
        rate = clinic_rate(hour, peak, weekends) * day_factor * float(rng.gamma(400.0, 1 / 400.0))
        if change_at is not None and hour >= change_at and when(hour):
            rate *= change
        out.append((hour, int(rng.poisson(rate))))
    return out


def calls_in_hours(
    seed: int,
    counts: Sequence[tuple[datetime, int]],
    *,
    model: str = MODEL,
    service: str = "discharge-app",
    attributes: dict[str, str] | None = None,
) -> list[CallRecord]:
    """One decoded GenAI call per counted call, spread evenly over its hour."""
    rng = random.Random(seed)
    out = []
    for hour, n in counts:
        for i in range(n):
            end = hour + timedelta(seconds=(i + 0.5) * 3600 / n)
            out.append(
                CallRecord(
                    trace_id=f"{rng.getrandbits(128):032x}",
                    span_id=f"{rng.getrandbits(64):016x}",
                    service=service,
                    span_name=f"chat {model}",
                    operation="chat",
                    request_model=model,
                    response_model=model,
                    system_fingerprint="fp1",
                    started_at=end - timedelta(seconds=1),
                    ended_at=end,
                    input_tokens=300,
                    output_tokens=rng.randint(100, 300),
                    finish_reason="stop",
                    error_type=None,
                    prompt=None,
                    completion=None,
                    attributes=dict(attributes or {}),
                )
            )
    return out
