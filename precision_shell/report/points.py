"""What the accuracy plots show, read off the result CSV rows.

A point is one compared output: its x is the op's Index (execution order), its y the output's
cosine similarity; the second panel shows SQNR in dB computed from the relative Euclidean
distance (SQNR = -20 log10 RED). `nan`/`inf` propagated from the data are "non-finite" points,
drawn in their own lane; a printed `NaN` (not computed) is no point at all.

A compare judged by another tool's rule (MegEngine, SigmaStar: their CSVs have no relative
Euclidean distance) shows that rule's error metric in the second panel instead (`ErrorPanel`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from precision_shell.compare.results.schema import NONFINITE_TEXTS, ResultRow
from precision_shell.compare.results.thresholds import ThresholdRule

COSINE = "CosineSimilarity"
RED = "RelativeEuclideanDistance"
MAX_ABS = "MaxAbsoluteError"


@dataclass(frozen=True)
class PlotPoint:
    x: int  # the op's Index (execution order); its ordinal in the file when Index is missing
    op: str
    op_type: str
    tensor: str
    line: int  # CSV line, to find the row in the table
    cosine: float | None  # None: not computed; nan: non-finite in the data
    cosine_text: str
    # None: RED not computed; inf: identical tensors; nan / -inf: from a distance the data
    # made non-finite (`sqnr_of`)
    sqnr_db: float | None
    red_text: str
    fails: bool  # the threshold rule fails this output
    root_cause: bool
    error: float | None = None  # the ErrorPanel's y (log10 when it is a log panel), if any
    error_text: str = ""

    @property
    def cosine_nonfinite(self) -> bool:
        return self.cosine is not None and math.isnan(self.cosine)

    @property
    def sqnr_nonfinite(self) -> bool:
        """The distance the SQNR comes from holds the data's NaN/inf (plotted in that band)."""
        return self.sqnr_db is not None and (
            math.isnan(self.sqnr_db) or self.red_text in NONFINITE_TEXTS
        )


def cosine_of(row: ResultRow) -> float | None:
    """The cosine of a row: None when not computed, nan when the data held NaN/inf."""
    if row.nonfinite(COSINE):
        return math.nan
    value = row.metrics.get(COSINE, math.nan)
    return None if math.isnan(value) else value


def sqnr_of(row: ResultRow) -> float | None:
    """SQNR in dB from the relative Euclidean distance: None when not computed, inf for
    identical tensors; from a distance the data made non-finite, -inf for an infinite one
    (the device's inf against a finite benchmark: all noise, as summary.json says), else nan."""
    if row.nonfinite(RED):
        return -math.inf if row.metrics.get(RED) == math.inf else math.nan
    red = row.metrics.get(RED, math.nan)
    if math.isnan(red) or red < 0:
        return None
    if red == 0:  # identical, or a benchmark of zeros (the distance's guard) against other values
        return -math.inf if row.metrics.get(MAX_ABS, 0.0) > 0 else math.inf
    return -20.0 * math.log10(red)


@dataclass(frozen=True)
class ErrorPanel:
    """The second panel of a compare judged by its own tool's rule: that rule's error metric
    per output (log10 of it when `log`), with the rule's limit as the reference line."""

    column: str
    limit: float | None
    log: bool

    def value(self, row: ResultRow) -> float | None:
        """None when not computed, nan when the data held NaN/inf, -inf for a zero error on
        a log panel."""
        if row.nonfinite(self.column):
            return math.nan
        value = row.metrics.get(self.column, math.nan)
        if math.isnan(value):
            return None
        if not self.log:
            return value
        return -math.inf if value <= 0 else math.log10(value)

    def value_array(self, values: np.ndarray, nonfinite: np.ndarray) -> np.ndarray:
        """`value` over a whole column (the big page's arrays): nan where not computed or
        non-finite (`nonfinite` tells the two apart), -inf for a zero error on a log panel."""
        values = np.where(nonfinite, np.nan, np.asarray(values, dtype=np.float64))
        if not self.log:
            return values
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log10(np.where(values > 0, values, 1.0))
        return np.where(values <= 0, -np.inf, np.where(np.isnan(values), np.nan, logs))

    @property
    def reference(self) -> float | None:
        if self.limit is None or not math.isfinite(self.limit):
            return None
        if self.log:
            return math.log10(self.limit) if self.limit > 0 else None
        return self.limit

    @property
    def title(self) -> str:
        if self.log:
            return f"{self.column} per op, log10 scale (lower is better; zero on the bottom edge)"
        return f"{self.column} per op (lower is better)"

    def tick_text(self, tick: float) -> str:
        if not self.log:
            return f"{tick:g}"
        return f"1e{tick:g}" if tick == int(tick) else f"{10.0**tick:.2g}"


def is_output(row: ResultRow) -> bool:
    # a TensorIndex that is not op:kind:k (old files) cannot be told apart: count it as output
    return row.kind in ("output", "")


def x_positions(rows: Sequence[ResultRow]) -> dict[str, int]:
    """Op -> x: the CSV Index when every row has one, else the op's ordinal in the file."""
    if rows and all(r.index is not None for r in rows):
        return {r.op_name: r.index for r in rows}  # type: ignore[misc]
    order: dict[str, int] = {}
    for row in rows:
        order.setdefault(row.op_name, len(order))
    return order


def output_points(
    rows: Sequence[ResultRow],
    rule: ThresholdRule,
    root_cause: str | None,
    error_panel: ErrorPanel | None = None,
) -> list[PlotPoint]:
    """One point per compared output (cosine, RED or the error panel's metric computed), in
    file order."""
    xs = x_positions(rows)
    points = []
    for row in rows:
        if not is_output(row):
            continue
        cos, sqnr = cosine_of(row), sqnr_of(row)
        error = error_panel.value(row) if error_panel is not None else None
        if cos is None and sqnr is None and error is None:
            continue
        fails = rule.fails(row)
        points.append(
            PlotPoint(
                x=xs[row.op_name],
                op=row.op_name,
                op_type=row.op_type,
                tensor=row.tensor_index,
                line=row.line,
                cosine=cos,
                cosine_text=row.texts.get(COSINE, ""),
                sqnr_db=sqnr,
                red_text=row.texts.get(RED, ""),
                fails=fails,
                root_cause=row.op_name == root_cause,
                error=error,
                error_text=row.texts.get(error_panel.column, "") if error_panel else "",
            )
        )
    return points


@dataclass(frozen=True)
class OpCosine:
    """An op's worst output cosine, for the per-op curve of `vcs --plot`."""

    x: int
    op: str
    cosine: float  # nan when an output held NaN/inf
    fails: bool


def op_cosines(rows: Sequence[ResultRow], rule: ThresholdRule) -> list[OpCosine]:
    """Per op (in x order), the worst output cosine; ops without a cosine are left out."""
    worst: dict[str, OpCosine] = {}
    for p in output_points(rows, rule, None):
        if p.cosine is None:
            continue
        seen = worst.get(p.op)
        if (
            seen is None
            or math.isnan(p.cosine)
            or (not math.isnan(seen.cosine) and p.cosine < seen.cosine)
        ):
            worst[p.op] = OpCosine(p.x, p.op, p.cosine, p.fails)
    return sorted(worst.values(), key=lambda o: o.x)
