"""Every bundled pack loads, is well formed, and together they cover the five MedHELM categories."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections import Counter
from collections.abc import Callable

import pytest
import yaml

from medmon.baselines.taxonomy import categories, resolve
from medmon.monitor.service.webserver import RunningServer
from medmon.probes.generators import BUILDERS, TOLERANCE, format_value, generate_calculation_canaries
from medmon.probes.jury import Jury, JuryOutcome, JurySettings
from medmon.probes.packs import Pack, available_packs, bundled_dir, load_pack
from medmon.probes.scoring import SCORERS, get_scorer
from medmon.probes.simulator import create_simulator
from tests.probes.simkit import judge_settings, run

PACKS = available_packs()
AGE_BANDS = {"0-17", "18-39", "40-64", "65+"}
SEXES = {"female", "male"}
JURY = "jury"  # registered by the jury module, not by medmon.probes.scoring
BASELINE_SOURCE = "Illustrative pre-deployment figure for the simulated model (not a published result)"


@pytest.fixture(scope="module", params=PACKS)
def pack(request: pytest.FixtureRequest) -> Pack:
    return load_pack(request.param)


def test_the_new_packs_are_bundled() -> None:
    assert {
        "medical_calculations",
        "visit_note_generation",
        "discharge_instructions",
        "patient_messages",
        "research_yes_no_maybe",
        "diagnosis_coding",
    } <= set(PACKS)


def test_pack_size_and_unique_ids(pack: Pack) -> None:
    ids = [c.id for c in pack.canaries]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


def test_benchmark_is_in_the_taxonomy(pack: Pack) -> None:
    assert resolve(pack.benchmark).in_taxonomy, pack.benchmark
    assert all(c.benchmark == pack.benchmark and c.pack == pack.name for c in pack.canaries)


def test_scorer_is_registered_or_jury(pack: Pack) -> None:
    names = {pack.scorer} | {c.scorer for c in pack.canaries if c.scorer}
    for name in names:
        assert name == JURY or name in SCORERS, name


def test_every_canary_has_subgroup_tags(pack: Pack) -> None:
    for c in pack.canaries:
        assert c.tags.get("age_band") in AGE_BANDS, c.id
        assert c.tags.get("sex") in SEXES, c.id
    # spread across subgroups, not one patient type
    assert len({c.tags["sex"] for c in pack.canaries}) == 2
    assert len({c.tags["age_band"] for c in pack.canaries}) >= 3


def test_every_canary_is_replayable_with_a_reference(pack: Pack) -> None:
    for c in pack.canaries:
        assert c.replayable and c.prompt.strip() and c.references and all(r.strip() for r in c.references), c.id


def test_card_baseline(pack: Pack) -> None:
    baseline = pack.baseline
    assert {"value", "n", "metric", "model", "source"} <= set(baseline)
    assert 0.0 <= float(baseline["value"]) <= 1.0
    assert int(baseline["n"]) > 0
    assert baseline["model"] == "medmon-simulator/clinical-v1"
    assert baseline["source"] == BASELINE_SOURCE
    assert pack.title and pack.description


def test_references_score_full_marks(pack: Pack, serve: Callable[[object], RunningServer]) -> None:
    if pack.scorer == JURY:  # honest simulated judges, over HTTP, give a reference answer top marks
        server = serve(create_simulator([]))

        async def judge_all() -> list[JuryOutcome]:
            # every canary's three judges at once: a loaded machine must not turn slowness into a verdict
            async with Jury(JurySettings(judge_settings(server.url, timeout_s=30.0))) as jury:
                return list(await asyncio.gather(*(jury.judge(c, c.references[0]) for c in pack.canaries)))

        for c, outcome in zip(pack.canaries, run(judge_all()), strict=True):
            assert outcome.judges_answered == 3 and outcome.score == 1.0, c.id
        return
    scorer = get_scorer(pack.scorer)
    for c in pack.canaries:
        assert scorer(c, c.references[0]).value == 1.0, c.id


def test_all_five_categories_are_covered() -> None:
    covered = {load_pack(name).taxonomy.category for name in PACKS}
    assert covered == {c["name"] for c in categories()}


def test_research_answers_are_yes_no_maybe() -> None:
    answers = Counter(c.references[0] for c in load_pack("research_yes_no_maybe").canaries)
    assert set(answers) == {"yes", "no", "maybe"}


def test_coding_references_hold_well_formed_codes() -> None:
    scorer = get_scorer("set_f1")
    for c in load_pack("diagnosis_coding").canaries:
        codes = [code.strip() for code in c.references[0].split(",")]
        detail = scorer(c, c.references[0]).detail
        assert sorted(codes) == detail["reference"], c.id  # every written code is extracted as written


def test_discharge_card_sets_readability_target() -> None:
    card = yaml.safe_load((bundled_dir() / "discharge_instructions.yaml").read_text("utf-8"))
    assert card["readability_target_grade"] == 8
    grades = [
        get_scorer("readability")(c, c.references[0]).detail["grade"]
        for c in load_pack("discharge_instructions").canaries
    ]
    assert max(g for g in grades if g is not None) <= 8


# --- calculation canaries -------------------------------------------------------------------


def test_generation_is_seeded() -> None:
    assert generate_calculation_canaries(20, seed=11) == generate_calculation_canaries(20, seed=11)
    assert generate_calculation_canaries(20, seed=11) != generate_calculation_canaries(20, seed=12)
    assert generate_calculation_canaries(0, seed=1) == []
    with pytest.raises(ValueError, match="n"):
        generate_calculation_canaries(-1, seed=1)


def test_bundled_calculations_are_the_generator_output() -> None:
    card = yaml.safe_load((bundled_dir() / "medical_calculations.yaml").read_text("utf-8"))
    spec = card["generator"]
    regenerated = generate_calculation_canaries(spec["n"], seed=spec["seed"])
    bundled = [dataclasses.replace(c, pack="") for c in load_pack("medical_calculations").canaries]
    assert bundled == regenerated


def test_generated_canaries_shape() -> None:
    canaries = generate_calculation_canaries(2 * len(BUILDERS), seed=5)
    kinds = Counter(c.id.split("-", 3)[3] for c in canaries)
    assert set(kinds) == set(BUILDERS)  # every calculator used, in turn
    groups = Counter((c.tags["age_band"], c.tags["sex"]) for c in canaries)
    assert len(groups) == 6 and max(groups.values()) - min(groups.values()) <= 2
    for c in canaries:
        assert c.scorer == "numeric_tolerance" and c.benchmark == "medcalc_bench"
        assert c.prompt.startswith("Read the patient note") and "number only" in c.prompt
        assert set(c.tags) == {"age_band", "sex"}
        assert c.tolerance is not None
        value = float(c.references[0])
        assert c.tolerance["lower"] <= value <= c.tolerance["upper"], c.id


def test_continuous_results_get_five_percent_and_scores_none() -> None:
    for c in generate_calculation_canaries(len(BUILDERS), seed=3):
        assert c.tolerance is not None
        low, high = c.tolerance["lower"], c.tolerance["upper"]
        if low == high:  # a point score: exact
            assert float(c.references[0]) == low
        else:
            middle = (low + high) / 2
            assert math.isclose(high / middle - 1, TOLERANCE, rel_tol=1e-3), c.id


def test_age_matches_band() -> None:
    bands = {"18-39": range(18, 40), "40-64": range(40, 65), "65+": range(65, 91)}
    for c in generate_calculation_canaries(30, seed=8):
        age = int(c.prompt.split("-year-old")[0].split()[-1])
        assert age in bands[c.tags["age_band"]], c.id
        assert ("woman" in c.prompt) == (c.tags["sex"] == "female"), c.id


@pytest.mark.parametrize(
    ("value", "text"), [(63.6363, "63.64"), (4, "4"), (2.5, "2.5"), (24.0, "24"), (-0.001, "0"), (-3.456, "-3.46")]
)
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


def test_bundled_calculations_carry_the_unit_their_question_asks() -> None:
    """A user running the bundled pack gets answers in other units converted, and a number in
    another dimension never read as the result."""
    from medmon.probes.scoring import score_reply

    canaries = load_pack("medical_calculations").canaries
    by_kind = {c.id.split("-", 3)[3]: c for c in canaries}
    assert {c.unit for c in canaries} == {"mL/min", "kg/m²", "mEq/L", "mmHg", "mg/dL", "mmol/L", "ms", ""}
    assert all(
        c.unit == "" for k, c in by_kind.items() if k in {"cha2ds2_vasc", "has_bled", "wells_pe", "curb65", "meld"}
    )
    crcl = by_kind["crcl"]
    per_second = float(crcl.references[0]) / 60
    assert score_reply(crcl, f"CrCl = {per_second:.3f} mL/s").correct is True
    assert score_reply(crcl, f"{float(crcl.references[0]):.1f} kg").parsed is False
    qtc = by_kind["qtc_bazett"]
    assert score_reply(qtc, f"QTc {float(qtc.references[0]) / 1000:.3f} s").correct is True
