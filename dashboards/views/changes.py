"""Model changes: served-model and fingerprint history, declared changes, and the re-evaluations
each triggered, against the baseline and the approval threshold."""

from __future__ import annotations

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.data import refresh_every
from medmon.dashboards.layout import fmt, interval, page
from medmon.dashboards.tables import show_table
from medmon.monitor.read import change_history, reevaluations, served_model_history

plan, viewer, engine = page("Model changes")


# Short dates leave room for the verdict and the figures at 1,400 px.
_WHEN = st.column_config.DatetimeColumn(format="D MMM YYYY HH:mm")


def _verdict(passed: bool | None, conclusive: bool | None) -> str:
    if passed is None:
        return "pending"
    return ("passed" if passed else "FAILED") + ("" if conclusive in (True, None) else " (inconclusive)")


@st.fragment(run_every=refresh_every())
def changes() -> None:
    with Session(engine) as session:
        served = served_model_history(session)
        recorded = change_history(session)
        evals = reevaluations(session)
    if not served and not recorded:
        st.info("No served model recorded yet: the first probe records the model the deployment serves.")
        return
    swaps = [m for m in served if m.is_change]
    if swaps:
        st.warning(f"{len(swaps)} change(s) of served model or fingerprint since go-live.")
    else:
        st.success("The deployment has served the same model and fingerprint since go-live.")

    st.subheader("Served model and fingerprint")
    show_table(
        [
            {
                "first seen": m.first_seen,
                "task": m.task,
                "served model": m.served_model,
                "fingerprint": m.system_fingerprint or "",
                "before": f"{m.previous_model} ({m.previous_fingerprint or '-'})" if m.is_change else "go-live",
            }
            for m in served
        ],
        column_config={"first seen": _WHEN},
    )

    st.subheader(f"Changes and their re-evaluations ({len(recorded)})")
    if not recorded:
        st.write("No change recorded. Declare one with `medmon change record`; detected ones appear here too.")
    else:
        show_table(
            [
                {
                    "at": c.at,
                    "task": c.task,
                    "kind": c.kind,
                    "status": c.status,
                    "verdict": _verdict(c.reevaluation.passed, c.reevaluation.conclusive) if c.reevaluation else "",
                    "re-evaluation": c.reevaluation.id if c.reevaluation else None,
                    "source": c.source,
                    "by": c.actor,
                    "what": c.note,
                }
                for c in recorded
            ],
            column_config={"at": _WHEN},
        )

    st.subheader(f"Re-evaluations ({len(evals)})")
    if not evals:
        st.write("No re-evaluation has run yet.")
    else:
        show_table(
            [
                {
                    "id": r.id,
                    "task": r.task,
                    "verdict": _verdict(r.passed, r.conclusive),
                    "score": fmt(r.estimate),
                    "95% CI": interval(r.ci_low, r.ci_high),
                    "approval threshold": fmt(r.min_score),
                    "baseline": fmt(r.baseline),
                    "difference": fmt(r.difference, "+.2f"),
                    "n": r.n,
                    "why": "; ".join(r.reasons),
                    "served model": r.served_model or "",
                    "started": r.started_at,
                    "status": r.status,
                    "adopted by": r.approved_by or "",
                }
                for r in evals
            ],
            column_config={"started": _WHEN},
        )
        st.caption(
            "Adopting a re-evaluation as the new baseline takes an owner's recorded approval "
            "(`medmon baseline approve`); until then the task keeps its approved baseline."
        )


changes()
