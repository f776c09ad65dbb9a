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
        base: float = TOP + plot_h
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


GRAPH_SIZE = 420


def neighbourhood_svg(
    *,
    centre: str,
    neighbours: Sequence[tuple[int, str, int, str]],
    edges: Sequence[tuple[int, int, int]],
    label: str,
) -> SafeString:
    """An entity in the middle, its neighbours on a circle around it (each a link, its spoke
    as thick as the facts they share), and the ties among the neighbours. `neighbours`:
    (id, name, facts shared with the centre, url); `edges`: (id, id, facts shared)."""
    import math

    size, middle = GRAPH_SIZE, GRAPH_SIZE / 2
    radius = size / 2 - 70
    most = max((n for _, _, n, _ in neighbours), default=1)
    at: dict[int, tuple[float, float]] = {}
    for index, (ident, _, _, _) in enumerate(neighbours):
        angle = 2 * math.pi * index / max(len(neighbours), 1) - math.pi / 2
        at[ident] = (middle + radius * math.cos(angle), middle + radius * math.sin(angle))
    parts = [
        f'<svg class="graph" viewBox="0 0 {size} {size}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>'
    ]
    for a, b, n in edges:
        if a in at and b in at:
            (x1, y1), (x2, y2) = at[a], at[b]
            parts.append(
                f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" class="tie" '
                f'stroke-width="{1 + 3 * n / most:.1f}"><title>{n}</title></line>'
            )
    for ident, _, n, _ in neighbours:
        x, y = at[ident]
        parts.append(
            f'<line x1="{middle}" y1="{middle}" x2="{x:.1f}" y2="{y:.1f}" class="spoke" '
            f'stroke-width="{1 + 5 * n / most:.1f}"/>'
        )
    for ident, name, n, url in neighbours:
        x, y = at[ident]
        anchor = "start" if x > middle + 1 else "end" if x < middle - 1 else "middle"
        dx = 8 if anchor == "start" else -8 if anchor == "end" else 0
        # A label straight above or below its node sits clear of it, away from the centre.
        dy = 4 if anchor != "middle" else (-10 if y < middle else 18)
        parts.append(
            f'<a href="{escape(url)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="6" class="node"/>'
            f'<text x="{x + dx:.1f}" y="{y + dy:.1f}" text-anchor="{anchor}" class="name">'
            f"{escape(name[:24])} ({n})</text></a>"
        )
    parts.append(
        f'<circle cx="{middle}" cy="{middle}" r="10" class="centre"/>'
        f'<text x="{middle}" y="{middle - 16}" text-anchor="middle" class="name centre">'
        f"{escape(centre[:30])}</text></svg>"
    )
    return mark_safe("".join(parts))  # noqa: S308 - every text in it is escaped
