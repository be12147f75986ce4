"""A model name from outside (a HELM run, a served model) is shown as text: a Markdown image or
link in it is neither fetched nor followed."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from medmon.baselines.models import Baseline
from medmon.dashboards.text import plain
from tests.dashboards.seed import Seeded

HOSTILE = "gpt ![pixel](https://evil.example/p.png) [docs](https://evil.example/phish)"


def test_a_hostile_model_name_is_escaped_on_the_baselines_page(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    with Session(seeded_engine) as s:
        rows = s.exec(select(Baseline).where(Baseline.source_files != None)).all()  # noqa: E711
        for row in rows:
            row.model = HOSTILE
            s.add(row)
        s.commit()
    at = open_page("baselines")
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert labels and all(plain(HOSTILE) in label for label in labels if "file(s)" in label)
    assert not any("](https://evil.example" in label for label in labels)
