"""The reader model: a second reader for what the rules leave unparsed (off by default).

The rules (:mod:`medmon.probes.extraction`) read most replies; a reply they cannot read is
unparsed. A plan may name a **reader model** (``reader_model:``, one of the jury or another
OpenAI-compatible endpoint) to ask, for those replies, what final answer the reply commits to.
It answers in a strict JSON schema (``response_format`` ``json_schema`` with ``strict: true``):
``{"answer": <an option letter | a label | a number | a list of codes | null>, "committed": bool}``
where ``null`` / ``committed: false`` says the reply commits to no answer. Its reading is kept
beside the rule reading with the path that decided (:func:`decide`): the rules when they read
the reply, the reader model only when they did not and it found a committed answer.

The reader model drifts like any model: :func:`agreement` gives its agreement with the rules
on the replies both read, which a plan holds to a floor (``agreement_floor``).

Privacy: the reader model is sent the question and the reply after the plan's redactor (the
same text a result stores), never the raw reply, and nothing at all when the plan stores no
text (``privacy.store_text: false``): :func:`reader_messages` is the only place its prompt is built.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from medmon.baselines.canary import Canary
from medmon.probes.client import ModelClient
from medmon.probes.errors import ModelCallError
from medmon.probes.reading.base import Reading

__all__ = [
    "READER_MODEL",
    "RULES",
    "Decision",
    "ReaderSetup",
    "agreement",
    "decide",
    "parse_reader_answer",
    "read_with_model",
    "reader_messages",
    "response_format",
]

RULES = "rules"
READER_MODEL = "reader model"
SCHEMA_NAME = "medmon_final_answer"

_INSTRUCTIONS = (
    "You read a clinical model's reply to a question and report the final answer the reply commits to, "
    "as a careful clinician reading it would. The final statement wins over drafts; options or codes the "
    "reply rejects or only supposes are not its answer; a hedge between two answers, a refusal, or a reply "
    "cut off before its answer commits to none (answer null, committed false). Convert a number into the "
    "unit asked for. Do not answer the question yourself."
)


def _answer_schema(scorer: str, canary: Canary) -> dict[str, Any]:
    if scorer == "multiple_choice":
        letters = [chr(65 + i) for i in range(len(canary.choices or ()) or 4)]
        return {"type": ["string", "null"], "enum": [*letters, None]}
    if scorer == "yes_no_maybe":
        labels = [c.lower() for c in canary.choices] if canary.choices else ["yes", "no", "maybe"]
        return {"type": ["string", "null"], "enum": [*labels, None]}
    if scorer == "numeric_tolerance":
        return {"type": ["number", "null"]}
    if scorer == "set_f1":
        return {"type": ["array", "null"], "items": {"type": "string"}}
    raise ValueError(f"the reader model reads multiple_choice, yes_no_maybe, numeric_tolerance, set_f1; not {scorer!r}")


def response_format(scorer: str, canary: Canary) -> dict[str, Any]:
    """The strict JSON schema the reader model must answer in, for one canary."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": SCHEMA_NAME,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"answer": _answer_schema(scorer, canary), "committed": {"type": "boolean"}},
                "required": ["answer", "committed"],
                "additionalProperties": False,
            },
        },
    }


def reader_messages(
    canary: Canary, reply: str, *, redact: Callable[[str], str], store_text: bool
) -> list[dict[str, str]] | None:
    """The reader model's prompt, built from redacted text only; None when the plan stores no text."""
    if not store_text:
        return None
    asked = [f"Question:\n{redact(canary.prompt)}"]
    if canary.choices:
        asked.append("Options:\n" + "\n".join(f"{chr(65 + i)}. {redact(c)}" for i, c in enumerate(canary.choices)))
    if canary.unit is not None:
        asked.append(f"Unit asked for: {canary.unit or 'none (a score)'}")
    asked.append(f"Reply:\n{redact(reply)}")
    return [{"role": "system", "content": _INSTRUCTIONS}, {"role": "user", "content": "\n\n".join(asked)}]


