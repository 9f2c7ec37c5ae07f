"""The metrics of a foreign pair, in float64, and how their cells are printed.

Columns (our CSV; `read_result_csv` reads every non-lead column as a metric):
- `CosineSimilarity`: a·b / (|a| |b|); 1.0 when both are all zeros, 0.0 when one is.
- `MaxAbsoluteError`: max |a - b|.
- `MegEngineRelativeError`: max(|a - b| / max(|a|, |b|, 1)), MegEngine's
  `compare_binary_iodump.py` error (its `-e` limit, default 1e-3).
- `MeanSquaredError`: mean((a - b)^2).
- `SigmaStarRMSE`: sum|a - b| / sum|b| with b the right (float) side, what SigmaStar's
  DumpDebug tools call "RMSE" (it is a relative L1 error); 0.0 when both sums are 0, inf
  when only sum|b| is.
- `MegEngineRelativeErrorAtLeast`: only for a var a MegEngine `--io-dump` printed in part
  (`partial_compare`): a value MegEngineRelativeError is sure to reach, proven from what both
  sides printed (statistics, leading values) after the print's rounding is allowed for. The
  other columns stay not computed: nothing is claimed over values that were not printed.

Cells are printed with `repr` (shortest round-trip), so a value read back is the value
computed; NaN/inf from the data print `nan`/`inf`, a metric not computed `NaN`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from precision_shell.compare.metrics.cells import COSINE, MAX_ABS, NOT_COMPUTED
from precision_shell.foreign.dumps import Printed

MEGENGINE_REL = "MegEngineRelativeError"
MEGENGINE_REL_AT_LEAST = "MegEngineRelativeErrorAtLeast"
MSE = "MeanSquaredError"
SIGMASTAR_RMSE = "SigmaStarRMSE"
FOREIGN_METRICS: tuple[str, ...] = (
    COSINE,
    MAX_ABS,
    MEGENGINE_REL,
    MSE,
    SIGMASTAR_RMSE,
    MEGENGINE_REL_AT_LEAST,
)
# MegEngine sums in double, element after element: a sum of n values is off by at most about
# n * 2^-53 * max|x| (numpy's pairwise sums, for an exact side, by less)
_SUM_ERROR = 2.0**-53


def compute(left: np.ndarray, right: np.ndarray) -> dict[str, float]:
    """Every metric of one pair; both arrays flat float64 of one length (`right`: benchmark)."""
    a = np.asarray(left, dtype=np.float64).reshape(-1)
    b = np.asarray(right, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return {name: math.nan for name in FOREIGN_METRICS}
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        na, nb = float(np.sqrt(np.dot(a, a))), float(np.sqrt(np.dot(b, b)))
        if na == 0.0 and nb == 0.0:
            cosine = 1.0
        elif na == 0.0 or nb == 0.0:
            cosine = 0.0
        else:
            cosine = float(np.dot(a, b) / (na * nb))
        denom = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
        num, den = float(np.sum(diff)), float(np.sum(np.abs(b)))
        rmse = num / den if den != 0.0 else (0.0 if num == 0.0 else math.inf)
        return {
            COSINE: cosine,
            MAX_ABS: float(np.max(diff)),
            MEGENGINE_REL: float(np.max(diff / denom)),
            MSE: float(np.mean(diff * diff)),
            SIGMASTAR_RMSE: rmse,
        }


def cell(value: float | None) -> str:
    if value is None:
        return NOT_COMPUTED
    if math.isnan(value):
        return "nan"
    return repr(float(value))


# ---------------------------------------------------------------------------- partial values


def print_error(printed: float, digits: int | None) -> float:
    """The most a value printed with `%.<digits>g` (read back as `printed`) can be off the
    value it stands for: half a unit in its last printed digit; 0 when exact (None) or 0
    (`%g` prints 0 only for a zero)."""
    if digits is None or printed == 0.0 or not math.isfinite(printed):
        return 0.0
    size = abs(printed)
    exponent = math.floor(math.log10(size))
    if 10.0**exponent > size:  # log10 rounded up across a power of ten
        exponent -= 1
    elif exponent < 308 and 10.0 ** (exponent + 1) <= size:  # 1e309 overflows
        exponent += 1
    # and one ulp for the decimal -> double conversion of the printed text
    return 0.5 * 10.0 ** (exponent - digits + 1) + math.ulp(size)


@dataclass(frozen=True)
class PartialCompare:
    """Two vars compared on what both printed (`partial_compare`)."""

    stats_diff: float  # max |left - right| over min, max and mean, as printed
    l2_diff: float  # |l2 left - l2 right| / max(l2 left, l2 right); 0 when both are 0
    common: int  # leading values both sides printed
    values_diff: float  # max |left - right| over those values; nan when there are none
    at_least: float  # MegEngineRelativeError is sure to be at least this (nan: non-finite)


def _lower(a: float, b: float, slack: float) -> float:
    """The least |x - y| can be for x printed as `a`, y as `b`, each within its slack."""
    return max(abs(a - b) - slack, 0.0)


def partial_compare(left: Printed, right: Printed) -> PartialCompare:
    """Compare two vars of one element count on what both printed, in flat C order.

    `at_least` bounds MegEngine's max(|a - b| / max(|a|, |b|, 1)) from below; each fact is
    a lower bound on max|a - b|: |min a - min b|, |max a - max b|, |mean a - mean b|, and
    |l2 a - l2 b| (the triangle inequality of the root mean square) each are; a leading value
    both printed gives its own |a_i - b_i|. Each printed number is widened by its print
    rounding (`print_error`), mean and l2 by the double sums' error too; the denominator is
    the largest magnitude either side can hold (|min|, |max|, widened), at least 1. A
    non-finite statistic or value (MegEngine's rule fails any var holding one) gives nan.
    """
    common = min(left.values.size, right.values.size)
    la, ra = left.values[:common], right.values[:common]
    stats = [(left.min, right.min), (left.max, right.max), (left.mean, right.mean)]
    finite = all(math.isfinite(x) for pair in (*stats, (left.l2, right.l2)) for x in pair)
    finite = finite and bool(np.all(np.isfinite(la)) and np.all(np.isfinite(ra)))
    with np.errstate(all="ignore"):
        stats_diff = max(abs(a - b) for a, b in stats)
        top = max(left.l2, right.l2)
        l2_diff = abs(left.l2 - right.l2) / top if top > 0 else (0.0 if top == 0 else math.nan)
        values_diff = float(np.max(np.abs(la - ra))) if common else math.nan
    if not finite:
        return PartialCompare(stats_diff, l2_diff, common, values_diff, math.nan)

    def err(value: float, side: Printed) -> float:
        return print_error(value, side.stat_digits)

    size_l = max(abs(left.min) + err(left.min, left), abs(left.max) + err(left.max, left))
    size_r = max(abs(right.min) + err(right.min, right), abs(right.max) + err(right.max, right))
    sums = left.count * _SUM_ERROR * size_l + right.count * _SUM_ERROR * size_r
    gap = max(
        _lower(left.min, right.min, err(left.min, left) + err(right.min, right)),
        _lower(left.max, right.max, err(left.max, left) + err(right.max, right)),
        _lower(left.mean, right.mean, err(left.mean, left) + err(right.mean, right) + sums),
        _lower(left.l2, right.l2, err(left.l2, left) + err(right.l2, right) + sums),
    )
    at_least = gap / max(size_l, size_r, 1.0)
    for a, b in zip(la.tolist(), ra.tolist(), strict=True):
        ea, eb = print_error(a, left.value_digits), print_error(b, right.value_digits)
        size = max(abs(a) + ea, abs(b) + eb, 1.0)
        at_least = max(at_least, _lower(a, b, ea + eb) / size)
    return PartialCompare(stats_diff, l2_diff, common, values_diff, at_least)


def rounding_half_step(values: np.ndarray, digits: int) -> np.ndarray:
    """Half a unit in the last place of each value as `%.<digits>g` printed it: how far the
    value it stands for may lie from it."""
    a = np.abs(np.asarray(values, dtype=np.float64))
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(np.where(a > 0, a, 1.0)))
    return np.where(a > 0, 0.5 * 10.0 ** (exponent - (digits - 1)), 0.0)


def relative_error_bounds(
    left: np.ndarray, right: np.ndarray, left_half: np.ndarray, right_half: np.ndarray
) -> tuple[float, float]:
    """(lowest, highest) MegEngineRelativeError the values printed (`left`, `right`) can stand
    for, each true value within its half step of the printed one."""
    a = np.asarray(left, dtype=np.float64).reshape(-1)
    b = np.asarray(right, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return math.nan, math.nan
    spread = left_half.reshape(-1) + right_half.reshape(-1)
    diff = np.abs(a - b)
    with np.errstate(all="ignore"):
        low = np.maximum(diff - spread, 0.0) / np.maximum(
            np.maximum(np.abs(a) + left_half, np.abs(b) + right_half), 1.0
        )
        high = (diff + spread) / np.maximum(
            np.maximum(np.abs(a) - left_half, np.abs(b) - right_half), 1.0
        )
    return float(np.max(low)), float(np.max(high))
