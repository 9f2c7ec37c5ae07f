"""`vcs --plot`: the worst output cosine of every op as a character plot in the terminal.

Same y domain as the HTML report's plot (report/scale.py). One column per op when they fit,
else neighbouring ops share a column. Green dots pass, red dots fail, a red cross in the
`nan/inf` row marks NaN/inf from the data; the threshold is a dashed row; a caret under the
axis points at the root cause, with its name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from precision_shell.report.points import OpCosine
from precision_shell.report.scale import Domain, cosine_domain

GUTTER = 9  # y labels ("  0.9800 ") before the axis
DEFAULT_HEIGHT = 16
_PASS, _FAIL, _THRESHOLD, _ROOT = "green", "red", "yellow", "bold red"


def plot_columns(width: int) -> int:
    """Columns left for the points in a terminal `width` wide."""
    return max(10, width - GUTTER - 1)


def _half_up(value: float) -> int:
    # not round(): banker's rounding would send x.5 cells alternately up and down
    return math.floor(value + 0.5)


def column_of(x: int, lo: int, hi: int, columns: int) -> int:
    if hi == lo:
        return columns // 2
    return _half_up((x - lo) / (hi - lo) * (columns - 1))


def row_of(value: float, domain: Domain, height: int) -> int:
    """Row 0 is the top (cosine 1.0), row height-1 the domain's bottom."""
    frac = (domain.hi - value) / (domain.hi - domain.lo)
    return min(height - 1, max(0, _half_up(frac * (height - 1))))


def cosine_plot_lines(
    points: Sequence[OpCosine],
    threshold: float,
    root_cause: str | None,
    width: int,
    height: int = DEFAULT_HEIGHT,
) -> list[Text]:
    """The plot as lines: `height` value rows, the nan/inf row, the axis, the Index labels
    and, when the root cause is plotted, its caret line."""
    columns = plot_columns(width)
    domain = cosine_domain([p.cosine for p in points], threshold)
    lo, hi = min(p.x for p in points), max(p.x for p in points)
    cells: list[list[tuple[str, str]]] = [[(" ", "")] * columns for _ in range(height + 1)]
    t_row = row_of(threshold, domain, height) if domain.lo <= threshold <= domain.hi else None
    if t_row is not None:
        cells[t_row] = [("┄", _THRESHOLD)] * columns
    # failing ops drawn last, so a shared column shows the failure
    for p in sorted(points, key=lambda p: p.fails):
        col = column_of(p.x, lo, hi, columns)
        if math.isnan(p.cosine):
            cells[height][col] = ("✖", _FAIL)
        else:
            cells[row_of(p.cosine, domain, height)][col] = ("●", _FAIL if p.fails else _PASS)
    labels = {0: domain.hi, height - 1: domain.lo}
    if t_row is not None:
        labels[t_row] = threshold
    lines = []
    for r, row in enumerate(cells):
        label = "nan/inf" if r == height else (f"{labels[r]:.4f}" if r in labels else "")
        line = Text(f"{label:>{GUTTER - 1}} │", style="dim")
        for char, style in row:
            line.append(char, style=style)
        lines.append(line)
    lines.append(Text(" " * GUTTER + "└" + "─" * columns, style="dim"))
    right = str(hi)
    lines.append(Text(" " * (GUTTER + 1) + str(lo).ljust(columns - len(right)) + right))
    root = next((p for p in points if p.op == root_cause), None)
    if root is not None:
        col = column_of(root.x, lo, hi, columns)
        label = _shorten(f"root cause: {root.op} [{root.x}]", columns - 2)
        pad = GUTTER + 1 + col
        if col + len(label) + 2 <= columns:
            caret = Text(" " * pad)
            caret.append("▲ " + label, _ROOT)
        else:  # no room on the right: the label goes left of the caret
            caret = Text(" " * max(0, pad - len(label) - 1))
            caret.append(label + " ▲", _ROOT)
        lines.append(caret)
    return lines


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(1, limit - 1)
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2) :]


def render_cosine_plot(
    console: Console, points: Sequence[OpCosine], threshold: float, root_cause: str | None
) -> None:
    if not points:
        console.print("no output cosine to plot", style="yellow")
        return
    console.print(
        Text(f"worst output cosine per op (x: Index), threshold {threshold:g}", style="bold")
    )
    for line in cosine_plot_lines(points, threshold, root_cause, console.width):
        console.print(line, soft_wrap=True, overflow="ignore", crop=False)
