"""The Jury and Clinician review pages show the clinician-scale estimate beside the jury's opinion and MedHELM's
0.47, and what the queue needs next, from a database the oversight pass filled (tests/monitor/test_clinician_scale)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from medmon.dashboards.auth import LOCAL_ACTIONS_ENV
from tests.conftest import plan_dict
from tests.dashboards.conftest import APP, local_dashboard
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT
from tests.monitor.test_clinician_scale import _fooled, _plan


@pytest.mark.parametrize("view", ["jury", "review"])
def test_the_page_shows_the_clinician_scale_beside_the_jury_and_medhelm(
    view: str, engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan()
    _fooled(engine, plan)
    data = plan_dict(oversight={**OVERSIGHT, "review": plan.oversight.review.model_dump(mode="json")})
    data["tasks"][0] |= {"human_review_required": True}
    path = tmp_path / "medmon.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("MEDMON_PLAN", str(path))
    monkeypatch.setenv("MEDMON_DATABASE_URL", db_url)
    monkeypatch.setenv(LOCAL_ACTIONS_ENV, "1")
    with local_dashboard():
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        at.switch_page(f"views/{view}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "On the clinician scale" in [h.value for h in at.subheader]
    [grid] = [df for df in at.dataframe if "clinician scale" in df.value.columns]  # one table per task
    table = grid.value
    assert list(table["criterion"]) == list(CRITERIA)  # one row per rubric criterion
    drawn = grid.proto.column_order
    # the scales side by side in the columns a 1,024 px page draws (the others on ticking a row)
    assert list(drawn)[:4] == ["criterion", "clinician scale", "jury's opinion", "ICC (MedHELM)"]
    for _, row in table.iterrows():
        assert row["status"] == "ALARM"
        assert float(row["clinician scale"]) < float(row["null"]) < float(row["jury's opinion"])
        icc, medhelm = row["ICC (MedHELM)"].split(" ")
        assert medhelm == "(0.47)" and icc != "—"
        needed = next(c for c in table.columns if c.startswith("more ratings for ±"))
        assert row[needed].isdigit() or row[needed] == "unreachable at this volume"
    sentences = " ".join(m.value for m in at.markdown)
    assert all(f"**knowledge-qa · {c}**: clinician scale" in sentences for c in CRITERIA)
