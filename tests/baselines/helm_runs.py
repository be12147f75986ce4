"""Writing HELM-shaped run directories for tests, with HELM's quirks (duplicates, perturbations)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITE = "medhelm-offline-demo"


def run_dir_of(suite_dir: Path, benchmark: str) -> Path:
    """The run directory whose run_spec names ``benchmark`` (found by reading, not by name)."""
    for spec in sorted(suite_dir.glob("*/run_spec.json")):
        data = json.loads(spec.read_text())
        if benchmark in (data.get("groups") or []) or data["scenario_spec"]["class_name"].endswith(benchmark):
            return spec.parent
    raise LookupError(benchmark)


@dataclass
class Inst:
    """One synthetic instance: its per-trial scores and what HELM would have stored for it."""

    id: str
    scores: list[float]
    prompt: str = "Question?"
    correct: tuple[str, ...] = ("yes",)
    wrong: tuple[str, ...] = ("no",)
    extra: dict[str, Any] | None = None
    judges: dict[str, dict[str, int]] | None = None
    messages: list[dict[str, str]] | None = None
    split: str = "test"


@dataclass
class RunWriter:
    """Writes HELM-shaped run directories, with HELM's quirks (duplicates, perturbations)."""

    root: Path
    written: list[Path] = field(default_factory=list)

    def __call__(
        self,
        name: str,
        instances: list[Inst],
        *,
        groups: list[str],
        metric: str = "exact_match",
        model: str = "openai/gpt-4o-2024-05-13",
        method: str = "multiple_choice_joint",
        split: str = "test",
        metric_specs: list[dict[str, Any]] | None = None,
        jury_key: str | None = None,
        num_instances: bool = True,
        suite_dir: Path | None = None,
    ) -> Path:
        run = (suite_dir or self.root) / name
        run.mkdir(parents=True)
        trials = max(len(i.scores) for i in instances)
        spec = {
            "name": name,
            "scenario_spec": {"class_name": "helm.benchmark.scenarios.fake.FakeScenario", "args": {}},
            "adapter_spec": {
                "method": method,
                "model": model,
                "model_deployment": model.replace("/", "-dep/"),
                "num_train_trials": trials,
                "max_tokens": 1,
                "temperature": 0.0,
            },
            "metric_specs": metric_specs
            or [
                {
                    "class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                    "args": {"names": ["exact_match"]},
                }
            ],
            "groups": groups,
        }
        (run / "run_spec.json").write_text(json.dumps(spec, indent=2))
        (run / "scenario.json").write_text(json.dumps({"name": groups[0] if groups else name, "tags": []}))

        def stat_(metric_name: str, value: float, *, count: int = 1, perturbed: bool = False) -> dict[str, Any]:
            nm: dict[str, Any] = {"name": metric_name, "split": split}
            if perturbed:
                nm["perturbation"] = {
                    "name": "robustness",
                    "robustness": True,
                    "fairness": False,
                    "computed_on": "worst",
                }
            return {
                "name": nm,
                "count": count,
                "sum": value * count,
                "sum_squared": value * value * count,
                "min": value,
                "max": value,
                "mean": value,
                "variance": 0.0,
                "stddev": 0.0,
            }

        trial_means = [
            sum(i.scores[t] for i in instances if t < len(i.scores)) / sum(1 for i in instances if t < len(i.scores))
            for t in range(trials)
        ]
        run_mean = sum(trial_means) / trials
        stats = [
            stat_(metric, run_mean, count=trials),
            stat_(metric, -9.0, count=trials, perturbed=True),
            stat_("num_prompt_tokens", 100.0, count=trials),
        ]
        if num_instances:
            stats.append(stat_("num_instances", float(len(instances)), count=trials))
        (run / "stats.json").write_text(json.dumps(stats, indent=2))

        per_instance = []
        for t in range(trials):
            for inst in instances:
                if t >= len(inst.scores):
                    continue
                # one entry per metric class, as HELM writes them, plus a perturbation copy
                per_instance.append(
                    {
                        "instance_id": inst.id,
                        "train_trial_index": t,
                        "stats": [stat_(metric, inst.scores[t]), stat_(metric, -9.0, perturbed=True)],
                    }
                )
                per_instance.append(
                    {
                        "instance_id": inst.id,
                        "train_trial_index": t,
                        "stats": [
                            stat_("num_prompt_tokens", 100.0),
                            {
                                "name": {"name": "training_co2_cost", "split": split},
                                "count": 0,
                                "sum": 0,
                                "sum_squared": 0,
                            },
                        ],
                    }
                )
        (run / "per_instance_stats.json").write_text(json.dumps(per_instance))

        states = []
        for t in range(trials):
            for inst in instances:
                if t >= len(inst.scores):
                    continue
                refs = [{"output": {"text": c}, "tags": ["correct"]} for c in inst.correct]
                refs += [{"output": {"text": w}, "tags": []} for w in inst.wrong]
                instance: dict[str, Any] = {
                    "input": {"text": inst.prompt},
                    "references": refs,
                    "split": inst.split,
                    "id": inst.id,
                }
                if inst.extra is not None:
                    instance["extra_data"] = inst.extra
                request: dict[str, Any] = {"model": model, "prompt": f"[trial {t}] {inst.prompt}", "temperature": 0.0}
                if inst.messages is not None:
                    request = {"model": model, "messages": inst.messages}
                state: dict[str, Any] = {
                    "instance": instance,
                    "train_trial_index": t,
                    "request": request,
                    "result": {"success": True, "completions": [{"text": "A", "logprob": 0.0, "tokens": []}]},
                }
                if method == "multiple_choice_joint":
                    options = [*inst.correct, *inst.wrong]
                    state["output_mapping"] = {chr(65 + k): o for k, o in enumerate(options)}
                if inst.judges is not None:
                    state["annotations"] = {
                        jury_key or name: {
                            "prompt_text": "judge prompt",
                            **{
                                judge: {c: {"score": s, "explanation": "ok"} for c, s in crit.items()}
                                for judge, crit in inst.judges.items()
                            },
                        }
                    }
                states.append(state)
        (run / "scenario_state.json").write_text(
            json.dumps({"adapter_spec": spec["adapter_spec"], "request_states": states})
        )
        self.written.append(run)
        return run
