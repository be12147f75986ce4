"""No table on any page shows a missing number as the word "None": it reads "—"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from tests.dashboards.seed import Seeded

PAGES = (
    "overview",
    "task",
    "alerts",
    "costs",
    "jury",
    "baselines",
    "changes",
    "governance",
    "traffic",
    "review",
    "safety",
)


def _none_cells(at: AppTest) -> list[str]:
    found = []
    for element in at.dataframe:
        frame: pd.DataFrame = element.value
        for column in frame.columns:
            values = frame[column]
            if values.isna().any() or values.astype(str).isin(["None", "nan", "NaN", "<NA>"]).any():
                found.append(str(column))
    for element in [*at.markdown, *at.caption, *at.text]:
        if " None" in element.value or "None " in element.value:
            found.append(element.value[:120])
    return found


@pytest.mark.parametrize("database", ["seeded", "empty"])
@pytest.mark.slow
def test_no_page_shows_none_for_a_missing_value(
    database: str, seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]
) -> None:
    if database == "empty":
        data = yaml.safe_load(seeded.plan_path.read_text())
        data["storage"] = {"url": f"sqlite:///{tmp_path / 'empty.db'}"}
        plan_path = tmp_path / "empty-plan.yaml"
        plan_path.write_text(yaml.safe_dump(data))
        monkeypatch.setenv("MEDMON_PLAN", str(plan_path))
        monkeypatch.setenv("MEDMON_DATABASE_URL", data["storage"]["url"])
    problems = {}
    for page in PAGES:
        cells = _none_cells(open_page(page))
        if cells:
            problems[page] = cells
    assert not problems, problems
