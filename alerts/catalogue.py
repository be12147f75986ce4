"""The stream catalogue: every kind of stream and rule, declared once, as data.

A kind says what a stream (or a rule without a stream) measures and what follows from an alarm:
its metric label, detector, alert rule, incident cause, impact (how loudly it pages), owner, the
plain-language words of its alarm and what the committee is told to do. The monitor's stream
layouts, the signal glue, incident grouping, the dashboard's sentences and the docs table all
read it here; a stream whose kind is not in it fails where it is declared.

A kind's ``metric`` is the base of the alert label: ``sub`` kinds carry a subscript (``score[sex=F]``,
``judge_failures[gpt]``) that its wording reads as ``{sub}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from medmon.alerts.causes import Cause


class Rule(str, Enum):
    """Every alert rule: the label that, with the deployment, task and metric, identifies an alert."""

    drift_drop = "drift_drop"
    subgroup_drop = "subgroup_drop"
    subgroup_gap = "subgroup_gap"
    category_drop = "category_drop"
    refusals_rising = "refusals_rising"
    format_drift = "format_drift"
    output_length_shift = "output_length_shift"
    cost_over_budget = "cost_over_budget"
    latency_over_objective = "latency_over_objective"
    cost_rise = "cost_rise"
    latency_rise = "latency_rise"
    probes_failing = "probes_failing"
    jury_disagreement = "jury_disagreement"
    judge_failing = "judge_failing"
    judge_drift = "judge_drift"
    reevaluation_degraded = "reevaluation_degraded"
    go_live_conformance = "go_live_conformance"
    drift_change = "drift_change"
    traffic_cost_rise = "traffic_cost_rise"
    traffic_latency_rise = "traffic_latency_rise"
    traffic_length_rise = "traffic_length_rise"
    traffic_errors = "traffic_errors"
    traffic_truncation = "traffic_truncation"
    traffic_refusals = "traffic_refusals"
    traffic_judged_drop = "traffic_judged_drop"
    traffic_jury_disagreement = "traffic_jury_disagreement"
    traffic_collapse = "traffic_collapse"
    traffic_surge = "traffic_surge"
    below_minimum = "below_minimum"
    model_change = "model_change"
    stale = "stale"
    heartbeat = "heartbeat"
    jury_not_validated = "jury_not_validated"
    judge_bias = "judge_bias"
    safety_clock = "safety_clock"
    safety_deadline_passed = "safety_deadline_passed"
    corrective_action_overdue = "corrective_action_overdue"


class Impact(str, Enum):
    """What an alert puts at risk, which sets how loudly it pages."""

    quality = "quality"  # the clinical use case itself: severity follows its risk tier
    operational = "operational"  # failures, cost, latency, freshness: at most a warning
    info = "info"  # worth knowing, never worth a page


Q, O, I = Impact.quality, Impact.operational, Impact.info
C = Cause


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
    what: str  # an alarm's words; ``{sub}`` and other fields are filled where the stream is declared
    todo: str  # what the committee is told to do
    detector: str = ""
    direction: str = ""  # "" for any; set where one metric has a kind per direction
    sub: bool = False
    family: str = "quality"  # the false-alarm budget it spends: quality | operational | info (none)
    page: str = ""  # the dashboard's sentence for a degraded stream of this kind

    @property
    def label(self) -> str:
        """The metric label as written in docs: ``score[...]`` for a subscripted kind."""
        return f"{self.metric}[...]" if self.sub else self.metric

    def words(self, **fields: object) -> str:
        """The alarm's words with its fields filled in (a field not given reads "…").

        >>> KINDS["subgroup_score"].words(sub="sex=F")
        'score dropped below its reference for the sex=F subgroup (paired)'
        >>> KINDS["latency_typical"].words()
        'calls grew slower than every go-live call of the same canary (by at least … s)'
        """
        return self.what.format_map(_Fields(fields))


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> object:
        return _Blank()


class _Blank:
    def __format__(self, spec: str) -> str:
        return "…"


_CHECK_MODEL = "Check the served model and read recent answers on the Task page; record the decision."
_CHECK_VENDOR = "Ask the technical owner to check the endpoint, the vendor's status and the plan's budget."
KINDS: dict[str, Kind] = {k.name: k for k in (
    # --- canary streams (medmon.monitor.detection.drift.layout, .streams)
    Kind("score", "canary", "score", Rule.drift_drop, C.accuracy, Q, "clinical", "score dropped below its baseline",
         _CHECK_MODEL, "mixture_sr"),
    Kind("golive_score", "canary", "score", Rule.drift_drop, C.accuracy, Q, "clinical",
         "score fell below the go-live reference", _CHECK_MODEL, "mixture_sr"),
    Kind("paired_score", "canary", "score", Rule.drift_drop, C.accuracy, Q, "clinical",
         "score dropped below each canary's own reference outcome (paired)", _CHECK_MODEL, "paired_sr"),
    Kind("subgroup_score", "canary", "score", Rule.subgroup_drop, C.accuracy, Q, "clinical",
         "score dropped below its reference for the {sub} subgroup (paired)", _CHECK_MODEL, "paired_sr", sub=True),
    Kind("subgroup_gap", "canary", "gap", Rule.subgroup_gap, C.subgroup_gap, Q, "clinical",
         "the {sub} subgroup fell further behind the rest than at baseline",
         "Decide with the clinical owner whether the use case stays safe for that subgroup.", "subgroup_gap_sr",
         sub=True),
    Kind("pooled_score", "canary", "pooled_score", Rule.category_drop, C.accuracy, Q, "clinical",
         "scores across the {category} category fell below their baselines (pooled over {members} tasks)",
         "Look for a change shared by the category's tasks (model, prompt, settings).", "pooled_sr"),
    Kind("format", "canary", "format", Rule.format_drift, C.output, Q, "clinical",
         "the model changed how it answers: more answers the scorer cannot read (format drift, not a wrong answer)",
         "Check that the scorer and the application still read the answers.", "mixture_sr",
         page="more answers can no longer be read by the scorer"),
    Kind("refusal", "canary", "refusal", Rule.refusals_rising, C.output, Q, "clinical",
         "the model refuses to answer more often", "Read the refused questions; ask the vendor about a new policy.",
         "mixture_sr", page="the model refuses to answer more often than at go-live"),
    Kind("verbosity", "canary", "verbosity", Rule.output_length_shift, C.output, O, "technical",
         "answers grew longer than every reference answer (output tokens vs the burn-in's per-canary range)",
         "Check that the application still shows whole answers; expect cost to follow.", "mixture_sr",
         page="answers grew longer than every reference answer more often than at go-live"),
    Kind("truncation", "canary", "truncation", Rule.output_length_shift, C.output, O, "technical",
         "answers grew shorter than every reference answer (output tokens vs the burn-in's per-canary range)",
         "Check the token limit and whether answers are cut off.", "mixture_sr",
         page="answers grew shorter than every reference answer more often than at go-live"),
    Kind("cost", "canary", "cost", Rule.cost_over_budget, C.cost, O, "technical", "cost per call exceeds its budget",
         _CHECK_VENDOR, "mixture_sr", family="operational"),
    Kind("latency", "canary", "latency", Rule.latency_over_objective, C.latency, O, "technical",
         "latency exceeds its objective", _CHECK_VENDOR, "mixture_sr", family="operational"),
    Kind("cost_typical", "canary", "cost_typical", Rule.cost_rise, C.cost, O, "technical",
         "typical cost per call rose above the go-live reference (log cost per canary)", _CHECK_VENDOR, "mixture_sr",
         family="operational"),
    Kind("latency_typical", "canary", "latency_typical", Rule.latency_rise, C.latency, O, "technical",
         "calls grew slower than every go-live call of the same canary (by at least {min_rise_s:g} s)", _CHECK_VENDOR,
         "mixture_sr", family="operational"),
    Kind("error_rate", "canary", "error_rate", Rule.probes_failing, C.availability, O, "technical",
         "model calls are failing", "Check the endpoint, its API key and the service's logs.", "mixture_sr",
         family="operational", page="more model calls fail than at go-live"),
    Kind("jury_agreement", "canary", "jury_agreement", Rule.jury_disagreement, C.jury, Q, "clinical",
         "the judges agree less than the plan's minimum", "Review a sample of judged answers by hand.", "mixture_sr",
         page="the judges agree less than the plan's minimum"),
    Kind("judge_failures", "canary", "judge_failures", Rule.judge_failing, C.jury, O, "technical",
         "judge {sub} fails to give a usable verdict (call failed or output unreadable) more often",
         "Check that judge's endpoint; the other judges go on scoring.", "mixture_sr", sub=True, family="operational"),
    Kind("reevaluation", "canary", "reevaluation", Rule.reevaluation_degraded, C.accuracy, Q, "clinical",
         "re-evaluation: degraded vs baseline", "Revert the change or have the committee accept the lower score.",
         "oneshot_paired", family="info"),
    Kind("conformance", "canary", "conformance", Rule.go_live_conformance, C.accuracy, Q, "clinical",
         "at go-live, production scored below the HELM evidence on the same canaries",
         "Decide whether the approval evidence still holds for the model as deployed.", "conformance", family="info"),
    Kind("output_length", "canary", "output_length", Rule.drift_change, C.output, I, "technical",
         "the distribution of output length changed", "Nothing to decide: information for the next review.", "river",
         family="info", page="the length of answers changed"),
    Kind("latency_distribution", "canary", "latency_distribution", Rule.drift_change, C.latency, I, "technical",
         "the latency distribution changed", "Nothing to decide: information for the next review.", "river",
         family="info", page="the latency of calls changed"),
    # --- judge canaries (medmon.monitor.runs.judging): about the judges, for the technical owner
    Kind("judge_canaries", "judge", "judge_canaries", Rule.judge_drift, C.jury, Q, "technical",
         "judge {judge} agrees less with the judge canaries' gold scores (judge drift)",
         "Stop trusting that judge's scores until its endpoint and prompt are checked.", "judge_agreement_sr"),
    Kind("judge_canary_bias", "judge", "judge_bias", Rule.judge_drift, C.jury, Q, "technical",
         "judge {judge} scores the judge canaries more leniently or more severely than at go-live (judge drift)",
         "Stop trusting that judge's scores until its endpoint and prompt are checked.", "judge_bias_sr"),
    # --- real traffic (medmon.monitor.traffic)
    Kind("traffic_cost", "traffic", "traffic_cost", Rule.traffic_cost_rise, C.cost, O, "technical",
         "real calls cost more than the reference's median call more often (cost per call rose)", _CHECK_VENDOR,
         "mixture_sr", family="operational"),
    Kind("traffic_latency", "traffic", "traffic_latency", Rule.traffic_latency_rise, C.latency, O, "technical",
         "real calls take longer than the reference's median call more often (latency rose)", _CHECK_VENDOR,
         "mixture_sr", family="operational"),
    Kind("traffic_output_tokens", "traffic", "traffic_output_tokens", Rule.traffic_length_rise, C.output, O,
         "technical", "real answers are longer than the reference's median answer more often",
         "Check that the application still shows whole answers; expect cost to follow.", "mixture_sr",
         family="operational"),
    Kind("traffic_error_rate", "traffic", "traffic_error_rate", Rule.traffic_errors, C.availability, O, "technical",
         "more real calls fail than in the reference", "Check the endpoint, its API key and rate limits.",
         "mixture_sr", family="operational"),
    Kind("traffic_truncation", "traffic", "traffic_truncation", Rule.traffic_truncation, C.output, Q, "clinical",
         "more real answers are cut off at the token limit (finish reason 'length')",
         "Check the application's token limit: clinicians may be reading half answers.", "mixture_sr",
         family="operational"),
    Kind("traffic_refusal", "traffic", "traffic_refusal", Rule.traffic_refusals, C.output, Q, "clinical",
         "the model refuses real requests more often than in the reference",
         "Read a sample of refused requests; ask the vendor about a new policy.", "mixture_sr", family="operational"),
    Kind("traffic_judged_score", "traffic", "traffic_judged_score", Rule.traffic_judged_drop, C.accuracy, Q,
         "clinical", "the jury scores real answers lower than it did at first", _CHECK_MODEL, "mixture_sr"),
    Kind("traffic_jury_agreement", "traffic", "traffic_jury_agreement", Rule.traffic_jury_disagreement, C.jury, Q,
         "clinical", "the judges agree less than the plan's minimum on real answers",
         "Review a sample of judged real answers by hand.", "mixture_sr"),
    Kind("traffic_collapse", "traffic", "traffic_calls", Rule.traffic_collapse, C.availability, O, "technical",
         "far fewer real calls arrive than in the same hours of the reference (traffic collapse: "
         "an outage or a broken integration?)", "Check the application and its integration before the model.",
         "count_sr", "drop", family="operational"),
    Kind("traffic_surge", "traffic", "traffic_calls", Rule.traffic_surge, C.availability, O, "technical",
         "far more real calls arrive than in the same hours of the reference (traffic surge: "
         "a retry loop, a new use or misrouted traffic?)", "Look for a retry loop or traffic routed to this task.",
         "count_sr", "rise", family="operational"),
    # --- rules without a stream (medmon.alerts.rules, medmon.monitor.alerting)
    Kind("below_minimum", "monitor", "score", Rule.below_minimum, C.accuracy, Q, "clinical",
         "the recent score's whole 95% interval is under the approved minimum",
         "Decide whether to suspend the use case or add a human check, and record it."),
    Kind("model_change", "monitor", "served_model", Rule.model_change, C.model_change, O, "technical",
         "the served model or its system fingerprint changed",
         "Find out what changed; adopt the re-evaluation or revert the change."),
    Kind("stale", "monitor", "freshness", Rule.stale, C.availability, O, "technical",
         "no usable probe data for longer than the schedule allows",
         "Check the endpoint and the service's logs: the figures are not current."),
    Kind("heartbeat", "monitor", "heartbeat", Rule.heartbeat, C.availability, O, "technical",
         "the monitor itself stopped beating", "Check that `medmon serve` runs; probes in the gap did not run."),
    Kind("jury_not_validated", "monitor", "jury_icc", Rule.jury_not_validated, C.accuracy, Q, "clinical",
         "the jury no longer stands in for clinicians (ICC or alpha under its floor)",
         "Have clinicians review more answers before trusting the jury's scores."),
    Kind("judge_bias", "monitor", "bias", Rule.judge_bias, C.accuracy, Q, "clinical",
         "a judge's bias against clinicians lies wholly beyond the tolerance",
         "Recalibrate or replace that judge.", sub=True),
    Kind("safety_clock", "monitor", "safety_event", Rule.safety_clock, C.accuracy, Q, "clinical",
         "a safety event's reporting deadline is near", "Report the safety event before its deadline."),
    Kind("safety_deadline_passed", "monitor", "safety_event", Rule.safety_deadline_passed, C.accuracy, Q, "clinical",
         "a safety event's reporting deadline has passed", "Report the safety event now and record why it was late."),
    Kind("corrective_action_overdue", "monitor", "corrective_action", Rule.corrective_action_overdue, C.accuracy, Q,
         "clinical", "a corrective action is open past its due date", "Close the action or record a new due date."),
)}
RULE_IMPACT: Mapping[Rule, Impact] = {k.rule: k.impact for k in KINDS.values()}


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
    found = [k for k in KINDS.values() if k.detector and k.metric == base and k.sub == sub
             and (not direction or not k.direction or k.direction == direction)]
    if not found:
        raise KeyError(f"stream metric {metric!r} ({direction or 'any direction'}) has no kind in the stream "
                       "catalogue (medmon.alerts.catalogue.KINDS)")
    return next((k for k in found if k.detector == detector), found[0])


def impact_of(rule: Rule | str) -> Impact:
    """A rule's impact; a name that is no rule raises ``ValueError``.

    >>> impact_of("cost_rise").value
    'operational'
    """
    return RULE_IMPACT[Rule(rule)]


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
    rule, metric = labels.get("rule", ""), labels.get("metric", "")
    kinds = [k for k in KINDS.values() if k.rule.value == rule]
    if len({k.cause for k in kinds}) == 1:
        return kinds[0].cause
    base = metric.split("[", 1)[0]
    for k in kinds or [k for k in KINDS.values() if k.detector]:
        if k.metric == base:
            return k.cause
    return Cause.accuracy


def docs_table() -> str:
    """The catalogue as the Markdown table of ``docs/alerts.md`` (checked by ``tests/alerts/test_catalogue.py``)."""
    rows = ["| kind | source | metric | rule | cause | impact | owner | an alarm means | the committee |",
            "|---|---|---|---|---|---|---|---|---|"]
    for k in KINDS.values():
        rows.append(f"| {k.name} | {k.source} | `{k.label}` | `{k.rule.value}` | {k.cause.value} | {k.impact.value} | "
                    f"{k.owner} | {k.words()} | {k.todo} |")
    return "\n".join(rows)
