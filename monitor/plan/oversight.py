"""The plan's ``oversight`` section: clinician review, the jury's validation, safety events, suspension.

Human oversight (EU AI Act Art. 14) needs a place where people look at what the model wrote,
a measure of whether the LLM jury still stands in for them, a clock for serious incidents
(Art. 73) and a way to stop the system:

- ``reviewers``: named clinicians and the tasks each may review (they see only those);
- ``review``: how many stored answers are sampled for review (a rate and a weekly quota per
  task; strata by subgroup, jury score and judge disagreement) and how many get a second
  reviewer, so reviewer-reviewer agreement can be measured;
- ``agreement``: the floors under which the jury no longer stands in for clinicians (ICC, the
  statistic MedHELM reports, Krippendorff's alpha, reviewer-reviewer ICC, a judge's bias);
- ``safety``: jurisdiction, device status and the reporting clock per severity (Art. 73
  defaults: 15 days for a serious incident, 10 after a death, 2 for a widespread infringement
  or critical infrastructure);
- ``suspend``: the route that switches the deployment off and on again (a signed webhook to the
  hospital's gateway or feature-flag service, or a command).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from medmon.monitor.plan.people import Person
from medmon.monitor.plan.section import HttpUrl, Interval, Section

# EU AI Act Art. 73(2)-(4): report a serious incident within 15 days of awareness, 10 days after
# a death, 2 days for a widespread infringement or a serious disruption of critical infrastructure.
ART73_CLOCKS = {"death": "10d", "widespread": "2d", "serious": "15d"}
SEVERITIES = ("death", "widespread", "serious", "non_serious")
MEDHELM_JURY_ICC = 0.47  # MedHELM: LLM jury vs clinicians
MEDHELM_CLINICIAN_ICC = 0.43  # MedHELM: clinicians with each other


class Reviewer(Person):
    """A clinician who rates sampled answers; ``tasks`` are the only ones shown to them."""

    tasks: list[str] = Field(min_length=1)


class TaskReview(Section):
    """One task's sampling, overriding ``review``'s defaults."""

    rate: float | None = Field(None, gt=0, le=1)
    weekly_quota: int | None = Field(None, ge=0)


class Review(Section):
    """Which stored answers go to reviewers.

    Every new answer of a task under review is a candidate; at most ``rate`` of them and at most
    ``weekly_quota`` a week (per task, ISO weeks) are queued, spread evenly over the strata
    (subgroup x jury-score band x judges agreeing or not) so rare strata are not drowned out.
    ``double_rate`` of the queued answers go to two reviewers. Tasks under review: those with
    ``human_review_required`` plus those named in ``tasks``.
    """

    rate: float = Field(0.1, gt=0, le=1)
    weekly_quota: int = Field(20, ge=0)
    double_rate: float = Field(0.2, ge=0, le=1)
    disagreement_below: float = Field(0.75, ge=0, le=1)  # per-answer jury agreement counted as disagreement
    tasks: dict[str, TaskReview] = Field(default_factory=dict)
    # "strata": the quota spread evenly over strata; "active": each answer drawn with a known probability,
    # larger where the judges disagree or the jury is near the task's null (medmon.monitor.governance.selection)
    selection: Literal["strata", "active"] = "strata"
    min_probability: float = Field(0.05, gt=0, le=1)  # active selection's floor: every answer may be drawn
    target_half_width: float = Field(0.05, gt=0, le=1)  # clinician-scale interval the queue aims for (0-1 scale)
    rating_due: Interval = "7d"  # a queued answer's rating is due this long after it was queued

    def quota(self, task_id: str) -> int:
        """The answers a week to queue for ``task_id``: its own ``weekly_quota``, else the default."""
        override = self.tasks.get(task_id)
        return override.weekly_quota if override and override.weekly_quota is not None else self.weekly_quota


class AgreementFloors(Section):
    """Floors for the jury's validation streams; None turns that alert off.

    An ICC alert fires when the whole 95% interval is below the floor (evidence, not one
    unlucky week) and clears once the estimate is back at it; alpha, which has no interval
    here, fires on its estimate. A judge's bias (mean of judge minus clinician, scale points)
    alerts when its interval lies wholly beyond ``max_judge_bias``.
    """

    min_items: int = Field(20, ge=3)
    window: int = Field(200, ge=3)  # the latest reviewed answers per task the statistics use
    min_icc: float | None = Field(0.3, ge=-1, le=1)
    min_alpha: float | None = Field(None, ge=-1, le=1)
    min_reviewer_icc: float | None = Field(None, ge=-1, le=1)
    max_judge_bias: float | None = Field(1.0, gt=0)


class Safety(Section):
    """The regulatory clock a safety event runs on; ``clocks`` maps severity to a deadline."""

    jurisdiction: str = "EU"
    device_status: Literal["medical_device", "high_risk_ai", "not_regulated"] = "high_risk_ai"
    clocks: dict[str, Interval] = Field(default_factory=lambda: dict(ART73_CLOCKS))
    warn_before: Interval = "2d"  # alert this long before a deadline (critical once it has passed)

    @model_validator(mode="after")
    def _severities(self) -> Safety:
        unknown = sorted(set(self.clocks) - set(SEVERITIES))
        if unknown:
            raise ValueError(f"unknown severity in clocks: {', '.join(unknown)}; expected {', '.join(SEVERITIES)}")
        return self


class SuspendRoute(Section):
    """Where suspend and resume are sent: a signed webhook (``url`` or ``url_env``, ``secret_env``)
    or a ``command`` (argv list; the JSON body on stdin)."""

    type: Literal["webhook", "command"] = "webhook"
    url: HttpUrl | None = None
    url_env: str | None = None
    secret_env: str | None = None
    command: list[str] = Field(default_factory=list)
    timeout_s: float = Field(10.0, gt=0)
    confirm_high_risk: bool = True  # a high-risk task's suspension needs a second owner's confirmation

    @model_validator(mode="after")
    def _target(self) -> SuspendRoute:
        if self.type == "command":
            if not self.command:
                raise ValueError("a command suspend route needs 'command' (a list: program and arguments)")
            return self
        if (self.url is None) == (self.url_env is None):
            raise ValueError("expected exactly one of 'url' or 'url_env'")
        return self


class Oversight(Section):
    reviewers: list[Reviewer] = Field(default_factory=list)
    review: Review = Review()
    agreement: AgreementFloors = AgreementFloors()
    safety: Safety = Safety()
    suspend: SuspendRoute | None = None
    pass_every: Interval = "1m"  # how often `medmon serve` queues reviews, recomputes agreement, checks clocks

    @model_validator(mode="after")
    def _distinct(self) -> Oversight:
        emails = [r.email.lower() for r in self.reviewers]
        dupes = sorted({e for e in emails if emails.count(e) > 1})
        if dupes:
            raise ValueError(f"reviewer e-mails must be unique; repeated: {', '.join(dupes)}")
        return self
