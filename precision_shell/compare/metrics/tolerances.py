"""Default `cp` tolerances by dtype: what a correctly rounded value of that dtype can miss by.

A pair takes the looser side's tolerances: a float16 device tensor against its float32
benchmark is judged at float16's precision (its rounding alone is up to 2**-11 relative,
about 4.9e-4, so a faithful float16 result is always "allclose").
"""

from __future__ import annotations

import numpy as np

# dtype name -> (rtol, atol); float32/float64 keep numpy's allclose defaults
_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-5, 1e-8),
    "float32": (1e-5, 1e-8),
    "complex128": (1e-5, 1e-8),
    "complex64": (1e-5, 1e-8),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),  # 8 mantissa bits: rounding up to 2**-8 = 3.9e-3 relative
    "float8_e4m3fn": (1.25e-1, 1.25e-1),
    "float8_e5m2": (2.5e-1, 2.5e-1),
}
_EXACT = (0.0, 0.0)  # integers and bools compare exactly

TOLERANCE_TEXT = (
    "float64/float32 rtol 1e-5 atol 1e-8; float16 1e-3 1e-3; bfloat16 1e-2 1e-2; "
    "float8_e4m3fn 0.125 0.125; float8_e5m2 0.25 0.25; integers and bool 0 0"
)


def dtype_tolerances(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for values of `dtype`; unknown floating types get float16's."""
    dtype = np.dtype(dtype)
    hit = _TOLERANCES.get(dtype.name)
    if hit is not None:
        return hit
    if dtype.kind in "biu":
        return _EXACT
    return _TOLERANCES["float16"]


def default_tolerances(left: np.dtype, right: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing `left` with `right`: the looser of the two."""
    a, b = dtype_tolerances(left), dtype_tolerances(right)
    return max(a[0], b[0]), max(a[1], b[1])
