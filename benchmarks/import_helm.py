"""Benchmark: import a HELM-shaped MedHELM suite (37 benchmarks x 1,000 instances) into SQLite.

Writes a realistic ``benchmark_output/runs/<suite>`` tree into a temporary directory (run_spec,
scenario, stats with perturbation copies, per_instance_stats with one entry per metric class,
scenario_state with clinical-note-sized prompts and, for jury benchmarks, 3 judges x 3 criteria
annotations, and a ``groups/medhelm_scenarios.json`` leaderboard), imports it with
``baselines.import_helm_path`` and prints wall time and peak memory.

Usage::

    .venv/bin/python benchmarks/import_helm.py [--benchmarks 37] [--instances 1000] [--seeds 0 1 2]
                                                [--tracemalloc] [--keep DIR]

For each seed it prints the import, the re-import of the unchanged files, and beside them their
floors on the same files: the stdlib JSON parse and orjson's, and the SHA-256 of every file; then
the medians and the ratios to those floors.

The import runs in a fresh child process of its own (``python import_helm.py --child``), so its
memory is the import's alone, not the generator's or the floors' parses: the child reports its
resident set before the import (interpreter and medmon loaded) and its peak
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``) after it. ``--tracemalloc`` runs the import once
more in another child under tracemalloc and reports the Python heap peak (slower: tracemalloc
hooks every allocation, so the timed import never runs under it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from medmon.baselines import import_helm_path
from medmon.baselines.taxonomy import benchmarks
from medmon.db import session_scope
from medmon.monitor.storage import make_engine

MODEL = "openai/gpt-4o-2024-05-13"
DEPLOYMENT = "stanfordhealthcare/gpt-4o-2024-05-13"
JUDGES = ("gpt", "llama", "claude")
WORDS = (
    "patient",
    "presents",
    "with",
    "history",
    "of",
    "hypertension",
    "diabetes",
    "denies",
    "chest",
    "pain",
    "reports",
    "shortness",
    "breath",
    "medication",
    "metformin",
    "lisinopril",
    "follow-up",
    "in",
    "two",
    "weeks",
    "labs",
    "notable",
    "for",
    "elevated",
    "creatinine",
    "assessment",
    "and",
    "plan",
    "continue",
    "monitor",
)
BASIC = (
    "num_references",
    "num_train_trials",
    "num_prompt_tokens",
    "num_completion_tokens",
    "num_output_tokens",
    "inference_runtime",
    "batch_size",
    "finish_reason_length",
    "finish_reason_stop",
    "finish_reason_endoftext",
    "finish_reason_unknown",
    "num_train_instances",
    "prompt_truncated",
    "max_prob",
    "logprob",
    "num_perplexity_tokens",
    "num_bytes",
)


def _stat(name: str, value: float, split: str, perturbation: str | None = None) -> dict[str, Any]:
    key: dict[str, Any] = {"name": name, "split": split}
    if perturbation:
        key["perturbation"] = {
            "name": perturbation,
            "robustness": perturbation == "robustness",
            "fairness": perturbation == "fairness",
            "computed_on": "worst",
        }
    return {
        "name": key,
        "count": 1,
        "sum": value,
        "sum_squared": value * value,
        "min": value,
        "max": value,
        "mean": value,
        "variance": 0.0,
        "stddev": 0.0,
    }


def _note(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _instance_score(rng: random.Random, b: dict[str, Any], judges: dict[str, dict[str, int]] | None) -> float:
    if judges:
        return sum(s for crit in judges.values() for s in crit.values()) / sum(len(c) for c in judges.values())
    if b["main_metric"] == "mimiciv_billing_code_f1":
        return round(rng.random(), 3)
    return float(rng.random() < 0.7)


def write_run(root: Path, b: dict[str, Any], instances: int, rng: random.Random) -> None:
    """One run directory for taxonomy benchmark ``b``, as crfm-helm 0.5.16 writes it."""
    name, metric, split = b["name"], b["main_metric"], b.get("main_split") or "test"
    jury, mcq = bool(b.get("llm_jury")), b.get("adapter_method") == "multiple_choice_joint"
    run = root / f"{name}:model={MODEL.replace('/', '_')},model_deployment={DEPLOYMENT.replace('/', '_')}"
    run.mkdir(parents=True)
    adapter: dict[str, Any] = {
        "method": b.get("adapter_method") or "generation",
        "instructions": "Answer the question.\n",
        "max_train_instances": 0,
        "max_eval_instances": instances,
        "num_outputs": 1,
        "num_train_trials": 1,
        "model": MODEL,
        "model_deployment": DEPLOYMENT,
        "temperature": 0.0,
        "max_tokens": b.get("max_tokens_default") or 1,
        "stop_sequences": [],
    }
    metric_specs = [{"class_name": f"helm.benchmark.metrics.{c}", "args": {}} for c in b.get("metric_classes") or []]
    spec = {
        "name": run.name,
        "scenario_spec": {"class_name": f"helm.benchmark.scenarios.{name}.Scenario", "args": {}},
        "adapter_spec": adapter,
        "metric_specs": metric_specs,
        "groups": [name],
        "annotators": [],
    }
    (run / "run_spec.json").write_text(json.dumps(spec, indent=2))
    (run / "scenario.json").write_text(
        json.dumps({"name": name, "description": b.get("display_name"), "tags": ["biomedical"]})
    )
    per_instance, states, scores = [], [], []
    for i in range(instances):
        iid = f"id{i}"
        note = _note(rng, rng.randint(250, 450))
        judges = {j: {c: rng.randint(2, 5) for c in (b.get("jury_criteria") or ())} for j in JUDGES} if jury else None
        score = _instance_score(rng, b, judges)
        scores.append(score)
        options = ["yes", "no", "unclear", "not documented"] if mcq else [_note(rng, 40)]
        correct = rng.randrange(len(options)) if mcq else 0
        refs = [{"output": {"text": o}, "tags": ["correct"] if k == correct else []} for k, o in enumerate(options)]
        instance: dict[str, Any] = {"input": {"text": note}, "references": refs, "split": split, "id": iid}
        if metric == "medcalc_bench_accuracy":
            value = round(rng.uniform(1, 100), 2)
            instance["extra_data"] = {
                "category": "lab",
                "lower_limit": str(value * 0.95),
                "upper_limit": str(value * 1.05),
            }
        prompt = adapter["instructions"] + "\n" + note
        if mcq:
            prompt += "\n" + "\n".join(f"{chr(65 + k)}. {o}" for k, o in enumerate(options)) + "\nAnswer:"
        state: dict[str, Any] = {
            "instance": instance,
            "train_trial_index": 0,
            "request": {
                "model_deployment": DEPLOYMENT,
                "model": MODEL,
                "prompt": prompt,
                "temperature": 0.0,
                "max_tokens": adapter["max_tokens"],
                "stop_sequences": [],
            },
            "result": {
                "success": True,
                "cached": True,
                "request_time": rng.uniform(0.3, 4.0),
                "completions": [{"text": "A" if mcq else _note(rng, 60), "logprob": 0.0, "tokens": []}],
            },
            "num_train_instances": 0,
            "prompt_truncated": False,
        }
        if mcq:
            state["output_mapping"] = {chr(65 + k): o for k, o in enumerate(options)}
        if judges:
            state["annotations"] = {
                name: {
                    "prompt_text": "You are a medical judge. " + _note(rng, 120),
                    **{
                        j: {c: {"score": s, "explanation": _note(rng, 25)} for c, s in crit.items()}
                        for j, crit in judges.items()
                    },
                }
            }
        states.append(state)
        main = [_stat(metric, score, split)]
        basic = [_stat(n, rng.uniform(0, 500), split) for n in BASIC]
        if not jury:
            basic += main
            main = []
        # HELM writes one entry per metric class for the same (instance, trial)
        if main:
            per_instance.append({"instance_id": iid, "train_trial_index": 0, "stats": main})
        per_instance.append({"instance_id": iid, "train_trial_index": 0, "stats": basic})
    mean = sum(scores) / len(scores)
    stats = [_stat(metric, mean, split)] + [_stat(n, rng.uniform(0, 500), split) for n in BASIC]
    stats += [_stat(s["name"]["name"], s["mean"], split, p) for s in list(stats) for p in ("robustness", "fairness")]
    stats.append(_stat("num_instances", float(instances), split))
    (run / "stats.json").write_text(json.dumps(stats, indent=2))
    (run / "per_instance_stats.json").write_text(json.dumps(per_instance, indent=2))
    (run / "scenario_state.json").write_text(json.dumps({"adapter_spec": adapter, "request_states": states}, indent=2))


def write_suite(out: Path, n_benchmarks: int, instances: int, seed: int) -> Path:
    """The suite directory with ``n_benchmarks`` taxonomy benchmarks and a leaderboard table."""
    rng = random.Random(seed)
    raw = {
        b["name"]: b
        for b in json.loads((Path(__file__).resolve().parents[1] / "baselines/data/medhelm_taxonomy.json").read_text())[
            "benchmarks"
        ]
    }
    chosen = [raw[e.benchmark] for e in benchmarks() if e.source == "crfm-helm"][:n_benchmarks]
    suite = out / "benchmark_output" / "runs" / "bench-suite"
    for b in chosen:
        write_run(suite, b, instances, rng)
    header = [{"value": "Model", "metadata": {}}, {"value": "Mean win rate", "lower_is_better": False, "metadata": {}}]
    header += [
        {
            "value": f"{b['display_name']} - main",
            "lower_is_better": False,
            "metadata": {"metric": "main", "run_group": b["display_name"]},
        }
        for b in chosen
    ]
    rows = [[{"value": f"Model {m}"}, {}] + [{"value": rng.random()} for _ in chosen] for m in range(9)]
    (suite / "groups").mkdir()
    (suite / "groups" / "medhelm_scenarios.json").write_text(
        json.dumps([{"title": "Accuracy", "header": header, "rows": rows}])
    )
    (suite / "summary.json").write_text(
        json.dumps({"suite": "bench-suite", "suites": ["bench-suite"], "date": "2026-01-01"})
    )
    return out / "benchmark_output"


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _rss_mb() -> float:
    """The resident set now (``/proc/self/statm``), for the child's starting point."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / (1 << 20)


