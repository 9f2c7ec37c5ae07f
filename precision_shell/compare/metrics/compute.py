"""msaccucmp's ten comparison metrics (FORMATS.md section 6), plus SQNR, error ratios, fp16 overflow.

`compute_metrics` is the one entry point: it picks msaccucmp's bool or float32 path and returns a
`MetricRow`; `csv_values` prints it. The values equal CANN msaccucmp's to the printed digits:
`metric_float32` repeats msaccucmp's float32 operations in the order numpy 1.x (which CANN
requires: >= 1.19.2, < 2.0) runs them, and `metric_stream` sums in numpy 1.x's block order.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import cast

import numpy as np

from precision_shell.compare.metrics.cells import (
    ACC_REL,
    COSINE,
    EXTRA_METRICS,
    KL,
    MAX_ABS,
    MAX_REL,
    MEAN_ABS,
    MEAN_REL,
    METRIC_COLUMNS,
    METRIC_FIELDS,
    REL_EUCLID,
    REL_RATIO,
    RMSE,
    SQNR,
    STD,
    MetricValues,
    csv_values,
)
from precision_shell.compare.metrics.float32 import cosine_norms, float32_metrics
from precision_shell.compare.metrics.stream import (
    CHUNK,
    BlockSums,
    chunk_bounds,
)

__all__ = [
    "EXTRA_METRICS",
    "METRIC_COLUMNS",
    "METRIC_FIELDS",
    "MetricRow",
    "compute_metrics",
    "csv_values",
]

_StdPair = tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True)
class MetricRow:
    """One tensor pair's metrics; NaN where not computed (`not_computed`, `reasons` say why)."""

    cosine: float
    max_abs_error: float
    accumulated_relative_error: float
    relative_euclidean_distance: float
    kl_divergence: float
    standard_deviation: _StdPair | None  # ((mean_x, std_x), (mean_y, std_y)), unrounded
    mean_abs_error: float
    rmse: float
    max_relative_error: float
    mean_relative_error: float
    sqnr_db: float
    ratio_rel_err_below_0_001: float
    ratio_rel_err_below_0_005: float
    reasons: tuple[str, ...]  # msaccucmp-style CompareFailReason parts, in column order
    element_count: int
    not_computed: frozenset[str] = frozenset()  # column/extra names printed as `NaN`
    cosine_from_zero_norms: bool = False  # both norms ~0: msaccucmp prints the literal "1.0"

    @classmethod
    def failed(cls, reason: str, element_count: int = 0) -> MetricRow:
        """A row where nothing could be computed (e.g. element counts differ)."""
        nan = math.nan
        return cls(
            *(nan,) * 5,
            None,
            *(nan,) * 7,
            reasons=(reason,),
            element_count=element_count,
            not_computed=frozenset(METRIC_COLUMNS + EXTRA_METRICS),
        )


def compute_metrics(
    device: np.ndarray,
    benchmark: np.ndarray,
    algorithms: Collection[str] | None = None,
) -> MetricRow:
    """msaccucmp's metrics of `device` (x) against `benchmark` (y), both flattened.

    Pass the device tensor in the shape msaccucmp compares (after layout conversion): its shape
    decides the scalar case, as in msaccucmp (every dim 1, or no dims). `algorithms` limits the
    work to those names (METRIC_COLUMNS, EXTRA_METRICS); the others are NaN, not computed.
    Raises ValueError when the element counts differ or a name is unknown.
    """
    x_arr, y_arr = np.asarray(device), np.asarray(benchmark)
    # Contiguous, like msaccucmp's flatten(): numpy 1.x's sum order assumes it.
    x, y = np.ravel(x_arr), np.ravel(y_arr)
    if x.size != y.size:
        raise ValueError(
            f"element counts differ: device {x.size} {tuple(x_arr.shape)} vs benchmark "
            f"{y.size} {tuple(y_arr.shape)}"
        )
    wanted = _wanted(algorithms)
    out = MetricValues(wanted)
    # msaccucmp's utils.get_shape_type: sum(shape) == len(shape), so () and (1, 1) are scalars.
    scalar = sum(x_arr.shape) == len(x_arr.shape)
    with np.errstate(all="ignore"):
        if x.dtype == np.bool_ and y.dtype == np.bool_:
            _bool_metrics(x, y, scalar, out)
        else:
            float32_metrics(x, y, scalar, out)
    return _row(out, int(x.size))


