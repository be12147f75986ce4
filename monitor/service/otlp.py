"""OpenTelemetry export to an OTLP/HTTP collector, when one is configured.

The probes package emits spans and GenAI metrics through the global providers, which are no-ops
until this module installs SDK providers. The endpoint comes from the plan
(``service.otlp_endpoint``, a base URL such as ``http://collector:4318``) or from the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` variable; with neither, nothing is exported and nothing is
installed. Standard ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, certificates) still
apply. Message content is never exported (see ``medmon.probes.telemetry``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

ENV_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"


@dataclass
class OtlpTelemetry:
    """SDK providers wired to OTLP exporters; ``install`` makes them the process's globals."""

    endpoint: str
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def install(self) -> None:
        """Set the global providers (OpenTelemetry allows this once per process)."""
        trace.set_tracer_provider(self.tracer_provider)
        metrics.set_meter_provider(self.meter_provider)

    def shutdown(self) -> None:
        """Flush what is buffered and stop the exporters."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def build_otlp(
    endpoint: str | None, *, deployment: str = "production", environ: Mapping[str, str] | None = None
) -> OtlpTelemetry | None:
    """Build providers exporting to ``endpoint`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``); None if neither.

    Building connects to nothing: exporters send only when spans end or metrics are collected.
    """
    env = os.environ if environ is None else environ
    base = (endpoint or env.get(ENV_ENDPOINT) or "").rstrip("/")
    if not base:
        return None
    resource = Resource.create({"service.name": "medmon", "deployment.environment.name": deployment})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics"), export_interval_millis=30_000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    return OtlpTelemetry(base, tracer_provider, meter_provider)
