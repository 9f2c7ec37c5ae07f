"""The numba kernels of `fused` (imported only when numba is: see fused.available()).

Each kernel computes every elementwise quantity of a pass over one chunk in one loop, into rows
of a small buffer that numpy then sums (numpy's SIMD pairwise sum is the order the metrics
must reproduce; numba would sum the same way, but without SIMD). Module-level functions, so
that numba caches their compiled code on disk.
"""

# ruff: noqa: ANN001, ANN202

from __future__ import annotations

import numba
import numpy as np

from precision_shell.compare.metrics.totals import BELOW_1E3 as below_1e3
from precision_shell.compare.metrics.totals import BELOW_5E3 as below_5e3

BLOCK = 8192  # numpy 1.x's reduction buffer: block sums are added in sequence
# rows of the first pass's float32 buffer, float64 buffer and extremes
ABS, SQ, XX, YY, REL = range(5)
XW, YW = range(2)
ABS_MAX, REL_MAX, X_MAX, X_MIN, Y_MAX, Y_MIN = range(6)
# rows of the second pass's buffers
COS, PX, QY = range(3)
XVAR, YVAR = range(2)

# error_model="numpy": x / 0 is inf or NaN, as in numpy, instead of ZeroDivisionError.
# No fastmath: every operation is IEEE and in the written order (no FMA contraction).
jit = numba.njit(nogil=True, cache=True, error_model="numpy")
inline = numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")

f32 = np.float32
f64 = np.float64
eps32 = f32(float(np.finfo(np.float64).eps))
kl_floor = np.finfo(np.float32).eps


@inline
def widen(src, table, start, m, out):
    """src[start:start + m] as float32 into out: the values themselves (an empty table), or
    their bit patterns through the table."""
    part = src[start : start + m]
    if table.shape[0] == 0:
        for k in range(m):
            out[k] = part[k]
    else:  # (the cast only lets float32 sources compile: they never come here)
        for k in range(m):
            out[k] = table[np.uint32(part[k])]
    return out[:m]


@inline
def top_bits(v, hi):
    """The running max of int32 bit patterns of non-negative floats (or NaN)."""
    for i in range(v.shape[0]):
        hi = max(hi, v[i])
    return hi


@inline
def key_range(v, hi, lo, nan):
    """Running max/min of order-preserving int32 keys of floats, and whether a NaN was seen."""
    for i in range(v.shape[0]):
        bits = v[i]
        nan |= (bits & np.int32(0x7FFFFFFF)) > np.int32(0x7F800000)
        key = bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))
        hi = max(hi, key)
        lo = min(lo, key)
    return hi, lo, nan


@jit
def first_chunk(xs, xt, ys, yt, start, m, xw, yw, q32, q64, keys, counts):
    """The first pass over [start, start + m): rows of q32 get |x-y|, (x-y)^2, x^2, y^2 and the
    relative error, rows of q64 x and y in float64; `keys` and `counts` carry the running
    extremes (as int32 keys: fused.FusedPasses turns them back into floats), the two
    relative-error counts and two NaN flags from chunk to chunk."""
    xb = widen(xs, xt, start, m, xw)
    yb = widen(ys, yt, start, m, yw)
    ab, sq, xx, yy, rl = q32[ABS], q32[SQ], q32[XX], q32[YY], q32[REL]
    xd, yd = q64[XW], q64[YW]
    c1 = c5 = 0
    for k in range(m):
        xv = xb[k]
        yv = yb[k]
        ad = abs(xv - yv)
        ab[k] = ad
        sq[k] = ad * ad
        xx[k] = xv * xv
        yy[k] = yv * yv
        r = abs(xv / yv - f32(1.0))
        r = r if abs(yv) > eps32 else f32(0.0)
        rl[k] = r
        c1 += r < below_1e3
        c5 += r < below_5e3
        xd[k] = xv
        yd[k] = yv
    counts[0] += c1
    counts[1] += c5
    keys[ABS_MAX] = top_bits(ab[:m].view(np.int32), keys[ABS_MAX])
    keys[REL_MAX] = top_bits(rl[:m].view(np.int32), keys[REL_MAX])
    x_hi, x_lo, nan_x = key_range(xb.view(np.int32), keys[X_MAX], keys[X_MIN], counts[2] != 0)
    y_hi, y_lo, nan_y = key_range(yb.view(np.int32), keys[Y_MAX], keys[Y_MIN], counts[3] != 0)
    keys[X_MAX], keys[X_MIN], keys[Y_MAX], keys[Y_MIN] = x_hi, x_lo, y_hi, y_lo
    counts[2] = nan_x
    counts[3] = nan_y


@inline
def normalise(v, low, span, out):
    """KL's (v - min) / (max - min) clamped to >= 1.19e-7 (float32._kl_normalised)."""
    m = v.shape[0]
    if span != 0 and low != 0:  # a NaN span normalises too
        for k in range(m):
            w = (v[k] - low) / span
            out[k] = kl_floor if w < kl_floor else w  # np.maximum: NaN stays NaN
    elif span != 0:  # v - 0 is v up to the sign of a zero, which the clamp erases
        for k in range(m):
            w = v[k] / span
            out[k] = kl_floor if w < kl_floor else w
    else:
        for k in range(m):
            w = v[k]
            out[k] = kl_floor if w < kl_floor else w


@jit
def second_chunk(xs, xt, ys, yt, start, m, xw, yw, norms, kl, means, q32, q64):
    """The second pass over [start, start + m): rows of q32 get cosine's normalised products
    and KL's normalised x and y, rows of q64 the squared deviations of std. An empty
    norms / kl / means: that part is not wanted."""
    xb = widen(xs, xt, start, m, xw)
    yb = widen(ys, yt, start, m, yw)
    if norms.shape[0] == 2:
        cs = q32[COS]
        x_norm, y_norm = norms[0], norms[1]
        for k in range(m):
            cs[k] = (xb[k] / x_norm) * (yb[k] / y_norm)
    if kl.shape[0] == 4:
        normalise(xb, kl[0], kl[1], q32[PX])
        normalise(yb, kl[2], kl[3], q32[QY])
    if means.shape[0] == 2:
        xd, yd = q64[XVAR], q64[YVAR]
        x_mean, y_mean = means[0], means[1]
        for k in range(m):
            dx = f64(xb[k]) - x_mean
            dy = f64(yb[k]) - y_mean
            xd[k] = dx * dx
            yd[k] = dy * dy


@jit
def kl_ratio(xs, xt, ys, yt, start, kl, totals, p, r):
    """p = px / px_total and r = p / (qy / qy_total) for one chunk (np.log(r) comes next)."""
    m = p.shape[0]
    xb = widen(xs, xt, start, m, p)
    normalise(xb, kl[0], kl[1], p)
    yb = widen(ys, yt, start, m, r)
    normalise(yb, kl[2], kl[3], r)
    p_total, q_total = totals[0], totals[1]
    for k in range(m):
        pv = p[k] / p_total
        p[k] = pv
        r[k] = pv / (r[k] / q_total)
