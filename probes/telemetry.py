"""OpenTelemetry for probes: GenAI semantic-convention names, spans and histograms.

The semantic-conventions package deprecated its ``gen_ai.*`` constants, so medmon defines the
names it emits here, once. Each model call is a CLIENT span named ``"chat {model}"`` with the
GenAI attributes and no message content (prompts and answers may hold PHI); each probe run is a
span that parents its calls. Two histograms follow the GenAI metric conventions:
``gen_ai.client.token.usage`` ({token}, split by ``gen_ai.token.type``) and
``gen_ai.client.operation.duration`` (s).

Providers are injected. By default the global ones are used, which are no-ops until the service
configures an SDK, so a library user pays almost nothing; tests pass their own in-memory
providers and never touch the globals.

References
----------
OpenTelemetry semantic conventions for generative AI systems: spans, metrics and events
(``gen_ai.*``), version 1.37+.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

# Attribute names (GenAI semantic conventions).
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
OPENAI_SYSTEM_FINGERPRINT = "openai.response.system_fingerprint"
ERROR_TYPE = "error.type"
EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"

# Metric names.
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"

# medmon's own attributes.
CALL_ROLE = "medmon.call.role"  # production | judge
CALL_ATTEMPTS = "medmon.call.attempts"
TASK_ID = "medmon.task.id"
RUN_CANARIES = "medmon.run.canaries"
RUN_ERRORS = "medmon.run.errors"

CHAT = "chat"
DEFAULT_PROVIDER = "openai"
INSTRUMENTATION_SCOPE = "medmon.probes"

# Bucket boundaries the GenAI conventions recommend for these histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)


@dataclass(frozen=True)
class CallRecord:
    """What a finished (or failed) model call reports to telemetry."""

    request_model: str
    temperature: float | None
    max_tokens: int
    duration_s: float
    response_model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None
    attempts: int = 1


@dataclass
class Telemetry:
    """A tracer and the two GenAI histograms, from injected providers (globals when omitted).

    Examples
    --------
    >>> t = Telemetry()   # no-op until the process configures an OpenTelemetry SDK
    >>> t.provider
    'openai'
    """

    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    provider: str = DEFAULT_PROVIDER
    tracer: trace.Tracer = field(init=False)
    token_usage: Histogram = field(init=False)
    duration: Histogram = field(init=False)

    def __post_init__(self) -> None:
        tp = self.tracer_provider or trace.get_tracer_provider()
        mp = self.meter_provider or metrics.get_meter_provider()
        self.tracer = tp.get_tracer(INSTRUMENTATION_SCOPE)
        meter = mp.get_meter(INSTRUMENTATION_SCOPE)
        self.token_usage = meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.duration = meter.create_histogram(
            OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )

    @contextmanager
    def call_span(self, request_model: str, *, role: str = "production") -> Iterator[Span]:
        """A CLIENT span ``"chat {model}"`` around one model call (retries included)."""
        with self.tracer.start_as_current_span(
            f"{CHAT} {request_model}",
            kind=SpanKind.CLIENT,
            record_exception=False,
            set_status_on_exception=False,
            attributes={
                OPERATION_NAME: CHAT,
                PROVIDER_NAME: self.provider,
                REQUEST_MODEL: request_model,
                CALL_ROLE: role,
            },
        ) as span:
            yield span

    def finish_call(self, span: Span, record: CallRecord) -> None:
        """Set the response attributes on the call span and record both histograms."""
        attrs: dict[str, Any] = {REQUEST_MAX_TOKENS: record.max_tokens, CALL_ATTEMPTS: record.attempts}
        optional = {
            REQUEST_TEMPERATURE: record.temperature,
            RESPONSE_MODEL: record.response_model,
            RESPONSE_ID: record.response_id,
            USAGE_INPUT_TOKENS: record.input_tokens,
            USAGE_OUTPUT_TOKENS: record.output_tokens,
            OPENAI_SYSTEM_FINGERPRINT: record.system_fingerprint,
        }
        attrs |= {k: v for k, v in optional.items() if v is not None}
        if record.finish_reason is not None:
            attrs[RESPONSE_FINISH_REASONS] = [record.finish_reason]
        if record.error_type is not None:
            attrs[ERROR_TYPE] = record.error_type
            span.set_status(Status(StatusCode.ERROR, record.error_type))
        span.set_attributes(attrs)
        metric_attrs: dict[str, Any] = {
            OPERATION_NAME: CHAT,
            PROVIDER_NAME: self.provider,
            REQUEST_MODEL: record.request_model,
        }
        if record.response_model is not None:
            metric_attrs[RESPONSE_MODEL] = record.response_model
        if record.error_type is not None:
            metric_attrs[ERROR_TYPE] = record.error_type
        self.duration.record(record.duration_s, metric_attrs)
        for kind, count in (("input", record.input_tokens), ("output", record.output_tokens)):
            if count is not None:
                self.token_usage.record(count, metric_attrs | {TOKEN_TYPE: kind})

    @contextmanager
    def run_span(self, task_id: str, canaries: int) -> Iterator[Span]:
        """An INTERNAL span ``"probe {task}"`` that parents the run's call spans."""
        with self.tracer.start_as_current_span(
            f"probe {task_id}", kind=SpanKind.INTERNAL, attributes={TASK_ID: task_id, RUN_CANARIES: canaries}
        ) as span:
            yield span

    def evaluation_events(self, scores: Sequence[tuple[str, float | None, str]]) -> None:
        """One ``gen_ai.evaluation.result`` event per (name, score, label), on the current span."""
        span = trace.get_current_span()
        for name, value, label in scores:
            attrs: dict[str, Any] = {EVALUATION_NAME: name, EVALUATION_SCORE_LABEL: label}
            if value is not None:
                attrs[EVALUATION_SCORE_VALUE] = value
            span.add_event(EVALUATION_RESULT_EVENT, attrs)


@lru_cache(maxsize=1)
def global_telemetry() -> Telemetry:
    """The one ``Telemetry`` on the process's global providers, shared by every client.

    The OpenTelemetry API's proxy providers keep every meter they hand out (to re-point them once
    an SDK is configured), so a fresh ``Telemetry`` per model client would grow memory with every
    probe run of a long-running service.
    """
    return Telemetry()
