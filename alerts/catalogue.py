"""The stream catalogue: every kind of stream and rule, declared once, as data (metric label, detector, rule,
cause, impact, owner, the words of an alarm, what the committee is told to do). Stream layouts, the signal glue,
incident grouping, the dashboard's sentences and docs/alerts.md read it; a stream of no kind fails where declared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from medmon.alerts.causes import Cause

# Every alert rule, the label that with deployment, task and metric identifies an alert; its kinds are in KINDS.
Rule = StrEnum(
    "Rule",
    "drift_drop subgroup_drop subgroup_gap category_drop refusals_rising format_drift "
    "output_length_shift cost_over_budget latency_over_objective cost_rise latency_rise "
    "probes_failing jury_disagreement judge_failing judge_drift reevaluation_degraded "
    "go_live_conformance drift_change traffic_cost_rise traffic_latency_rise traffic_length_rise "
    "traffic_errors traffic_truncation traffic_refusals traffic_judged_drop "
    "traffic_jury_disagreement traffic_collapse traffic_surge below_minimum model_change stale "
    "heartbeat jury_not_validated judge_bias safety_clock safety_deadline_passed "
    "corrective_action_overdue clinician_scale_drop clinician_scale_waiting reader_disagreement",
)


# What an alert puts at risk, which sets how loudly it pages: quality (the clinical use case itself, severity
# follows its risk tier), operational (failures, cost, latency, freshness: at most a warning), info (never pages).
Impact = StrEnum("Impact", "quality operational info")


@dataclass(frozen=True)
class Kind:
    """One kind of stream (``detector`` set) or of rule without a stream (``detector`` empty)."""

    name: str
    source: str  # canary | judge | traffic | monitor (a rule on the monitor's own records)
    metric: str
    rule: Rule
    cause: Cause
    impact: Impact
    owner: str  # clinical | technical: who acts first
    what: str  # an alarm's words; ``{sub}`` (the metric's subscript) and other fields filled where it is declared
    todo: str = ""  # what the committee is told to do, where it says more than the cause's runbook
    detector: str = "mixture_sr"  # "" for a rule without a stream
    direction: str = ""  # "" for any; set where one metric has a kind per direction
    sub: bool = False
    family: str = "quality"  # the false-alarm budget it spends: quality | operational | info (none)
    page: str = ""  # the dashboard's sentence for a degraded stream of this kind

    def words(self, **fields: object) -> str:
        """The alarm's words with its fields filled in (a field not given reads "…").

        >>> KINDS["subgroup_score"].words(sub="sex=F")[:56]
        'score dropped below its reference within the sex=F slice'
        >>> KINDS["latency_typical"].words()
        'calls grew slower than every go-live call of the same canary (by at least … s)'
        """
        return self.what.format_map(defaultdict(lambda: "…", fields))


R, C, QUA, OPE, INF = Rule, Cause, Impact.quality, Impact.operational, Impact.info
CLIN, TECH, OPS, INFO = "clinical", "technical", "operational", "info"
_LENGTH = "the same canary gave at go-live"
_INFO_ONLY = "Nothing to decide: information for the next review."
# The table is kept out of the formatter: each kind reads as one row.
# fmt: off
KINDS: dict[str, Kind] = {k.name: k for k in (
    # canary streams (medmon.monitor.detection.drift.layout, .streams)
    Kind("score", "canary", "score", R.drift_drop, C.accuracy, QUA, CLIN, "score dropped below its baseline"),
    Kind("golive_score", "canary", "score", R.drift_drop, C.accuracy, QUA, CLIN,
         "score fell below the go-live reference"),
    Kind("paired_score", "canary", "score", R.drift_drop, C.accuracy, QUA, CLIN,
         "score dropped below each canary's own reference outcome (paired)", detector="paired_sr"),
    Kind("subgroup_score", "canary", "score", R.subgroup_drop, C.accuracy, QUA, CLIN,
         "score dropped below its reference within the {sub} slice too: the task's own drop, seen in one slice, "
         "not a gap between subgroups (that is the subgroup-gap finding)", detector="paired_sr", sub=True),
    Kind("subgroup_gap", "canary", "gap", R.subgroup_gap, C.subgroup_gap, QUA, CLIN,
         "the {sub} subgroup fell further behind the rest than at baseline", detector="subgroup_gap_sr", sub=True,
         page="the {sub} subgroup fell further behind the rest than at approval"),
    Kind("pooled_score", "canary", "pooled_score", R.category_drop, C.accuracy, QUA, CLIN,
         "scores across the {category} category fell below their baselines (pooled over {members} tasks)",
         "Look for a change the category's tasks share (model, prompt, settings).", detector="pooled_sr"),
    Kind("format", "canary", "format", R.format_drift, C.output, QUA, CLIN, "the model changed how it answers: more "
         "answers the scorer cannot read (format drift, not a wrong answer)",
         page="more answers can no longer be read by the scorer"),
    Kind("refusal", "canary", "refusal", R.refusals_rising, C.output, QUA, CLIN,
         "the model refuses to answer more often", page="the model refuses to answer more often than at go-live"),
    Kind("verbosity", "canary", "verbosity", R.output_length_shift, C.output, OPE, TECH,
         f"answers grew longer than every reference answer {_LENGTH}",
         page="answers grew longer than every reference answer more often than at go-live"),
    Kind("truncation", "canary", "truncation", R.output_length_shift, C.output, OPE, TECH,
         f"answers grew shorter than every reference answer {_LENGTH}",
         page="answers grew shorter than every reference answer more often than at go-live"),
    Kind("cost", "canary", "cost", R.cost_over_budget, C.cost, OPE, TECH, "cost per call exceeds its budget",
         family=OPS),
    Kind("latency", "canary", "latency", R.latency_over_objective, C.latency, OPE, TECH,
         "latency exceeds its objective", family=OPS),
    Kind("cost_typical", "canary", "cost_typical", R.cost_rise, C.cost, OPE, TECH,
         "typical cost per call rose above the go-live reference (log cost per canary)", family=OPS),
    Kind("latency_typical", "canary", "latency_typical", R.latency_rise, C.latency, OPE, TECH,
         "calls grew slower than every go-live call of the same canary (by at least {min_rise_s} s)", family=OPS),
    Kind("error_rate", "canary", "error_rate", R.probes_failing, C.availability, OPE, TECH, "model calls are failing",
         family=OPS, page="more model calls fail than at go-live"),
    Kind("jury_agreement", "canary", "jury_agreement", R.jury_disagreement, C.jury, QUA, CLIN,
         "the judges agree less than the plan's minimum", page="the judges agree less than the plan's minimum"),
    Kind("reader_agreement", "canary", "reader_agreement", R.reader_disagreement, C.jury, QUA, TECH,
         "the reader model agrees with the rules less than the plan's floor on answers both read",
         "Check the reader model (its endpoint or version changed?); until it agrees again, answers only it "
         "reads are suspect.", page="the reader model agrees with the rules less than the plan's floor"),
    Kind("judge_failures", "canary", "judge_failures", R.judge_failing, C.jury, OPE, TECH,
         "judge {sub} fails to give a usable verdict (call failed or output unreadable) more often",
         "Check that judge's endpoint; the other judges go on scoring.", sub=True, family=OPS),
    Kind("reevaluation", "canary", "reevaluation", R.reevaluation_degraded, C.accuracy, QUA, CLIN,
         "re-evaluation: degraded vs baseline", "Revert the change, or have the committee accept the new score.",
         detector="oneshot_paired", family=INFO),
    Kind("conformance", "canary", "conformance", R.go_live_conformance, C.accuracy, QUA, CLIN,
         "at go-live, production scored below the HELM evidence on the same canaries",
         "Decide whether the approval evidence still holds for the model as deployed.", "conformance", family=INFO),
    Kind("output_length", "canary", "output_length", R.drift_change, C.output, INF, TECH,
         "the distribution of output length changed", _INFO_ONLY, "river", family=INFO,
         page="the length of answers changed"),
    Kind("latency_distribution", "canary", "latency_distribution", R.drift_change, C.latency, INF, TECH,
         "the latency distribution changed", _INFO_ONLY, "river", family=INFO, page="the latency of calls changed"),
    # judge canaries (medmon.monitor.runs.judging): about the judges, for the technical owner
    Kind("judge_canaries", "judge", "judge_canaries", R.judge_drift, C.jury, QUA, TECH,
         "judge {judge} agrees less with the judge canaries' gold scores (judge drift)", detector="judge_agreement_sr"),
    Kind("judge_canary_bias", "judge", "judge_bias", R.judge_drift, C.jury, QUA, TECH, "judge {judge} scores the "
         "judge canaries more leniently or more severely than at go-live (judge drift)", detector="judge_bias_sr"),
    # real traffic (medmon.monitor.traffic)
    Kind("traffic_cost", "traffic", "traffic_cost", R.traffic_cost_rise, C.cost, OPE, TECH,
         "real calls cost more than the reference's median call more often (cost per call rose)", family=OPS),
    Kind("traffic_latency", "traffic", "traffic_latency", R.traffic_latency_rise, C.latency, OPE, TECH,
         "real calls take longer than the reference's median call more often (latency rose)", family=OPS),
    Kind("traffic_output_tokens", "traffic", "traffic_output_tokens", R.traffic_length_rise, C.output, OPE, TECH,
         "real answers are longer than the reference's median answer more often", family=OPS),
    Kind("traffic_error_rate", "traffic", "traffic_error_rate", R.traffic_errors, C.availability, OPE, TECH,
         "more real calls fail than in the reference", family=OPS),
    Kind("traffic_truncation", "traffic", "traffic_truncation", R.traffic_truncation, C.output, QUA, CLIN,
         "more real answers are cut off at the token limit (finish reason 'length')", family=OPS),
    Kind("traffic_refusal", "traffic", "traffic_refusal", R.traffic_refusals, C.output, QUA, CLIN,
         "the model refuses real requests more often than in the reference", family=OPS),
    Kind("traffic_judged_score", "traffic", "traffic_judged_score", R.traffic_judged_drop, C.accuracy, QUA, CLIN,
         "the jury scores real answers lower than it did at first"),
    Kind("traffic_jury_agreement", "traffic", "traffic_jury_agreement", R.traffic_jury_disagreement, C.jury, QUA, CLIN,
         "the judges agree less than the plan's minimum on real answers"),
    Kind("traffic_collapse", "traffic", "traffic_calls", R.traffic_collapse, C.availability, OPE, TECH,
         "far fewer real calls arrive than in the same hours of the reference (traffic collapse: an outage or a "
         "broken integration?)", detector="count_sr", direction="drop", family=OPS),
    Kind("traffic_surge", "traffic", "traffic_calls", R.traffic_surge, C.availability, OPE, TECH,
         "far more real calls arrive than in the same hours of the reference (traffic surge: a retry loop, a new "
         "use or misrouted traffic?)", detector="count_sr", direction="rise", family=OPS),
    # rules without a stream (medmon.alerts.rules, medmon.monitor.alerting)
    Kind("below_minimum", "monitor", "score", R.below_minimum, C.accuracy, QUA, CLIN,
         "the recent score's whole 95% interval is under the minimum in force", detector=""),
    Kind("model_change", "monitor", "served_model", R.model_change, C.model_change, OPE, TECH,
         "the served model or its system fingerprint changed", detector=""),
    Kind("stale", "monitor", "freshness", R.stale, C.availability, OPE, TECH, "no usable probe data for too long",
         detector=""),
    Kind("heartbeat", "monitor", "heartbeat", R.heartbeat, C.availability, OPE, TECH, "the monitor stopped beating",
         detector=""),
    Kind("jury_not_validated", "monitor", "jury_icc", R.jury_not_validated, C.accuracy, QUA, CLIN,
         "the jury no longer stands in for clinicians", "Have clinicians review more answers first.", ""),
    Kind("judge_bias", "monitor", "bias", R.judge_bias, C.accuracy, QUA, CLIN, "a judge is biased against clinicians",
         "Recalibrate or replace that judge.", "", sub=True),
    Kind("safety_clock", "monitor", "safety_event", R.safety_clock, C.accuracy, QUA, CLIN,
         "a safety event's reporting deadline is near", "Report the event before its deadline.", ""),
    Kind("safety_deadline_passed", "monitor", "safety_event", R.safety_deadline_passed, C.accuracy, QUA, CLIN,
         "a safety event's reporting deadline has passed", "Report the event now; record why it was late.", ""),
    Kind("corrective_action_overdue", "monitor", "corrective_action", R.corrective_action_overdue, C.accuracy, QUA,
         CLIN, "a corrective action is past its due date", "Close the action or record a new due date.", ""),
    # clinician scale (medmon.monitor.alerting.clinician_scale): jury scores rectified by clinicians' ratings
    Kind("clinician_scale", "monitor", "clinician_scale", R.clinician_scale_drop, C.accuracy, QUA, CLIN,
         "on the clinician scale, answers fell below the task's null (every jury score rectified by the "
         "clinicians' ratings of the sampled answers; not the jury's opinion alone)",
         "Have clinicians read the recent answers; the jury did not see this drop if its own stream is quiet.",
         detector="prediction_powered_sr", page="clinicians would rate the answers lower than the task's null"),
    # the served-model identity stream (medmon.monitor.detection.served): a detected difference is a model change
    Kind("served_identity", "canary", "served_identity", R.model_change, C.model_change, OPE, TECH,
         "the identity canaries' answers (their log-probabilities, or their sampled strings) no longer match "
         "their go-live sample: other weights answer under the same model name",
         "Ask the provider what changed; the re-evaluation shows whether the scores held.",
         detector="identity_mmd", page="other weights answer under the same model name"),
    # a clinician-scale stream held back by ratings past their due date (medmon.monitor.alerting.clinician_scale)
    Kind("clinician_scale_waiting", "monitor", "clinician_scale_waiting", R.clinician_scale_waiting, C.availability,
         OPE, CLIN, "the clinician-scale stream waits for {n} ratings past their due date (it stops at the first "
         "answer still to be rated)", "Have the named reviewers rate their overdue answers; until then the clinician "
         "scale is not watched.", detector="", family=OPS),
)}
# fmt: on


def stream_kind(metric: str, direction: str = "", detector: str = "") -> Kind:
    """The kind of stream a metric label (and direction, detector) belongs to; an unknown one is an error.

    Examples
    --------
    >>> stream_kind("score[sex=F]").rule.value
    'subgroup_drop'
    >>> stream_kind("traffic_calls", "rise").rule.value
    'traffic_surge'
    >>> stream_kind("score", detector="paired_sr").name
    'paired_score'
    """
    base, sub = metric.split("[", 1)[0], "[" in metric
    found = [
        k
        for k in KINDS.values()
        if k.detector
        and k.metric == base
        and k.sub == sub
        and (not direction or not k.direction or k.direction == direction)
    ]
    if not found:
        raise KeyError(
            f"stream metric {metric!r} ({direction or 'any direction'}) has no kind in the stream "
            "catalogue (medmon.alerts.catalogue.KINDS)"
        )
    return next((k for k in found if k.detector == detector), found[0])


def impact_of(rule: Rule) -> Impact:
    """A rule's impact; a name that is no rule raises ``ValueError``.

    >>> impact_of("cost_rise").value
    'operational'
    """
    return next(k.impact for k in KINDS.values() if k.rule is Rule(rule))


def cause_of(labels: Mapping[str, str]) -> Cause:
    """The cause an alert's labels point at: its ``cause`` label, else by rule (and metric), else by metric.

    Labels no kind knows (alerts stored by a rule since retired) count as accuracy, as they always did.

    Examples
    --------
    >>> cause_of({"rule": "subgroup_drop", "metric": "score[sex=F]"}).value
    'accuracy'
    >>> cause_of({"rule": "subgroup_gap", "metric": "gap[sex=F]"}).value
    'subgroup_gap'
    >>> cause_of({"rule": "drift_change", "metric": "output_length"}).value
    'output'
    """
    if labels.get("cause") in Cause._value2member_map_:
        return Cause(labels["cause"])
    known = KINDS.values()
    kinds = [k for k in known if k.rule.value == labels.get("rule")] or [k for k in known if k.detector]
    if len({k.cause for k in kinds}) == 1:
        return kinds[0].cause
    base = labels.get("metric", "").split("[", 1)[0]
    return next((k.cause for k in kinds if k.metric == base), Cause.accuracy)
