"""``medmon traffic import`` / ``status`` and the report's traffic section, run as a user runs them."""

from __future__ import annotations

import base64
import gzip
import json
import time
from pathlib import Path

import yaml
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.models import TrafficSpan
from medmon.monitor.storage import make_engine
from tests.monitor.traffic_helpers import genai_attributes, make_spans, traffic_plan

runner = CliRunner()


def _otlp_json(spans) -> dict:  # type: ignore[no-untyped-def]
    """The SDK's export as OTLP/JSON: protobuf's JSON mapping with ids in hex, as the specification writes them."""
    data = json_format.MessageToDict(encode_spans(spans))
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return data


def _plan_file(tmp_path: Path, db_url: str) -> Path:
    plan = traffic_plan(db_url, reference_window="1h")
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan.model_dump(mode="json", exclude_none=True)))
    return path


def test_import_jsonl_reports_bad_lines_stores_the_rest_and_status_and_report_show_it(
    tmp_path: Path, db_url: str
) -> None:
    plan_path = _plan_file(tmp_path, db_url)
    lines = [
        json.dumps(_otlp_json(make_spans([genai_attributes(tokens=(10, 20 + i)) for i in range(5)]))),
        "{this is not json",
        json.dumps(_otlp_json(make_spans([genai_attributes(tokens=(-1, 3)), genai_attributes()]))),
    ]
    jsonl = tmp_path / "traces.jsonl.gz"
    jsonl.write_bytes(gzip.compress("\n".join(lines).encode()))
    result = runner.invoke(app, ["traffic", "import", str(plan_path), str(jsonl), "--json"])
    assert result.exit_code == 1, result.output  # some lines could not be read
    [report] = json.loads(result.stdout)
    assert report["calls"] == 6 and report["refused"] == {"absurd_tokens": 1}
    assert report["bad_lines"][0]["line"] == 2 and "not JSON" in report["bad_lines"][0]["error"]
    again = runner.invoke(app, ["traffic", "import", str(plan_path), str(jsonl)])
    assert "6 call(s) stored" in again.output
    engine = make_engine(db_url)
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(TrafficSpan)).one() == 6  # the second import added none
    single = tmp_path / "one.json"
    single.write_text(json.dumps(_otlp_json(make_spans([genai_attributes()])), indent=2))
    assert runner.invoke(app, ["traffic", "import", str(plan_path), str(single)]).exit_code == 0

    from medmon.db import session_scope, utcnow
    from medmon.monitor.plan.model import load_plan
    from medmon.monitor.traffic.streams import traffic_pass

    with session_scope(engine) as s:
        traffic_pass(s, load_plan(plan_path), utcnow())
    status = runner.invoke(app, ["traffic", "status", str(plan_path), "--json"])
    assert status.exit_code == 0, status.output
    summary = json.loads(status.stdout)
    assert summary["calls"] == 7 and summary["groups"][0]["task"] == "discharge"
    assert summary["refused"] == {"absurd_tokens": 2}  # refused by each of the two imports
    out = tmp_path / "report.html"
    rep = runner.invoke(
        app,
        [
            "report",
            str(plan_path),
            "--period",
            f"{time.gmtime().tm_year}-{time.gmtime().tm_mon:02d}",
            "--output",
            str(out),
            "--no-pdf",
            "--json",
        ],
    )
    assert rep.exit_code == 0, rep.output
    assert json.loads(rep.stdout)["traffic"]["calls"] == 7
    html = out.read_text()
    assert "Production traffic: the application's own calls" in html and "2 absurd_tokens" in html
    engine.dispose()


def test_import_names_a_missing_file_and_a_plan_without_traffic(tmp_path: Path, db_url: str) -> None:
    plan_path = _plan_file(tmp_path, db_url)
    missing = runner.invoke(app, ["traffic", "import", str(plan_path), str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "no such file" in missing.output
    data = yaml.safe_load(plan_path.read_text())
    data.pop("traffic")
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(data))
    (tmp_path / "x.json").write_text("{}")
    result = runner.invoke(app, ["traffic", "import", str(plain), str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "no 'traffic' section" in result.output
