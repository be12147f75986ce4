"""What problem an alert points at: the cause that groups alerts into one incident, and what to do.

Several rules can see one problem: when a model gets worse at its job, the paired and unpaired
drift detectors, the approval-minimum rule and every subgroup's detector all fire. They are the
evidence of one *accuracy* incident of the task, not separate problems. A subgroup is a problem
of its own only when it falls further behind the rest than at baseline (the gap detector):
that is the ``subgroup_gap`` cause.

Which rules and streams point at each cause is declared in the stream catalogue
(``medmon.alerts.catalogue``), whose ``cause_of`` reads it from an alert's labels.
"""

from __future__ import annotations

from enum import StrEnum

# One kind of problem; each task has at most one open incident per cause. ``output``: answer length, format
# or refusals (how the model writes, not whether it is right); ``availability``: failing calls, no usable
# data, the monitor itself stopped.
Cause = StrEnum("Cause", "accuracy subgroup_gap cost latency output availability jury model_change")

# An incident's title, where it is not the cause's own name.
TITLES: dict[str, str] = {
    Cause.subgroup_gap: "a subgroup fell behind",
    Cause.output: "answer length or format",
    Cause.model_change: "model change",
}


def cause_title(cause: str) -> str:
    """A kind of problem as people name it.

    >>> cause_title("subgroup_gap"), cause_title("cost")
    ('a subgroup fell behind', 'cost')
    """
    return TITLES.get(cause, cause.replace("_", " "))


# What the owner of an incident does first, per kind; the plan's ``runbook_url`` of a task adds local detail.
RUNBOOKS: dict[str, str] = {
    Cause.accuracy: (
        "Check whether the served model, its prompt or its settings changed (Model changes page); read a few wrong "
        "answers next to their questions and references (Task page). If the drop is real and the score is under "
        "the minimum in force, the clinical owner decides whether to suspend the use case or to add a human check, "
        "and records the decision."
    ),
    Cause.subgroup_gap: (
        "One subgroup now does worse than the rest by more than at approval: read its recent answers, ask the "
        "clinical owner whether the use case stays safe for that group, and record the decision."
    ),
    Cause.cost: (
        "Answers cost more per call than the budget: check output length and the price in the plan; ask the vendor "
        "whether the model or its pricing changed."
    ),
    Cause.latency: (
        "Calls are slower than the objective: check the vendor's status page and the error rate; clinicians may "
        "be waiting on answers."
    ),
    Cause.output: (
        "The model writes differently (longer, shorter, another format, or refusing): check whether the scorer "
        "still reads its answers and whether the application shows them correctly; a new model version is the "
        "usual cause."
    ),
    Cause.availability: (
        "Probes fail or no usable data arrives: check the endpoint, its API key and the monitor service's logs "
        "(`medmon serve`). Until data flows again the dashboard's figures are not current. When real traffic "
        "collapsed or surged, check the application and its integration with the model (and its trace exporter) "
        "before the model."
    ),
    Cause.jury: (
        "The judges disagree or drifted: their scores are not reliable until checked; review a sample of answers "
        "by hand and check the judge endpoints."
    ),
    Cause.model_change: (
        "The endpoint now serves another model or version than the one approved: find out from the vendor what "
        "changed, and have the re-evaluation adopted or the change reverted before trusting the figures."
    ),
}
