"""What problem an alert points at: the cause that groups alerts into one incident, and what to do.

Several rules can see one problem: when a model gets worse at its job, the paired and unpaired
drift detectors, the approval-minimum rule and every subgroup's detector all fire. They are the
evidence of one *accuracy* incident of the task, not separate problems. A subgroup is a problem
of its own only when it falls further behind the rest than at baseline (the gap detector):
that is the ``subgroup_gap`` cause.

Pure functions of an alert's labels, so the grouping needs no database and no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum


class Cause(str, Enum):
    """One kind of problem; each task has at most one open incident per cause."""

    accuracy = "accuracy"
    subgroup_gap = "subgroup_gap"
    cost = "cost"
    latency = "latency"
    output = "output"  # answer length, format or refusals: how the model writes, not whether it is right
    availability = "availability"  # failing calls, no usable data, the monitor itself stopped
    jury = "jury"
    model_change = "model_change"

    @property
    def title(self) -> str:
        return TITLES[self]

    @property
    def runbook(self) -> str:
        return RUNBOOKS[self]


TITLES = {
    Cause.accuracy: "accuracy",
    Cause.subgroup_gap: "a subgroup fell behind",
    Cause.cost: "cost",
    Cause.latency: "latency",
    Cause.output: "answer length or format",
    Cause.availability: "availability",
    Cause.jury: "jury",
    Cause.model_change: "model change",
}

# What the owner of an incident does first, per kind; the plan's ``runbook_url`` of a task adds local detail.
RUNBOOKS = {
    Cause.accuracy: (
        "Check whether the served model, its prompt or its settings changed (Model changes page); read a few wrong "
        "answers next to their questions and references (Task page). If the drop is real and the score is under "
        "the approved minimum, the clinical owner decides whether to suspend the use case or to add a human check, "
        "and records the decision."),
    Cause.subgroup_gap: (
        "One subgroup now does worse than the rest by more than at approval: read its recent answers, ask the "
        "clinical owner whether the use case stays safe for that group, and record the decision."),
    Cause.cost: (
        "Answers cost more per call than the budget: check output length and the price in the plan; ask the vendor "
        "whether the model or its pricing changed."),
    Cause.latency: (
        "Calls are slower than the objective: check the vendor's status page and the error rate; clinicians may "
        "be waiting on answers."),
    Cause.output: (
        "The model writes differently (longer, shorter, another format, or refusing): check whether the scorer "
        "still reads its answers and whether the application shows them correctly; a new model version is the "
        "usual cause."),
    Cause.availability: (
        "Probes fail or no usable data arrives: check the endpoint, its API key and the monitor service's logs "
        "(`medmon serve`). Until data flows again the dashboard's figures are not current. When real traffic "
        "collapsed or surged, check the application and its integration with the model (and its trace exporter) "
        "before the model."),
    Cause.jury: (
        "The judges disagree or drifted: their scores are not reliable until checked; review a sample of answers "
        "by hand and check the judge endpoints."),
    Cause.model_change: (
        "The endpoint now serves another model or version than the one approved: find out from the vendor what "
        "changed, and have the re-evaluation adopted or the change reverted before trusting the figures."),
}

_RULES = {
    "drift_drop": Cause.accuracy, "below_minimum": Cause.accuracy, "subgroup_drop": Cause.accuracy,
    "category_drop": Cause.accuracy, "reevaluation_degraded": Cause.accuracy,
    "subgroup_gap": Cause.subgroup_gap,
    "cost_over_budget": Cause.cost, "cost_rise": Cause.cost,
    "latency_over_objective": Cause.latency, "latency_rise": Cause.latency,
    "output_length_shift": Cause.output, "refusals_rising": Cause.output, "format_drift": Cause.output,
    "probes_failing": Cause.availability, "stale": Cause.availability, "heartbeat": Cause.availability,
    "jury_disagreement": Cause.jury, "judge_drift": Cause.jury, "judge_failing": Cause.jury,
    "model_change": Cause.model_change,
    # the deployed application's own calls (OpenTelemetry traffic)
    "traffic_cost_rise": Cause.cost, "traffic_latency_rise": Cause.latency, "traffic_length_rise": Cause.output,
    "traffic_errors": Cause.availability, "traffic_truncation": Cause.output, "traffic_refusals": Cause.output,
    "traffic_judged_drop": Cause.accuracy, "traffic_jury_disagreement": Cause.jury,
    # calls per hour: a collapse is the application not reaching the model (an outage, a broken
    # integration or exporter); a surge is most often a retry loop or misrouted traffic, which fails
    # calls and meets rate limits: both are about whether the service is usable as deployed.
    "traffic_collapse": Cause.availability, "traffic_surge": Cause.availability,
}
_METRICS = {
    "score": Cause.accuracy, "pooled_score": Cause.accuracy, "reevaluation": Cause.accuracy,
    "gap": Cause.subgroup_gap, "cost": Cause.cost, "cost_typical": Cause.cost, "latency": Cause.latency,
    "latency_typical": Cause.latency, "conformance": Cause.accuracy,
    "latency_distribution": Cause.latency, "output_length": Cause.output, "verbosity": Cause.output,
    "truncation": Cause.output, "refusal": Cause.output, "unparsed": Cause.output, "format": Cause.output,
    "error_rate": Cause.availability, "freshness": Cause.availability, "heartbeat": Cause.availability,
    "jury_agreement": Cause.jury, "judge_canaries": Cause.jury, "judge_bias": Cause.jury, "judge_failures": Cause.jury,
    "served_model": Cause.model_change,
    "traffic_cost": Cause.cost, "traffic_latency": Cause.latency, "traffic_output_tokens": Cause.output,
    "traffic_error_rate": Cause.availability, "traffic_truncation": Cause.output, "traffic_refusal": Cause.output,
    "traffic_served_model": Cause.model_change, "traffic_judged_score": Cause.accuracy,
    "traffic_jury_agreement": Cause.jury, "traffic_calls": Cause.availability,
}


def cause_of(labels: Mapping[str, str]) -> Cause:
    """The cause an alert's labels point at: by rule, else by metric, else accuracy.

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
    by_rule = _RULES.get(labels.get("rule", ""))
    if by_rule is not None:
        return by_rule
    return _METRICS.get(labels.get("metric", "").split("[", 1)[0], Cause.accuracy)
