"""The accuracy plot as a hand-built static SVG: output cosine per op, and SQNR per op.

Both panels share the x axis (the op's Index, execution order). Every point carries a
`<title>` (the hover text) with the op and its values. Points are green when they pass, red
below the cosine threshold, hollow red in the "nan/inf" lane under the axis when the data
held NaN/inf. The root cause gets a ring in both panels, a vertical line and a label.

A compare judged by its own tool's rule (`ErrorPanel`: MegEngine, SigmaStar) has that rule's
error metric in the second panel instead of SQNR, and a cosine line only when the rule limits
the cosine. What the second panel shows (title, ticks, reference line, domain) is `SecondPanel`,
shared with the big page's plot (big_plot.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape

from precision_shell.report.points import ErrorPanel, PlotPoint
from precision_shell.report.scale import (
    Domain,
    LinearScale,
    cosine_domain,
    decibel_domain,
    nice_step,
)

WIDTH = 900
FRAME_LEFT, FRAME_RIGHT = 72.0, 868.0  # the plot frame; points stay 8 px inside it
X_FIRST, X_LAST = 80.0, 860.0  # where the first and the last Index sit
PASS_COLOR, FAIL_COLOR, ROOT_COLOR, THRESHOLD_COLOR = "#2e7d32", "#c62828", "#b00020", "#e65100"
POINT_RADIUS = 3.5
RULE_FAILS = "fails the rule"  # a point another tool's rule fails: legend and hover text


@dataclass(frozen=True)
class PanelBox:
    """Vertical geometry of one panel: values map onto [top, top + height]."""

    top: float
    height: float

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def title_y(self) -> float:
        return self.top - 22

    @property
    def nan_y(self) -> float:  # the lane for NaN/inf, under the frame
        return self.bottom + 22

    @property
    def label_y(self) -> float:  # x tick labels
        return self.bottom + 42


COSINE_BOX = PanelBox(top=40.0, height=200.0)
SQNR_BOX = PanelBox(top=340.0, height=140.0)
HEIGHT = 540


def x_scale(points: Sequence[PlotPoint]) -> LinearScale:
    xs = [p.x for p in points] or [0]
    return LinearScale(min(xs), max(xs), X_FIRST, X_LAST)


def y_scale(domain: Domain, box: PanelBox) -> LinearScale:
    return LinearScale(domain.lo, domain.hi, box.bottom, box.top)


def cosine_plot_domain(points: Sequence[PlotPoint], threshold: float) -> Domain:
    return cosine_domain([p.cosine for p in points if p.cosine is not None], threshold)


def threshold_sqnr(threshold: float) -> float | None:
    """The SQNR a cosine threshold stands for, by the small-error equivalence
    RED ~ sqrt(2 (1 - cos)) (equal norms); None for a threshold of 1 or more."""
    if threshold >= 1.0:
        return None
    return -20.0 * math.log10(math.sqrt(2.0 * (1.0 - threshold)))


@dataclass(frozen=True)
class SecondPanel:
    """What the second panel shows: SQNR, its reference line the SQNR the cosine threshold
    stands for; or an `ErrorPanel` metric, its reference line the rule's limit."""

    name: str  # "SQNR" or the error column: the aria-label and the hover text name it
    data_panel: str  # "sqnr" / "error": the SVG group's data-panel
    title: str
    tick_text: Callable[[float], str]
    reference: float | None  # the reference line's value, None: no line
    reference_label: str

    def domain(self, values: Iterable[float]) -> Domain:
        """Nice bounds around the finite values and the reference. A zero error on a log
        panel (-inf) sits on the bottom edge: the domain reaches a decade below the rest."""
        values = list(values)
        if any(v == -math.inf for v in values):
            finite = [v for v in values if math.isfinite(v)]
            if self.reference is not None:
                finite.append(self.reference)
            values.append(min(finite, default=0.0) - 1)
        return decibel_domain(values, self.reference)


