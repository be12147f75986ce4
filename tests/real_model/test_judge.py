"""The real model as one judge of the jury: what a weak judge does to the jury must show, not crash anything.

``medmon init``'s plan, its deployment and two judges on the simulator over HTTP, its third judge
Gemma 3 270M (a base model, which does not write the jury's JSON verdict). One probe run of the
jury-scored task through ``medmon probe run``: every answer is still scored by the judges that
answered, Gemma's calls are stored with their parse status, tokens and latency under its alias,
and where it gave no usable verdict that is recorded as unparsed or failed, never as a score.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app as cli
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import SIMULATOR_MODEL, Phase, create_simulator
from tests.conftest import serve_in_thread
from tests.probes.simkit import JUDGE_MODELS
from tests.real_model.conftest import ALIAS, Gemma

pytestmark = pytest.mark.process  # a real server started as a process

TASK = "discharge-instructions"


def test_the_real_model_as_a_judge_is_recorded_as_unreliable_and_the_jury_still_scores(
    gemma: Gemma, engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = serve_in_thread(
        create_simulator(load_pack("discharge_instructions").canaries, [Phase(0, accuracy=0.95)], seed=5)
    )
    try:
        path = tmp_path / "plan.yaml"
        runner = CliRunner()
        assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
        data = yaml.safe_load(path.read_text())
        data["deployment"] |= {"base_url": f"{sim.url}/v1", "model": SIMULATOR_MODEL, "max_retries": 0}
        judges = data["jury"]["judges"]
        for judge, model in zip(judges[:2], JUDGE_MODELS, strict=False):
            judge |= {"base_url": f"{sim.url}/v1", "model": model}
        judges[2] |= {"base_url": gemma.base_url, "model": ALIAS, "timeout_s": 180, "max_retries": 0}
        data["storage"]["url"] = db_url
        task = next(t for t in data["tasks"] if t["id"] == TASK)
        task["sample_size"] = 3  # a base model on 2 cores: seconds per verdict
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        for name in ("MEDMON_MODEL_API_KEY", "MEDMON_WEBHOOK_SECRET"):
            monkeypatch.setenv(name, "sk-test")
        monkeypatch.setenv("MEDMON_WEBHOOK_URL", "http://127.0.0.1:9/hook")
        done = runner.invoke(cli, ["probe", "run", str(path), "--task", TASK, "--no-deliver", "--json"])
        assert done.exit_code == 0, (done.output, done.exception)
        assert json.loads(done.stdout)
    finally:
        sim.stop()
    with Session(engine) as s:
        results = s.exec(select(ProbeResult).where(ProbeResult.task_id == TASK)).all()
        calls = s.exec(select(JudgeCall)).all()
        verdicts = s.exec(select(JuryVerdict)).all()
    assert len(results) == 3 and all(r.score is not None for r in results)  # the other judges scored every answer
    real = [c for c in calls if c.judge == judges[2]["name"]]
    assert len(real) == 3 and all(c.served_model == ALIAS and c.latency_s for c in real)
    ok = {ParseStatus.ok, ParseStatus.retried_ok}
    for call in real:
        mine = [v for v in verdicts if v.call_id == call.id]
        if call.parse_status in ok:  # a verdict it wrote: scores on the scale, one per criterion
            assert {v.criterion for v in mine} == set(data["jury"]["criteria"])
            assert all(v.score is None or 1 <= v.score <= 5 for v in mine)
        else:  # no usable verdict: recorded as such, no score invented
            assert all(v.score is None for v in mine)
    others = [c for c in calls if c.judge != judges[2]["name"]]
    assert len(others) == 6 and all(c.parse_status in ok for c in others)
