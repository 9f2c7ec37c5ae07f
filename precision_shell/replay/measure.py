"""A kernel's own error: the device output against its float64 replay from the same inputs.

The inputs are shared, so this measures only what the kernel added. It is reported in ULPs
of the device dtype because that unit says whether the kernel is as good as its dtype allows:
a correctly rounded kernel stays within 0.5 ULP, a float32-accumulating float16 kernel within
a few, while a wrong kernel is off by hundreds or more whatever the tensor's magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from precision_shell.errors import PrecisionError

# dtype -> (explicit mantissa bits, minimum normal exponent, maximum exponent, rounding type)
_FLOATS: dict[str, tuple[int, int, int, object]] = {
    "DT_FLOAT16": (10, -14, 15, np.float16),
    "DT_FLOAT": (23, -126, 127, np.float32),
    "DT_BF16": (7, -126, 127, ml_dtypes.bfloat16),
    "DT_BFLOAT16": (7, -126, 127, ml_dtypes.bfloat16),
    "DT_DOUBLE": (52, -1022, 1023, np.float64),
}
# GE float dtype name -> the numpy type that rounds to it (the one table of these)
FLOAT_TYPES: dict[str, Any] = {name: spec[3] for name, spec in _FLOATS.items()}
_INTS = frozenset(
    {
        "DT_BOOL",
        "DT_INT8",
        "DT_UINT8",
        "DT_INT16",
        "DT_UINT16",
        "DT_INT32",
        "DT_UINT32",
        "DT_INT64",
        "DT_UINT64",
    }
)


@dataclass(frozen=True)
class OwnError:
    """How far the device output is from the float64 replay (see `own_error` for the rules)."""

    cosine: float
    max_abs_error: float
    relative_euclidean_distance: float
    max_ulp: float
    elements: int = 0
    # Elements NaN/inf on at least one side, left out of cosine and
    # relative_euclidean_distance (those are over the elements finite on both sides):
    nonfinite_first: int = 0  # on the first side (the device output, say) only
    nonfinite_second: int = 0  # on the second side (the replay, the benchmark) only
    nonfinite_differ: int = 0  # on both sides, different (inf vs -inf, NaN vs inf)
    nonfinite_same: int = 0  # on both sides, the same (ignored: no error there)

    @property
    def left_out(self) -> int:
        """Elements cosine and relative_euclidean_distance leave out (not finite on both)."""
        return (
            self.nonfinite_first
            + self.nonfinite_second
            + self.nonfinite_differ
            + self.nonfinite_same
        )

    @property
    def nonfinite_mismatch(self) -> int:
        """Elements whose NaN/inf the other side does not hold: each makes the errors inf."""
        return self.nonfinite_first + self.nonfinite_second + self.nonfinite_differ


def ulp(reference: np.ndarray, device_dtype: str) -> np.ndarray:
    """The spacing of `device_dtype` at each |reference| rounded to that dtype.

    For a binary float with p explicit mantissa bits and exponent range [emin, emax] the
    spacing at a value a with 2^e <= a < 2^(e+1) is 2^(e - p) (bfloat16: 2^(e - 7)); below
    the smallest normal it is the subnormal step 2^(emin - p), and beyond the largest finite
    value it stays the spacing at the maximum, 2^(emax - p). Integer and bool dtypes: 1."""
    dtype = device_dtype.upper()
    ref = np.abs(np.asarray(reference, dtype=np.float64))
    if dtype in _INTS:
        return np.ones_like(ref)
    if dtype not in _FLOATS:
        raise PrecisionError(f"no ULP rule for device dtype {device_dtype}")
    bits, emin, emax, kind = _FLOATS[dtype]
    if kind in (np.float16, np.float32, np.float64):
        return _ieee_ulp(ref, bits, emin, emax)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(kind).astype(np.float64)  # type: ignore[call-overload]
    _, exponent = np.frexp(np.where(np.isfinite(rounded), rounded, 0.0))
    # frexp: a = m * 2^exponent with 0.5 <= m < 1, so floor(log2 a) = exponent - 1.
    e = np.where(rounded > 0, exponent - 1, emin)
    e = np.where(np.isfinite(rounded), e, emax)
    e = np.clip(e, emin, emax)
    return np.ldexp(1.0, (e - bits).astype(np.int64))


_MANTISSA = np.uint64((1 << 52) - 1)


def _ieee_ulp(ref: np.ndarray, bits: int, emin: int, emax: int) -> np.ndarray:
    """`ulp` of |values| `ref` (float64) for an IEEE binary dtype with `bits` mantissa bits,
    from the float64 bits, without rounding to the dtype (float64 -> float16 costs ~40 ns an
    element in numpy): floor(log2 a) is the float64 exponent, one more when a rounds up to
    the next power of two (its significand at least 2 - 2^-(bits + 1): the midpoint below
    it and above, ties to even); zero, subnormals of float64 and NaN/inf land on emin and
    emax through the clip. Equal to the rounding definition for every float64 (tests)."""
    u = ref.view(np.uint64)  # np.abs made it: contiguous, of any shape
    e = (u >> np.uint64(52)).astype(np.int64) - 1023
    if bits < 52:
        e += (u & _MANTISSA) >= np.uint64((1 << 52) - (1 << (51 - bits)))
    return np.ldexp(1.0, np.clip(e, emin, emax) - bits)


def own_error(device: np.ndarray, reference: np.ndarray, device_dtype: str) -> OwnError:
    """The device output (float64 of the values the device stored) against the replay.

    Rules:
    - max_ulp = max over elements of |device - reference| / ulp(reference), `ulp` being the
      spacing of the device dtype at |reference| rounded to it (see `ulp`).
    - Non-finite values: an element non-finite on one side only, or non-finite on both sides
      but different (inf vs -inf, NaN vs inf), makes max_ulp and max_abs_error inf. Elements
      non-finite and equal on both sides (both NaN, or the same inf) are ignored. cosine and
      relative_euclidean_distance are computed over the elements finite on both sides; the
      elements left out are counted by kind (`nonfinite_first`... : a measure over every
      element, as vc's CSV is, would be nan/inf there).
    - relative_euclidean_distance = ||d - r|| / ||r||; with an all-zero reference it is 0 when
      the device is all zero too and inf otherwise.
    - cosine = d.r / (||d|| ||r||); 1 when both are all zero, 0 when only one is.
    - No element (empty, or all ignored): cosine 1, errors 0. No element finite on both sides
      but some differ (an output all inf where the replay is finite): cosine NaN (there is
      nothing to measure it on) and every error inf.
    The device array is reshaped to the reference's shape when they have the same size."""
    ref = np.asarray(reference, dtype=np.float64)
    dev = np.asarray(device, dtype=np.float64)
    if dev.shape != ref.shape:
        if dev.size != ref.size:
            raise PrecisionError(
                f"device output has shape {dev.shape}, the replay {ref.shape}: not comparable"
            )
        dev = dev.reshape(ref.shape)
    dev, ref = dev.reshape(-1), ref.reshape(-1)
    finite_dev, finite_ref = np.isfinite(dev), np.isfinite(ref)
    finite = finite_dev & finite_ref
    counts = _left_out(dev, ref, finite_dev, finite_ref, finite)
    mismatch = any(counts.get(kind) for kind in _MISMATCHES)
    d, r = dev[finite], ref[finite]
    if d.size == 0:
        if mismatch:
            return OwnError(math.nan, math.inf, math.inf, math.inf, **counts)
        return OwnError(1.0, 0.0, 0.0, 0.0, **counts)
    diff = np.abs(d - r)
    max_abs = math.inf if mismatch else float(diff.max())
    max_ulp = math.inf if mismatch else float((diff / ulp(r, device_dtype)).max())
    # Scale before squaring so float16-max-sized or float32-max-sized values cannot overflow.
    scale = float(max(np.abs(d).max(), np.abs(r).max()))
    if scale == 0.0:
        return OwnError(1.0, max_abs, 0.0, max_ulp, **counts)
    ds, rs = d / scale, r / scale
    norm_d, norm_r = float(np.linalg.norm(ds)), float(np.linalg.norm(rs))
    red = math.inf if norm_r == 0.0 else float(np.linalg.norm(ds - rs)) / norm_r
    if norm_d == 0.0 or norm_r == 0.0:
        cosine = 0.0
    else:
        cosine = float(np.clip(np.dot(ds, rs) / (norm_d * norm_r), -1.0, 1.0))
    return OwnError(cosine, max_abs, red, max_ulp, **counts)


# the `OwnError` counts of elements whose NaN/inf the other side does not hold
_MISMATCHES = ("nonfinite_first", "nonfinite_second", "nonfinite_differ")


def _left_out(
    dev: np.ndarray,
    ref: np.ndarray,
    finite_dev: np.ndarray,
    finite_ref: np.ndarray,
    finite: np.ndarray,
) -> dict[str, int]:
    """`OwnError`'s element counts: all of them, and those NaN/inf on either side by kind."""
    counts = {"elements": int(dev.size)}
    if finite.all():  # the common case: one pass, no masks
        return counts
    both = ~finite_dev & ~finite_ref
    same = both & ((dev == ref) | (np.isnan(dev) & np.isnan(ref)))
    counts["nonfinite_first"] = int(np.count_nonzero(~finite_dev & finite_ref))
    counts["nonfinite_second"] = int(np.count_nonzero(finite_dev & ~finite_ref))
    counts["nonfinite_same"] = int(np.count_nonzero(same))
    counts["nonfinite_differ"] = int(np.count_nonzero(both)) - counts["nonfinite_same"]
    return counts
