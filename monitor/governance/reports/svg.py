"""Small inline SVG charts for reports: no script, prints the same on paper as on screen.

A committee report is read as a document and often printed; plotly's HTML needs its script
and a browser. These charts are plain SVG with the baseline band, the baseline, and the
approval minimum drawn under the per-run scores, so 'below the line' is visible at a glance.
Moments are written as every surface writes them (``medmon.moments.display_time``), in the plan's
``display_timezone``, and the time axis names that zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from medmon.moments import display_time

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 22, 30
# A white outline under a line's label, so the scores drawn across it never hide what the line is.
_HALO = 'stroke="#fff" stroke-width="3" paint-order="stroke"'


def _x(at: datetime, start: datetime, end: datetime) -> float:
    span = (end - start).total_seconds() or 1.0
    share = min(max((at - start).total_seconds() / span, 0.0), 1.0)
    return LEFT + share * (WIDTH - LEFT - RIGHT)


def _y(value: float) -> float:
    value = min(max(value, 0.0), 1.0)
    return TOP + (1.0 - value) * (HEIGHT - TOP - BOTTOM)


def score_chart(
    points: Sequence[tuple[datetime, float]],
    *,
    start: datetime,
    end: datetime,
    baseline: float | None,
    baseline_band: tuple[float, float] | None,
    min_score: float,
    title: str,
    tz: str = "UTC",
) -> str:
    """Per-run mean scores over a period against the baseline (with its interval) and the minimum.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> t0, t1 = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, tzinfo=timezone.utc)
    >>> svg = score_chart([(t0, 0.8)], start=t0, end=t1, baseline=0.85, baseline_band=(0.8, 0.9),
    ...                   min_score=0.7, title="knowledge-qa")
    >>> svg.startswith("<svg") and "approval minimum 0.70" in svg
    True
    >>> "2026-11-01 01:00 CET" in score_chart([], start=t0, end=t1, baseline=None, baseline_band=None,
    ...                                       min_score=0.7, title="t", tz="Europe/Paris")
    True
    """
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(title)}" font-family="sans-serif" font-size="11">',
        f'<text x="{LEFT}" y="14" font-weight="bold">{escape(title)}</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = _y(tick)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{tick:.2f}</text>')
    if baseline_band is not None:
        lo, hi = baseline_band
        parts.append(
            f'<rect x="{LEFT}" y="{_y(hi):.1f}" width="{WIDTH - LEFT - RIGHT}" '
            f'height="{max(_y(lo) - _y(hi), 0.5):.1f}" fill="#2b7bb9" fill-opacity="0.12">'
            f"<title>baseline 95% interval {lo:.3f}-{hi:.3f}</title></rect>"
        )
    if baseline is not None:
        y = _y(baseline)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#2b7bb9" '
            f'stroke-dasharray="5 3"/><text x="{WIDTH - RIGHT}" y="{y - 4:.1f}" text-anchor="end" '
            f'fill="#2b7bb9" {_HALO}>baseline {baseline:.2f}</text>'
        )
    y = _y(min_score)
    parts.append(
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c0392b"/>'
        f'<text x="{WIDTH - RIGHT}" y="{y + 13:.1f}" text-anchor="end" fill="#c0392b" {_HALO}>'
        f"approval minimum {min_score:.2f}</text>"
    )
    coords = [(_x(at, start, end), _y(value)) for at, value in points]
    if len(coords) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        parts.append(f'<polyline points="{path}" fill="none" stroke="#333" stroke-width="1" stroke-opacity="0.5"/>')
    for (x, y), (at, value) in zip(coords, points):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="#333"><title>{display_time(at, tz)} '
            f"{value:.3f}</title></circle>"
        )
    axis_y = HEIGHT - BOTTOM + 16
    parts.append(f'<text x="{LEFT}" y="{axis_y}" fill="#555">{escape(display_time(start, tz))}</text>')
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{axis_y}" text-anchor="middle" fill="#555">'
        f"time ({escape(tz)})</text>"
    )
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{axis_y}" text-anchor="end" fill="#555">{escape(display_time(end, tz))}</text>'
    )
    if not points:
        parts.append(
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="#999">'
            "no monitoring runs in this period</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
