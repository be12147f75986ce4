"""Manual baselines: CSV and YAML files of published scores."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from medmon.baselines import (
    ManualFormatError,
    SourceFileMissing,
    UnknownMetric,
    import_manual,
    list_baselines,
    read_manual,
)
from medmon.baselines.interval import wilson_interval
from medmon.db import session_scope

CSV = """model,benchmark,metric,value,n,source
openai/gpt-4o-2024-05-13,med_qa,exact_match,0.87,1273,MedHELM leaderboard v2.0
openai/gpt-4o-2024-05-13,aci_bench,aci_bench_accuracy,4.2,120,MedHELM leaderboard v2.0
openai/gpt-4o-2024-05-13,my_local_bench,accuracy,0.61,200,
"""

YAML = """baselines:
  - model: deepseek-ai/deepseek-r1
    benchmark: medcalc_bench
    metric: medcalc_bench_accuracy
    value: 0.35
    n: 1000
    ci_low: 0.32
    ci_high: 0.38
  - model: deepseek-ai/deepseek-r1
    benchmark: health_bench
    metric: health_bench_score
    value: 0.44
    n: 5000
    scale_min: 0
    scale_max: 1
    source: medhelm 0.8.0 leaderboard
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_import(engine: Engine, tmp_path: Path) -> None:
    path = _write(tmp_path, "published.csv", CSV)
    with session_scope(engine) as s:
        report = import_manual(s, path)
        rows = {b.benchmark: b for b in list_baselines(s)}
    assert report.created == 3 and report.kind == "manual"
    qa, aci, local = rows["med_qa"], rows["aci_bench"], rows["my_local_bench"]
    assert (qa.value, qa.n, qa.scale_min, qa.scale_max, qa.source_kind) == (0.87, 1273, 0.0, 1.0, "manual")
    assert (qa.ci_low, qa.ci_high) == pytest.approx(wilson_interval(0.87, 1273))
    assert (aci.scale_min, aci.scale_max) == (1.0, 5.0) and math.isclose(aci.normalized, 0.8)  # jury: 1-5 by default
    assert not local.in_taxonomy and local.in_taxonomy is False
    assert qa.source_files == {"published.csv": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert qa.source_path == f"MedHELM leaderboard v2.0 [{path}:2]"
    assert any(
        "outside the MedHELM taxonomy" in n
        for n in next(b for b in report.baselines if b.benchmark == "my_local_bench").notes
    )


def test_yaml_import_with_published_interval(engine: Engine, tmp_path: Path) -> None:
    with session_scope(engine) as s:
        report = import_manual(s, _write(tmp_path, "published.yaml", YAML))
        rows = {b.benchmark: b for b in list_baselines(s)}
    assert report.created == 2
    assert (rows["medcalc_bench"].ci_low, rows["medcalc_bench"].ci_high) == (0.32, 0.38)
    assert rows["health_bench"].in_taxonomy and rows["health_bench"].value == 0.44


def test_reimport_dedups_per_row_and_an_edit_versions_only_that_row(engine: Engine, tmp_path: Path) -> None:
    path = _write(tmp_path, "published.csv", CSV)
    with session_scope(engine) as s:
        import_manual(s, path)
    with session_scope(engine) as s:
        assert import_manual(s, path).created == 0
    path.write_text(CSV.replace("0.87,1273", "0.89,1273"))
    with session_scope(engine) as s:
        report = import_manual(s, path)
        versions = [(b.benchmark, b.version, b.value) for b in list_baselines(s) if b.benchmark == "med_qa"]
    assert [(b.benchmark, b.version) for b in report.baselines if b.created] == [("med_qa", 2)]
    assert versions == [("med_qa", 1, 0.87), ("med_qa", 2, 0.89)]


@pytest.mark.parametrize(
    ("name", "text", "error", "key", "message"),
    [
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,med_qa,exact_match,high,10\n",
            ManualFormatError,
            "line 2 field value",
            "expected a number, got 'high'",
            id="value-not-a-number",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,med_qa,exact_match,0.5,10\nm,med_qa,exact_match,0.5,0\n",
            ManualFormatError,
            "line 3 field n",
            "expected a positive whole number",
            id="n-not-positive",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value\nm,med_qa,exact_match,0.5\n",
            ManualFormatError,
            "line 2 field n",
            "required",
            id="n-missing",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n,colour\nm,med_qa,exact_match,0.5,3,red\n",
            ManualFormatError,
            "line 2 field colour",
            "unknown column",
            id="unknown-column",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,med_qa,accuracy,0.5,3\n",
            UnknownMetric,
            "line 2 field metric",
            "'accuracy' is not the metric HELM writes for med_qa (its main metric is 'exact_match')",
            id="metric-helm-does-not-write",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,med_qa,exact_match,1.2,3\n",
            ManualFormatError,
            "line 2 field value",
            "1.2 is outside the 0-1 scale",
            id="value-outside-scale",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,aci_bench,aci_bench_accuracy,0.5,3\n",
            ManualFormatError,
            "line 2 field value",
            "0.5 is outside the 1-5 scale",
            id="jury-value-below-1",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n\nm,med_qa,exact_match,0.5,3\nm,med_qa,exact_match,0.6,3\n",
            ManualFormatError,
            "line 3",
            "duplicate of line 2",
            id="duplicate-row",
        ),
        pytest.param(
            "a.csv",
            "model,benchmark,metric,value,n,ci_low\nm,med_qa,exact_match,0.5,3,0.4\n",
            ManualFormatError,
            "line 2 field ci_high",
            "give both",
            id="half-an-interval",
        ),
        pytest.param(
            "a.csv", "model,benchmark,metric,value,n\n", ManualFormatError, "rows", "no baselines", id="empty"
        ),
        pytest.param(
            "a.yaml",
            "- model: m\n  benchmark: med_qa\n  metric: exact_match\n  value: 0.5\n  n: 3\n"
            "- model: m\n  benchmark: pubmed_qa\n  metric: exact_match\n  value: 0.5\n",
            ManualFormatError,
            "line 6 field n",
            "required",
            id="yaml-row-line",
        ),
        pytest.param(
            "a.yaml",
            "- model: m\n  benchmark: [oops\n",
            ManualFormatError,
            "line 3 col 1",
            "invalid YAML",
            id="yaml-syntax",
        ),
        pytest.param(
            "a.yaml", "model: m\n", ManualFormatError, "baselines", "expected a list of rows", id="yaml-not-a-list"
        ),
        pytest.param("a.txt", "x", ManualFormatError, "path", "must end in .csv, .yaml or .yml", id="wrong-suffix"),
    ],
)
def test_bad_manual_files_name_file_line_and_field(
    name: str, text: str, error: type[Exception], key: str, message: str, engine: Engine, tmp_path: Path
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(error) as err, session_scope(engine) as s:
        import_manual(s, path)
    assert err.value.file == str(path) and err.value.key == key  # type: ignore[attr-defined]
    assert message in str(err.value)
    with session_scope(engine) as s:
        assert list_baselines(s) == []


def test_missing_manual_file(tmp_path: Path) -> None:
    with pytest.raises(SourceFileMissing, match=r"gone\.csv: gone\.csv: file missing"):
        read_manual(tmp_path / "gone.csv")