def second_panel(threshold: float, error_panel: ErrorPanel | None) -> SecondPanel:
    """The second panel for a cosine threshold (SQNR), or for `error_panel` when given."""
    if error_panel is None:
        sqnr = threshold_sqnr(threshold)
        return SecondPanel(
            "SQNR",
            "sqnr",
            "SQNR per op, dB = -20·log10(RelativeEuclideanDistance)",
            lambda t: f"{t:g}",
            sqnr,
            f"≈ cosine {threshold:g} ({sqnr:.1f} dB)" if sqnr is not None else "",
        )
    reference = error_panel.reference
    return SecondPanel(
        error_panel.column,
        "error",
        error_panel.title,
        error_panel.tick_text,
        reference,
        f"{error_panel.column} limit {error_panel.limit:g}" if reference is not None else "",
    )


def _f(value: float) -> str:
    return f"{value:.2f}"


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "not computed"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def point_title(p: PlotPoint, threshold: float, error_panel: ErrorPanel | None = None) -> str:
    below = p.cosine is not None and not math.isnan(p.cosine) and p.cosine < threshold
    # a cosine above its threshold fails on another limit (the relative distance)
    failed = f"below threshold {threshold:g}" if error_panel is None and below else RULE_FAILS
    verdict = "NaN/inf in the data" if p.cosine_nonfinite else (failed if p.fails else "pass")
    if error_panel is None:
        values = (
            f"cosine {p.cosine_text or 'not computed'} · rel. Euclidean {p.red_text or 'NaN'}"
            f" · SQNR {_num(p.sqnr_db)}{' dB' if p.sqnr_db is not None else ''}"
        )
    else:
        values = (
            f"cosine {p.cosine_text or 'not computed'} · {error_panel.column}"
            f" {p.error_text or 'not computed'}"
        )
    lines = [p.op, f"Index {p.x} · {p.op_type} · {p.tensor}", values, verdict]
    if p.root_cause:
        lines.append("root cause")
    return "\n".join(lines)


def _point(p: PlotPoint, cx: float, cy: float, nonfinite: bool, title: str) -> str:
    cls = "pt " + ("fail" if p.fails else "pass") + (" nonfinite" if nonfinite else "")
    cls += " root" if p.root_cause else ""
    color = FAIL_COLOR if p.fails else PASS_COLOR
    paint = (
        f'fill="#ffffff" stroke="{color}" stroke-width="1.5"' if nonfinite else f'fill="{color}"'
    )
    return (
        f'<circle class="{cls}" cx="{_f(cx)}" cy="{_f(cy)}" r="{POINT_RADIUS}" {paint}'
        f' data-x="{p.x}" data-line="{p.line}" data-op="{escape(p.op)}" data-tensor="{escape(p.tensor)}">'
        f"<title>{escape(title)}</title></circle>"
    )


def _frame(box: PanelBox, domain: Domain, title: str, tick_text) -> list[str]:  # noqa: ANN001
    ys = y_scale(domain, box)
    out = [
        f'<text x="{_f(FRAME_LEFT)}" y="{_f(box.title_y)}" font-weight="bold">{escape(title)}</text>',
        f'<rect x="{_f(FRAME_LEFT)}" y="{_f(box.top - 8)}" width="{_f(FRAME_RIGHT - FRAME_LEFT)}"'
        f' height="{_f(box.height + 16)}" fill="none" stroke="#9e9e9e"/>',
    ]
    for tick in domain.ticks():
        y = ys(tick)
        out.append(
            f'<line x1="{_f(FRAME_LEFT)}" x2="{_f(FRAME_RIGHT)}" y1="{_f(y)}" y2="{_f(y)}"'
            ' stroke="#eeeeee"/>'
        )
        out.append(
            f'<text x="{_f(FRAME_LEFT - 6)}" y="{_f(y + 4)}" text-anchor="end">'
            f"{escape(tick_text(tick))}</text>"
        )
    out.append(
        f'<text x="{_f(FRAME_LEFT - 6)}" y="{_f(box.nan_y + 4)}" text-anchor="end"'
        f' fill="{FAIL_COLOR}">nan/inf</text>'
    )
    return out


