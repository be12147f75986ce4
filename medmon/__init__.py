"""medmon: a post-deployment monitor for clinical LLMs against their MedHELM evidence.

One import name holds five packages, as the design fixes them:

- ``medmon.baselines``: MedHELM taxonomy, HELM output importers, baseline and canary records
- ``medmon.probes``: canary packs, the model client, scorers, the LLM jury, cost
- ``medmon.monitor``: the plan, storage, scheduler, drift detection, governance, the CLI
- ``medmon.alerts``: alert rules, lifecycle, silences, outbox, channels
- ``medmon.dashboards``: the Streamlit app

and the lowest layer every package's tables may import: ``medmon.db`` (time, sessions,
database URL) and ``medmon.errors`` (the root of every error medmon raises on purpose).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medmon")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
