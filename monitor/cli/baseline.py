"""``medmon baseline``: import and inspect pre-deployment evidence.

Each command parses its options, calls one ``baselines`` function and prints. Exit codes: 0 ok,
1 storage failure, 2 bad input (the message, on stderr, names the file and key).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlmodel import Session

from medmon.baselines import (
    DISAGREEMENT_FLAG,
    BaselineError,
    ImportReport,
    baseline_versions,
    canaries_for_baseline,
    import_helm_path,
    import_manual,
    leaderboard_entries,
    list_baselines,
    resolve,
)
from medmon.db import resolve_url, session_scope, utcnow
from medmon.moments import display_time
from medmon.monitor.cli.tables import fitted
from medmon.monitor.errors import MedmonError
from medmon.monitor.governance.audit import local_actor, record_baseline_import
from medmon.monitor.storage import make_engine
from medmon.probes.scoring import rescore

app = typer.Typer(
    help="Import and inspect pre-deployment baselines: HELM/MedHELM output or published scores.", no_args_is_help=True
)

MANUAL_SUFFIXES = (".csv", ".yaml", ".yml")
DbOption = Annotated[
    str | None, typer.Option("--db", help="Database URL (default: MEDMON_DATABASE_URL, else sqlite:///medmon.db).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@contextmanager
def _session(db: str | None) -> Iterator[Session]:
    """One transaction; bad input exits 2, storage failures exit 1."""
    try:
        with session_scope(make_engine(db or resolve_url())) as session:
            yield session
    except BaselineError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except MedmonError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def _ci(low: float, high: float) -> str:
    return f"[{low:.3g}, {high:.3g}]"


def _disagreement(disagreements: int | None, compared: int | None) -> str:
    """'3/400 differ (0.8%)', with a flag above DISAGREEMENT_FLAG; '-' when not re-scored."""
    if disagreements is None or not compared:
        return "-"
    rate = disagreements / compared
    flag = " FLAG" if rate > DISAGREEMENT_FLAG else ""
    return f"{disagreements}/{compared} differ ({rate:.1%}){flag}"


def _print_report(report: ImportReport) -> None:
    console = Console()  # wraps within the terminal: an 80-column one shows every line whole
    title = f"Imported {report.kind} evidence from {report.source}" + (
        f" (suite {report.suite})" if report.suite else ""
    )
    table = Table(
        *(
            "benchmark",
            "model",
            "metric",
            "version",
            "value",
            "normalized",
            "n",
            "95% CI",
            "canaries",
            "HELM vs medmon",
            "status",
        ),
        title=escape(title),
    )
    for b in report.baselines:
        table.add_row(
            *map(
                escape,
                (
                    b.benchmark + ("" if b.in_taxonomy else " (outside taxonomy)"),
                    b.model,
                    b.metric,
                    str(b.version),
                    f"{b.value:.4g}",
                    f"{b.normalized:.3f}",
                    str(b.n),
                    _ci(*b.ci),
                    f"{b.replayable}/{b.canaries}" if b.canaries else "-",
                    _disagreement(b.disagreements, b.compared),
                    "new" if b.created else "unchanged",
                ),
            )
        )
    console.print(fitted(table, console))
    for b in report.baselines:
        for note in b.notes:
            console.print(f"note: {b.benchmark}: {note}", markup=False)
    for skipped in report.skipped:
        console.print(f"skipped: {skipped.reason}", markup=False)
    console.print(
        f"{report.created} new, {report.unchanged} unchanged, {report.leaderboard_entries} leaderboard cells added"
    )


@app.command("import")
def import_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="benchmark_output, runs/<suite>, a run directory, or a .csv/.yaml file of published scores."
        ),
    ],
    suite: Annotated[
        str | None, typer.Option("--suite", help="Suite under benchmark_output/runs (needed when there are several).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Import only runs of this model (adapter_spec.model).")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on a run without a usable main metric instead of skipping it.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import baselines from HELM/MedHELM output or a manual score file; re-importing changes nothing."""
    with _session(db) as session:
        if path.suffix.lower() in MANUAL_SUFFIXES and not path.is_dir():
            report = import_manual(session, path)
        else:
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=Console(stderr=True), transient=True, disable=as_json) as bar:
                task = bar.add_task("reading runs", total=None)

                def advance(done: int, total: int, label: str) -> None:
                    bar.update(task, completed=done, total=total, description=label[:60])

                report = import_helm_path(
                    session, path, suite=suite, model=model, progress=advance, strict=strict, rescore=rescore
                )
        record_baseline_import(session, report.to_dict(), local_actor("medmon baseline import"), utcnow())
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _print_report(report)