def parse_reader_answer(scorer: str, text: str) -> Reading:
    """The reader model's JSON answer as a Reading; anything off the schema is no reading."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return Reading(None, "reader model: not JSON")
    if not isinstance(data, dict) or set(data) != {"answer", "committed"} or not isinstance(data["committed"], bool):
        return Reading(None, "reader model: off the schema")
    answer = data["answer"]
    if not data["committed"] or answer is None:
        return Reading(None, "reader model: no committed answer")
    if scorer == "numeric_tolerance":
        if isinstance(answer, bool) or not isinstance(answer, int | float):
            return Reading(None, "reader model: off the schema")
        return Reading(float(answer), READER_MODEL)
    if scorer == "set_f1":
        if not isinstance(answer, list) or not all(isinstance(c, str) for c in answer) or not answer:
            return Reading(None, "reader model: off the schema")
        return Reading(frozenset(c.strip().upper() for c in answer), READER_MODEL)
    if not isinstance(answer, str):
        return Reading(None, "reader model: off the schema")
    return Reading(answer.strip().upper() if scorer == "multiple_choice" else answer.strip().lower(), READER_MODEL)


@dataclass
class ReaderSetup:
    """The reader model as a probe run uses it: its client, the share of rule-read replies it is
    also asked (to measure its agreement with the rules), the plan's redactor and text policy."""

    client: ModelClient
    check_share: float
    redact: Callable[[str], str]
    store_text: bool
    rng: random.Random

    def checks(self) -> bool:
        """Whether this rule-read reply is also sent to the reader model (a random draw)."""
        return self.check_share > 0 and self.rng.random() < self.check_share


@dataclass(frozen=True)
class Decision:
    """The reading that counts, the path that decided it and why, with both readings kept."""

    reading: Reading
    path: str  # "rules", "reader model", or "none"
    why: str
    rules: Reading
    model: Reading | None


def decide(rules: Reading, model: Reading | None) -> Decision:
    """The rules decide when they read the reply; the reader model only when they could not.

    A reply neither reads is unparsed (path ``none``): the reader model never overrules a rule
    reading, so it cannot turn a wrong answer the rules read into a right one.
    """
    if rules.parsed:
        return Decision(rules, RULES, f"the rules read it ({rules.reason})", rules, model)
    if model is not None and model.parsed:
        why = f"the rules could not ({rules.reason}); the reader model read a committed answer"
        return Decision(model, READER_MODEL, why, rules, model)
    why = f"the rules could not ({rules.reason})" + (f"; {model.reason}" if model is not None else "")
    return Decision(rules, "none", why, rules, model)


def agreement(pairs: Iterable[tuple[Reading, Reading]]) -> tuple[float | None, int]:
    """Share of replies both the rules and the reader model read on which they agree, and how many."""
    both = [(r.value, m.value) for r, m in pairs if r.parsed and m.parsed]
    if not both:
        return None, 0
    same = sum(_same(a, b) for a, b in both)
    return same / len(both), len(both)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a))
    return bool(a == b)


async def read_with_model(
    client: ModelClient,
    scorer: str,
    canary: Canary,
    reply: str,
    *,
    redact: Callable[[str], str],
    store_text: bool = True,
) -> Reading:
    """Ask the reader model (``client``, its settings without a schema) for the reply's final answer.

    A failed call, a reply off the schema or a plan that stores no text is no reading (with the
    reason), never an exception: the rules' unparsed stands.
    """
    messages = reader_messages(canary, reply, redact=redact, store_text=store_text)
    if messages is None:
        return Reading(None, "reader model: not sent (the plan stores no text)")
    schema = response_format(scorer, canary)
    async with ModelClient(replace(client.settings, response_format=schema, temperature=0.0)) as reader:
        try:
            completion = await reader.complete(messages)
        except ModelCallError as exc:
            return Reading(None, f"reader model: call failed ({exc.kind})")
    return parse_reader_answer(scorer, completion.text)
