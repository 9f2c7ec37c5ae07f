"""msaccucmp's algorithms on float32 data (everything but bool pairs), streamed in chunks.

Each value comes from the float32 operations of msaccucmp's `builtin_algorithm/alg_*.py`, in their
order, as numpy 1.x evaluates them: sums in numpy 1.x's block order (`metric_stream.BlockSums`),
`ndarray.mean` as float32(sum / n) with the division in float64, and `np.float32 ** 0.5` of a
scalar in float64 (RelativeEuclideanDistance). At most three passes: sums and extremes;
normalised products (cosine, KL, std); KL itself. Each partial result is computed once and
shared by every metric that needs it (e.g. the relative errors by four metrics).
"""

from __future__ import annotations

import math

import numpy as np

from precision_shell.compare.metrics.cells import (
    ACC_REL,
    COSINE,
    KL,
    MAX_ABS,
    MAX_REL,
    MEAN_ABS,
    MEAN_REL,
    REL_EUCLID,
    REL_RATIO,
    RMSE,
    SQNR,
    STD,
    MetricValues,
)
from precision_shell.compare.metrics.stream import (
    BlockSums,
    Extremes,
    Float32Pairs,
    resident_size,
)

EPS = float(np.finfo(np.float64).eps)  # msaccucmp's ConstManager.FLOAT_EPSILON, 2**-52
_EPS32 = np.float32(EPS)  # exact: a power of two
_KL_FLOOR = np.finfo(np.float32).eps  # alg_KullbackLeiblerDivergence's clamp, 1.19e-7


def _float32_at_or_above(limit: float) -> np.float32:
    """The least float32 >= limit: for a float32 r, `r < limit` (in float64) iff `r < this`."""
    near = np.float32(limit)
    return near if float(near) >= limit else np.nextafter(near, np.float32(np.inf))


# msaccucmp compares its float32 errors with 0.001 and 0.005 in float64. Comparing in float32
# with these limits is the same and costs half: float32(0.005) itself would not do, being < 0.005.
_BELOW_1E3, _BELOW_5E3 = _float32_at_or_above(0.001), _float32_at_or_above(0.005)


class _Needs:
    """Which partial results the wanted metrics need."""

    def __init__(self, want: frozenset[str], scalar: bool, n: int) -> None:
        self.diff = bool(want & {MAX_ABS, MEAN_ABS, RMSE, REL_EUCLID, SQNR})
        self.abs = bool(want & {MAX_ABS, MEAN_ABS})
        self.cosine = COSINE in want and not scalar
        self.yy = self.cosine or bool(want & {REL_EUCLID, SQNR})
        self.rel = bool(want & {ACC_REL, MAX_REL, MEAN_REL, REL_RATIO})
        self.kl = KL in want and n > 0
        self.std = STD in want and n > 0
        self.first_pass = self.diff or self.yy or self.rel or self.kl or self.std


class _FirstPass:
    """Sums, extremes and counts that need nothing but the data."""

    def __init__(self) -> None:
        self.abs_sum, self.sq_sum = BlockSums(np.float32), BlockSums(np.float32)
        self.xx_sum, self.yy_sum = BlockSums(np.float32), BlockSums(np.float32)
        self.rel_sum = BlockSums(np.float32)
        self.x_wide_sum, self.y_wide_sum = BlockSums(np.float64), BlockSums(np.float64)
        self.abs_max, self.rel_max = Extremes(), Extremes()
        self.x_ext, self.y_ext = Extremes(), Extremes()
        self.below_1e3 = self.below_5e3 = 0


