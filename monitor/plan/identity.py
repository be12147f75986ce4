"""The plan's ``identity`` section: how medmon checks which weights answer behind the model name.

A name and a ``system_fingerprint`` say what the provider claims; the answers say what is served.
With this section a job asks a small set of identity canaries and compares what comes back with
the go-live sample (the first ``reference_runs`` runs) by a sequential test with the false-alarm
probability ``false_alarm``. Two methods:

- ``logprobs`` (the default): each canary once per run at temperature 0, asking the server for the
  ``top_logprobs`` most likely tokens at each of the first ``positions`` tokens; the numbers are
  compared with the canary's go-live fingerprint
  (``medmon.monitor.detection.drift.identity_logprob``). It needs a server that returns
  ``logprobs`` (llama.cpp's and vLLM's OpenAI-compatible servers do); on the real model it finds
  weights re-quantized from the same checkpoint, which sampled answers do not show.
- ``answers``: each canary ``samples`` times at ``temperature`` > 0, each call with a fresh random
  ``seed`` (a server that seeds its sampler from a fixed value replays the same draws after every
  restart); the strings are compared by a two-sample test on a string kernel
  (``medmon.monitor.detection.drift.identity_mmd``). For servers without log-probabilities; it
  sees larger changes only.

A detected difference is handled as a changed ``model`` string is: a model-change incident, a
change record owed a re-evaluation, and a re-evaluation of every task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from medmon.monitor.plan.section import Interval, Section


class IdentityCheck(Section):
    """Identity canaries, how they are sampled, and the test's false-alarm probability."""

    pack: str = Field("served_identity", pattern=r"^[A-Za-z0-9_\-]{1,100}$")  # a bundled pack of probes/packs/identity/
    path: Path | None = None  # or a JSONL file of identity canaries (no patient text: they are stored in full)
    method: Literal["logprobs", "answers"] = "logprobs"
    samples: int | None = Field(None, ge=1, le=100)  # calls per canary per run: 1 (logprobs) or 10 (answers)
    reference_runs: int | None = Field(None, ge=1)  # runs forming the go-live sample: 3 (logprobs) or 2 (answers)
    temperature: float = Field(0.7, gt=0, le=2)  # answers: > 0, the test compares distributions of answers
    max_tokens: int = Field(16, ge=1, le=256)  # answers
    length: int = Field(48, ge=4, le=512)  # answers: characters of each answer the string kernel reads
    positions: int = Field(3, ge=1, le=64)  # logprobs: generated tokens whose log-probabilities are read
    top_logprobs: int = Field(5, ge=1, le=20)  # logprobs: alternatives read at each position
    false_alarm: float = Field(0.01, gt=0, lt=0.5)  # chance of any false alarm while the weights stay the same
    schedule: Interval = "1d"

    @property
    def calls(self) -> int:
        """Calls per canary per run."""
        return self.samples if self.samples is not None else (1 if self.method == "logprobs" else 10)

    @property
    def go_live_runs(self) -> int:
        """Runs forming the go-live sample (logprobs: a canary's anchor, then calibration; at least 2 fingerprints)."""
        if self.reference_runs is not None:
            return max(self.reference_runs, 2) if self.method == "logprobs" and self.calls == 1 else self.reference_runs
        return 3 if self.method == "logprobs" else 2

    def decoding(self) -> dict[str, object]:
        """The decoding the identity canaries are asked with."""
        if self.method == "logprobs":
            return {"temperature": 0.0, "max_tokens": self.positions, "top_logprobs": self.top_logprobs}
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}
