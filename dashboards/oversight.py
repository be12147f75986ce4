"""What the review and Jury pages both show about the jury's validation against clinicians."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from medmon.dashboards.layout import fmt
from medmon.monitor.plan.oversight import MEDHELM_CLINICIAN_ICC, MEDHELM_JURY_ICC
from medmon.monitor.read import AgreementRow

MEDHELM_NOTE = (
    f"MedHELM, for comparison: jury-clinician ICC {MEDHELM_JURY_ICC}, clinician-clinician ICC "
    f"{MEDHELM_CLINICIAN_ICC}. jury_icc is ICC(A,1) between the jury's and the clinicians' mean scores; "
    "bias[judge] is that judge's mean score minus the clinicians' (positive: more lenient)."
)


def agreement_frame(rows: Sequence[AgreementRow]) -> pd.DataFrame:
    """The latest point of each validation stream, one row each, indexed by task (for ``st.table``)."""
    return pd.DataFrame(
        [
            {
                "task": a.task_id,
                "criterion": a.criterion,
                "statistic": a.statistic,
                "value": fmt(a.value, ".2f"),
                "95% CI": "" if a.ci_low is None or a.ci_high is None else f"{a.ci_low:.2f} to {a.ci_high:.2f}",
                "answers": a.n,
            }
            for a in rows
        ]
    ).set_index("task")