def child_import(output: Path, database: str, heap: bool) -> dict[str, float]:
    """The import alone, in this (fresh) process, into an existing database: wall time, resident set
    before and peak after."""
    engine = make_engine(database)
    before = _rss_mb()
    if heap:
        tracemalloc.start()
    started = time.perf_counter()
    with session_scope(engine) as session:
        report = import_helm_path(session, output)
        created = report.created
        canaries = sum(b.canaries for b in report.baselines)
        cells = report.leaderboard_entries
    elapsed = time.perf_counter() - started
    heap_mb = tracemalloc.get_traced_memory()[1] / 1e6 if heap else float("nan")
    tracemalloc.stop()
    engine.dispose()
    return {
        "import": elapsed,
        "rss_before_mb": before,
        "peak_rss_mb": _maxrss_mb(),
        "heap_mb": heap_mb,
        "created": created,
        "canaries": canaries,
        "cells": cells,
    }


def _in_child(output: Path, database: str, *, heap: bool = False) -> dict[str, float]:
    args = [sys.executable, str(Path(__file__).resolve()), "--child", str(output), database]
    done = subprocess.run(args + (["--tracemalloc"] if heap else []), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the import's child process failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _floors(output: Path) -> dict[str, float]:
    """What the import cannot beat: parsing the same JSON files (stdlib, orjson) and hashing them."""
    files = sorted(p for p in output.rglob("*.json") if p.is_file())
    out = {}
    for name, parse in (("json", json.loads), ("orjson", orjson.loads)):
        started = time.perf_counter()
        for f in files:
            parse(f.read_bytes())
        out[name] = time.perf_counter() - started
    started = time.perf_counter()
    for f in sorted(p for p in output.rglob("*") if p.is_file()):
        hashlib.sha256(f.read_bytes()).hexdigest()
    out["sha256"] = time.perf_counter() - started
    return out


def measure(out: Path, n_benchmarks: int, instances: int, seed: int, *, heap: bool) -> dict[str, float]:
    """One seed: generate the suite, time the floors, then the import (in a fresh child process)
    and the re-import of the unchanged files."""
    started = time.perf_counter()
    output = write_suite(out, n_benchmarks, instances, seed)
    size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    print(
        f"seed {seed}: generated {n_benchmarks} runs x {instances} instances ({size / 1e6:.0f} MB of JSON) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    floors = _floors(output)
    database, heap_database = f"sqlite:///{out / 'bench.db'}", f"sqlite:///{out / 'heap.db'}"
    for url in (database, heap_database):  # created here: the child measures the import, not a new database
        make_engine(url).dispose()
    child = _in_child(output, database)
    heap_mb = _in_child(output, heap_database, heap=True)["heap_mb"] if heap else float("nan")
    engine = make_engine(database)
    started = time.perf_counter()
    with session_scope(engine) as session:
        again = import_helm_path(session, output)
    reimport = time.perf_counter() - started
    assert again.created == 0 and again.unchanged == child["created"]
    engine.dispose()
    print(
        f"  import: {child['created']} baselines, {child['canaries']} canaries, {child['cells']} leaderboard "
        f"cells in {child['import']:.2f} s (stdlib json parse {floors['json']:.2f} s, orjson "
        f"{floors['orjson']:.2f} s); re-import unchanged {reimport:.2f} s (SHA-256 of the files "
        f"{floors['sha256']:.2f} s)"
    )
    print(
        f"  import's process: resident {child['rss_before_mb']:.0f} MB before, peak {child['peak_rss_mb']:.0f} MB"
        + (f"; Python heap peak {heap_mb:.0f} MB" if heap else "")
    )
    return {
        "import": child["import"],
        "reimport": reimport,
        "heap_mb": heap_mb,
        "mb": size / 1e6,
        "rss_before_mb": child["rss_before_mb"],
        "peak_rss_mb": child["peak_rss_mb"],
        **floors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=37)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="one suite per seed; medians")
    parser.add_argument("--tracemalloc", action="store_true", help="also report the import's Python heap peak")
    parser.add_argument("--keep", type=Path, help="write the suites and databases here instead of a temp dir")
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="medmon-bench-") as tmp:
            out = (args.keep / f"seed{seed}") if args.keep else Path(tmp)
            out.mkdir(parents=True, exist_ok=True)
            rows.append(measure(out, args.benchmarks, args.instances, seed, heap=args.tracemalloc))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"median over {len(rows)} seeds ({med['mb']:.0f} MB each):")
    print(
        f"  import {med['import']:.2f} s = {med['import'] / med['json']:.2f}x the stdlib JSON parse "
        f"({med['json']:.2f} s), {med['import'] / med['orjson']:.2f}x orjson ({med['orjson']:.2f} s)"
    )
    print(
        f"  re-import of unchanged files {med['reimport']:.2f} s = {med['reimport'] / med['sha256']:.2f}x "
        f"the SHA-256 of the files ({med['sha256']:.2f} s)"
    )
    heap = f"; Python heap peak {med['heap_mb']:.0f} MB" if args.tracemalloc else ""
    print(
        f"  import's own process: peak RSS {med['peak_rss_mb']:.0f} MB ({med['rss_before_mb']:.0f} MB before "
        f"the import, +{med['peak_rss_mb'] - med['rss_before_mb']:.0f} MB){heap}"
    )
    print(f"  peak RSS of this process (generator, floors, re-import) {_maxrss_mb():.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child_import(Path(sys.argv[2]), sys.argv[3], "--tracemalloc" in sys.argv[4:])))
    else:
        main()
