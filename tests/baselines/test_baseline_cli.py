"""``medmon baseline`` sub-app, driven in-process with typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medmon.monitor.cli.baseline import app

runner = CliRunner(env={"COLUMNS": "220"})


@pytest.fixture
def db(db_url: str) -> str:
    return db_url


def test_import_then_reimport_json(helm_output: Path, db: str) -> None:
    first = runner.invoke(app, ["import", str(helm_output), "--db", db, "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert (report["created"], report["suite"], len(report["skipped"])) == (3, "medhelm-offline-demo", 1)
    again = json.loads(runner.invoke(app, ["import", str(helm_output), "--db", db, "--json"]).stdout)
    assert (again["created"], again["unchanged"]) == (0, 3)


def test_import_table_output(helm_output: Path, db: str) -> None:
    result = runner.invoke(
        app, ["import", str(helm_output), "--suite", "medhelm-offline-demo", "--model", "simple/model1", "--db", db]
    )
    assert result.exit_code == 0, result.output
    assert "shc_ptbm_med" in result.stdout and "LLM-JURY-DEMO (outside taxonomy)" in result.stdout
    assert "3 new, 0 unchanged" in result.stdout and "skipped:" in result.stdout


def test_list_and_show(helm_output: Path, db: str) -> None:
    runner.invoke(app, ["import", str(helm_output), "--db", db])
    rows = json.loads(runner.invoke(app, ["list", "--db", db, "--json"]).stdout)
    assert sorted((r["benchmark"], r["version"], r["n"]) for r in rows) == [
        ("EXACT-MATCH-DEMO", 1, 6),
        ("LLM-JURY-DEMO", 1, 4),
        ("shc_ptbm_med", 1, 8),
    ]
    listed = runner.invoke(app, ["list", "--db", db])
    assert listed.exit_code == 0 and "LLM-JURY-DEMO" in listed.stdout
    shown = json.loads(runner.invoke(app, ["show", "shc_ptbm_med", "--db", db, "--json"]).stdout)
    assert shown["category"] == "Clinical Decision Support" and shown["main_metric"] == "exact_match"
    (version,) = shown["versions"]
    assert (version["canaries"], version["replayable_canaries"], version["value"]) == (8, 8, 0.0)
    assert len(version["source_files"]) == 5 and shown["leaderboard"]
    text = runner.invoke(app, ["show", "shc_ptbm_med", "--db", db])
    assert text.exit_code == 0 and "ADHD-Behavior" in text.stdout and "canaries 8/8 replayable" in text.stdout


def test_import_and_show_report_how_often_helm_and_medmon_disagree(helm_output: Path, db: str) -> None:
    imported = runner.invoke(app, ["import", str(helm_output), "--db", db])
    assert imported.exit_code == 0, imported.output
    assert "8/8 differ (100.0%) FLAG" in imported.stdout and "0/6 differ (0.0%)" in imported.stdout
    report = json.loads(runner.invoke(app, ["import", str(helm_output), "--db", db, "--json"]).stdout)
    flags = {b["benchmark"]: (b["disagreement_rate"], b["disagreement_flagged"]) for b in report["baselines"]}
    assert flags == {"shc_ptbm_med": (1.0, True), "EXACT-MATCH-DEMO": (0.0, False), "LLM-JURY-DEMO": (None, False)}
    (version,) = json.loads(runner.invoke(app, ["show", "shc_ptbm_med", "--db", db, "--json"]).stdout)["versions"]
    assert (version["disagreements"], version["compared"], version["rescored_unparsed"]) == (8, 8, 8)
    assert version["disagreement_flagged"] is True
    text = runner.invoke(app, ["show", "EXACT-MATCH-DEMO", "--db", db]).stdout
    assert "scored again by medmon" in text and "0/6 differ (0.0%)" in text and "detectors use medmon's scores" in text


def test_show_unknown_benchmark_exits_2(db: str) -> None:
    result = runner.invoke(app, ["show", "no_such_bench", "--db", db])
    assert result.exit_code == 2 and "no_such_bench: no baseline stored" in result.stderr
    known = runner.invoke(app, ["show", "med_qa", "--db", db])
    assert known.exit_code == 0 and "no baselines stored" in known.stdout


def test_bad_input_exits_2_naming_file_and_key(tmp_path: Path, db: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run_spec.json").write_text('{"adapter_spec": {"model": "m"}, "groups": ["med_qa"]}')
    (run / "stats.json").write_text("[")
    (run / "per_instance_stats.json").write_text("[]")
    result = runner.invoke(app, ["import", str(run), "--db", db])
    assert result.exit_code == 2
    assert f"error: {run / 'stats.json'}: line 1 col 2: invalid JSON" in result.stderr
    missing = runner.invoke(app, ["import", str(tmp_path / "absent.csv"), "--db", db])
    assert missing.exit_code == 2 and "absent.csv: absent.csv: file missing" in missing.stderr


def test_manual_import_and_default_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDMON_DATABASE_URL", f"sqlite:///{tmp_path}/env.db")
    path = tmp_path / "published.csv"
    path.write_text("model,benchmark,metric,value,n,source\nvendor/m,med_qa,exact_match,0.8,500,[/x] leaderboard [b]\n")
    result = runner.invoke(app, ["import", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["created"] == 1 and (tmp_path / "env.db").exists()
    shown = runner.invoke(app, ["show", "med_qa"])  # brackets in the data are text, not rich markup
    assert shown.exit_code == 0, shown.output
    assert f"from manual [/x] leaderboard [b] [{path}:2]" in shown.stdout.replace("\n", "")
    again = runner.invoke(app, ["import", str(path)])
    assert again.exit_code == 0 and "0 new, 1 unchanged" in again.stdout


def test_tables_fit_80_columns_with_every_key_field_whole(helm_output: Path, db: str) -> None:
    narrow = CliRunner(env={"COLUMNS": "80"})
    imported = narrow.invoke(app, ["import", str(helm_output), "--db", db])
    listed = narrow.invoke(app, ["list", "--db", db])
    for result in (imported, listed):
        assert result.exit_code == 0, result.output
        too_long = [line for line in result.stdout.splitlines() if len(line) > 80]
        assert too_long == [], too_long
        assert "…" not in result.stdout  # nothing cut short
        for field in (
            "EXACT-MATCH-DEMO",
            "LLM-JURY-DEMO",
            "shc_ptbm_med",
            "simple/model1",
            "exact_match",
            "jury_score",
            "0.750",
            "[0, 0.324]",
        ):
            assert field in result.stdout, (field, result.stdout)
    assert "8/8 differ (100.0%) FLAG" in imported.stdout and "3 new, 0 unchanged" in imported.stdout
    # Each value sits on the line of its column's name, so "0.750" is read as the normalized score.
    assert any(line.split() == ["normalized", "0.750"] for line in listed.stdout.splitlines())
    wide = runner.invoke(app, ["list", "--db", db])  # 220 columns: the table itself, one row a baseline
    row = next(line for line in wide.stdout.splitlines() if "shc_ptbm_med" in line)
    assert "simple/model1" in row and "exact_match" in row and "[0, 0.324]" in row
