"""Baselines: the imported MedHELM evidence by category, subcategory and benchmark, with its source."""

from __future__ import annotations

import streamlit as st
from sqlmodel import Session

from medmon.dashboards.layout import page
from medmon.dashboards.tables import show_table
from medmon.dashboards.text import plain
from medmon.monitor.read import DISAGREEMENT_FLAG, baselines_by_taxonomy

plan, viewer, engine = page("Baselines")

with Session(engine) as session:
    rows = baselines_by_taxonomy(session)
used = {t.benchmark: t.id for t in plan.tasks}
if not rows:
    st.info("No baseline stored yet: import one with `medmon baseline import`, or start the service once.")
else:
    # What a committee reads comes first and fits 1,400 px; where each figure comes from is one click away.
    show_table(
        [
            {
                "benchmark": b.benchmark,
                "task": used.get(b.benchmark, ""),
                "model": b.model,
                "metric": b.metric,
                "value": b.value,
                "n": b.n,
                "95% CI": f"{b.ci_low:.3f}-{b.ci_high:.3f}",
                "scored by medmon": b.rescored_value,
                "HELM vs medmon differ": b.disagreement_rate,
                "version": b.version,
                "approved by": b.approved_by or "",
            }
            for b in rows
        ],
        key="baselines",
        column_config={
            "value": st.column_config.NumberColumn(format="%.3f", help="the figure as the source reports it"),
            "n": st.column_config.NumberColumn(help="instances behind the figure"),
            "scored by medmon": st.column_config.NumberColumn(
                format="%.3f", help="the same completions read by medmon's scorer"
            ),
            "HELM vs medmon differ": st.column_config.NumberColumn(format="percent"),
        },
    )
    with st.expander("Taxonomy, scale and source of each baseline"):
        show_table(
            [
                {
                    "benchmark": b.benchmark,
                    "model": b.model,
                    "version": b.version,
                    "category": b.category,
                    "subcategory": b.subcategory or "",
                    "scale": f"{b.scale_min:g}-{b.scale_max:g}",
                    "normalised": b.normalized,
                    "unreadable": b.rescored_unparsed,
                    "source": b.source_kind,
                    "suite": b.suite,
                    "source path": b.source_path,
                    "SHA-256": b.source_sha256,
                    "imported": b.imported_at,
                }
                for b in rows
            ],
            key="baseline_sources",
            column_config={"normalised": st.column_config.NumberColumn(format="%.3f")},
        )
    st.caption(
        "Each version is kept: importing the same files again changes nothing; new content adds a version. "
        "A HELM run's completions are scored again by medmon's scorer on import; detectors compare "
        "production with medmon's figure, so both are read the same way."
    )
    flagged = [b for b in rows if b.disagreement_rate is not None and b.disagreement_rate > DISAGREEMENT_FLAG]
    for b in flagged:
        st.warning(
            f"{plain(b.benchmark)} · {plain(b.model)} · v{plain(b.version)}: "
            f"HELM and medmon score {b.disagreements} of "
            f"{b.compared} instances differently ({b.disagreement_rate:.1%}, above {DISAGREEMENT_FLAG:.0%}); "
            f"{b.rescored_unparsed} completion(s) could not be read. Check `medmon score` on a few of them "
            "before trusting a comparison with HELM's figure."
        )
    st.subheader("Source files")
    for b in rows:
        if not b.source_files:
            continue
        label = f"{plain(b.benchmark)} · {plain(b.model)} · v{plain(b.version)} · {len(b.source_files)} file(s)"
        with st.expander(label):
            show_table(
                [{"file": name, "SHA-256": sha} for name, sha in sorted(b.source_files.items())], key=f"files_{b.id}"
            )
