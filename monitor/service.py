"""``medmon serve``: the long-running service around the scheduler."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

from monitor.checks import check_plan
from monitor.context import load_context
from monitor.routing import build_channels
from monitor.scheduler import build_scheduler, mark_interrupted
from monitor.storage import make_engine, utcnow

log = logging.getLogger("medmon.service")


def run_service(plan_path: Path, stop: threading.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or ``stop`` is set); runs cut short are marked interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    plan = check_plan(plan_path)
    engine = make_engine(plan.storage.url)
    interrupted = mark_interrupted(engine, utcnow())
    if interrupted:
        log.info("marked %d probe run(s) left running by a previous process as interrupted", interrupted)
    contexts = [load_context(plan, t) for t in plan.tasks]
    scheduler = build_scheduler(engine, plan, contexts, build_channels(plan), now=utcnow)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    scheduler.start()
    log.info("medmon serving %d task(s) from %s", len(contexts), plan_path)
    try:
        stop.wait()
    finally:
        log.info("stopping: letting probes in flight finish")
        scheduler.shutdown(wait=True)
        engine.dispose()
