"""Charts as inline SVG, drawn on the server: no chart library, no script, nothing to fetch.

Each function takes labelled numbers and returns markup with a <title> and an aria-label, so a
screen reader gets what the picture shows; pages put the same numbers in a table beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT = 640, 200
LEFT, BOTTOM, TOP, RIGHT = 44, 22, 10, 8


def _nice_max(value: float) -> float:
    """A round axis maximum at or above `value` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    step = 1.0
    while step * 10 <= value:
        step *= 10
    while step > value:
        step /= 10
    for factor in (1, 2, 5, 10):
        if step * factor >= value:
            return step * factor
    return step * 10


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _axis(top: float, unit: str) -> SafeString:
    plot_h = HEIGHT - TOP - BOTTOM
    ticks = []
    for step in range(5):
        value = top * step / 4
        y = TOP + plot_h - plot_h * step / 4
        ticks.append((LEFT, y, WIDTH - RIGHT, y, LEFT - 4, y + 4, _number(value) + unit))
    return format_html_join(
        "",
        '<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" class="grid"/>'
        '<text x="{}" y="{:.1f}" class="tick" text-anchor="end">{}</text>',
        ticks,
    )


def _x_labels(labels: Sequence[str], centres: Sequence[float], every: int) -> SafeString:
    rows = [
        (x, HEIGHT - 6, label)
        for index, (label, x) in enumerate(zip(labels, centres, strict=True))
        if index % every == 0
    ]
    return format_html_join(
        "", '<text x="{:.1f}" y="{}" class="tick" text-anchor="middle">{}</text>', rows
    )


def bar_chart(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    title: str,
    label_every: int = 1,
    unit: str = "",
) -> SafeString:
    """Stacked bars: one bar per label, one segment per series (CSS class s0, s1, ...)."""
    totals = [sum(values[i] for _, values in series) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(labels))
    bars = []
    for index, label in enumerate(labels):
        base = TOP + plot_h
        for number, (name, values) in enumerate(series):
            height = plot_h * values[index] / top
            if height <= 0:
                continue
            base -= height
            bars.append(
                (
                    number,
                    LEFT + index * slot + slot * 0.15,
                    base,
                    slot * 0.7,
                    height,
                    f"{label}: {name} {_number(values[index])}{unit}",
                )
            )
    rects = format_html_join(
        "",
        '<rect class="s{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}">'
        "<title>{}</title></rect>",
        bars,
    )
    centres = [LEFT + (i + 0.5) * slot for i in range(len(labels))]
    return format_html(
        '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>'
        "{}{}{}</svg>",
        WIDTH,
        HEIGHT,
        title,
        title,
        _axis(top, unit),
        rects,
        _x_labels(labels, centres, label_every),
    )


def line_chart(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    label_every: int = 1,
    unit: str = "",
) -> SafeString:
    """Lines (CSS class s0, s1, ...) with a dot per known value; None leaves a gap."""
    known = [v for _, values in series for v in values if v is not None]
    top = _nice_max(max(known, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(1, len(labels) - 1)
    centres = [LEFT + i * step for i in range(len(labels))]
    parts = []
    for number, (name, values) in enumerate(series):
        runs: list[list[tuple[float, float]]] = [[]]
        dots = []
        for index, value in enumerate(values):
            if value is None:
                runs.append([])
                continue
            point = (centres[index], TOP + plot_h - plot_h * value / top)
            runs[-1].append(point)
            dots.append((number, *point, f"{labels[index]}: {name} {_number(value)}{unit}"))
        for run in runs:
            if len(run) > 1:
                points = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                parts.append(format_html('<polyline class="s{}" points="{}"/>', number, points))
        parts.append(
            format_html_join(
                "",
                '<circle class="s{}" cx="{:.1f}" cy="{:.1f}" r="2.5"><title>{}</title></circle>',
                dots,
            )
        )
    return format_html(
        '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>'
        "{}{}{}</svg>",
        WIDTH,
        HEIGHT,
        title,
        title,
        _axis(top, unit),
        format_html_join("", "{}", ((p,) for p in parts)),
        _x_labels(labels, centres, label_every),
    )
