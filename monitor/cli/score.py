"""``medmon score``: score answers from the command line, to see why an answer scored as it did.

One answer::

    medmon score multiple_choice "**Answer: B**" --reference B
    medmon score numeric_tolerance "CrCl is 63.6 mL/min" --reference 63.6 --tolerance 60.42:66.78

or a file of them, one JSON object a line (``scorer``, ``answer``, ``references``, optional
``choices``, ``tolerance`` as ``{"lower": l, "upper": u}`` or ``"l:u"``, ``unit``, ``aliases`` and
``finish_reason``)::

    medmon score --file answers.jsonl --json

Each answer reports ``score``, ``correct``, ``parsed`` (False: the scorer could not read an
answer, so it is neither right nor wrong), ``extracted`` (what was read, in ``unit`` when the
reference has one), ``path`` (``rules`` when the rules read it, ``none`` when nothing could) and
``reason`` (the rule that read it, or why nothing could be read). Exit codes: 0 scored, 2 bad input (unknown scorer,
a malformed line: the message names the file and line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from medmon.baselines import CanaryFormatError
from medmon.baselines.canary import read_jsonl
from medmon.monitor.cli.plan_arg import EXIT_INPUT, err
from medmon.monitor.cli.tables import fitted
from medmon.probes.errors import UnknownScorer
from medmon.probes.reading.reader_model import RULES
from medmon.probes.scoring import SCORERS, Score, score_answer


class BadLine(ValueError):
    """A line of an answers file that cannot be scored; the message names the file, line and field."""


def _tolerance(value: Any, where: str) -> dict[str, float] | None:
    if value is None:
        return None
    if isinstance(value, str):
        low, sep, high = value.partition(":")
        try:
            if not sep:
                raise ValueError
            return {"lower": float(low), "upper": float(high)}
        except ValueError:
            raise BadLine(f"{where}: field 'tolerance': expected 'LOWER:UPPER', got {value!r}") from None
    if isinstance(value, dict) and {"lower", "upper"} <= set(value):
        try:
            return {"lower": float(value["lower"]), "upper": float(value["upper"])}
        except (TypeError, ValueError):
            pass
    raise BadLine(f"{where}: field 'tolerance': expected {{\"lower\": number, \"upper\": number}} or 'LOWER:UPPER'")


def _strings(value: Any, field: str, where: str, *, required: bool) -> list[str] | None:
    if value is None and not required:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadLine(f"{where}: field {field!r}: expected a list of strings")
    return value


def _score_row(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadLine(f"{where}: expected a JSON object")
    allowed = {"scorer", "answer", "references", "choices", "tolerance", "id", "unit", "finish_reason", "aliases"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadLine(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    scorer, answer = data.get("scorer"), data.get("answer")
    if not isinstance(scorer, str) or scorer not in SCORERS:
        raise BadLine(f"{where}: field 'scorer': expected one of {', '.join(sorted(SCORERS))}, got {scorer!r}")
    if not isinstance(answer, str):
        raise BadLine(f"{where}: field 'answer': expected a string")
    references = _strings(data.get("references"), "references", where, required=True) or []
    for name in ("unit", "finish_reason"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise BadLine(f"{where}: field {name!r}: expected a string")
    aliases = data.get("aliases")
    if aliases is not None and not (
        isinstance(aliases, dict)
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in aliases.values())
    ):
        raise BadLine(
            f'{where}: field \'aliases\': expected an object of option letter to names, e.g. {{"B": ["PCI"]}}'
        )
    score = score_answer(
        scorer,
        answer,
        references,
        choices=_strings(data.get("choices"), "choices", where, required=False),
        tolerance=_tolerance(data.get("tolerance"), where),
        unit=data.get("unit"),
        finish_reason=data.get("finish_reason"),
        aliases={str(k).upper(): tuple(v) for k, v in aliases.items()} if aliases else None,
    )
    return {**({"id": data["id"]} if "id" in data else {}), "scorer": scorer, **_view(score)}


def _view(score: Score) -> dict[str, Any]:
    reads = score.parsed is not None  # a scorer that reads an answer out of the reply
    return {
        "score": score.value,
        "correct": score.correct,
        "parsed": score.parsed,
        "extracted": score.extracted,
        **({"unit": score.detail["unit"]} if "unit" in score.detail else {}),
        # which path read the answer: the rules, or none when the reply could not be read; the
        # reader model is asked by probe runs whose plan enables it (stored as ``read_path``), not here
        "path": (RULES if score.parsed else "none") if reads else "-",
        "reason": score.reason,
    }


def _print(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    shown = [
        {
            "#": str(row.get("id", i)),
            "scorer": row["scorer"],
            "score": "-" if row["score"] is None else f"{row['score']:.3g}",
            "correct": str(row["correct"]),
            "parsed": "-" if row["parsed"] is None else ("yes" if row["parsed"] else "NO (unparsed)"),
            "extracted": str(row["extracted"] or "-")
            + (f" {row['unit']}" if row.get("unit") and row["extracted"] else ""),
            "path": row["path"],
            "reason": row["reason"] or "-",
        }
        for i, row in enumerate(rows, start=1)
    ]
    console = Console(soft_wrap=True)
    if len(shown) == 1:  # one answer: one fact a line, never wrapped
        for key, value in list(shown[0].items())[1:]:
            console.print(f"{key}: {value}", markup=False, highlight=False)
        return
    table = Table()
    for column in shown[0] if shown else ():
        table.add_column(column)
    for view in shown:
        table.add_row(*map(escape, view.values()))
    console.print(fitted(table, console))


def score_command(
    scorer: Annotated[str | None, typer.Argument(help=f"Scorer: {', '.join(sorted(SCORERS))}.")] = None,
    answer: Annotated[str | None, typer.Argument(help="The model's answer, as it wrote it.")] = None,
    reference: Annotated[
        list[str] | None, typer.Option("--reference", "-r", help="A correct answer (repeat for several).")
    ] = None,
    choices: Annotated[
        list[str] | None,
        typer.Option("--choices", help="An option's text, in order A, B, ... (repeat); for yes_no_maybe, the labels."),
    ] = None,
    tolerance: Annotated[str | None, typer.Option("--tolerance", help="LOWER:UPPER, for numeric_tolerance.")] = None,
    unit: Annotated[
        str | None,
        typer.Option(
            "--unit", help="The reference's unit (numeric_tolerance): an answer in another unit is converted."
        ),
    ] = None,
    finish_reason: Annotated[
        str | None,
        typer.Option(
            "--finish-reason", help="The reply's finish reason; 'length' (cut off) reads only a committed answer."
        ),
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", help="A JSONL file of answers (see the module help).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
) -> None:
    """Score answers and show what was read and why: one from the arguments, or a JSONL file of them.

    Examples: medmon score multiple_choice "**Answer: B**" -r B ;
    medmon score numeric_tolerance "CrCl is 63.6 mL/min" -r 63.6 --tolerance 60.42:66.78 ;
    medmon score --file answers.jsonl --json (each line: scorer, answer, references, and optional
    choices, tolerance). "parsed: NO" means the scorer could not read an answer: it counts as
    neither right nor wrong, and its share is the format-drift stream. Exit code 2 on bad input.
    """
    try:
        if file is not None:
            if scorer is not None or answer is not None:
                raise BadLine("give either SCORER ANSWER or --file, not both")
            rows = [_score_row(data, where) for where, data in read_jsonl(file, what="answers file")]
        else:
            if scorer is None or answer is None:
                raise BadLine("give SCORER and ANSWER (with --reference), or --file answers.jsonl")
            data = {
                "scorer": scorer,
                "answer": answer,
                "references": reference or [],
                "choices": choices,
                "tolerance": tolerance,
                "unit": unit,
                "finish_reason": finish_reason,
            }
            rows = [_score_row({k: v for k, v in data.items() if v is not None}, "arguments")]
    except (BadLine, UnknownScorer, CanaryFormatError) as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(EXIT_INPUT) from exc
    _print(rows, as_json)
