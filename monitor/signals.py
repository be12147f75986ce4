"""Turn stream decisions and model changes into alert signals, labelled for their owners."""

from __future__ import annotations

from alerts import Severity, Signal, severity_for
from monitor.context import TaskContext
from monitor.detection import StreamUpdate
from monitor.models import StreamStatus
from monitor.plan import Plan

_WHAT = {
    "score": "score dropped below its baseline",
    "error_rate": "model calls are failing",
    "cost": "cost per call exceeds its budget",
    "latency": "latency exceeds its objective",
}


def _common(plan: Plan, ctx: TaskContext, metric: str, rule: str) -> dict[str, object]:
    task = ctx.task
    owner = task.owner or plan.owners.clinical
    return {
        "labels": {"deployment": plan.deployment.name, "task": task.id, "metric": metric, "rule": rule,
                   "benchmark": task.benchmark, "category": ctx.taxonomy.category},
        "owner": f"{owner.name} <{owner.email}>",
        "category": ctx.taxonomy.category,
        "dashboard_url": f"{plan.alerts.dashboard_url}/task?task={task.id}",
    }


def stream_signal(plan: Plan, ctx: TaskContext, update: StreamUpdate) -> Signal | None:
    """A firing signal on an alarm, a clearing one on recovery, nothing otherwise."""
    spec = update.spec
    rule = f"drift_{spec.direction}"
    severity = severity_for(plan.use_case.risk_tier.value, ctx.task.severity)
    if spec.metric in ("error_rate", "latency", "cost") and severity == Severity.critical:
        severity = Severity.warning  # operational streams page at most as warnings
    common = _common(plan, ctx, spec.metric, rule)
    if update.finding is not None:
        f = update.finding
        summary = (f"{ctx.task.id}: {_WHAT[spec.metric]} (estimate {f.estimate:.3f}, 95% CI "
                   f"{f.ci_low:.3f}-{f.ci_high:.3f}, null {f.null_mean:.3f}, n={f.n})")
        evidence = {"statistic": f.statistic, "threshold": f.threshold, "estimate": f.estimate,
                    "ci_low": f.ci_low, "ci_high": f.ci_high, "n": f.n, "null_mean": f.null_mean,
                    "baseline": spec.baseline_mean, "severity_score": f.severity}
        return Signal(firing=True, severity=severity, summary=summary, evidence=evidence, **common)  # type: ignore[arg-type]
    if update.status == StreamStatus.recovered and update.previous == StreamStatus.degraded:
        return Signal(firing=False, severity=severity, summary=f"{ctx.task.id}: {spec.metric} recovered",
                      **common)  # type: ignore[arg-type]
    return None


def model_change_signal(plan: Plan, ctx: TaskContext, old: tuple[str, str | None], new: tuple[str, str | None]) -> Signal:
    common = _common(plan, ctx, "served_model", "model_change")
    summary = (f"{ctx.task.id}: served model changed from {old[0]} ({old[1] or 'no fingerprint'}) "
               f"to {new[0]} ({new[1] or 'no fingerprint'})")
    return Signal(firing=True, severity=Severity.warning, summary=summary,
                  evidence={"previous_model": old[0], "previous_fingerprint": old[1],
                            "served_model": new[0], "system_fingerprint": new[1]}, **common)  # type: ignore[arg-type]