def _x_ticks(xs: LinearScale, box: PanelBox) -> list[str]:
    lo, hi = int(xs.d0), int(xs.d1)
    step = max(1, round(nice_step(max(hi - lo, 1), ticks=10)))
    first = -(-lo // step) * step
    ticks = sorted({lo, hi, *range(first, hi + 1, step)})
    # the end labels win over a regular tick that would sit on top of them
    ticks = [t for t in ticks if t in (lo, hi) or min(abs(t - lo), abs(hi - t)) >= step / 2]
    return [
        f'<text x="{_f(xs(t))}" y="{_f(box.label_y)}" text-anchor="middle">{t}</text>'
        for t in ticks
    ]


def _hline(y: float, label: str) -> list[str]:
    return [
        f'<line class="threshold" x1="{_f(FRAME_LEFT)}" x2="{_f(FRAME_RIGHT)}" y1="{_f(y)}"'
        f' y2="{_f(y)}" stroke="{THRESHOLD_COLOR}" stroke-width="1.2" stroke-dasharray="6 4"/>',
        f'<text class="threshold-label" x="{_f(FRAME_RIGHT - 4)}" y="{_f(y - 4)}"'
        f' text-anchor="end" fill="{THRESHOLD_COLOR}">{escape(label)}</text>',
    ]


def _legend(failed: str = "below threshold") -> list[str]:
    items = [
        (f'fill="{PASS_COLOR}"', "pass"),
        (f'fill="{FAIL_COLOR}"', failed),
        (f'fill="#ffffff" stroke="{FAIL_COLOR}" stroke-width="1.5"', "NaN/inf"),
        (f'fill="none" stroke="{ROOT_COLOR}" stroke-width="2"', "root cause"),
    ]
    out, x = [], FRAME_RIGHT - 380
    for paint, label in items:
        r = 7 if label == "root cause" else POINT_RADIUS
        out.append(f'<circle cx="{_f(x)}" cy="{_f(COSINE_BOX.title_y - 4)}" r="{r}" {paint}/>')
        out.append(f'<text x="{_f(x + 10)}" y="{_f(COSINE_BOX.title_y)}">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    return out


def _panel_points(
    points: Sequence[PlotPoint],
    xs: LinearScale,
    ys: LinearScale,
    box: PanelBox,
    value,  # noqa: ANN001  (PlotPoint -> float | None)
    threshold: float,
    error_panel: ErrorPanel | None = None,
    in_band: Callable[[PlotPoint], bool] | None = None,
) -> tuple[list[str], list[tuple[float, float]]]:
    """The circles of one panel, and where the root cause's points are (for the rings);
    `in_band`: which points go in the NaN/inf band (default: a value of nan)."""
    out, rings = [], []
    title_of = {id(p): point_title(p, threshold, error_panel) for p in points}
    for p in points:
        v = value(p)
        if v is None:
            continue
        nonfinite = in_band(p) if in_band is not None else math.isnan(v)
        # an infinite SQNR (identical tensors) sits on the top edge, a zero error on a log
        # panel (-inf) on the bottom edge
        if nonfinite:
            y = box.nan_y
        elif math.isinf(v):
            y = box.top if v > 0 else box.bottom
        else:
            y = ys(v)
        cx = xs(p.x)
        out.append(_point(p, cx, y, nonfinite, title_of[id(p)]))
        if p.root_cause:
            rings.append((cx, y))
    return out, rings


def _root_marks(
    rings: list[tuple[float, float]], label: str | None, root_x: float | None
) -> list[str]:
    if root_x is None:
        return []
    out = [
        f'<line class="root-line" x1="{_f(root_x)}" x2="{_f(root_x)}"'
        f' y1="{_f(COSINE_BOX.top - 8)}" y2="{_f(SQNR_BOX.nan_y + 8)}" stroke="{ROOT_COLOR}"'
        ' stroke-width="1" stroke-dasharray="3 3" opacity="0.7"/>'
    ]
    for cx, cy in rings:
        out.append(
            f'<circle class="root-ring" cx="{_f(cx)}" cy="{_f(cy)}" r="8" fill="none"'
            f' stroke="{ROOT_COLOR}" stroke-width="2"/>'
        )
    if label:
        left = root_x < (X_FIRST + X_LAST) / 2
        out.append(
            f'<text class="root-label" x="{_f(root_x + (6 if left else -6))}"'
            f' y="{_f(COSINE_BOX.top + 8)}" text-anchor="{"start" if left else "end"}"'
            f' fill="{ROOT_COLOR}" font-weight="bold" stroke="#ffffff" stroke-width="3"'
            f' paint-order="stroke">{escape(label)}</text>'
        )
    return out


def accuracy_plot_svg(
    points: Sequence[PlotPoint],
    threshold: float,
    root_label: str | None = None,
    root_index: int | None = None,
    error_panel: ErrorPanel | None = None,
    cosine_line: bool = True,
) -> str:
    """The two-panel SVG; `root_label` names the root cause next to its marker, which stands
    on its points (or at `root_index` when none of its outputs has a value). With
    `error_panel` the second panel is that metric (data-panel "error") instead of SQNR;
    `cosine_line` False: the rule does not limit the cosine, no threshold line."""
    xs = x_scale(points)
    cos_domain = cosine_plot_domain(points, threshold)
    cos_y = y_scale(cos_domain, COSINE_BOX)
    second = second_panel(threshold, error_panel)
    if error_panel is None:
        values = [p.sqnr_db for p in points if p.sqnr_db is not None]
    else:
        values = [p.error for p in points if p.error is not None]
    db_domain = second.domain(values)
    db_y = y_scale(db_domain, SQNR_BOX)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="accuracy-plot" width="{WIDTH}"'
        f' height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif"'
        ' font-size="11" role="img"'
        f' aria-label="output cosine similarity and {escape(second.name)} per op">'
    ]
    parts.append('<g class="panel" data-panel="cosine">')
    parts += _cosine_frame(xs, cos_domain, threshold, cosine_line)
    cos_points, cos_rings = _panel_points(
        points, xs, cos_y, COSINE_BOX, lambda p: p.cosine, threshold, error_panel
    )
    parts += cos_points
    parts += _legend() if error_panel is None else _legend(RULE_FAILS)
    parts.append("</g>")
    parts.append(f'<g class="panel" data-panel="{second.data_panel}">')
    parts += _second_frame(xs, db_domain, second)
    if error_panel is None:
        db_points, db_rings = _panel_points(
            points,
            xs,
            db_y,
            SQNR_BOX,
            lambda p: p.sqnr_db,
            threshold,
            in_band=lambda p: p.sqnr_nonfinite,  # -inf from the device's inf: the band too
        )
    else:
        db_points, db_rings = _panel_points(
            points, xs, db_y, SQNR_BOX, lambda p: p.error, threshold, error_panel
        )
    parts += db_points
    parts.append("</g>")
    root_xs = [xs(p.x) for p in points if p.root_cause]
    if not root_xs and root_index is not None and points:
        root_xs = [xs(root_index)]
    parts.append('<g class="root-cause">')
    parts += _root_marks(cos_rings + db_rings, root_label, root_xs[0] if root_xs else None)
    parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _cosine_frame(xs: LinearScale, domain: Domain, threshold: float, line: bool) -> list[str]:
    """The cosine panel's frame, ticks and (`line`) threshold line: no points."""
    parts = _frame(
        COSINE_BOX,
        domain,
        "Output cosine similarity per op (x: Index, execution order)",
        lambda t: f"{t:.{_decimals(domain.step)}f}",
    )
    parts += _x_ticks(xs, COSINE_BOX)
    if line and domain.lo <= threshold <= domain.hi:
        parts += _hline(y_scale(domain, COSINE_BOX)(threshold), f"cosine threshold {threshold:g}")
    return parts


def _second_frame(xs: LinearScale, domain: Domain, second: SecondPanel) -> list[str]:
    """The second panel's frame, ticks and reference line: no points."""
    parts = _frame(SQNR_BOX, domain, second.title, second.tick_text)
    parts += _x_ticks(xs, SQNR_BOX)
    if second.reference is not None:
        parts += _hline(y_scale(domain, SQNR_BOX)(second.reference), second.reference_label)
    return parts


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))
