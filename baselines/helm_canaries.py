"""A HELM run's ``scenario_state.json`` as a canary pack: one canary per evaluated instance.

Each canary replays exactly what HELM sent: ``request.messages`` when present, else
``request.prompt`` as one user message (from the first train trial; other trials differ only in
their in-context examples). Its scorer follows the benchmark:

============================  ===================================================================
scorer                        when, and what the canary carries
============================  ===================================================================
``jury``                      jury-scored metric; references are the gold texts (may be none)
``multiple_choice``           ``multiple_choice_joint`` adapter with an ``output_mapping``:
                              references are the correct letters, ``choices`` the option texts
``numeric_tolerance``         MedCalc-Bench instances whose ``extra_data`` has numeric
                              ``lower_limit``/``upper_limit``: ``tolerance = {"lower", "upper"}``
``set_f1``                    MIMIC-IV billing codes (``mimiciv_billing_code_f1``)
``exact_match``               everything else (MedCalc date/categorical answers included);
                              ``quasi_exact_match`` when that is the run's main metric
============================  ===================================================================

``baseline_score`` is the instance's own main-metric value (mean over trials; ``baseline_runs``
trials). Each canary also carries the run's decoding settings (``temperature``, ``max_tokens``,
``stop_sequences`` from the request HELM sent, else the adapter spec), so a replay asks the model
the way HELM did. The completions HELM recorded for each instance (one per trial) are returned
beside the pack, so an importer can score them again with the scorer production uses. Text HELM
published as ``"[redacted]"`` makes the canary ``replayable=False``: its score still counts as
evidence. Per-judge, per-criterion jury scores come from ``annotations``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medmon.baselines.canary import Canary
from medmon.baselines.errors import HelmFormatError
from medmon.baselines.helm_stats import MainMetric

REDACTED = "[redacted]"
_ROLES = {"system", "user", "assistant", "developer"}
_ANNOTATION_META = {"prompt_text", "empty_output_equivalence_judgement"}

JuryDetail = dict[str, dict[str, float]]


@dataclass(frozen=True)
class PackContext:
    """What every canary of one run shares."""

    pack: str
    benchmark: str
    metric: MainMetric
    adapter_method: str
    provenance: str
    suite: str


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # multimodal content: keep the text parts
        return "".join(p.get("text", "") for p in value if isinstance(p, dict))
    return ""


def _messages(state: dict[str, Any]) -> tuple[dict[str, str], ...]:
    request = state.get("request") or {}
    if isinstance(request.get("messages"), list) and request["messages"]:
        out = []
        for m in request["messages"]:
            role = m.get("role") if isinstance(m, dict) else None
            out.append({"role": role if role in _ROLES else "user", "content": _text((m or {}).get("content"))})
        return tuple(out)
    prompt = request.get("prompt")
    if not isinstance(prompt, str):
        prompt = _text(((state.get("instance") or {}).get("input") or {}).get("text"))
    return ({"role": "user", "content": prompt},)


def _correct_texts(instance: dict[str, Any]) -> list[str]:
    return [
        _text((ref.get("output") or {}).get("text"))
        for ref in instance.get("references") or []
        if "correct" in (ref.get("tags") or [])
    ]


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _scorer_fields(state: dict[str, Any], ctx: PackContext) -> dict[str, Any]:
    instance = state["instance"]
    correct = _correct_texts(instance)
    if ctx.metric.jury:
        return {"scorer": "jury", "references": correct}
    mapping = state.get("output_mapping")
    if ctx.adapter_method.startswith("multiple_choice_joint") and isinstance(mapping, dict) and mapping:
        letters = sorted(mapping)
        return {
            "scorer": "multiple_choice",
            "references": [letter for letter in letters if mapping[letter] in correct],
            "choices": [str(mapping[letter]) for letter in letters],
        }
    if ctx.metric.name == "medcalc_bench_accuracy":
        extra = instance.get("extra_data") or {}
        low, high = _number(extra.get("lower_limit")), _number(extra.get("upper_limit"))
        if low is not None and high is not None:
            return {"scorer": "numeric_tolerance", "references": correct, "tolerance": {"lower": low, "upper": high}}
    if ctx.metric.name == "mimiciv_billing_code_f1":
        return {"scorer": "set_f1", "references": correct}
    # Like with like: HELM's strict exact match unless the run's main metric is the quasi one.
    strictness = "quasi_exact_match" if ctx.metric.name == "quasi_exact_match" else "exact_match"
    return {"scorer": strictness, "references": correct}


DECODING_KEYS = ("temperature", "max_tokens", "stop_sequences")


def decoding_of(state: dict[str, Any], adapter_spec: dict[str, Any]) -> dict[str, Any]:
    """The decoding settings HELM used for one request: the request's, else the adapter spec's."""
    request = state.get("request") or {}
    out: dict[str, Any] = {}
    for key in DECODING_KEYS:
        value = request.get(key, adapter_spec.get(key))
        if key == "stop_sequences" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            if value:
                out[key] = list(value)
        elif key == "temperature" and isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = float(value)
        elif key == "max_tokens" and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[key] = value
    return out


def completion_text(state: dict[str, Any]) -> str | None:
    """The first completion HELM recorded for a request state, or None when the request failed."""
    result = state.get("result") or {}
    completions = result.get("completions") if isinstance(result, dict) else None
    if not result.get("success", True) or not isinstance(completions, list) or not completions:
        return None
    text = completions[0].get("text") if isinstance(completions[0], dict) else None
    return text if isinstance(text, str) else None


def _one_copy(shared: dict[str, dict[str, Any]], value: dict[str, Any]) -> dict[str, Any]:
    """One object for equal tag and decoding maps across a pack: a suite holds tens of thousands of
    canaries in memory until it is stored, nearly all with the same few maps (canaries are frozen
    and nothing mutates these maps)."""
    return shared.setdefault(repr(sorted(value.items())), value)


def _tags(state: dict[str, Any], ctx: PackContext) -> dict[str, str]:
    instance = state["instance"]
    tags = {"source": "helm", "split": ctx.metric.split}
    if ctx.suite:
        tags["suite"] = ctx.suite
    if isinstance(instance.get("sub_split"), str):
        tags["sub_split"] = instance["sub_split"]
    category = (instance.get("extra_data") or {}).get("category")
    if isinstance(category, str):
        tags["category"] = category
    return tags


def jury_detail(state: dict[str, Any]) -> JuryDetail:
    """``{judge: {criterion: score}}`` from a request state's annotations (invalid ones skipped)."""
    detail: JuryDetail = {}
    for annotation in (state.get("annotations") or {}).values():
        if not isinstance(annotation, dict):
            continue
        for judge, verdict in annotation.items():
            if judge in _ANNOTATION_META or not isinstance(verdict, dict):
                continue
            scores = {}
            for criterion, item in verdict.items():
                score = _number(item.get("score")) if isinstance(item, dict) else None
                if score is not None:
                    scores[criterion] = float(int(score))
            if scores:
                detail[judge] = scores
    return detail


