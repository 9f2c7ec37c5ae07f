"""Element-wise comparison of two tensors (`cp`): worst and first elements, allclose, error ratio.

Everything is vectorised; both sides are cast up to float64 before differencing so float16
inputs don't lose the difference itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from precision_shell.errors import PrecisionError

_EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class ElementRow:
    index: tuple[int, ...]
    left: float
    right: float
    diff: float
    relative: float


@dataclass(frozen=True)
class ElementwiseComparison:
    shape: tuple[int, ...]
    count: int
    atol: float
    rtol: float
    worst: list[ElementRow]
    first: list[ElementRow]
    allclose: bool
    mismatch_count: int
    cosine: float
    max_abs_error: float
    max_relative_error: float
    truncated_from: tuple[int, int] | None  # (left count, right count) when --flatten-to-min

    @property
    def error_ratio(self) -> float:
        return self.mismatch_count / self.count if self.count else 0.0


def _rows(indices: np.ndarray, shape: tuple[int, ...], x, y, diff, rel) -> list[ElementRow]:
    coords = np.unravel_index(indices, shape) if shape else [np.zeros_like(indices)]
    out = []
    for j, flat in enumerate(indices):
        idx = tuple(int(c[j]) for c in coords)
        out.append(
            ElementRow(idx, float(x[flat]), float(y[flat]), float(diff[flat]), float(rel[flat]))
        )
    return out


def compare_elements(
    left: np.ndarray,
    right: np.ndarray,
    atol: float = 1e-4,
    rtol: float = 1e-4,
    top: int = 20,
    flatten_to_min: bool = False,
) -> ElementwiseComparison:
    """Compare `left` (e.g. device) with `right` (benchmark) element by element."""
    truncated = None
    if left.size != right.size:
        if not flatten_to_min:
            raise PrecisionError(
                f"element counts differ: left {left.size} {tuple(left.shape)} vs right "
                f"{right.size} {tuple(right.shape)}; use --flatten-to-min to compare the first "
                f"{min(left.size, right.size)} elements"
            )
        truncated = (int(left.size), int(right.size))
        n = min(left.size, right.size)
        left, right = left.reshape(-1)[:n], right.reshape(-1)[:n]
    shape = tuple(right.shape) if left.shape == right.shape or truncated else (int(right.size),)
    x = np.asarray(left, dtype=np.float64).reshape(-1)
    y = np.asarray(right, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(x - y)
        rel = np.where(np.abs(y) > _EPS, diff / np.abs(y), 0.0)
        close = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    count = int(x.size)
    mismatch = int(count - close.sum())
    ranked = np.where(np.isnan(diff), np.inf, diff)
    k = min(top, count)
    if k:
        worst_idx = np.argpartition(-ranked, k - 1)[:k]
        worst_idx = worst_idx[np.argsort(-ranked[worst_idx], kind="stable")]
    else:
        worst_idx = np.array([], dtype=np.int64)
    first_idx = np.arange(k)
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    # FORMATS.md section 6: a scalar is 1.0, both norms ~0 is 1.0, one norm ~0 is NaN.
    if count == 1 or nx <= _EPS and ny <= _EPS:
        cosine = 1.0
    elif nx <= _EPS or ny <= _EPS:
        cosine = math.nan
    else:
        with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN data: a NaN cosine
            cosine = float(min(np.dot(x / nx, y / ny), 1.0))
    return ElementwiseComparison(
        shape=shape,
        count=count,
        atol=atol,
        rtol=rtol,
        worst=_rows(worst_idx, shape, x, y, diff, rel),
        first=_rows(first_idx, shape, x, y, diff, rel),
        allclose=mismatch == 0,
        mismatch_count=mismatch,
        cosine=cosine,
        # NaN/inf in the data propagate, as msaccucmp's max does (FORMATS.md section 6).
        max_abs_error=float(diff.max()) if count else math.nan,
        max_relative_error=float(rel.max()) if count else math.nan,
        truncated_from=truncated,
    )