def float32_metrics(pairs: Float32Pairs, scalar: bool, out: MetricValues) -> None:
    """msaccucmp's algorithms on a float32 pair; results go to `out`."""
    want = out.wanted
    n = pairs.n
    needs = _Needs(want, scalar, n)
    first = _first_pass(pairs, needs)

    yy = first.yy_sum.total()
    if needs.cosine:
        norms = cosine_norms(np.sqrt(first.xx_sum.total()), np.sqrt(yy), out)
    else:
        norms = None
        if COSINE in want:
            out.set(COSINE, 1.0, "This tensor is scalar.")
    kl_shape = (_kl_span(first.x_ext), _kl_span(first.y_ext)) if needs.kl else None
    means = (_mean(first.x_wide_sum, n), _mean(first.y_wide_sum, n)) if needs.std else None
    # KL's normalised tensors, kept whole for its last pass when that fits.
    kl_store = None
    if kl_shape:
        size = resident_size(n)
        kl_store = (
            pairs.scratch.get("px", size, np.float32),
            pairs.scratch.get("qy", size, np.float32),
        )
    cos_sum, px_sum, qy_sum = BlockSums(np.float32), BlockSums(np.float32), BlockSums(np.float32)
    x_var, y_var = BlockSums(np.float64), BlockSums(np.float64)
    if norms or kl_shape or means:
        for start, xc, yc in pairs.chunks():
            m = xc.shape[0]
            a, b, wide = pairs.a[:m], pairs.b[:m], pairs.wide[:m]
            if norms:
                np.divide(xc, norms[0], out=a)
                np.divide(yc, norms[1], out=b)
                np.multiply(a, b, out=a)
                cos_sum.add(a)
            if kl_store:
                assert kl_shape is not None  # kl_store is only made with kl_shape
                px, qy = (_store_slice(s, n, start, m) for s in kl_store)
                px_sum.add(_kl_normalised(xc, *kl_shape[0], out=px))
                qy_sum.add(_kl_normalised(yc, *kl_shape[1], out=qy))
            if means:
                _add_squared_deviation(xc, means[0], wide, x_var)
                _add_squared_deviation(yc, means[1], wide, y_var)
    if norms:
        total = cos_sum.total()
        out.set(COSINE, 1.0 if total > 1.0 else float(total))  # min(result, 1.0)
    if kl_shape:
        assert kl_store is not None  # made whenever kl_shape is
        _kl_divergence(pairs, kl_shape, kl_store, px_sum.total(), qy_sum.total(), out)
    elif KL in want:
        out.skip(KL, "Cannot compare by KullbackLeiblerDivergence. The tensor is empty.")
    if means:
        out.set(
            STD,
            (
                (means[0], math.sqrt(float(x_var.total()) / n)),
                (means[1], math.sqrt(float(y_var.total()) / n)),
            ),
        )
    elif STD in want:
        out.set(STD, ((math.nan, math.nan), (math.nan, math.nan)))  # np.std of nothing
    _diff_metrics(out, n, first.abs_sum, first.abs_max, first.sq_sum.total(), yy)
    _relative_metrics(
        out, n, first.rel_sum.total(), first.rel_max, first.below_1e3, first.below_5e3
    )


def _first_pass(pairs: Float32Pairs, needs: _Needs) -> _FirstPass:
    acc = _FirstPass()
    if not needs.first_pass:
        return acc
    for _, xc, yc in pairs.chunks():
        m = xc.shape[0]
        a, b, wide = pairs.a[:m], pairs.b[:m], pairs.wide[:m]
        if needs.diff:
            np.subtract(xc, yc, out=a)
            if needs.abs:
                np.abs(a, out=a)
                acc.abs_sum.add(a)
                acc.abs_max.add(a.max())
            np.square(a, out=a)  # == np.square(x - y): the sign does not matter
            acc.sq_sum.add(a)
        if needs.cosine:
            np.square(xc, out=b)
            acc.xx_sum.add(b)
        if needs.yy:
            np.square(yc, out=b)
            acc.yy_sum.add(b)
        if needs.kl:
            acc.x_ext.add(xc.max())
            acc.x_ext.add(xc.min())
            acc.y_ext.add(yc.max())
            acc.y_ext.add(yc.min())
        if needs.rel:
            # `a` is free again: it carries the keep-mask bits.
            _relative_errors(xc, yc, b, pairs.mask[:m], a.view(np.uint32))
            acc.rel_sum.add(b)
            acc.rel_max.add(b.max())
            mask = pairs.mask[:m]
            acc.below_1e3 += int(np.count_nonzero(np.less(b, _BELOW_1E3, out=mask)))
            acc.below_5e3 += int(np.count_nonzero(np.less(b, _BELOW_5E3, out=mask)))
        if needs.std:
            np.copyto(wide, xc)
            acc.x_wide_sum.add(wide)
            np.copyto(wide, yc)
            acc.y_wide_sum.add(wide)
    return acc


