"""HELM's mean win rate (helm-format.md §6) and leaderboard import of helm-summarize tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from medmon.baselines import HelmFormatError, column_win_rates, import_helm_path, leaderboard_entries, mean_win_rates
from medmon.db import session_scope
from tests.baselines.helm_runs import Inst, RunWriter


@pytest.mark.parametrize(
    ("values", "lower_is_better", "expected"),
    [
        pytest.param([1.0, 0.5, 0.0], False, [1.0, 0.5, 0.0], id="check-from-the-notes"),
        pytest.param([0.0, 0.5, 1.0], True, [1.0, 0.5, 0.0], id="lower-is-better-reverses"),
        pytest.param([0.7, 0.7, 0.1], False, [0.75, 0.75, 0.0], id="ties-count-half"),
        pytest.param([0.3, 0.3, 0.3], False, [0.5, 0.5, 0.5], id="all-tied"),
        pytest.param([0.9, None, 0.1], False, [1.0, None, 0.0], id="missing-cells-skipped"),
        pytest.param([0.9, None, None], False, [None, None, None], id="fewer-than-two-values"),
    ],
)
def test_column_win_rates(values: list[float | None], lower_is_better: bool, expected: list[float | None]) -> None:
    assert column_win_rates(values, lower_is_better=lower_is_better) == expected


def test_mean_over_columns_skips_unset_direction_and_missing_values() -> None:
    columns = [([1.0, 0.5, 0.0], False), ([10.0, 20.0, None], True), ([5.0, 1.0, 3.0], None)]
    # row 0: (1.0 + 1.0) / 2; row 1: (0.5 + 0.0) / 2; row 2: only the first column counts
    assert mean_win_rates(columns) == [1.0, 0.25, 0.0]


def _cell(value: Any) -> dict[str, Any]:
    return (
        {"value": value, "description": "", "markdown": False}
        if value is not None
        else {"description": "No matching runs", "markdown": False}
    )


def _leaderboard(published: list[float | None]) -> list[dict[str, Any]]:
    header = [
        {"value": "Model", "metadata": {}},
        {"value": "Mean win rate", "lower_is_better": False, "metadata": {}},
        {"value": "MedQA - EM", "lower_is_better": False, "metadata": {"metric": "EM", "run_group": "MedQA"}},
        {
            "value": "ACI-Bench - Jury Score",
            "lower_is_better": False,
            "metadata": {"metric": "Jury Score", "run_group": "ACI-Bench"},
        },
    ]
    models = [("Model A", 1.0, 4.5), ("Model B", 0.5, 3.0), ("Model C", 0.0, None)]
    rows = [[_cell(m), _cell(w), _cell(em), _cell(jury)] for (m, em, jury), w in zip(models, published, strict=True)]
    general = {
        "title": "General information",
        "header": [header[0], {"value": "MedQA - # eval", "metadata": {"metric": "# eval", "run_group": "MedQA"}}],
        "rows": [[_cell(m), _cell(500.0)] for m, _, _ in models],
        "name": "general_information",
    }
    return [{"title": "Accuracy", "header": header, "rows": rows, "name": "accuracy"}, general]


def test_leaderboard_import_computes_mean_win_rates(engine: Engine, write_run: RunWriter) -> None:
    write_run("medqa", [Inst("a", [1.0])], groups=["med_qa"])
    groups = write_run.root / "groups"
    groups.mkdir()
    (groups / "medhelm_scenarios.json").write_text(json.dumps(_leaderboard([0.75, 0.25, 0.0])))
    (write_run.root / "schema.json").write_text(
        json.dumps(
            {
                "run_groups": [
                    {"name": "med_qa", "display_name": "MedQA"},
                    {"name": "aci_bench", "display_name": "ACI-Bench"},
                ],
                "models": [{"name": "vendor/model-a", "display_name": "Model A"}],
            }
        )
    )
    with session_scope(engine) as s:
        report = import_helm_path(s, write_run.root)
        cells = leaderboard_entries(s, group="medhelm_scenarios")
    assert report.leaderboard_entries == len(cells) == 2 + 3 + 3  # EM x3, jury x2, # eval x3
    accuracy = {(c.model, c.benchmark): c for c in cells if c.table_title == "Accuracy"}
    assert {m: accuracy[(m, "med_qa")].mean_win_rate for m in ("Model A", "Model B", "Model C")} == {
        "Model A": 1.0,
        "Model B": 0.25,
        "Model C": 0.0,
    }
    assert accuracy[("Model A", "med_qa")].published_mean_win_rate == 0.75
    assert (
        accuracy[("Model A", "aci_bench")].value == 4.5
        and accuracy[("Model A", "aci_bench")].model_name == "vendor/model-a"
    )
    assert accuracy[("Model B", "med_qa")].model_name is None
    assert all(c.mean_win_rate is None for c in cells if c.table_title == "General information")
    with session_scope(engine) as s:
        assert import_helm_path(s, write_run.root).leaderboard_entries == 0  # same file: nothing new


def test_malformed_group_file_names_the_file(engine: Engine, write_run: RunWriter) -> None:
    write_run("medqa", [Inst("a", [1.0])], groups=["med_qa"])
    (write_run.root / "groups").mkdir()
    bad = write_run.root / "groups" / "medhelm_scenarios.json"
    bad.write_text(json.dumps({"title": "not a list"}))
    with (
        pytest.raises(HelmFormatError, match=r"medhelm_scenarios\.json: <top level>: expected a list of tables"),
        session_scope(engine) as s,
    ):
        import_helm_path(s, write_run.root)


def test_fixture_leaderboard_has_one_model_so_no_win_rate(engine: Engine, helm_output: Path) -> None:
    with session_scope(engine) as s:
        import_helm_path(s, helm_output)
        cells = leaderboard_entries(s)
    assert cells and all(c.mean_win_rate is None for c in cells)
