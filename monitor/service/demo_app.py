"""The demo's SIMULATED clinical application: real ``openai`` calls, traced by the official instrumentation.

It runs as a process of its own (an application is not medmon, and the instrumentation patches
the ``openai`` module of the process it runs in). It calls the simulated model with the bundled
pack's questions through an ``openai`` client instrumented by
``opentelemetry-instrumentation-openai-v2``, and exports the spans with the standard OTLP/HTTP
exporter to medmon's traffic receiver. Each line ``N`` on its standard input asks for ``N``
calls; it answers ``done N`` once their spans are exported (the demo keeps the simulator's
request count in step with its scenario that way). It says ``ready`` once set up.

    python -m medmon.monitor.service.demo_app --base-url URL/v1 --model M --traffic URL --token T
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


def _message(m: dict[str, str]) -> ChatCompletionMessageParam:
    """A canary's message (role and content, the role one of the four a canary may have) as the SDK types it."""
    content = m["content"]
    match m["role"]:
        case "system":
            return {"role": "system", "content": content}
        case "developer":
            return {"role": "developer", "content": content}
        case "assistant":
            return {"role": "assistant", "content": content}
        case _:
            return {"role": "user", "content": content}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--traffic", required=True, help="medmon's OTLP/HTTP receiver, e.g. http://127.0.0.1:4318")
    parser.add_argument("--token", default="")
    parser.add_argument("--pack", default="clinical_knowledge_mcq")
    parser.add_argument("--service", default="discharge-assistant")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    # The application's opt-in to content capture (what medmon's judging and refusal streams read).
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

    import openai
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from medmon.probes.packs import load_pack

    provider = TracerProvider(resource=Resource.create({"service.name": args.service}))
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{args.traffic}/v1/traces", headers=headers), schedule_delay_millis=500
        )
    )
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=args.base_url, api_key="simulated-application-key", max_retries=0, timeout=10)
    questions = [[_message(m) for m in c.messages] for c in load_pack(args.pack).canaries]
    rng = random.Random(args.seed)
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line.strip() or 0)
        for _ in range(n):
            try:
                client.chat.completions.create(model=args.model, messages=list(rng.choice(questions)), max_tokens=512)
            except openai.OpenAIError:
                pass  # a failed call is a span with error.type: medmon counts it
        provider.force_flush()
        print(f"done {n}", flush=True)
    provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
