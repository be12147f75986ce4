"""Pre-deployment MedHELM evidence: the taxonomy, baseline records, canaries and their importers."""

from medmon.baselines.canary import Canary, canary_from_dict, read_canaries, write_canaries
from medmon.baselines.errors import (
    BaselineError,
    CanaryFormatError,
    HelmFormatError,
    MalformedJSON,
    ManualFormatError,
    NoMainMetric,
    NotHelmOutput,
    SourceError,
    SourceFileMissing,
    UnknownMetric,
)
from medmon.baselines.importer import BaselineOutcome, ImportReport, SkippedRun, import_helm_path, import_manual
from medmon.baselines.manual import read_manual
from medmon.baselines.models import Baseline, BaselineInstance, CanaryRecord, LeaderboardEntry
from medmon.baselines.rescore import DISAGREEMENT_FLAG, Rescore, rescore_run
from medmon.baselines.store import (
    BaselineFigures,
    baseline_versions,
    canaries_for_baseline,
    instance_scores,
    jury_detail,
    latest_baseline,
    leaderboard_entries,
    list_baselines,
    record_baseline,
    record_canaries,
    record_leaderboard,
)
from medmon.baselines.taxonomy import TaxonomyEntry, benchmarks, categories, resolve
from medmon.baselines.win_rate import column_win_rates, mean_win_rates

__all__ = [
    "Baseline",
    "BaselineError",
    "BaselineFigures",
    "BaselineInstance",
    "BaselineOutcome",
    "Canary",
    "CanaryFormatError",
    "CanaryRecord",
    "DISAGREEMENT_FLAG",
    "HelmFormatError",
    "ImportReport",
    "LeaderboardEntry",
    "MalformedJSON",
    "ManualFormatError",
    "NoMainMetric",
    "NotHelmOutput",
    "Rescore",
    "SkippedRun",
    "SourceError",
    "SourceFileMissing",
    "TaxonomyEntry",
    "UnknownMetric",
    "baseline_versions",
    "benchmarks",
    "canaries_for_baseline",
    "canary_from_dict",
    "categories",
    "column_win_rates",
    "import_helm_path",
    "import_manual",
    "instance_scores",
    "jury_detail",
    "latest_baseline",
    "leaderboard_entries",
    "list_baselines",
    "mean_win_rates",
    "read_canaries",
    "read_manual",
    "record_baseline",
    "record_canaries",
    "record_leaderboard",
    "rescore_run",
    "resolve",
    "write_canaries",
]
