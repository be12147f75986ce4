"""How every ``medmon`` command is given its plan: ``medmon COMMAND PLAN ...``.

The plan is the first positional argument of every command that reads one (``check``, ``probe
run``, ``serve``, ``report``, ``change record``, ``audit verify``, ...), or ``$MEDMON_PLAN`` when
the argument is left out. A few commands once took ``--plan PLAN`` instead; that spelling still
works on them, with a deprecation warning, so existing scripts keep running while they are updated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

# The commands' shared output: one line per fact, however long (a path, a reason).
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
EXIT_INPUT = 2

PLAN_HELP = "The monitoring plan (YAML); the first argument of every command that reads a plan."

PlanArg = Annotated[Path, typer.Argument(metavar="PLAN", envvar="MEDMON_PLAN", show_envvar=True, help=PLAN_HELP)]
"""A required plan, given first (or in ``$MEDMON_PLAN``)."""

OptionalPlanArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="PLAN",
        envvar="MEDMON_PLAN",
        show_envvar=True,
        help=PLAN_HELP + " '--plan PLAN' is a deprecated alias that still works.",
    ),
]
"""A plan argument on commands that used to take ``--plan``: optional for the parser, so the old
spelling still parses; :func:`chosen_plan` then insists on one of the two."""

LegacyPlanOption = Annotated[
    Path | None, typer.Option("--plan", hidden=True, help="Deprecated: give the plan as the first argument instead.")
]


def _from_environment(path: Path | None) -> bool:
    env = os.environ.get("MEDMON_PLAN")
    return path is not None and env is not None and Path(env) == path


def chosen_plan(
    positional: Path | None, legacy: Path | None, command: str, *, required: bool = True, implicit: Path | None = None
) -> Path | None:
    """The plan a command was given, warning once on stderr when it came through ``--plan``.

    ``implicit`` is the file a command used to read when given no plan at all (``plan.yaml`` in
    the working folder); it is still read, with the same warning, when it exists. Exit 2 when a
    required plan is missing or the two spellings name different files.
    """
    if legacy is not None:
        if positional is not None and positional != legacy and not _from_environment(positional):
            err.print(
                f"[red]error:[/red] the plan is given twice ({positional} and --plan {legacy}); give it "
                f"once, as the first argument",
                highlight=False,
            )
            raise typer.Exit(EXIT_INPUT)
        err.print(
            f"warning: '--plan' is deprecated; give the plan as the first argument: medmon {command} {legacy} ...",
            highlight=False,
            markup=False,
        )
        return legacy
    if positional is not None:
        return positional
    if implicit is not None and implicit.exists():
        err.print(
            f"warning: no plan given, reading ./{implicit} (deprecated); give the plan as the first "
            f"argument: medmon {command} {implicit} ...",
            highlight=False,
            markup=False,
        )
        return implicit
    if required:
        err.print(
            f"[red]error:[/red] missing the plan: medmon {command} PLAN ... (or set MEDMON_PLAN)", highlight=False
        )
        raise typer.Exit(EXIT_INPUT)
    return None