def _relative_errors(
    xc: np.ndarray, yc: np.ndarray, r: np.ndarray, keep: np.ndarray, bits: np.ndarray
) -> None:
    """r = abs(x/y - 1) where abs(y) > eps, else 0 (NaN y lands in the 0 branch)."""
    np.abs(yc, out=r)
    np.greater(r, _EPS32, out=keep)
    # A masked write of 0 branches per element (slow on mixed data); ANDing the float's bits with
    # all ones (keep) or all zeros (+0.0) gives the same floats without branches.
    np.copyto(bits, keep)
    np.negative(bits, out=bits)
    np.divide(xc, yc, out=r)
    np.subtract(r, 1, out=r)
    np.abs(r, out=r)
    np.bitwise_and(r.view(np.uint32), bits, out=r.view(np.uint32))


def _store_slice(store: np.ndarray, n: int, start: int, m: int) -> np.ndarray:
    return store[start : start + m] if store.shape[0] == n else store[:m]


def cosine_norms(
    x_norm: np.floating, y_norm: np.floating, out: MetricValues
) -> tuple[np.floating, np.floating] | None:
    """The norms to normalise by, or None after recording msaccucmp's zero-norm outcomes."""
    # Comparisons, `<` vs `<=` and the square roots are msaccucmp's own.
    if x_norm <= EPS and y_norm < EPS:
        out.set(COSINE, 1.0)
        out.cosine_from_zero_norms = True
        return None
    for side, norm in (("device", x_norm), ("benchmark", y_norm)):
        if np.sqrt(norm) <= EPS:
            out.skip(
                COSINE,
                f"Cannot compare by Cosine Similarity. All the data is zero in the {side} tensor.",
            )
            return None
    return x_norm, y_norm


def _kl_span(ext: Extremes) -> tuple[np.floating, np.floating]:
    low = ext.min()
    return low, ext.max() - low


def _kl_normalised(
    chunk: np.ndarray, low: np.floating, span: np.floating, out: np.ndarray
) -> np.ndarray:
    """(v - min) / (max - min), left as is when max == min, then clamped to >= 1.19e-7."""
    if span != 0:  # a NaN span normalises too, as in msaccucmp
        # v - 0 is v up to the sign of a zero, which the clamp below erases.
        source = chunk
        if low != 0:
            source = np.subtract(chunk, low, out=out)
        np.divide(source, span, out=out)
        np.maximum(out, _KL_FLOOR, out=out)
    else:
        np.maximum(chunk, _KL_FLOOR, out=out)
    return out


