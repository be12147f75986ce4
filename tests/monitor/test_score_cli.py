"""``medmon score``: why an answer scored as it did, for one answer or a file of them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.probes.extraction import read_answer

runner = CliRunner()
CORPUS = Path(__file__).parents[1] / "probes" / "corpus" / "answers.jsonl"


def test_one_answer_shows_what_was_read_and_why() -> None:
    result = runner.invoke(app, ["score", "multiple_choice", "It is not B, it is **D**.", "-r", "D", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)
    assert row == {
        "scorer": "multiple_choice",
        "score": 1.0,
        "correct": True,
        "parsed": True,
        "extracted": "D",
        "path": "rules",
        "reason": "answer cue",
    }


def test_an_unreadable_answer_is_reported_unparsed_with_its_reason() -> None:
    result = runner.invoke(
        app, ["score", "numeric_tolerance", "60-65 mL/min", "-r", "63.6", "--tolerance", "60.42:66.78"]
    )
    assert result.exit_code == 0, result.output
    assert "NO (unparsed)" in result.output and "a range (60 to 65)" in result.output


def test_a_file_of_corpus_answers_is_scored_line_by_line(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines()][::7]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "\n".join(
            json.dumps(
                {k: r[k] for k in ("id", "scorer", "answer", "references")}
                | {k: r[k] for k in ("choices", "tolerance") if r.get(k)}
            )
            for r in rows
        )
        + "\n",
        "utf-8",
    )
    result = runner.invoke(app, ["score", "--file", str(answers), "--json"])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert [o["id"] for o in out] == [r["id"] for r in rows]
    for o, r in zip(out, rows, strict=True):
        reading = read_answer(r["scorer"], r["answer"], r.get("choices"))
        assert o["parsed"] is reading.parsed and o["reason"] == reading.reason
        assert (o["score"] is None) is (not reading.parsed)


def test_bad_input_names_the_line_and_exits_2(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        '{"scorer": "multiple_choice", "answer": "B", "references": ["B"]}\n'
        '{"scorer": "multiple_choice", "answer": "B", "references": ["B"], "tolerance": "x"}\n'
    )
    result = runner.invoke(app, ["score", "--file", str(answers)])
    assert result.exit_code == 2
    assert f"{answers}:2: field 'tolerance'" in result.output
    unknown = runner.invoke(app, ["score", "no_such", "B", "-r", "B"])
    assert unknown.exit_code == 2 and "expected one of" in unknown.output
    assert runner.invoke(app, ["score"]).exit_code == 2


def test_an_answer_in_another_unit_is_converted_and_a_cut_off_one_is_not_read() -> None:
    converted = runner.invoke(
        app,
        [
            "score",
            "numeric_tolerance",
            "CrCl is 0.90 mL/s.",
            "-r",
            "54",
            "--tolerance",
            "51.3:56.7",
            "--unit",
            "mL/min",
        ],
    )
    assert converted.exit_code == 0, converted.output
    assert "extracted: 54 mL/min" in converted.output and "correct: True" in converted.output
    assert "path: rules" in converted.output
    cut = runner.invoke(
        app,
        ["score", "numeric_tolerance", "70 x 80 gives 5600. The denominator", "-r", "54", "--finish-reason", "length"],
    )
    assert cut.exit_code == 0, cut.output
    assert "NO (unparsed)" in cut.output and "path: none" in cut.output and "token limit" in cut.output
