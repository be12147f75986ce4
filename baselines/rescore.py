"""A HELM run's recorded completions scored again with the scorer production uses.

HELM scored its completions with its own metric (for a multiple-choice run, strict equality with
the option letter); production answers are scored by medmon's scorers, which read markdown,
reasoning and JSON. Comparing the two would mix how answers are read with how good they are. So
an import can score HELM's completions again with medmon's scorer (``rescore``, given by the
caller: this package does not know the scorers) and keep both figures per instance:

- the canaries' ``baseline_score`` (what paired detectors compare with) becomes medmon's mean
  over the trials it could read;
- HELM's own per-instance scores stay in ``BaselineInstance.score``, medmon's beside them;
- the baseline records medmon's value, how many instances it could score, how many it could
  not read, and how many instances the two disagree on: a disagreement rate above
  :data:`DISAGREEMENT_FLAG` is flagged wherever the baseline is shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from medmon.baselines.canary import Canary
from medmon.baselines.helm import RunEvidence

Rescore = Callable[[Canary, str], float | None]
"""``rescore(canary, completion) -> score in [0, 1]``, or None when the completion cannot be read."""

DISAGREEMENT_FLAG = 0.02


def rescore_run(run: RunEvidence, rescore: Rescore) -> RunEvidence:
    """The run with medmon's per-instance scores beside HELM's (unchanged when nothing can be rescored).

    Jury-scored runs, runs without recorded completions and canaries whose scorer is the jury
    are left as they are.
    """
    if run.metric.jury or not run.completions:
        return run
    helm = run.figures.instances
    medmon: dict[str, tuple[float | None, int]] = {}
    canaries = []
    disagree = unparsed = 0
    for canary in run.canaries:
        texts = run.completions.get(canary.id) or []
        if canary.scorer in (None, "jury") or not texts:
            canaries.append(canary)
            continue
        scores = [rescore(canary, text) if text is not None else None for text in texts]
        read = [s for s in scores if s is not None]
        missing = len(scores) - len(read)
        mean = sum(read) / len(read) if read else None
        medmon[canary.id] = (mean, missing)
        unparsed += missing > 0
        theirs = helm.get(canary.id)
        if theirs is not None and (missing or mean is None or not math.isclose(mean, theirs[0], abs_tol=1e-9)):
            disagree += 1
        canaries.append(replace(canary, baseline_score=mean, baseline_runs=len(read)))
    if not medmon:
        return run
    values = [m for m, _ in medmon.values() if m is not None]
    compared = sum(1 for i in medmon if i in helm)
    figures = replace(
        run.figures,
        medmon_instances=medmon,
        rescored_value=sum(values) / len(values) if values else None,
        rescored_n=len(values),
        rescored_unparsed=unparsed,
        disagreements=disagree,
        compared=compared,
    )
    notes = list(run.notes)
    rate = disagree / compared if compared else 0.0
    notes.append(
        f"HELM's completions scored again with medmon's scorer: {disagree} of {compared} instances "
        f"disagree ({rate:.1%}), {unparsed} not readable"
        + (f"; above the {DISAGREEMENT_FLAG:.0%} flag" if rate > DISAGREEMENT_FLAG else "")
    )
    return replace(run, figures=figures, canaries=canaries, notes=notes, completions={})  # scored: not kept
