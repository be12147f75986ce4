"""Read OTLP trace exports (protobuf or JSON) into GenAI call records, refusing bad spans with a reason.

The attribute names are the OpenTelemetry GenAI semantic conventions as the official OpenAI
instrumentation writes them, with the older names still in use accepted too
(``gen_ai.usage.prompt_tokens``, ``gen_ai.system``). Message content is read where the
application opted in: the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` span
attributes (JSON, the current convention) or ``gen_ai.content.prompt`` /
``gen_ai.content.completion`` span events (the older one).

A span that is not a GenAI call (an HTTP or database span of the same application) is skipped
and counted as ``not_genai``; a GenAI span with impossible values is refused with its reason.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

OPERATION = "gen_ai.operation.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
FINISH_REASONS = "gen_ai.response.finish_reasons"
FINGERPRINT = "openai.response.system_fingerprint"
ERROR_TYPE = "error.type"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
PROMPT_EVENT, COMPLETION_EVENT = "gen_ai.content.prompt", "gen_ai.content.completion"
SERVICE_NAME = "service.name"

PROTOBUF, JSON_TYPE = "application/x-protobuf", "application/json"


MAX_DECODED = 32 * 1024 * 1024  # bytes a body may inflate to; a compression bomb stops here


class DecodeFailure(ValueError):
    """The body is not an OTLP trace export (the receiver answers 400 with this message)."""


class TooLarge(DecodeFailure):
    """The body inflates past the cap (the receiver answers 413 with this message)."""


@dataclass(frozen=True)
class Limits:
    """What a span may claim before it is refused as absurd."""

    max_tokens: int = 2_000_000
    max_skew: timedelta = timedelta(hours=1)
    max_age: timedelta = timedelta(days=7)


@dataclass
class CallRecord:
    """One GenAI call as medmon keeps it (before routing, pricing and redaction)."""

    trace_id: str
    span_id: str
    service: str
    span_name: str
    operation: str
    request_model: str
    response_model: str | None
    system_fingerprint: str | None
    started_at: datetime
    ended_at: datetime
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    error_type: str | None
    prompt: str | None
    completion: str | None
    attributes: dict[str, str] = field(default_factory=dict)  # span and resource attributes, for routing
    duration_s: float | None = None  # exact, from the span's nanoseconds (datetimes keep microseconds)

    @property
    def latency_s(self) -> float:
        return self.duration_s if self.duration_s is not None else (self.ended_at - self.started_at).total_seconds()

    @property
    def model(self) -> str:
        return self.response_model or self.request_model


@dataclass
class Decoded:
    """The calls read from one export, and how many spans were refused (or skipped) for which reason."""

    calls: list[CallRecord] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    def message(self) -> str:
        return "; ".join(f"{n} span(s) refused: {REASONS.get(r, r)}" for r, n in sorted(self.refused.items()))


REASONS = {
    "absurd_tokens": "token counts negative or beyond the plan's traffic.max_tokens_per_call",
    "bad_times": "end time before start time, or no times",
    "future": "ends further in the future than traffic.max_clock_skew allows",
    "too_old": "ended longer ago than traffic.max_age allows",
    "no_model": "a GenAI span without gen_ai.request.model or gen_ai.response.model",
    "nul_character": "a text field holds a NUL character, which the database cannot store",
    "unstorable": "the database refused one of its values",
    "not_permitted": "routed to a task the sending application's token may not feed (traffic.applications)",
    "unreadable": "an attribute cannot be read (message JSON nested too deeply, or a value of no usable type)",
    "not_genai": "not a GenAI call (no gen_ai.operation.name or gen_ai.request.model)",
}


def decompress(body: bytes, encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    """Undo ``Content-Encoding`` (gzip or deflate; identity or none as is), never producing more
    than ``limit`` bytes: inflating streams through ``zlib.decompressobj`` with ``max_length``, so
    a compression bomb is refused (:class:`TooLarge`) after at most ``limit`` bytes of output."""
    enc = (encoding or "identity").strip().lower()
    if enc == "identity":
        if len(body) > limit:
            raise TooLarge(f"body over {limit} bytes; send smaller batches")
        return body
    if enc not in ("gzip", "deflate"):
        raise DecodeFailure(f"unsupported Content-Encoding {encoding!r}; expected gzip, deflate or identity")
    # gzip: the gzip header; deflate: RFC 1950 zlib data, or raw RFC 1951 data as some clients send.
    wbits = 16 + zlib.MAX_WBITS if enc == "gzip" else (zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS)
    out = bytearray()
    data = body
    try:
        while True:  # gzip may hold several members, one after another
            inflater = zlib.decompressobj(wbits)
            while not inflater.eof:
                chunk = inflater.decompress(data, limit + 1 - len(out))
                out += chunk
                if len(out) > limit:
                    raise TooLarge(f"body inflates past {limit} bytes; send smaller batches")
                data = inflater.unconsumed_tail
                if not chunk and not data:
                    raise DecodeFailure(f"body is not valid {enc} data: it ends before the compressed stream does")
            data = inflater.unused_data
            if enc != "gzip" or not data.strip(b"\x00"):
                return bytes(out)
    except zlib.error as exc:
        raise DecodeFailure(f"body is not valid {enc} data: {exc}") from exc


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex; protobuf's JSON mapping wants base64 bytes."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id") and isinstance(
                v, str
            ):
                try:
                    v = base64.b64encode(bytes.fromhex(v)).decode() if v else v
                except ValueError:
                    raise DecodeFailure(f"{k} {v!r} is not hex") from None
            out[k] = _hex_ids_to_base64(v)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def parse_export(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """An ``ExportTraceServiceRequest`` from an OTLP/HTTP body (already decompressed)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    request = ExportTraceServiceRequest()
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise DecodeFailure(f"body is not an OTLP protobuf ExportTraceServiceRequest: {exc}") from exc
        return request
    if kind == JSON_TYPE:
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DecodeFailure(f"body is not JSON: {exc}") from exc
        except RecursionError:
            raise DecodeFailure("body is JSON nested too deeply to be an OTLP trace export") from None
        if not isinstance(data, dict):
            raise DecodeFailure(f"expected a JSON object with 'resourceSpans', got {type(data).__name__}")
        try:
            json_format.ParseDict(_hex_ids_to_base64(data), request, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            raise DecodeFailure(f"JSON is not an OTLP trace export: {exc}") from exc
        except RecursionError:
            raise DecodeFailure("body is JSON nested too deeply to be an OTLP trace export") from None
        return request
    raise ValueError(f"unsupported content type {content_type!r}")


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def _text_of_messages(raw: Any) -> str | None:
    """The text parts of GenAI messages (a JSON string or a list of message objects)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return raw
    if not isinstance(raw, list):
        return None
    texts = []
    for message in raw:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type", "text") == "text" and part.get("content") is not None:
                texts.append(str(part["content"]))
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
    return "\n".join(texts) if texts else None


def _int(attrs: Mapping[str, Any], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = attrs.get(name)
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError, OverflowError):
                return -1  # unreadable, NaN or infinite: refused as absurd
    return None


def _when(nanos: int) -> datetime:
    return datetime.fromtimestamp(nanos / 1e9, tz=UTC)


def iter_spans(request: ExportTraceServiceRequest) -> Iterator[tuple[dict[str, Any], Span]]:
    for rs in request.resource_spans:
        resource = _attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield resource, span


def _content(attrs: Mapping[str, Any], span: Span) -> tuple[str | None, str | None]:
    prompt = _text_of_messages(attrs.get(INPUT_MESSAGES))
    completion = _text_of_messages(attrs.get(OUTPUT_MESSAGES))
    for event in span.events:
        if event.name in (PROMPT_EVENT, COMPLETION_EVENT):
            ev = _attributes(event.attributes)
            if event.name == PROMPT_EVENT and prompt is None:
                prompt = _text_of_messages(ev.get("gen_ai.prompt"))
            if event.name == COMPLETION_EVENT and completion is None:
                completion = _text_of_messages(ev.get("gen_ai.completion"))
    return prompt, completion


def read_span(resource: Mapping[str, Any], span: Span, now: datetime, limits: Limits) -> CallRecord | str:
    """The call a span records, or the reason it is refused (a key of ``REASONS``)."""
    attrs = _attributes(span.attributes)
    request_model = attrs.get(REQUEST_MODEL)
    if attrs.get(OPERATION) is None and request_model is None:
        return "not_genai"
    response_model = attrs.get(RESPONSE_MODEL)
    if not request_model and not response_model:
        return "no_model"
    if not span.start_time_unix_nano or span.end_time_unix_nano < span.start_time_unix_nano:
        return "bad_times"
    started, ended = _when(span.start_time_unix_nano), _when(span.end_time_unix_nano)
    if ended > now + limits.max_skew:
        return "future"
    if ended < now - limits.max_age:
        return "too_old"
    tokens_in, tokens_out = _int(attrs, INPUT_TOKENS), _int(attrs, OUTPUT_TOKENS)
    if any(t is not None and not 0 <= t <= limits.max_tokens for t in (tokens_in, tokens_out)):
        return "absurd_tokens"
    reasons = attrs.get(FINISH_REASONS)
    finish = (reasons[0] if reasons else None) if isinstance(reasons, list) else reasons
    error = attrs.get(ERROR_TYPE)
    if error is None and span.status.code == Status.STATUS_CODE_ERROR:
        error = "error"
    try:
        prompt, completion = _content(attrs, span)
    except RecursionError:
        return "unreadable"
    routing = {k: str(v) for k, v in {**resource, **attrs}.items() if isinstance(v, (str, int, float, bool))}
    call = CallRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        service=str(resource.get(SERVICE_NAME, "")),
        span_name=span.name,
        operation=str(attrs.get(OPERATION) or ""),
        request_model=str(request_model or ""),
        response_model=str(response_model) if response_model else None,
        system_fingerprint=str(attrs[FINGERPRINT]) if attrs.get(FINGERPRINT) else None,
        started_at=started,
        ended_at=ended,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        finish_reason=str(finish) if finish else None,
        error_type=str(error) if error else None,
        prompt=prompt,
        completion=completion,
        attributes=routing,
        duration_s=(span.end_time_unix_nano - span.start_time_unix_nano) / 1e9,
    )
    return "nul_character" if any("\x00" in t for t in _texts(call)) else call


def _texts(call: CallRecord) -> Iterator[str]:
    """Every text of a call that is stored or routed on (PostgreSQL refuses a NUL in any of them)."""
    for text in (
        call.service,
        call.span_name,
        call.operation,
        call.request_model,
        call.response_model,
        call.system_fingerprint,
        call.finish_reason,
        call.error_type,
        call.prompt,
        call.completion,
    ):
        if text is not None:
            yield text


def decode(request: ExportTraceServiceRequest, now: datetime, limits: Limits = Limits()) -> Decoded:
    """Every GenAI call of an export; spans refused or skipped are counted by reason."""
    out = Decoded()
    for resource, span in iter_spans(request):
        try:
            got = read_span(resource, span, now, limits)
        except (TypeError, ValueError, OverflowError, RecursionError):  # one span's oddity, not the export's
            got = "unreadable"
        if isinstance(got, CallRecord):
            out.calls.append(got)
        elif got == "not_genai":
            out.skipped[got] += 1
        else:
            out.refused[got] += 1
    return out
