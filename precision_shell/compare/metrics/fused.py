"""Compiled (numba) passes of the float32 metrics, for `float32.float32_metrics`.

The numpy path (`float32._NumpyPasses`) makes ~30 numpy calls per 64k-element chunk and pass,
each a sweep over its temporaries. Here one compiled loop per 16k-element span computes every
elementwise quantity of a pass (widening float16 through the numpy path's own lookup table, so
a float16 tensor is never copied whole), extremes as int32 keys, and counts; numpy then sums
each quantity's 8192-element blocks in one call (its SIMD pairwise sum IS the order the
metrics must reproduce: a numba loop would sum alike, without SIMD) and the blocks add up in
sequence as numpy 1.x does (`stream.BlockSums`). KL's logarithm stays numpy's too (a libm
`logf` may differ from numpy's SIMD log in the last bit). So every total equals the numpy
path's bit for bit (tests/compare/test_fused_metrics.py, on adversarial data), and so does
every printed cell. Measured: ~1.3x less time per element than the numpy path on one core,
and the kernels release the GIL.

Opt-in (PRECISION_SHELL_NUMBA=1, with the optional `fast` extra installed); otherwise, or when
numba cannot be imported, the numpy path runs. Measured end to end on the large demo, the
compiled path is slower (vc 1.5 s vs 1.06 s): importing numba and loading the cached kernels
costs ~0.45 s per process (each process worker pays it), more than the ~7-10% it saves per
element; compiled code is cached on disk by numba (~3 s to compile once per machine).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from types import ModuleType
from typing import Any

import numpy as np

from precision_shell.compare.metrics.stream import BLOCK, lookup_table
from precision_shell.compare.metrics.totals import FirstTotals, SecondTotals


@lru_cache(maxsize=1)
def _numba() -> ModuleType | None:
    # Opt-in: end to end the compiled passes do not pay yet (see the module doc).
    if os.environ.get("PRECISION_SHELL_NUMBA") != "1":
        return None
    try:
        import numba
    except Exception:  # noqa: BLE001 - any import failure means: use the numpy path
        return None
    return numba


def available() -> bool:
    return _kernels() is not None


@lru_cache(maxsize=1)
def _kernels() -> dict[str, Any] | None:
    numba = _numba()
    if numba is None:
        return None
    try:
        from precision_shell.compare.metrics import fused_kernels as k
    except Exception:  # noqa: BLE001 - a broken numba install must not break the compare
        return None
    return {
        "first_chunk": k.first_chunk,
        "second_chunk": k.second_chunk,
        "kl_ratio": k.kl_ratio,
    }


def kernels() -> dict[str, Any]:
    """The compiled kernels; only call when `available()`."""
    compiled = _kernels()
    assert compiled is not None
    return compiled


_Source = tuple[np.ndarray, np.ndarray]  # values (or bit patterns) and their table
_NO_TABLE = np.zeros(0, np.float32)  # the values are float32 already


def _source(values: np.ndarray) -> _Source:
    """What the kernels read for one side: float32 values as they are; float16 and other 1- or
    2-byte types as bit patterns with the float32 table of every pattern (the numpy path's
    table, so both widen alike); anything else converted to float32 once."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.dtype == np.float32:
        return flat, _NO_TABLE
    if flat.dtype.itemsize <= 2 and flat.dtype != np.bool_:
        table = lookup_table(flat.dtype)
        if table is not None:
            return flat.view(np.uint16 if flat.dtype.itemsize == 2 else np.uint8), table
    return flat.astype(np.float32), _NO_TABLE


# Elements per kernel call: the rows of both buffers (7 x float32 + 2 x float64 + the widened
# x and y) stay in a 1 MB L2 cache, and numpy sums each row's blocks in one call.
SPAN = 2 * BLOCK


class _RowSums:
    """numpy-1.x-order sums (stream.BlockSums) of every row of a buffer, chunk after chunk."""

    def __init__(self, dtype: type[np.floating], rows: int) -> None:
        self._dtype, self._rows = dtype, rows
        self._parts: list[np.ndarray] = []

    def add(self, buffer: np.ndarray, m: int) -> None:
        whole = m // BLOCK * BLOCK
        if whole:
            blocks = buffer[:, :whole].reshape(self._rows, -1, BLOCK)
            self._parts.append(np.add.reduce(blocks, axis=2))
        if whole < m:
            self._parts.append(np.add.reduce(buffer[:, whole:m], axis=1)[:, None])

    def totals(self) -> np.ndarray:
        zero = self._dtype(0)
        if not self._parts:
            return np.zeros(self._rows, self._dtype)
        parts = np.concatenate(self._parts, axis=1)
        # block sums in sequence; numpy 1.x starts from +0 (an all -0.0 sum is +0.0)
        return np.add.accumulate(parts, axis=1)[:, -1] + zero


