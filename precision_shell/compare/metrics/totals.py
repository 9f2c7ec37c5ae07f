"""What each pass of the float32 metrics yields, whichever path (numpy or compiled) ran it,
and the constants both paths compute with."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _float32_at_or_above(limit: float) -> np.float32:
    """The least float32 >= limit: for a float32 r, `r < limit` (in float64) iff `r < this`."""
    near = np.float32(limit)
    return near if float(near) >= limit else np.nextafter(near, np.float32(np.inf))


# msaccucmp's ConstManager.FLOAT_EPSILON (2**-52): cosine's zero-norm test, and as a float32
# (exact: a power of two) the |y| below which a relative error counts as 0.
EPS = float(np.finfo(np.float64).eps)
REL_EPS32 = np.float32(EPS)
KL_FLOOR = np.finfo(np.float32).eps  # alg_KullbackLeiblerDivergence's clamp, 1.19e-7

# msaccucmp compares its float32 errors with 0.001 and 0.005 in float64. Comparing in float32
# with these limits is the same and costs half: float32(0.005) itself would not do, being < 0.005.
BELOW_1E3, BELOW_5E3 = _float32_at_or_above(0.001), _float32_at_or_above(0.005)


@dataclass(frozen=True)
class FirstTotals:
    """What the first pass yields: sums, extremes and counts that need nothing but the data.

    The numpy path and the compiled one (`compiled`) both produce it, bit for bit alike."""

    abs_sum: np.floating
    sq_sum: np.floating
    xx_sum: np.floating
    yy_sum: np.floating
    rel_sum: np.floating
    x_wide_sum: np.floating
    y_wide_sum: np.floating
    abs_max: np.float32  # these six: meaningless when n == 0 (never read then)
    rel_max: np.floating
    x_max: np.floating
    x_min: np.floating
    y_max: np.floating
    y_min: np.floating
    below_1e3: int
    below_5e3: int


@dataclass(frozen=True)
class SecondTotals:
    """What the second pass yields: normalised products (cosine, KL's normalised tensors) and
    the squared deviations of std; each zero when not asked for."""

    cos_sum: np.floating
    px_sum: np.floating
    qy_sum: np.floating
    x_var: np.floating
    y_var: np.floating
