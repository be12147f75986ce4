"""Prices per served model: each call priced at the model that answered it; a routed model without a
price is a `medmon check` error naming its field and line; `unpriced: true` says so on purpose."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.models import TrafficSpan
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.spans import CallRecord, Decoded, Limits
from tests.conftest import plan_dict
from tests.monitor.traffic_helpers import MODEL, traffic_plan

runner = CliRunner()
NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
PRICES = [
    {"model": "vendor/large-*", "input_per_mtok": 10.0, "output_per_mtok": 30.0},
    {"model": "in-house/*", "unpriced": True},
    {"model": MODEL, "input_per_mtok": 1.0, "output_per_mtok": 2.0},
]


def _call(i: int, requested: str, served: str | None) -> CallRecord:
    end = NOW - timedelta(minutes=i)
    return CallRecord(
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        service="discharge-app",
        span_name="chat",
        operation="chat",
        request_model=requested,
        response_model=served,
        system_fingerprint=None,
        started_at=end - timedelta(seconds=1),
        ended_at=end,
        input_tokens=1000,
        output_tokens=500,
        finish_reason="stop",
        error_type=None,
        prompt=None,
        completion=None,
    )


def test_each_call_is_priced_at_the_model_that_served_it(engine, db_url) -> None:
    plan = traffic_plan(db_url, prices=PRICES)
    calls = [
        _call(1, MODEL, "vendor/large-2"),  # routed to another model by a gateway: its price
        _call(2, MODEL, None),  # no served model in the span: the requested model's price
        _call(3, "in-house/notes", "in-house/notes-7b"),  # unpriced on purpose
        _call(4, "unknown/model", "unknown/model"),
    ]  # no entry: stored, without a cost
    store_calls(engine, Ingestor(plan, lambda s: s, Limits()), Decoded(calls), NOW)
    with Session(engine) as s:
        cost = {r.span_id: r.cost_usd for r in s.exec(select(TrafficSpan)).all()}
    assert cost[f"{1:016x}"] == pytest.approx((1000 * 10.0 + 500 * 30.0) / 1e6)
    assert cost[f"{2:016x}"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert cost[f"{3:016x}"] is None and cost[f"{4:016x}"] is None


def test_without_prices_every_call_costs_the_deployment_price(engine, db_url) -> None:
    plan = traffic_plan(db_url)  # deployment price: 5 in, 15 out
    store_calls(engine, Ingestor(plan, lambda s: s, Limits()), Decoded([_call(1, MODEL, "vendor/large-2")]), NOW)
    with Session(engine) as s:
        [row] = s.exec(select(TrafficSpan)).all()
    assert row.cost_usd == pytest.approx((1000 * 5.0 + 500 * 15.0) / 1e6)


def _plan_file(tmp_path: Path, db_url: str, prices: list[dict[str, object]]) -> Path:
    data = plan_dict(
        storage={"url": db_url},
        traffic={
            "token_env": None,
            "prices": prices,
            "routes": [
                {"task": "knowledge-qa", "model": "vendor/large-*"},
                {"task": "knowledge-qa", "model": "in-house/notes-7b"},
            ],
        },
    )
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_check_names_a_routed_model_without_a_price_and_its_line(tmp_path: Path, db_url: str) -> None:
    approved = plan_dict()["deployment"]["model"]
    path = _plan_file(
        tmp_path,
        db_url,
        [
            {"model": "vendor/large-*", "input_per_mtok": 10.0, "output_per_mtok": 30.0},
            {"model": approved, "input_per_mtok": 1.0},
        ],
    )
    result = runner.invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 2
    [issue] = json.loads(result.output)["issues"]
    assert issue["path"] == "traffic.routes[1].model" and "'in-house/notes-7b'" in issue["message"]
    assert "unpriced: true" in issue["message"]
    lines = path.read_text().splitlines()
    assert "in-house/notes-7b" in lines[issue["line"] - 1]
    # Saying so on purpose passes.
    path = _plan_file(
        tmp_path,
        db_url,
        [
            {"model": "vendor/large-*", "input_per_mtok": 10.0},
            {"model": "in-house/*", "unpriced": True},
            {"model": approved, "input_per_mtok": 1.0},
        ],
    )
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0


def test_the_approved_model_needs_a_price_too_and_an_entry_is_prices_or_unpriced(tmp_path: Path, db_url: str) -> None:
    path = _plan_file(
        tmp_path,
        db_url,
        [{"model": "vendor/large-*", "input_per_mtok": 10.0}, {"model": "in-house/*", "unpriced": True}],
    )
    result = runner.invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 2
    [issue] = json.loads(result.output)["issues"]
    assert issue["path"] == "traffic.prices" and "has no entry" in issue["message"]
    with pytest.raises(PlanError, match="either prices or 'unpriced: true'"):
        parse_plan(
            yaml.safe_dump(plan_dict(traffic={"prices": [{"model": "x", "unpriced": True, "input_per_mtok": 1.0}]}))
        )
