"""The plan's ``identity`` section: how medmon checks which weights answer behind the model name.

A name and a ``system_fingerprint`` say what the provider claims; the answers say what is served.
With this section a job samples a small set of identity canaries ``samples`` times each at
``temperature`` > 0 and compares the answers with the go-live sample (the first
``reference_runs`` runs) by a sequential two-sample test
(``medmon.monitor.detection.drift.identity_mmd``). A detected difference is handled as a changed
``model`` string is: a model-change incident, a change record owed a re-evaluation, and a
re-evaluation of every task.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from medmon.monitor.plan.section import Interval, Section


class IdentityCheck(Section):
    """Identity canaries, how they are sampled, and the test's false-alarm probability."""

    pack: str = Field("served_identity", pattern=r"^[A-Za-z0-9_\-]{1,100}$")  # a bundled pack of probes/packs/identity/
    path: Path | None = None  # or a JSONL file of identity canaries (no patient text: they are stored in full)
    samples: int = Field(10, ge=2, le=100)  # answers per canary per run
    reference_runs: int = Field(2, ge=1)  # the runs whose answers form the go-live sample
    temperature: float = Field(0.7, gt=0, le=2)  # > 0: the test compares distributions of answers
    max_tokens: int = Field(16, ge=1, le=256)
    length: int = Field(48, ge=4, le=512)  # characters of each answer the string kernel reads
    false_alarm: float = Field(0.01, gt=0, lt=0.5)  # chance of any false alarm while the weights stay the same
    schedule: Interval = "1d"