def _row(b: Any) -> dict[str, Any]:
    data: dict[str, Any] = b.model_dump(mode="json")
    rate = b.disagreement_rate
    return data | {"disagreement_rate": rate, "disagreement_flagged": rate is not None and rate > DISAGREEMENT_FLAG}


@app.command("list")
def list_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List every stored baseline version."""
    with _session(db) as session:
        rows = [_row(b) for b in list_baselines(session)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(
        *("benchmark", "model", "metric", "v", "value", "normalized", "n", "95% CI", "source", "imported"),
        title="Baselines",
    )
    for r in rows:
        table.add_row(
            *map(
                escape,
                (
                    r["benchmark"],
                    r["model"],
                    r["metric"],
                    str(r["version"]),
                    f"{r['value']:.4g}",
                    f"{r['normalized']:.3f}",
                    str(r["n"]),
                    _ci(r["ci_low"], r["ci_high"]),
                    r["source_kind"],
                    display_time(datetime.fromisoformat(str(r["imported_at"]))),
                ),
            )
        )
    console = Console()
    console.print(fitted(table, console) if rows else "no baselines stored", markup=False)


@app.command("show")
def show_command(
    benchmark: Annotated[str, typer.Argument(help="Benchmark (MedHELM schema group, e.g. med_qa).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a benchmark's place in the taxonomy, its baseline versions, canary packs and leaderboard cells."""
    entry = resolve(benchmark)
    with _session(db) as session:
        versions = []
        for b in baseline_versions(session, benchmark):
            canaries = canaries_for_baseline(session, b.id) if b.id is not None else []
            versions.append(
                _row(b) | {"canaries": len(canaries), "replayable_canaries": sum(c.replayable for c in canaries)}
            )
        cells = [e.model_dump(mode="json") for e in leaderboard_entries(session, benchmark=benchmark)]
    if not versions and not entry.in_taxonomy:
        typer.echo(f"error: {benchmark}: no baseline stored and not a MedHELM benchmark", err=True)
        raise typer.Exit(2)
    info = {
        "benchmark": benchmark,
        "display_name": entry.display_name,
        "category": entry.category,
        "subcategory": entry.subcategory,
        "main_metric": entry.main_metric,
        "in_taxonomy": entry.in_taxonomy,
        "versions": versions,
        "leaderboard": cells,
    }
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    console = Console(soft_wrap=True)  # one line per fact, however long the source path
    console.print(
        f"[bold]{escape(entry.display_name)}[/bold] ({escape(benchmark)}): {escape(entry.category)} / "
        f"{escape(entry.subcategory or '-')}; main metric {escape(entry.main_metric or '-')}"
    )
    if not versions:
        console.print("no baselines stored", markup=False)
    for v in versions:
        console.print(
            f"v{v['version']} {v['model']} {v['metric']} = {v['value']:.4g} (normalized {v['normalized']:.3f}, "
            f"n={v['n']}, 95% CI {_ci(v['ci_low'], v['ci_high'])}) from {v['source_kind']} {v['source_path']}; "
            f"canaries {v['replayable_canaries']}/{v['canaries']} replayable; sha256 {v['source_sha256'][:12]}",
            markup=False,
        )
        if v["disagreements"] is not None:
            console.print(
                f"  scored again by medmon: {v['rescored_value']:.3f} over {v['rescored_n']} instances "
                f"({v['rescored_unparsed']} with an unreadable completion); HELM and medmon "
                f"{_disagreement(v['disagreements'], v['compared'])}; detectors use medmon's scores",
                markup=False,
            ) if v["rescored_value"] is not None else console.print(
                f"  scored again by medmon: no readable completion; HELM and medmon "
                f"{_disagreement(v['disagreements'], v['compared'])}",
                markup=False,
            )
    for c in cells:
        console.print(
            f"leaderboard {c['group']} / {c['table_title']}: {c['model']} {c['column']} = {c['value']:.4g}",
            markup=False,
        )
