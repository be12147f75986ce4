"""Check: does every stored notification carry the current score as it was when it was sent?

Reads a medmon database (the demo's, or a real deployment's) and, for each alert in each stored
notification, compares the figure it carries (``now``) with ``current_score`` for its task at the
notification's sending time: the one definition of "the current score" the pages and the report
use. Printed: the incidents (how many, how many families of a model change with children), one
line per notification, and the count of alerts that carry the figure of their moment. Exit 1
when any does not.

Usage::

    .venv/bin/medmon demo --no-dashboard --workdir /tmp/demo
    .venv/bin/python benchmarks/notification_figures.py /tmp/demo/medmon.db [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import Session, select  # noqa: E402

from medmon.alerts import Incident, Notification  # noqa: E402
from medmon.monitor.governance.current import current_score  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", type=Path, help="a medmon SQLite database file")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    args = parser.parse_args()
    if not args.database.is_file():
        parser.error(f"{args.database}: no such database file")
    engine = make_engine(f"sqlite:///{args.database}")
    carried = stale = 0
    lines: list[str] = []
    with Session(engine) as s:
        incidents = s.exec(select(Incident)).all()
        families = {i.id: [c.id for c in incidents if c.parent_id == i.id] for i in incidents if i.parent_id is None}
        notifications = s.exec(select(Notification).order_by(Notification.id)).all()  # type: ignore[arg-type]
        for n in notifications:
            for alert in n.payload["alerts"]:
                task = alert["labels"].get("task")
                want = current_score(s, task, until=n.created_at + timedelta(microseconds=1))
                if alert.get("now") == f"score {want.text()}":
                    carried += 1
                else:
                    stale += 1
                    lines.append(f"  notification {n.id} ({task}): carries {alert.get('now')!r}, was {want.text()!r}")
            first = n.payload["alerts"][0].get("now") if n.payload["alerts"] else None
            lines.append(f"{n.id:>4} {n.payload['reason']:<11} incident {n.payload['incident']['id']}: {first}")
    figures = {
        "incidents": len(incidents),
        "top_level": len(families),
        "families_with_children": sum(1 for v in families.values() if v),
        "notifications": len(notifications),
        "alerts_with_current_figure": carried,
        "alerts_with_other_figure": stale,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"incidents {figures['incidents']} ({figures['top_level']} top-level, "
            f"{figures['families_with_children']} with children), {figures['notifications']} notifications"
        )
        print("\n".join(lines))
        print(f"alerts in notifications: {carried} carry the current score at sending time, {stale} do not")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
