"""``medmon simulate``: the SIMULATED clinical model on its own, to try a plan, a receiver or a dashboard.

The same OpenAI-compatible server ``medmon demo`` runs, in the foreground on 127.0.0.1, with its
phases (accuracy, served model, fingerprint, latency from a request number on), injected faults
and judges given on the command line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from medmon.errors import MedmonError
from medmon.monitor.cli.plan_arg import EXIT_INPUT, err, out

if TYPE_CHECKING:  # imported where used: the simulator is loaded only by this command
    from medmon.probes.simulator import Fault, JudgeBehaviour, Phase


SPECS_HELP = {
    "phase": "AFTER:ACCURACY[:MODEL[:FINGERPRINT[:LATENCY_S]]]: from request AFTER on, answer with this accuracy "
    "as MODEL (repeatable), e.g. 200:0.55:medmon-simulator/clinical-v2",
    "fault": "KIND[:COUNT[:STATUS[:RETRY_AFTER]]]: fail the first COUNT requests (kinds: status, hang, truncated, "
    "non_json, empty, prose), e.g. status:8:500 or status:3:429:2",
    "judge": "MODEL=MODE[:OFFSET]: how the judge served as MODEL scores (modes: json, prose, prose_once, fail), "
    "e.g. judge-a=fail",
}


def parse_phase(text: str) -> Phase:
    """``AFTER:ACCURACY[:MODEL[:FINGERPRINT[:LATENCY_S]]]`` as a simulator ``Phase``.

    Examples
    --------
    >>> phase = parse_phase("200:0.55:sim-v2")
    >>> phase.after_requests, phase.accuracy, phase.model, phase.label
    (200, 0.55, 'sim-v2', 'from request 200')
    """
    from medmon.probes.simulator import Phase

    parts = text.split(":")
    if not 2 <= len(parts) <= 5:
        raise ValueError(f"--phase {text!r}: expected {SPECS_HELP['phase'].split(':', 1)[0]}")
    values: dict[str, Any] = {
        "after_requests": int(parts[0]),
        "accuracy": float(parts[1]),
        "label": f"from request {int(parts[0])}",
    }
    for name, value in zip(("model", "fingerprint"), parts[2:4]):
        values[name] = value
    if len(parts) == 5:
        values["latency_s"] = float(parts[4])
    if not 0 <= float(parts[1]) <= 1:
        raise ValueError(f"--phase {text!r}: accuracy must be between 0 and 1")
    return Phase(**values)


def parse_fault(text: str) -> Fault:
    """``KIND[:COUNT[:STATUS[:RETRY_AFTER]]]`` as a simulator ``Fault``."""
    from medmon.probes.simulator import Fault

    parts = text.split(":")
    values: dict[str, Any] = {"kind": parts[0]}
    for (name, kind), value in zip((("count", int), ("status", int), ("retry_after", float)), parts[1:]):
        values[name] = kind(value)
    return Fault(**values)


def parse_judge(text: str) -> tuple[str, JudgeBehaviour]:
    """``MODEL=MODE[:OFFSET]`` as (model, ``JudgeBehaviour``)."""
    from medmon.probes.simulator import JudgeBehaviour

    model, sep, rest = text.partition("=")
    if not sep or not model:
        raise ValueError(f"--judge {text!r}: expected MODEL=MODE[:OFFSET]")
    mode, _, offset = rest.partition(":")
    return model, JudgeBehaviour(mode=mode, offset=float(offset) if offset else 0.0)


def simulate(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 picks a free one).")] = 8000,
    phase: Annotated[list[str] | None, typer.Option(help=SPECS_HELP["phase"])] = None,
    fault: Annotated[list[str] | None, typer.Option(help=SPECS_HELP["fault"])] = None,
    judge: Annotated[list[str] | None, typer.Option(help=SPECS_HELP["judge"])] = None,
    pack: Annotated[
        list[str] | None, typer.Option(help="Canary packs it knows the answers to (default: every bundled pack).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of its random draws.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print where it listens as JSON, then serve.")] = False,
) -> None:
    """Serve the SIMULATED clinical model (an OpenAI-compatible API) until Ctrl-C: try a plan without a model.

    Point a plan's deployment at http://127.0.0.1:PORT/v1 with model medmon-simulator/clinical-v1
    (any api key); judges are answered under whatever model names the plan gives them.
    """
    import sys
    import threading

    from medmon.monitor.service.webserver import serve_in_thread
    from medmon.probes.packs import available_packs, load_pack
    from medmon.probes.simulator import SIMULATOR_MODEL, Phase, create_simulator

    try:
        phases = [parse_phase(p) for p in phase or []]
        faults = [parse_fault(f) for f in fault or []]
        judges = dict(parse_judge(j) for j in judge or [])
        packs = [load_pack(name) for name in (pack or available_packs())]
    except (ValueError, TypeError, MedmonError) as exc:  # a malformed spec, an unknown pack
        err.print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(EXIT_INPUT) from None

    if not phases or phases[0].after_requests > 0:
        phases.insert(0, Phase())
    app = create_simulator([c for p in packs for c in p.canaries], phases, seed=seed, judges=judges)
    if faults:
        app.state.sim.inject(*faults)
    server = serve_in_thread(app, port=port)
    info: dict[str, Any] = {
        "base_url": f"{server.url}/v1",
        "model": SIMULATOR_MODEL,
        "phases": len(phases),
        "faults": len(faults),
        "judges": sorted(judges),
        "packs": [p.name for p in packs],
    }
    if as_json:
        out.print_json(json.dumps(info))
    else:
        out.print(
            f"SIMULATED clinical model (not a real model) at {info['base_url']}  model: {SIMULATOR_MODEL}",
            highlight=False,
        )
        out.print(
            f"phases: {len(phases)}, faults queued: {len(faults)}, judges: {', '.join(info['judges']) or 'json'}; "
            "Ctrl-C to stop",
            highlight=False,
        )
    sys.stdout.flush()  # a script reading the address must not wait for the buffer
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
