"""The plan's governance record: the five steps a governance owner takes, and the privacy rules.

Step 1 (intended use, users, workflow, consequence of error, risk tier) is the plan's
``use_case`` section and is not repeated here. This module holds steps 2 to 5:

2. ``medhelm``: the MedHELM categories, subcategories and benchmarks the use case maps to.
   They are derived from each task's benchmark; declaring them lets ``medmon check`` confirm
   that what the committee approved is what is monitored.
3. ``evidence``: the benchmark evidence and its known limitations.
4. ``local_validation``: the local data the thresholds were set on (the thresholds themselves
   live on each task).
5. ``controls``: decision criteria, how human review works, the longest gap between probes
   each risk tier allows, and what happens after a change of model, prompt or judge. Each
   task's accountable owner is its ``owner`` field; with a governance section it is required.

``privacy`` decides what reaches the database: a redactor runs on every stored answer, and
``store_text: false`` keeps no answer text at all (scores are stored either way).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import Field, field_validator

from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.people import Person
from medmon.monitor.plan.section import Interval, Section

RISK_TIERS = ("high", "medium", "low")
DEFAULT_MAX_PROBE_INTERVAL = {"high": "1h", "medium": "1d", "low": "7d"}
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class MedhelmMapping(Section):
    """Step 2, as approved; empty lists mean 'derive from the tasks, do not cross-check'."""

    categories: list[str] = Field(default_factory=list)
    subcategories: list[str] = Field(default_factory=list)
    benchmarks: list[str] = Field(default_factory=list)


class EvidenceSource(Section):
    """One piece of pre-deployment evidence: where a benchmark figure came from."""

    benchmark: str
    source: str
    metric: str | None = None
    value: float | None = None
    n: int | None = Field(None, ge=1)
    data_access: str | None = Field(None, pattern=r"^(public|gated|private)$")
    notes: str = ""


class Evidence(Section):
    """Step 3: the benchmark evidence and what it cannot tell."""

    summary: str = ""
    sources: list[EvidenceSource] = Field(default_factory=list)
    limitations: list[str] = Field(default_factory=list)


class LocalValidation(Section):
    """Step 4: the local data the thresholds rest on."""

    description: str
    n: int | None = Field(None, ge=1)
    result: str = ""
    completed_on: date | None = None
    thresholds_rationale: str = ""


class ReevaluationPolicy(Section):
    """What a change of model, fingerprint, prompt, decoding, canaries, scorer or judge sets off.

    ``repeats`` replays every replayable canary that many times, so a small pack still gives
    an interval narrow enough to decide on.
    """

    on_detected_change: bool = True
    # A plan edit of the model, endpoint, system prompt, decoding, a task's canaries or scorer, or
    # the jury is a declared change; the next probe of each affected task re-evaluates it.
    on_plan_change: bool = True
    repeats: int = Field(1, ge=1, le=50)
    # At most one re-evaluation of a task in flight, and none sooner than this after the last
    # one started: changes detected meanwhile wait (pending) and are answered together.
    cooldown: Interval = "1h"


CONDITIONS = Literal[
    "below_minimum", "failed", "inconclusive", "drift", "subgroup_gap", "open_incident", "model_change", "no_data"
]


class RecommendationRules(Section):
    """How the committee report recommends per task: suspend when a ``suspend_when`` condition
    holds over the period, continue with conditions when a ``conditions_when`` one does, else
    continue. Conditions: below_minimum (the whole 95% interval under the approved minimum),
    failed (thresholds not met), inconclusive (interval straddles one), drift (a drift finding),
    subgroup_gap, open_incident, model_change, no_data."""

    # pydantic copies a mutable default for each model, so a list literal is safe here.
    suspend_when: list[CONDITIONS] = ["below_minimum"]
    conditions_when: list[CONDITIONS] = [
        "failed",
        "subgroup_gap",
        "drift",
        "open_incident",
        "model_change",
        "inconclusive",
        "no_data",
    ]


class ResponseTargets(Section):
    """How soon alerts of each severity should be acknowledged and resolved; the report measures both."""

    acknowledge: dict[str, str] = Field(default_factory=lambda: {"critical": "30m", "warning": "4h", "info": "1d"})
    resolve: dict[str, str] = Field(default_factory=lambda: {"critical": "1d", "warning": "3d", "info": "7d"})

    @field_validator("acknowledge", "resolve")
    @classmethod
    def _severities(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - {"critical", "warning", "info"})
        if unknown:
            raise ValueError(f"unknown severity {', '.join(unknown)}; expected critical, warning or info")
        for text in value.values():
            parse_interval(text)
        return value


class Controls(Section):
    """Step 5: how decisions are made and how often the model is looked at."""

    decision_criteria: str = ""
    human_review: str = ""
    max_probe_interval: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_MAX_PROBE_INTERVAL))
    reevaluation: ReevaluationPolicy = ReevaluationPolicy()
    escalation: str = ""
    recommendation: RecommendationRules = RecommendationRules()
    response_targets: ResponseTargets | None = None

    @field_validator("max_probe_interval")
    @classmethod
    def _tiers(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(RISK_TIERS))
        if unknown:
            raise ValueError(f"unknown risk tier(s) {', '.join(unknown)}; expected {', '.join(RISK_TIERS)}")
        for text in value.values():
            parse_interval(text)
        return {**DEFAULT_MAX_PROBE_INTERVAL, **value}


CHANGE_KINDS = Literal[
    "model", "fingerprint", "prompt", "workflow", "judge", "decoding", "canaries", "scorer", "request"
]


class AnticipatedChange(Section):
    """One change type the plan anticipates (R13, a predetermined change control plan).

    ``protocol`` says what is done when it happens (the re-evaluation, who reviews), ``acceptance``
    the criteria the re-evaluation must meet, and ``max_drop`` the bound: a re-evaluated estimate
    more than this below the baseline in force, or any change of this kind beyond ``full_review_when``,
    needs a full re-review by the committee instead of the owner's adoption.
    """

    kind: CHANGE_KINDS
    description: str = ""
    protocol: str
    acceptance: str
    max_drop: float | None = Field(None, ge=0, le=1)
    full_review_when: str = ""


class ChangeControl(Section):
    """The change types the deployment anticipates; a change of any other kind needs a full re-review."""

    anticipated: list[AnticipatedChange] = Field(default_factory=list)

    def entry_for(self, kind: str) -> tuple[int, AnticipatedChange] | None:
        """The first anticipated entry of this kind, with its index (what a change record cites)."""
        return next(((i, e) for i, e in enumerate(self.anticipated) if e.kind == kind), None)


class Approval(Section):
    """Who approved this plan for go-live, and when (text in the file; the recorded act is
    ``medmon approvals go-live``)."""

    approved_by: Person
    approved_on: date
    committee: str = ""
    reference: str = ""


class Governance(Section):
    medhelm: MedhelmMapping = MedhelmMapping()
    evidence: Evidence = Evidence()
    local_validation: LocalValidation | None = None
    controls: Controls = Controls()
    change_control: ChangeControl | None = None
    approval: Approval | None = None


class Privacy(Section):
    """What of the model's text reaches storage.

    ``redactor`` is ``builtin`` (best-effort pattern redaction of common identifiers),
    ``presidio`` (those patterns plus Presidio's recognisers, ``medmon[presidio]``), ``none``, or
    ``module:function`` naming an importable callable from str to str.
    """

    redactor: str = "builtin"
    store_text: bool = True

    @field_validator("redactor")
    @classmethod
    def _redactor(cls, value: str) -> str:
        if value in ("builtin", "presidio", "none") or _CALLABLE.match(value):
            return value
        raise ValueError(f"expected 'builtin', 'presidio', 'none' or 'module:function', got {value!r}")
