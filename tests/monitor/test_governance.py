"""The plan's governance section and ``medmon check``'s refusals: each names the task and what is missing."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from medmon.baselines import BaselineFigures, record_baseline
from medmon.db import session_scope
from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.governance.checks import check_plan, max_gap, plan_notes
from medmon.monitor.plan.model import load_plan, parse_plan
from medmon.monitor.plan.starter import STARTER_PLAN
from medmon.monitor.service.demo import APP_SERVICE, PLAN_TEMPLATE, TRAFFIC_TOKEN_ENV
from tests.conftest import plan_dict

runner = CliRunner()
OWNER = {"name": "Dr. Owner", "email": "owner@hospital.example"}


def governed(**overrides: Any) -> dict[str, Any]:
    """A plan with a governance section and two tasks, both owned; tests break one thing."""
    data = plan_dict(**overrides)
    data["tasks"][0]["owner"] = OWNER
    second = copy.deepcopy(data["tasks"][0]) | {
        "id": "calc",
        "benchmark": "medcalc_bench",
        "canaries": {"pack": "medical_calculations"},
    }
    data["tasks"].append(second)
    data["governance"] = {
        "medhelm": {"categories": ["Clinical Decision Support"], "benchmarks": ["med_qa", "medcalc_bench"]},
        "evidence": {"limitations": ["Exam questions are not discharge questions."]},
        "local_validation": {"description": "200 local questions", "n": 200},
        "controls": {"decision_criteria": "all tasks above their minimum"},
    }
    data["alerts"] = {"routes": [{"name": "default", "url": "http://127.0.0.1:9/hook"}]}
    return data


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def issues_of(path: Path, engine: Engine | None = None) -> list[str]:
    with pytest.raises(PlanError) as info:
        check_plan(path, engine)
    return [f"{i.path}: {i.message}" for i in info.value.issues]


def test_a_governed_plan_passes_and_parses_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "k")  # an unset key would be a note of its own
    plan = check_plan(write(tmp_path, governed()))
    assert plan.governance is not None
    assert plan.governance.controls.max_probe_interval == {"high": "1h", "medium": "1d", "low": "7d"}
    assert plan.governance.controls.reevaluation.on_detected_change is True
    assert plan.privacy.redactor == "builtin" and plan.privacy.store_text is True
    assert plan_notes(plan) == ["governance.approval is empty: the plan does not say who approved it for go-live"]


def test_missing_owners_are_refused_with_the_task_names(tmp_path: Path) -> None:
    data = governed()
    del data["tasks"][0]["owner"]
    del data["tasks"][1]["owner"]
    path = write(tmp_path, data)
    found = issues_of(path)
    assert "tasks[0].owner: task 'knowledge-qa' has no owner" in "\n".join(found)
    assert "tasks[1].owner: task 'calc' has no owner" in "\n".join(found)
    result = runner.invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 2
    issues = json.loads(result.stdout)["issues"]
    owner_issue = next(i for i in issues if i["path"] == "tasks[1].owner")
    assert owner_issue["line"] is not None
    assert "- id: calc" in path.read_text().splitlines()[owner_issue["line"] - 1]


def test_missing_threshold_and_owner_are_both_named_even_when_the_schema_fails(tmp_path: Path) -> None:
    data = governed()
    del data["tasks"][1]["thresholds"]
    del data["tasks"][0]["owner"]
    found = "\n".join(issues_of(write(tmp_path, data)))
    assert "task 'calc' has no approval threshold: set thresholds.min_score" in found
    assert "task 'knowledge-qa' has no owner" in found


def test_missing_min_score_names_the_task(tmp_path: Path) -> None:
    data = plan_dict()
    del data["tasks"][0]["thresholds"]["min_score"]
    found = issues_of(write(tmp_path, data))
    assert found == [
        "tasks[0].thresholds.min_score: task 'knowledge-qa' has no approval threshold: set "
        "thresholds.min_score, the minimum score the deployment is judged by "
        "(in force once approved: medmon approvals go-live)"
    ]


def _own_canaries(tmp_path: Path) -> Path:
    path = tmp_path / "local.jsonl"
    path.write_text(
        json.dumps({"id": "l-1", "messages": [{"role": "user", "content": "Q?"}], "references": ["A"]}) + "\n"
    )
    return path


def test_missing_baseline_is_refused_until_one_is_imported(tmp_path: Path, engine: Engine, db_url: str) -> None:
    data = governed(storage={"url": db_url})
    data["tasks"][1]["canaries"] = {"path": str(_own_canaries(tmp_path))}  # no pack card, no inline figures
    path = write(tmp_path, data)
    found = "\n".join(issues_of(path, engine))
    assert "tasks[1].baseline: task 'calc' has no baseline for benchmark 'medcalc_bench'" in found
    assert "medmon baseline import" in found
    with session_scope(engine) as session:
        record_baseline(
            session,
            BaselineFigures(
                benchmark="medcalc_bench",
                model="m",
                metric="medcalc_bench_accuracy",
                value=0.6,
                n=1000,
                source_kind="manual",
            ),
        )
    assert check_plan(path, engine).tasks[1].id == "calc"
    assert check_plan(path).tasks[1].id == "calc"  # the plan's existing database is opened when no engine is given


def test_inline_baseline_figures_satisfy_the_check(tmp_path: Path) -> None:
    data = governed()
    data["tasks"][1]["canaries"] = {"path": str(_own_canaries(tmp_path))}
    data["tasks"][1]["baseline"] = {"value": 0.6, "n": 300}
    check_plan(write(tmp_path, data))


FREQUENCY = {
    # case: (risk tier, schedule, max_probe_interval override, refused)
    "high-hourly-ok": ("high", "1h", None, False),
    "high-daily-refused": ("high", "1d", None, True),
    "high-cron-weekdays-refused": ("high", "0 * * * 1-5", None, True),
    "medium-daily-ok": ("medium", "1d", None, False),
    "medium-cron-weekdays-refused": ("medium", "0 9 * * 1-5", None, True),
    "low-weekly-ok": ("low", "0 9 * * 1", None, False),
    "custom-limit-ok": ("high", "4h", {"high": "6h"}, False),
}


@pytest.mark.parametrize("case", sorted(FREQUENCY))
def test_probe_frequency_is_checked_against_the_risk_tier(tmp_path: Path, case: str) -> None:
    tier, schedule, limits, refused = FREQUENCY[case]
    data = governed()
    data["use_case"]["risk_tier"] = tier
    data["tasks"][1]["schedule"] = schedule
    if limits:
        data["governance"]["controls"]["max_probe_interval"] = limits
    path = write(tmp_path, data)
    if not refused:
        check_plan(path)
        return
    found = issues_of(path)
    assert len(found) == 1 and found[0].startswith("tasks[1].schedule: task 'calc' is probed only every")
    assert f"risk tier '{tier}' requires at least every" in found[0]


def test_max_gap_of_cron_schedules() -> None:
    assert max_gap("*/15 * * * *", None) == timedelta(minutes=15)
    assert max_gap("0 9 * * 1-5", None) == timedelta(days=3)
    assert max_gap("0 2 1 * *", None) >= timedelta(days=15)  # monthly: longer than the window looked at


MAPPING = {
    "undeclared-category": (
        {"categories": ["Clinical Note Generation"]},
        [
            "'Clinical Note Generation' is declared but no task measures it",
            "task 'knowledge-qa' maps to 'Clinical Decision Support'",
        ],
    ),
    "unknown-category": (
        {"categories": ["Clinical Decision Support", "Astrology"]},
        ["'Astrology' is not a MedHELM category"],
    ),
    "benchmark-not-monitored": (
        {"benchmarks": ["med_qa", "medcalc_bench", "pubmed_qa"]},
        ["'pubmed_qa' is declared but no task measures it"],
    ),
    "subcategory-left-out": (
        {"subcategories": ["Supporting Diagnostic Decisions"]},
        ["task 'knowledge-qa' maps to 'Providing Clinical Knowledge Support'"],
    ),
}


@pytest.mark.parametrize("case", sorted(MAPPING))
def test_declared_medhelm_mapping_must_match_the_tasks(tmp_path: Path, case: str) -> None:
    declared, expected = MAPPING[case]
    data = governed()
    data["governance"]["medhelm"] = declared
    found = "\n".join(issues_of(write(tmp_path, data)))
    for words in expected:
        assert words in found


def test_tasks_requiring_human_review_need_the_review_described(tmp_path: Path) -> None:
    data = governed()
    data["tasks"][0]["human_review_required"] = True
    found = issues_of(write(tmp_path, data))
    assert found == [
        "governance.controls.human_review: task(s) knowledge-qa require human review but the plan "
        "does not say who reviews what, and when"
    ]
    data["governance"]["controls"]["human_review"] = "A pharmacist checks every draft."
    check_plan(write(tmp_path, data))


def test_a_redactor_that_cannot_be_imported_is_refused(tmp_path: Path) -> None:
    found = issues_of(write(tmp_path, governed(privacy={"redactor": "no_such_module:redact"})))
    assert found == ["privacy.redactor: cannot import module 'no_such_module': No module named 'no_such_module'"]
    with pytest.raises(
        PlanError, match="privacy.redactor: expected 'builtin', 'presidio', 'none' or 'module:function'"
    ):
        parse_plan(yaml.safe_dump(governed(privacy={"redactor": "scrub everything"})))


def test_without_a_governance_section_the_clinical_owner_owns_every_task(tmp_path: Path) -> None:
    plan = check_plan(write(tmp_path, plan_dict()))
    assert plan.governance is None
    assert "every task's owner defaults to the clinical owner owner@hospital.example" in plan_notes(plan)[0]


def test_unknown_governance_fields_are_named(tmp_path: Path) -> None:
    data = governed()
    data["governance"]["controls"]["max_probe_interval"] = {"critical": "1m"}
    with pytest.raises(PlanError) as info:
        load_plan(write(tmp_path, data))
    issue = info.value.issues[0]
    assert issue.path == "governance.controls.max_probe_interval"
    assert "unknown risk tier(s) critical" in issue.message and issue.line is not None


def test_the_starter_plan_passes_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDMON_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    monkeypatch.setenv("MEDMON_WEBHOOK_SECRET", "s")
    monkeypatch.setenv("MEDMON_MODEL_API_KEY", "k")
    path = tmp_path / "plan.yaml"
    path.write_text(STARTER_PLAN.replace("sqlite:///medmon.db", f"sqlite:///{tmp_path / 'm.db'}"))
    plan = check_plan(path)
    assert plan.governance is not None and plan.governance.approval is not None
    assert plan.tasks[0].owner is not None and plan.tasks[0].human_review_required
    assert plan_notes(plan) == []


def test_the_demo_plan_passes_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDMON_DEMO_WEBHOOK_SECRET", "s")
    path = tmp_path / "plan.yaml"
    path.write_text(
        PLAN_TEMPLATE.format(
            base_url="http://127.0.0.1:9/v1",
            key_env="K",
            pack="clinical_knowledge_mcq",
            sample_size=20,
            receiver_url="http://127.0.0.1:9/alerts",
            secret_env="MEDMON_DEMO_WEBHOOK_SECRET",
            dashboard_url="http://127.0.0.1:8501",
            db=tmp_path / "demo.db",
            traffic_token_env=TRAFFIC_TOKEN_ENV,
            app_service=APP_SERVICE,
        )
    )
    plan = check_plan(path)
    assert plan.governance is not None and plan.governance.controls.reevaluation.on_detected_change
