"""Read functions for the dashboard and reports: every aggregate is computed by the database.

Pages call these with a ``Session`` and get plain dataclasses back; no page writes SQL and no
function loads rows only to aggregate them in Python. One module per page family:
``overview``, ``task``, ``costs``, ``jury``, ``alerts`` and ``records`` (baselines, model
changes, audit log).
"""

from monitor.read.alerts import DeadLetter, alert_events, alerts_list, dead_letter_list, past_alerts
from monitor.read.costs import CostDay, CostTask, cost_by_day, cost_by_task
from monitor.read.jury import (
    AgreementDay,
    JudgeDay,
    UnparsedVerdict,
    agreement_series,
    judge_cost_by_day,
    judge_cost_by_task,
    judge_series,
    unparsed_verdicts,
    verdict_count,
    verdicts_for,
)
from monitor.read.overview import BaselineBand, TaskRow, baseline_band, recent_estimate, task_overview
from monitor.read.records import (
    AuditEntry,
    ModelChange,
    Reevaluation,
    audit_available,
    audit_log,
    baselines_by_taxonomy,
    model_changes,
)
from monitor.read.task import (
    AnswerRow,
    RunPoint,
    Slice,
    SliceGap,
    Verdict,
    detector_states,
    findings,
    recent_answers,
    run_series,
    score_history,
    slice_gaps,
    subgroup_slices,
)

__all__ = [
    "AgreementDay",
    "AnswerRow",
    "AuditEntry",
    "BaselineBand",
    "CostDay",
    "CostTask",
    "DeadLetter",
    "JudgeDay",
    "ModelChange",
    "Reevaluation",
    "RunPoint",
    "Slice",
    "SliceGap",
    "TaskRow",
    "UnparsedVerdict",
    "Verdict",
    "agreement_series",
    "alert_events",
    "alerts_list",
    "audit_available",
    "audit_log",
    "baseline_band",
    "baselines_by_taxonomy",
    "cost_by_day",
    "cost_by_task",
    "dead_letter_list",
    "detector_states",
    "findings",
    "judge_cost_by_day",
    "judge_cost_by_task",
    "judge_series",
    "model_changes",
    "past_alerts",
    "recent_answers",
    "recent_estimate",
    "run_series",
    "score_history",
    "slice_gaps",
    "subgroup_slices",
    "task_overview",
    "unparsed_verdicts",
    "verdict_count",
    "verdicts_for",
]
