"""Tables that stay readable in any terminal: a table when it fits, one block per row when not.

A rich table squeezed below its natural width truncates every cell to ``benc…``; an 80-column
terminal (or a CI log) then shows nothing one can act on. When the table does not fit, each
row is printed instead as its first cell followed by ``column  value`` lines that wrap within
the width, so every field stays whole and no line runs past the terminal's edge.
"""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text


def fits(table: Table, console: Console) -> bool:
    """Whether ``table`` shows every cell whole within the console's width."""
    unbounded = console.options.update(width=100_000, max_width=100_000)
    return Measurement.get(console, unbounded, table).maximum <= console.width


def as_records(table: Table) -> RenderableType:
    """The rows of ``table`` as blocks: the first cell as a heading, then each other column's value."""
    headers = [str(c.header) for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    blocks: list[RenderableType] = []
    if table.title:
        blocks.append(Text(str(table.title), style="bold"))
    for i in range(table.row_count):
        head = columns[0][i]
        blocks.append(Text.assemble((f"{headers[0]}: ", "dim"), head if isinstance(head, Text) else str(head)))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for header, cells in zip(headers[1:], columns[1:]):
            grid.add_row(header, cells[i])
        blocks.append(Padding(grid, (0, 0, 1, 2), expand=False))
    return Group(*blocks)


def fitted(table: Table, console: Console) -> RenderableType:
    """``table`` itself when it fits the console, else the same rows as blocks (:func:`as_records`)."""
    return table if fits(table, console) else as_records(table)