def _kl_divergence(
    pairs: Float32Pairs,
    kl_shape: tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]],
    kl_store: tuple[np.ndarray, np.ndarray],
    px_total: np.float32,
    qy_total: np.float32,
    out: MetricValues,
) -> None:
    n = pairs.n
    resident = kl_store[0].shape[0] == n
    kl_sum = BlockSums(np.float32)
    for start, xc, yc in pairs.chunks():
        m = xc.shape[0]
        px, qy = (_store_slice(s, n, start, m) for s in kl_store)
        if not resident:  # normalise again: only a chunk of the first time was kept
            _kl_normalised(xc, *kl_shape[0], out=px)
            _kl_normalised(yc, *kl_shape[1], out=qy)
        p = np.divide(px, px_total, out=pairs.a[:m])
        q = np.divide(qy, qy_total, out=pairs.b[:m])
        np.divide(p, q, out=q)
        np.log(q, out=q)
        np.multiply(p, q, out=q)
        kl_sum.add(q)
    total = kl_sum.total()
    value = 0.0 if abs(total) < EPS else float(total)
    reason = None
    if value == math.inf:
        reason = "Cannot compare by KL Divergence. The data contains 0 in the benchmark tensor."
    out.set(KL, value, reason)


def _mean(wide_sum: BlockSums, n: int) -> float:
    return float(wide_sum.total()) / n  # np.mean(x, dtype=np.float64)


def _add_squared_deviation(
    chunk: np.ndarray, mean: float, wide: np.ndarray, var_sum: BlockSums
) -> None:
    # np.std(x, dtype=np.float64): (x - mean) in float64, squared, summed, / n, sqrt.
    np.copyto(wide, chunk)  # widening first is faster than a float64 subtract of float32 input
    np.subtract(wide, mean, out=wide)
    np.square(wide, out=wide)
    var_sum.add(wide)


def _float32_mean(total: np.floating, n: int) -> float:
    # ndarray.mean of float32 under numpy 1.x: float32(sum / count) with the division in float64.
    return float(np.float32(float(total) / n)) if n else math.nan


def _diff_metrics(
    out: MetricValues,
    n: int,
    abs_sum: BlockSums,
    abs_max: Extremes,
    sq_total: np.float32,
    yy: np.float32,
) -> None:
    want = out.wanted
    if MAX_ABS in want:
        if n:
            out.set(MAX_ABS, float(abs_max.max()))
        else:
            out.skip(MAX_ABS, "Cannot compare by MaxAbsoluteError. The tensor is empty.")
    if REL_EUCLID in want:
        # numpy 1.x evaluates np.float32 ** 0.5 in float64; numpy 2 would stay in float32.
        if float(yy) ** 0.5 <= EPS:
            out.set(REL_EUCLID, 0.0)
        else:
            out.set(REL_EUCLID, float(np.float32(sq_total / yy)) ** 0.5)
    if MEAN_ABS in want:
        out.set(MEAN_ABS, _float32_mean(abs_sum.total(), n))
    if RMSE in want:
        mean_sq = _float32_mean(sq_total, n)
        out.set(RMSE, float(np.sqrt(np.float32(mean_sq))))
    if SQNR in want:
        if n:
            out.set(SQNR, _sqnr_db(float(yy), float(sq_total)))
        else:
            out.skip(SQNR)


def _sqnr_db(signal: float, noise: float) -> float:
    """10 log10(sum y^2 / sum (x-y)^2); no noise is +inf, even for two zero tensors."""
    if noise == 0 and not math.isnan(signal):
        return math.inf
    return float(10.0 * np.log10(np.float64(signal) / np.float64(noise)))  # 0 -> -inf, NaN stays


def _relative_metrics(
    out: MetricValues,
    n: int,
    rel_total: np.float32,
    rel_max: Extremes,
    below_1e3: int,
    below_5e3: int,
) -> None:
    want = out.wanted
    if ACC_REL in want:
        out.set(ACC_REL, float(rel_total))
    if MAX_REL in want:
        if n:
            out.set(MAX_REL, float(rel_max.max()))
        else:
            out.skip(MAX_REL, "Cannot compare by MaxRelativeError. The tensor is empty.")
    if MEAN_REL in want:
        out.set(MEAN_REL, _float32_mean(rel_total, n))
    if REL_RATIO in want:
        if n:
            out.set(REL_RATIO, (below_1e3 / n, below_5e3 / n))
        else:
            out.skip(REL_RATIO)
