"""Judge canaries: the bundled set, the file format, and re-judging through the jury over HTTP."""

from __future__ import annotations

import ast
import doctest
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from medmon.baselines.errors import CanaryFormatError
from medmon.probes.judge_canaries import JudgeCanary, load_judge_canaries, rejudge
from medmon.probes.jury import Jury, JurySettings
from medmon.probes.packs import available_packs
from medmon.probes.simulator import JudgeBehaviour, create_simulator
from tests.probes.simkit import JUDGE_MODELS, judge_settings, run

GOOD = {
    "id": "jc-x",
    "messages": [{"role": "user", "content": "Dose of amoxicillin for a 20 kg child?"}],
    "answer": "40 mg/kg/day in two doses.",
    "reference": "40 mg/kg/day divided twice daily.",
    "gold_score": 5,
}


def test_bundled_set_spans_the_scale_with_good_and_bad_answers() -> None:
    canaries = load_judge_canaries()
    golds = Counter(c.gold_score(["accuracy"]) for c in canaries)
    assert len(canaries) >= 12
    assert set(golds) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert sum(n for g, n in golds.items() if g <= 2) >= 4 and golds[5.0] >= 4
    assert len({c.id for c in canaries}) == len(canaries)
    for c in canaries:
        assert c.answer.strip() and c.reference and c.messages[-1]["role"] == "user", c.id
        assert c.tags.get("age_band") and c.tags.get("sex"), c.id


def test_bundled_set_is_not_listed_as_a_canary_pack() -> None:
    assert "judge_canaries" not in available_packs()


def test_per_criterion_gold_is_averaged_over_the_jurys_criteria(tmp_path: Path) -> None:
    path = tmp_path / "jc.jsonl"
    path.write_text(json.dumps(GOOD | {"gold_score": {"accuracy": 5, "completeness": 2, "tone": 1}}) + "\n")
    (canary,) = load_judge_canaries(path)
    assert canary.gold_score(["accuracy", "completeness", "clarity"]) == 3.5
    with pytest.raises(ValueError, match="none of the criteria clarity"):
        canary.gold_score(["clarity"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"answer": ""}, "jc.jsonl:2: field 'answer'"),
        ({"gold_score": 6}, "jc.jsonl:2: field 'gold_score': expected a number from 1 to 5"),
        ({"gold_score": {"accuracy": True}}, "jc.jsonl:2: field 'gold_score'"),
        ({"messages": [{"role": "doctor", "content": "x"}]}, "jc.jsonl:2: field 'messages'"),
        ({"verdict": 3}, "jc.jsonl:2: unknown field(s) verdict"),
        ({"tags": {"age": 40}}, "jc.jsonl:2: field 'tags'"),
    ],
    ids=["empty-answer", "gold-above-scale", "gold-not-a-number", "bad-role", "unknown-field", "non-string-tag"],
)
def test_format_errors_name_file_line_and_field(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    path = tmp_path / "jc.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"id": "jc-y"} | change) + "\n")
    with pytest.raises(CanaryFormatError) as err:
        load_judge_canaries(path)
    assert message in str(err.value)


def test_repeated_ids_and_bad_json_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "jc.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    with pytest.raises(CanaryFormatError, match="repeated id"):
        load_judge_canaries(path)
    path.write_text(json.dumps(GOOD) + "\n{not json\n")
    with pytest.raises(CanaryFormatError, match="jc.jsonl:2: invalid JSON"):
        load_judge_canaries(path)


def agreement(pairs: list[tuple[float, float]]) -> float:
    return sum(1 - abs(j - g) / 4 for j, g in pairs) / len(pairs)


def test_rejudging_over_http_tells_a_biased_judge_from_honest_ones(serve: Callable) -> None:
    biased = JUDGE_MODELS[1]
    server = serve(create_simulator([], judges={biased: JudgeBehaviour(offset=-2.0)}))
    canaries = load_judge_canaries()

    async def go() -> list[Any]:
        async with Jury(JurySettings(judge_settings(server.url))) as jury:
            return await rejudge(jury, canaries)

    done = run(go())
    assert [r.canary.id for r in done] == [c.id for c in canaries]
    per_judge: dict[str, list[tuple[float, float]]] = {}
    for r in done:
        for judge, pair in r.pairs().items():
            per_judge.setdefault(judge, []).append(pair)
    assert sorted(per_judge) == ["judge-a", "judge-b", "judge-c"]
    assert all(len(p) == len(canaries) for p in per_judge.values())  # every verdict parsed
    # the simulated judges score 5 for an answer holding the reference and 2 otherwise: honest
    # judges land within a point of gold on most answers; the biased one loses two points
    assert agreement(per_judge["judge-a"]) >= 0.85 and agreement(per_judge["judge-c"]) >= 0.85
    assert agreement(per_judge["judge-b"]) < 0.7
    assert all(v.cost_usd is not None and v.cost_usd > 0 for r in done for v in r.outcome.verdicts)


def test_judges_see_the_request_the_fixed_answer_and_the_reference() -> None:
    canary = JudgeCanary("jc-z", ({"role": "user", "content": "Q?"},), "the fixed answer", 4, reference="gold text")
    as_canary = canary.as_canary()
    assert as_canary.prompt == "Q?" and as_canary.references == ("gold text",) and as_canary.scorer == "jury"
    assert JudgeCanary("jc-z", canary.messages, "a", 4).as_canary().references == ()


def test_doctests_pass_and_only_baselines_and_probes_are_imported() -> None:
    import medmon.probes.judge_canaries as module

    assert doctest.testmod(module).failed == 0
    tree = ast.parse(Path(module.__file__ or "").read_text("utf-8"))
    ours = {
        ".".join(n.module.split(".")[:2])
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("medmon.")
    }
    assert ours == {"medmon.baselines", "medmon.probes"}
