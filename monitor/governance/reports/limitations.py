"""What the evidence behind a plan cannot tell: stated in every report and plan document.

Some limits follow from the benchmarks themselves (MedHELM's LLM jury agrees with clinicians
only moderately; public benchmark items may be in a model's training data; private and gated
data cannot be re-run elsewhere), some from how medmon measures (canaries are a proxy for the
benchmark, finite samples give intervals, redaction is best-effort), and some the committee
wrote into the plan.
"""

from __future__ import annotations

from medmon.baselines import resolve
from medmon.monitor.plan.model import Plan

JURY_AGREEMENT = (
    "LLM-jury scores agree only moderately with clinicians: MedHELM reports an intraclass "
    "correlation of 0.47 between its jury and clinician ratings, against 0.43 between clinicians "
    "(Bedi et al., MedHELM, arXiv 2505.23802). A jury score is evidence of quality, not a clinical "
    "review."
)
PUBLIC_DATA = (
    "public benchmark: its items may have been seen in training, so the score can overstate performance on unseen cases"
)
PRIVATE_DATA = (
    "{access} benchmark: the figure comes from data medmon cannot replay; the canaries stand in "
    "for it and their scores are comparable in shape, not identical in content"
)


def known_limitations(plan: Plan) -> list[str]:
    """Every limitation that applies to this plan's evidence, declared ones last."""
    out: list[str] = []
    if plan.deployment.model.startswith("medmon-simulator"):
        out.append(
            "The deployment is a SIMULATED model (medmon's simulator): these figures describe no clinical "
            "model and exist to demonstrate the monitoring."
        )
    jury_tasks = [t.id for t in plan.tasks if resolve(t.benchmark).llm_jury or t.scorer == "jury"]
    if jury_tasks:
        out.append(f"{JURY_AGREEMENT} Applies to: {', '.join(jury_tasks)}.")
    for task in plan.tasks:
        entry = resolve(task.benchmark)
        if not entry.in_taxonomy:
            out.append(
                f"{task.id}: benchmark {task.benchmark!r} is outside the MedHELM taxonomy; its evidence is "
                "not comparable with MedHELM results."
            )
        elif entry.data_access == "public":
            out.append(f"{task.id} ({task.benchmark}): {PUBLIC_DATA}.")
        elif entry.data_access in ("private", "gated"):
            out.append(f"{task.id} ({task.benchmark}): {PRIVATE_DATA.format(access=entry.data_access)}.")
        if task.canaries.pack is not None:
            out.append(
                f"{task.id}: canaries come from the bundled pack {task.canaries.pack!r}, which mirrors the "
                f"shape of {task.benchmark} but is not the benchmark; a pack's baseline card may be "
                "illustrative (see its source)."
            )
    out.append(
        "Each estimate rests on a finite sample: read it with its 95% interval, and treat a pass or fail "
        "whose interval straddles a threshold as not yet decided."
    )
    if plan.privacy.store_text:
        out.append(
            f"Stored answers pass through the '{plan.privacy.redactor}' redactor; pattern redaction is "
            "best-effort and is not de-identification."
        )
    if plan.governance is not None:
        out.extend(plan.governance.evidence.limitations)
    return out
