"""The accuracy plot's points as arrays, computed over `ResultColumns` without building rows.

The same points `points.output_points` gives (one per compared output, in file order, at its
op's x), as parallel numpy arrays: what the big-result page encodes for its script, and what
`vcs --plot` reduces to each op's worst output cosine. With an `ErrorPanel` (a compare judged
by its own tool's rule) each point also carries that panel's value (`ErrorPanel.value_array`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from precision_shell.compare.results.columns import KIND_INPUT, ResultColumns
from precision_shell.compare.results.schema import parse_index
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.points import COSINE, MAX_ABS, RED, ErrorPanel, OpCosine


@dataclass
class PointArrays:
    rows: np.ndarray  # row numbers of the points in the columns, file order
    x: np.ndarray  # float64: the op's x (Index, or the op's ordinal when some Index is missing)
    cosine: np.ndarray  # float64; nan where not computed or non-finite
    has_cosine: np.ndarray  # bool: computed (finite or not)
    cosine_nonfinite: np.ndarray  # bool
    sqnr: np.ndarray  # float64 dB; inf for identical tensors; nan where none (`sqnr_of`)
    has_sqnr: np.ndarray
    sqnr_nonfinite: np.ndarray
    fails: np.ndarray  # bool: the rule fails the output
    root: np.ndarray  # bool: the root cause's outputs
    # the ErrorPanel's y (log10 on a log panel, -inf: a zero error there); nan where none or
    # non-finite; all nan / False without an error panel
    error: np.ndarray
    has_error: np.ndarray
    error_nonfinite: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


def _as_float(value: int | None) -> float:
    try:
        return float(value or 0)
    except OverflowError:
        return float("inf")


def op_x(table: ResultColumns) -> np.ndarray:
    """Each op code's x, as `points.x_positions`: the Index of its last row when every row
    has an Index, else its ordinal of first appearance."""
    n_ops = table.op_names.distinct
    i = table.layout.col.get("Index")
    texts = table.cells[i].all() if i is not None and len(table) else []
    numbers = [parse_index(t) for t in texts]
    if len(table) and i is not None and all(v is not None for v in numbers):
        index = np.array([_as_float(v) for v in numbers], dtype=np.float64)
        last = np.full(n_ops, -1, dtype=np.int64)
        np.maximum.at(last, table.op, np.arange(len(table), dtype=np.int64))
        return np.where(last >= 0, index[np.maximum(last, 0)], 0.0)
    first = table.op_first_rows()
    ordinal = np.empty(n_ops, dtype=np.float64)
    ordinal[np.argsort(first, kind="stable")] = np.arange(n_ops, dtype=np.float64)
    return ordinal


def point_arrays(
    table: ResultColumns,
    rule: ThresholdRule,
    root_cause: str | None,
    error_panel: ErrorPanel | None = None,
) -> PointArrays:
    """`points.output_points` as arrays: one point per output with a cosine, an SQNR or an
    error panel value."""
    n = len(table)
    nothing = np.zeros(n, dtype=bool)
    nan = np.full(n, np.nan)
    cos = table.values.get(COSINE, nan)
    cos_nf = table.nonfinite.get(COSINE, nothing)
    has_cos = cos_nf | ~np.isnan(cos)
    red = table.values.get(RED, nan)
    red_nf = table.nonfinite.get(RED, nothing)
    with np.errstate(divide="ignore", invalid="ignore"):
        valid_red = ~red_nf & ~np.isnan(red) & (red >= 0)
        # a distance of 0 is identical tensors, or a benchmark of zeros (the distance's
        # guard) against other values: no signal, all noise (QA Q27 #2: plotted as perfect)
        differs = np.nan_to_num(table.values.get(MAX_ABS, np.zeros(n)), nan=0.0) > 0
        zero = np.where(differs, -np.inf, np.inf)
        sqnr = np.where(red == 0, zero, -20.0 * np.log10(np.where(valid_red, red, 1.0)))
    has_sqnr = red_nf | valid_red
    sqnr = np.where(valid_red, sqnr, np.nan)
    sqnr[red_nf & (red == np.inf)] = -np.inf  # an infinite distance: all noise (`sqnr_of`)
    error, error_nf = nan, nothing
    if error_panel is not None:
        error_nf = table.nonfinite.get(error_panel.column, nothing)
        error = error_panel.value_array(table.values.get(error_panel.column, nan), error_nf)
    has_error = error_nf | ~np.isnan(error)
    keep = np.flatnonzero((table.kind != KIND_INPUT) & (has_cos | has_sqnr | has_error))
    root = np.zeros(len(keep), dtype=bool)
    if root_cause is not None:
        codes = [k for k in range(table.op_names.distinct) if table.op_names.value(k) == root_cause]
        if codes:
            root = table.op[keep] == codes[0]
    return PointArrays(
        rows=keep,
        x=op_x(table)[table.op[keep]] if len(keep) else np.zeros(0),
        cosine=np.where(cos_nf, np.nan, cos)[keep],
        has_cosine=has_cos[keep],
        cosine_nonfinite=cos_nf[keep],
        sqnr=sqnr[keep],
        has_sqnr=has_sqnr[keep],
        sqnr_nonfinite=red_nf[keep],
        fails=table.crossing(rule)[keep],
        root=root,
        error=error[keep],
        has_error=has_error[keep],
        error_nonfinite=error_nf[keep],
    )


def op_cosines_of_columns(table: ResultColumns, rule: ThresholdRule) -> list[OpCosine]:
    """`points.op_cosines` over the columns: per op, the worst output cosine (the last
    NaN/inf one, else the first lowest), ops in x order, ties by their first point."""
    pts = point_arrays(table, rule, None)
    sel = np.flatnonzero(pts.has_cosine)
    if len(sel) == 0:
        return []
    ops = table.op[pts.rows[sel]]
    n_ops = table.op_names.distinct
    chosen = np.full(n_ops, -1, dtype=np.int64)
    finite = sel[~pts.cosine_nonfinite[sel]]
    if len(finite):
        order = np.lexsort((finite, pts.cosine[finite], table.op[pts.rows[finite]]))
        ranked = finite[order]
        ranked_ops = table.op[pts.rows[ranked]]
        head = np.ones(len(ranked), dtype=bool)
        head[1:] = ranked_ops[1:] != ranked_ops[:-1]
        chosen[ranked_ops[head]] = ranked[head]
    nonfinite = sel[pts.cosine_nonfinite[sel]]
    if len(nonfinite):
        last = np.full(n_ops, -1, dtype=np.int64)
        np.maximum.at(last, table.op[pts.rows[nonfinite]], nonfinite)
        chosen = np.where(last >= 0, last, chosen)
    first_point = np.full(n_ops, len(pts), dtype=np.int64)
    np.minimum.at(first_point, ops, sel)
    codes = np.flatnonzero(chosen >= 0)
    picks = chosen[codes]
    order = np.lexsort((first_point[codes], pts.x[picks]))
    out = []
    for code, p in zip(codes[order].tolist(), picks[order].tolist(), strict=True):
        x = pts.x[p]
        out.append(
            OpCosine(
                int(x),
                table.op_names.value(code),
                float(np.nan if pts.cosine_nonfinite[p] else pts.cosine[p]),
                bool(pts.fails[p]),
            )
        )
    return out