def _wanted(algorithms: Collection[str] | None) -> frozenset[str]:
    known = METRIC_COLUMNS + EXTRA_METRICS
    if algorithms is None:
        return frozenset(known)
    unknown = sorted(set(algorithms) - set(known))
    if unknown:
        raise ValueError(f"unknown metric {', '.join(unknown)}; known: {', '.join(known)}")
    return frozenset(algorithms)


def _bool_metrics(x: np.ndarray, y: np.ndarray, scalar: bool, out: MetricValues) -> None:
    """msaccucmp keeps bool pairs as bool: only cosine (in float64) and RED are defined."""
    want = out.wanted
    for name in METRIC_COLUMNS:
        if name in want and name not in (COSINE, REL_EUCLID):
            out.skip(name, f"Algorithm {name} does not support Boolean types.")
    for name in EXTRA_METRICS:
        out.skip(name)
    if COSINE in want:
        if scalar:
            out.set(COSINE, 1.0, "This tensor is scalar.")
        else:
            # np.linalg.norm casts bool to float64: the norm is sqrt(count of True), exactly.
            x_norm = np.sqrt(np.float64(np.count_nonzero(x)))
            y_norm = np.sqrt(np.float64(np.count_nonzero(y)))
            norms = cosine_norms(x_norm, y_norm, out)
            if norms:
                total = _bool_cosine_sum(x, y, *norms)
                out.set(COSINE, 1.0 if total > 1.0 else float(total))
    if REL_EUCLID in want:
        if np.any(y):
            # msaccucmp reaches `x - y`, which numpy refuses for bools: the algorithm fails.
            out.skip(
                REL_EUCLID,
                "Cannot compare by RelativeEuclideanDistance. Boolean tensors cannot be subtracted.",
            )
        else:
            out.set(REL_EUCLID, 0.0)


def _bool_cosine_sum(
    x: np.ndarray, y: np.ndarray, x_norm: np.floating, y_norm: np.floating
) -> np.floating:
    size = min(CHUNK, x.size)
    a, b = np.empty(size, np.float64), np.empty(size, np.float64)
    total = BlockSums(np.float64)
    for start, stop in chunk_bounds(int(x.size)):
        m = stop - start
        np.divide(x[start:stop], x_norm, out=a[:m])
        np.divide(y[start:stop], y_norm, out=b[:m])
        np.multiply(a[:m], b[:m], out=a[:m])
        total.add(a[:m])
    return total.total()


def _row(out: MetricValues, count: int) -> MetricRow:
    def value(name: str, missing: object = math.nan) -> object:
        return missing if name in out.not_computed else out.values.get(name, missing)

    # MetricValues holds what the metrics computed: numpy float scalars (np.float32 is no
    # `float` subclass, though it prints and compares as one), Python floats, and tuples.
    def number(name: str) -> float:
        return cast(float, value(name))

    below_0_001, below_0_005 = cast(tuple[float, float], value(REL_RATIO, (math.nan, math.nan)))

    return MetricRow(
        cosine=number(COSINE),
        max_abs_error=number(MAX_ABS),
        accumulated_relative_error=number(ACC_REL),
        relative_euclidean_distance=number(REL_EUCLID),
        kl_divergence=number(KL),
        standard_deviation=cast("_StdPair | None", value(STD, None)),
        mean_abs_error=number(MEAN_ABS),
        rmse=number(RMSE),
        max_relative_error=number(MAX_REL),
        mean_relative_error=number(MEAN_REL),
        sqnr_db=number(SQNR),
        ratio_rel_err_below_0_001=below_0_001,
        ratio_rel_err_below_0_005=below_0_005,
        reasons=out.reasons(),
        element_count=count,
        not_computed=frozenset(out.not_computed),
        cosine_from_zero_norms=out.cosine_from_zero_norms,
    )