def _not_replayable(state: dict[str, Any], messages: tuple[dict[str, str], ...]) -> bool:
    instance = state["instance"]
    texts = [m["content"] for m in messages]
    texts.append(_text((instance.get("input") or {}).get("text")))
    texts += [_text((r.get("output") or {}).get("text")) for r in instance.get("references") or []]
    return any(REDACTED in t for t in texts) or not any(t.strip() for t in texts[: len(messages)])


def build_pack(
    scenario_state: Any, ctx: PackContext, scores: dict[str, list[float]], file: Path
) -> tuple[list[Canary], dict[str, JuryDetail], dict[str, list[str | None]]]:
    """Canaries for every instance on the main split, jury detail and HELM's completions by canary id."""
    states = scenario_state.get("request_states") if isinstance(scenario_state, dict) else None
    if not isinstance(states, list):
        raise HelmFormatError(file, "request_states", "key missing or not a list", at=["request_states"])
    first: dict[str, dict[str, Any]] = {}
    position: dict[str, int] = {}
    completions: dict[str, list[str | None]] = {}
    adapter_spec = scenario_state.get("adapter_spec") or {}
    for i, state in enumerate(states):
        instance = state.get("instance") if isinstance(state, dict) else None
        if not isinstance(instance, dict) or not isinstance(instance.get("id"), str):
            raise HelmFormatError(
                file,
                f"request_states[{i}].instance.id",
                "key missing or not a string",
                at=["request_states", i, "instance", "id"],
            )
        if "perturbation" in instance or str(instance.get("split") or ctx.metric.split) != ctx.metric.split:
            continue
        with _state_named(file, i):
            completions.setdefault(instance["id"], []).append(completion_text(state))
            known = first.get(instance["id"])
            if known is None or int(state.get("train_trial_index") or 0) < int(known.get("train_trial_index") or 0):
                first[instance["id"]], position[instance["id"]] = state, i
    canaries: list[Canary] = []
    juries: dict[str, JuryDetail] = {}
    shared: dict[str, dict[str, Any]] = {}
    for instance_id in sorted(first):
        with _state_named(file, position[instance_id]):
            canary, jury = _canary(first[instance_id], instance_id, scores, ctx, adapter_spec, shared)
        canaries.append(canary)
        if jury is not None:
            juries[instance_id] = jury
    return canaries, juries, completions


@contextmanager
def _state_named(file: Path, i: int) -> Iterator[None]:
    """A request state of a shape no check foresaw is reported with its line, not as a traceback."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise HelmFormatError(
            file,
            f"request_states[{i}]",
            f"unexpected value ({type(exc).__name__}: {str(exc)[:200]})",
            at=["request_states", i],
        ) from exc


def _canary(
    state: dict[str, Any],
    instance_id: str,
    scores: dict[str, list[float]],
    ctx: PackContext,
    adapter_spec: dict[str, Any],
    shared: dict[str, dict[str, Any]],
) -> tuple[Canary, JuryDetail | None]:
    """One instance's canary (and its jury detail when the metric is a jury's); equal tags and
    decodings share one object through ``shared``."""
    messages = _messages(state)
    trials = scores.get(instance_id, [])
    fields = _scorer_fields(state, ctx)
    canary = Canary(
        id=instance_id,
        messages=messages,
        references=tuple(fields["references"]),
        scorer=fields["scorer"],
        tags=_one_copy(shared, _tags(state, ctx)),
        baseline_score=sum(trials) / len(trials) if trials else None,
        baseline_runs=len(trials),
        replayable=not _not_replayable(state, messages),
        provenance=ctx.provenance,
        tolerance=fields.get("tolerance"),
        choices=tuple(fields["choices"]) if fields.get("choices") else None,
        pack=ctx.pack,
        benchmark=ctx.benchmark,
        decoding=_one_copy(shared, decoding_of(state, adapter_spec)) or None,
    )
    return canary, jury_detail(state) if ctx.metric.jury else None
