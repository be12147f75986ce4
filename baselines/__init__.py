"""Pre-deployment MedHELM evidence: the taxonomy, baseline records and canaries."""

from baselines.canary import Canary, canary_from_dict, read_canaries, write_canaries
from baselines.models import Baseline, BaselineInstance
from baselines.errors import BaselineError, CanaryFormatError
from baselines.store import BaselineFigures, instance_scores, latest_baseline, list_baselines, record_baseline
from baselines.taxonomy import TaxonomyEntry, benchmarks, categories, resolve

__all__ = [
    "Baseline",
    "BaselineInstance",
    "BaselineError",
    "BaselineFigures",
    "Canary",
    "CanaryFormatError",
    "TaxonomyEntry",
    "benchmarks",
    "canary_from_dict",
    "categories",
    "instance_scores",
    "latest_baseline",
    "list_baselines",
    "read_canaries",
    "record_baseline",
    "resolve",
    "write_canaries",
]
