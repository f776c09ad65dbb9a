"""Charts as inline SVG, drawn on the server: no chart library, no script, nothing to fetch.

Each function takes labelled numbers and returns markup with a <title> and an aria-label, so a
screen reader gets what the picture shows; pages put the same numbers in a table beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 480, 220
LEFT, BOTTOM, TOP, RIGHT = 68, 24, 12, 8
TICKS = 4


def _nice_max(value: float, *, whole: bool = True) -> float:
    """A round axis maximum at or above `value`: TICKS steps of 1, 2 or 5 times a power of
    ten (whole steps for counts)."""
    want = value / TICKS if value > 0 else 1.0
    step = 1.0
    while step * 10 <= want:
        step *= 10
    while step > want:
        step /= 10
    for factor in (1, 2, 5, 10):
        if step * factor >= want:
            step *= factor
            break
    if whole:
        step = max(1.0, step)
    return step * TICKS


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.3g}"


def _axis(top: float, unit: str) -> SafeString:
    plot_h = HEIGHT - TOP - BOTTOM
    ticks = []
    for step in range(TICKS + 1):
        y = TOP + plot_h - plot_h * step / TICKS
        text = escape(_number(top * step / TICKS) + unit)
        ticks.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{text}</text>'
        )
    return mark_safe("".join(ticks))  # noqa: S308 - every text in it is escaped


def _x_labels(labels: Sequence[str], centres: Sequence[float], every: int) -> SafeString:
    rows = [
        f'<text x="{x:.1f}" y="{HEIGHT - 6}" class="tick" text-anchor="middle">'
        f"{escape(label)}</text>"
        for index, (label, x) in enumerate(zip(labels, centres, strict=True))
        if index % every == 0
    ]
    return mark_safe("".join(rows))  # noqa: S308 - every text in it is escaped


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
            tip = escape(f"{label}: {name} {_number(values[index])}{unit}")
            x = LEFT + index * slot + slot * 0.15
            bars.append(
                f'<rect class="s{number}" x="{x:.1f}" y="{base:.1f}" width="{slot * 0.7:.1f}" '
                f'height="{height:.1f}"><title>{tip}</title></rect>'
            )
    centres = [LEFT + (i + 0.5) * slot for i in range(len(labels))]
    return _svg(title, _axis(top, unit) + "".join(bars) + _x_labels(labels, centres, label_every))


def _svg(title: str, body: str) -> SafeString:
    name = escape(title)
    return mark_safe(  # noqa: S308 - every text in it is escaped
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{name}">'
        f"<title>{name}</title>{body}</svg>"
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
    top = _nice_max(max(known, default=0), whole=False)
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
            tip = escape(f"{labels[index]}: {name} {_number(value)}{unit}")
            dots.append(
                f'<circle class="s{number}" cx="{point[0]:.1f}" cy="{point[1]:.1f}" r="2.5">'
                f"<title>{tip}</title></circle>"
            )
        for run in runs:
            if len(run) > 1:
                points = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                parts.append(f'<polyline class="s{number}" points="{points}"/>')
        parts += dots
    return _svg(title, _axis(top, unit) + "".join(parts) + _x_labels(labels, centres, label_every))
