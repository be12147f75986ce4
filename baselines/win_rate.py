"""HELM's mean win rate: how many models a model beats, on average over a table's columns.

Per column (skipping columns whose ``lower_is_better`` is unset, and columns with fewer than two
values) a row scores ``(rows strictly worse + (ties - 1) / 2) / (n - 1)``, where ``ties`` counts
the row itself and ``n`` the rows with a value. A row's mean win rate averages that over the
columns where it has a value; a row with no such column has none.

References
----------
crfm-helm 0.5.16, ``helm/benchmark/presentation/summarize.py`` (``compute_aggregate_row_win_rates``);
``helm-format.md`` §6.
"""

from __future__ import annotations

from collections.abc import Sequence


def column_win_rates(values: Sequence[float | None], *, lower_is_better: bool) -> list[float | None]:
    """Each row's win rate in one column (None where the row has no value or n < 2).

    Examples
    --------
    >>> column_win_rates([1.0, 0.5, 0.0], lower_is_better=False)
    [1.0, 0.5, 0.0]
    >>> column_win_rates([0.7, 0.7, None, 0.1], lower_is_better=False)
    [0.75, 0.75, None, 0.0]
    >>> column_win_rates([2.0, 1.0], lower_is_better=True)
    [0.0, 1.0]
    """
    present = [v for v in values if v is not None]
    n = len(present)
    if n < 2:
        return [None] * len(values)
    rates: list[float | None] = []
    for v in values:
        if v is None:
            rates.append(None)
            continue
        worse = sum(1 for other in present if (other > v if lower_is_better else other < v))
        ties = sum(1 for other in present if other == v)
        rates.append((worse + (ties - 1) / 2) / (n - 1))
    return rates


def mean_win_rates(columns: Sequence[tuple[Sequence[float | None], bool | None]]) -> list[float | None]:
    """Each row's mean win rate over ``columns``, given as ``(values by row, lower_is_better)``.

    Examples
    --------
    >>> mean_win_rates([([1.0, 0.5, 0.0], False), ([3.0, 2.0, 1.0], True), ([9.0, 9.0, 9.0], None)])
    [0.5, 0.5, 0.5]
    >>> mean_win_rates([([0.9], False)])
    [None]
    """
    if not columns:
        return []
    rows = len(columns[0][0])
    sums = [0.0] * rows
    counts = [0] * rows
    for values, lower_is_better in columns:
        if lower_is_better is None:
            continue
        for i, rate in enumerate(column_win_rates(values, lower_is_better=lower_is_better)):
            if rate is not None:
                sums[i] += rate
                counts[i] += 1
    return [sums[i] / counts[i] if counts[i] else None for i in range(rows)]