class FusedPasses:
    """The float32 metrics' passes, compiled (see float32._NumpyPasses for the numpy twin)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self._k = kernels()
        self._args = (*_source(x), *_source(y))
        self.n = n = int(x.size)
        size = min(SPAN, n)
        self._xw, self._yw = np.empty(size, np.float32), np.empty(size, np.float32)

    def _spans(self) -> Iterator[tuple[int, int]]:
        for start in range(0, self.n, SPAN):
            yield start, min(SPAN, self.n - start)

    def first(self, needed: bool) -> FirstTotals:
        low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        keys = np.array([low, low, low, high, low, high], np.int32)
        counts = np.zeros(4, np.int64)
        sums32, sums64 = _RowSums(np.float32, 5), _RowSums(np.float64, 2)
        if needed:
            size = min(SPAN, self.n)
            q32, q64 = np.empty((5, size), np.float32), np.empty((2, size), np.float64)
            kernel = self._k["first_chunk"]
            for start, m in self._spans():
                kernel(*self._args, start, m, self._xw, self._yw, q32, q64, keys, counts)
                sums32.add(q32, m)
                sums64.add(q64, m)
        t32, t64 = sums32.totals(), sums64.totals()
        ext = _extremes(keys, bool(counts[2]), bool(counts[3]), self.n > 0 and needed)
        return FirstTotals(
            abs_sum=t32[0],
            sq_sum=t32[1],
            xx_sum=t32[2],
            yy_sum=t32[3],
            rel_sum=t32[4],
            x_wide_sum=t64[0],
            y_wide_sum=t64[1],
            abs_max=ext[0],
            rel_max=ext[1],
            x_max=ext[2],
            x_min=ext[3],
            y_max=ext[4],
            y_min=ext[5],
            below_1e3=int(counts[0]),
            below_5e3=int(counts[1]),
        )

    def second(
        self,
        norms: tuple[np.floating, np.floating] | None,
        kl_shape: tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]] | None,
        means: tuple[float, float] | None,
    ) -> SecondTotals:
        sums32, sums64 = _RowSums(np.float32, 3), _RowSums(np.float64, 2)
        if norms or kl_shape or means:
            size = min(SPAN, self.n)
            q32, q64 = np.zeros((3, size), np.float32), np.zeros((2, size), np.float64)
            wanted = (
                np.array(norms or (), np.float32),
                _kl_array(kl_shape),
                np.array(means or (), np.float64),
            )
            kernel = self._k["second_chunk"]
            for start, m in self._spans():
                kernel(*self._args, start, m, self._xw, self._yw, *wanted, q32, q64)
                sums32.add(q32, m)
                sums64.add(q64, m)
        t32, t64 = sums32.totals(), sums64.totals()
        return SecondTotals(t32[0], t32[1], t32[2], t64[0], t64[1])

    def kl_sum(
        self,
        kl_shape: tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]],
        px_total: np.floating,
        qy_total: np.floating,
    ) -> np.floating:
        """sum p * log(p / q), numpy's log between a compiled loop and numpy's sum."""
        kl = _kl_array(kl_shape)
        totals = np.array([px_total, qy_total], np.float32)
        size = min(SPAN, self.n)
        p, r = np.empty((1, size), np.float32), np.empty((1, size), np.float32)
        sums = _RowSums(np.float32, 1)
        for start, m in self._spans():
            self._k["kl_ratio"](*self._args, start, kl, totals, p[0, :m], r[0, :m])
            np.log(r[0, :m], out=r[0, :m])
            np.multiply(p[0, :m], r[0, :m], out=r[0, :m])
            sums.add(r, m)
        return sums.totals()[0]


_NAN_BITS = 0x7F800000  # above this, a non-negative float32's bits are a NaN's


def _extremes(keys: np.ndarray, nan_x: bool, nan_y: bool, seen: bool) -> list[np.float32]:
    """first_pass's extremes back as floats: max |x-y| and max relative error from their bits,
    then max x, min x, max y, min y from their order-preserving keys (NaN when the side holds
    a NaN, as ndarray.max/min give; all NaN for an empty tensor)."""
    nan = np.float32(np.nan)
    if not seen:
        return [nan] * 6
    bits = keys.copy()
    bits[2:] ^= (bits[2:] >> 31) & np.int32(0x7FFFFFFF)  # the key transform is its own inverse
    values = bits.view(np.float32)
    top = [nan if keys[i] > _NAN_BITS else values[i] for i in (0, 1)]
    x_side = [nan, nan] if nan_x else [values[2], values[3]]
    y_side = [nan, nan] if nan_y else [values[4], values[5]]
    return [*top, *x_side, *y_side]


def _kl_array(
    kl_shape: tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]] | None,
) -> np.ndarray:
    if kl_shape is None:
        return np.zeros(0, np.float32)
    (x_low, x_span), (y_low, y_span) = kl_shape
    return np.array([x_low, x_span, y_low, y_span], np.float32)
