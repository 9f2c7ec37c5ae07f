"""The float32 metrics' passes in compiled C (`_passes.c`), for `float32.float32_metrics`.

The numpy path (`float32._NumpyPasses`) makes ~30 numpy calls per 64k-element chunk and pass,
each a sweep over its temporaries. Here a pass walks numpy's pairwise-sum recursion and computes
every elementwise quantity of a 128-element leaf while it is in L1, widening float16 (and other
1- or 2-byte types) through the numpy path's own lookup table, so each quantity is summed in
numpy 1.x's order (pairwise inside each 8192-element block, blocks in sequence). KL's logarithm stays
numpy's (a libm `logf` may differ from numpy's SIMD log in the last bit). Every total equals
the numpy path's bit for bit (tests/compare/test_compiled_metrics.py, on adversarial data), so
every printed cell does too. The GIL is released while a pass runs.

The extension is built when the package is installed and a C compiler is there (setup.py;
optional: without one the install still succeeds and the numpy path runs). Setting
PRECISION_SHELL_METRICS=numpy forces the numpy path (benchmarks measure both that way).
"""

from __future__ import annotations

import os
from functools import lru_cache
from types import ModuleType

import numpy as np

from precision_shell.compare.metrics.stream import (
    CHUNK,
    RESIDENT,
    chunk_bounds,
    lookup_table,
    thread_scratch,
)
from precision_shell.compare.metrics.totals import (
    BELOW_1E3,
    BELOW_5E3,
    KL_FLOOR,
    REL_EPS32,
    FirstTotals,
    SecondTotals,
)

_KlShape = tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]]


@lru_cache(maxsize=1)
def _module() -> ModuleType | None:
    if os.environ.get("PRECISION_SHELL_METRICS") == "numpy":
        return None
    try:
        from precision_shell.compare.metrics import _passes  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _passes  # type: ignore[no-any-return]


def available() -> bool:
    """Whether the compiled passes run (built, and not switched off)."""
    return _module() is not None


def path_name() -> str:
    """What computes the metrics, for benchmarks and `--version`-like reports."""
    return "compiled" if available() else "numpy"


_NO_TABLE = np.zeros(0, np.float32)  # the values are float32 already


def _side(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """What the C code reads for one side: (data, table, bytes per element, IEEE half). float32
    as it is; float16 and other 1- or 2-byte types as bit patterns with the float32 of every
    pattern (the numpy path's table, so both widen alike; the CPU may widen an IEEE half
    itself, to the same numbers); anything else converted to float32 once."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.dtype == np.float32:
        return flat, _NO_TABLE, 4, 0
    if flat.dtype.itemsize <= 2 and flat.dtype != np.bool_:
        table = lookup_table(flat.dtype)
        if table is not None:
            bits = flat.view(np.uint16 if flat.dtype.itemsize == 2 else np.uint8)
            return bits, table, flat.dtype.itemsize, int(flat.dtype == np.float16)
    with np.errstate(all="ignore"):
        return flat.astype(np.float32), _NO_TABLE, 4, 0


def _f32(value: float) -> np.float32:
    return np.float32(value)  # exact: the C code returned a float32 as a double


class CompiledPasses:
    """The float32 metrics' passes in C (see float32._NumpyPasses for the numpy twin)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        module = _module()
        assert module is not None, "only used when available()"
        self._c = module
        self._args = (*_side(x), *_side(y))
        self.n = int(x.size)
        # KL's normalised tensors, kept by the second pass for the last one when they fit
        # (as the numpy path's resident buffers); else the last pass normalises again.
        self._kl_kept: tuple[np.ndarray, np.ndarray] | None = None

    def first(self, needed: bool) -> FirstTotals:
        # not needed: the totals of an empty pass (zero sums, NaN extremes), as the numpy path's
        values = (
            self._c.first(*self._args, float(REL_EPS32), float(BELOW_1E3), float(BELOW_5E3))
            if needed
            else (0.0,) * 7 + (np.nan,) * 6 + (0, 0)
        )
        s = [_f32(v) for v in values[:5]]
        e = [_f32(v) for v in values[7:13]]
        return FirstTotals(
            abs_sum=s[0],
            sq_sum=s[1],
            xx_sum=s[2],
            yy_sum=s[3],
            rel_sum=s[4],
            x_wide_sum=np.float64(values[5]),
            y_wide_sum=np.float64(values[6]),
            abs_max=e[0],
            rel_max=e[1],
            x_max=e[2],
            x_min=e[3],
            y_max=e[4],
            y_min=e[5],
            below_1e3=int(values[13]),
            below_5e3=int(values[14]),
        )

    def second(
        self,
        norms: tuple[np.floating, np.floating] | None,
        kl_shape: _KlShape | None,
        means: tuple[float, float] | None,
    ) -> SecondTotals:
        want = (1 if norms else 0) | (2 if kl_shape else 0) | (4 if means else 0)
        if want:
            x_norm, y_norm = norms or (0.0, 0.0)
            (x_low, x_span), (y_low, y_span) = kl_shape or ((0.0, 0.0), (0.0, 0.0))
            x_mean, y_mean = means or (0.0, 0.0)
            keep = (_NO_TABLE, _NO_TABLE)
            if kl_shape and 0 < self.n <= RESIDENT:
                scratch = thread_scratch()
                keep = scratch.get("px", self.n, np.float32), scratch.get("qy", self.n, np.float32)
            self._kl_kept = keep if len(keep[0]) else None
            values = self._c.second(
                *self._args,
                want,
                float(x_norm),
                float(y_norm),
                float(x_low),
                float(x_span),
                float(y_low),
                float(y_span),
                float(KL_FLOOR),
                float(x_mean),
                float(y_mean),
                *keep,
            )
        else:
            values = (0.0,) * 5
        return SecondTotals(
            _f32(values[0]),
            _f32(values[1]),
            _f32(values[2]),
            np.float64(values[3]),
            np.float64(values[4]),
        )

    def kl_sum(
        self, kl_shape: _KlShape, px_total: np.floating, qy_total: np.floating
    ) -> np.floating:
        """sum p * log(p / q): p and p / q in C, numpy's log, the products summed in C. p and
        p / q are made in place of the px and qy the second pass kept, else from the data."""
        totals = (float(px_total), float(qy_total))
        kept, self._kl_kept = self._kl_kept, None
        if kept is None:
            (x_low, x_span), (y_low, y_span) = kl_shape
            shape = (float(x_low), float(x_span), float(y_low), float(y_span), float(KL_FLOOR))
            size = min(CHUNK, self.n)
            scratch = thread_scratch()  # the numpy path's reused buffers: no fresh pages
            p, r = scratch.get("a", size, np.float32), scratch.get("b", size, np.float32)
        running = -0.0  # -0 + s == s: the first block sum stays as it is
        for start, stop in chunk_bounds(self.n):
            if kept is not None:
                pm, rm = kept[0][start:stop], kept[1][start:stop]
                self._c.kl_ratio_kept(pm, rm, *totals)
            else:
                pm, rm = p[: stop - start], r[: stop - start]
                self._c.kl_ratio(*self._args, start, *shape, *totals, pm, rm)
            np.log(rm, out=rm)
            running = self._c.kl_terms(pm, rm, running)
        return np.float32(running) + np.float32(0)
