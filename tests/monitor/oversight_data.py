"""Answers as the pipeline and the jury store them, for the human-oversight tests: a run, its
results with subgroup tags, a call and a verdict per judge and criterion."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlmodel import Session

from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult, ProbeRun, RunStatus

JUDGES = ("judge-a", "judge-b", "judge-c")
CRITERIA = ("accuracy", "completeness", "clarity")
REVIEWER_A = "dr.ana@hospital.example"
REVIEWER_B = "dr.ben@hospital.example"

OVERSIGHT = {
    "reviewers": [
        {"name": "Dr. Ana", "email": REVIEWER_A, "tasks": ["knowledge-qa"]},
        {"name": "Dr. Ben", "email": REVIEWER_B, "tasks": ["knowledge-qa"]},
    ],
    "review": {"rate": 0.5, "weekly_quota": 12, "double_rate": 0.5},
    "agreement": {"min_items": 10, "min_icc": 0.3, "max_judge_bias": 1.0},
}


def truth_of(i: int) -> int:
    """The quality a clinician sees in answer ``i`` (1-5)."""
    return 1 + (i * 7) % 5


def store_answers(
    session: Session,
    task_id: str,
    n: int,
    at: datetime,
    judge_score: Callable[[int, str, str], int] | None = None,
    seed: int = 1,
) -> list[int]:
    """``n`` answers of ``task_id`` at ``at`` judged by three judges; returns their ids.

    ``judge_score(i, judge, criterion)`` gives each judge's score; by default the judges track
    the answer's true quality within a point.
    """
    rng = random.Random(seed)
    run = ProbeRun(task_id=task_id, status=RunStatus.complete, started_at=at, finished_at=at, n_canaries=n)
    session.add(run)
    session.flush()
    ids = []
    for i in range(n):
        scores = {
            (j, c): (
                judge_score(i, j, c) if judge_score else max(1, min(5, truth_of(i) + rng.choice((-1, 0, 0, 0, 1))))
            )
            for j in JUDGES
            for c in CRITERIA
        }
        means = [sum(scores[(j, c)] for c in CRITERIA) / len(CRITERIA) for j in JUDGES]
        mean = sum(means) / len(means)
        pairs = [(a, b) for k, a in enumerate(means) for b in means[k + 1 :]]
        result = ProbeResult(
            run_id=run.id,
            task_id=task_id,
            canary_id=f"c{i:03d}",
            scorer="jury",
            answer=f"**Answer {i}.** Start with the first-line option and check renal function.",
            score=(mean - 1) / 4,
            jury_mean=mean,
            jury_judges=3,
            jury_agreement=1 - sum(abs(a - b) for a, b in pairs) / len(pairs) / 4,
            requested_model="medmon-simulator/clinical-v1",
            served_model="medmon-simulator/clinical-v1",
            system_fingerprint="fp_sim_0001",
            tags={"age_band": ("18-64", "65+")[i % 2], "sex": ("F", "M")[(i // 2) % 2]},
            created_at=at + timedelta(seconds=i),
        )
        session.add(result)
        session.flush()
        assert result.id is not None
        ids.append(result.id)
        for judge in JUDGES:
            call = JudgeCall(
                result_id=result.id,
                task_id=task_id,
                judge=judge,
                model=f"sim/{judge}",
                parse_status=ParseStatus.ok,
                created_at=at,
            )
            session.add(call)
            session.flush()
            for criterion in CRITERIA:
                session.add(
                    JuryVerdict(
                        result_id=result.id,
                        call_id=call.id,
                        task_id=task_id,
                        judge=judge,
                        criterion=criterion,
                        score=scores[(judge, criterion)],
                        parse_status=ParseStatus.ok,
                        created_at=at,
                    )
                )
    session.flush()
    return ids
