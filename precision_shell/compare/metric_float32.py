"""msaccucmp's algorithms on float32 data (everything but bool pairs), streamed in chunks.

Each value comes from the float32 operations of msaccucmp's `builtin_algorithm/alg_*.py`, in their
order, as numpy 1.x evaluates them: sums in numpy 1.x's block order (`metric_stream.BlockSums`),
`ndarray.mean` as float32(sum / n) with the division in float64, and `np.float32 ** 0.5` of a
scalar in float64 (RelativeEuclideanDistance). At most three passes: sums and extremes;
normalised products (cosine, KL, std); KL itself.
"""

from __future__ import annotations

import math

import numpy as np

from precision_shell.compare.metric_format import (
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
from precision_shell.compare.metric_stream import BlockSums, Extremes, Float32Pairs

EPS = float(np.finfo(np.float64).eps)  # msaccucmp's ConstManager.FLOAT_EPSILON, 2**-52
_EPS32 = np.float32(EPS)  # exact: a power of two
_KL_FLOOR = np.finfo(np.float32).eps  # alg_KullbackLeiblerDivergence's clamp, 1.19e-7
_RATIO_1E3, _RATIO_5E3 = np.float64(0.001), np.float64(0.005)


def float32_metrics(pairs: Float32Pairs, scalar: bool, out: MetricValues) -> None:
    """msaccucmp's algorithms on a float32 pair; results go to `out`."""
    want = out.wanted
    n = pairs.n
    need_diff = bool(want & {MAX_ABS, MEAN_ABS, RMSE, REL_EUCLID, SQNR})
    need_abs = bool(want & {MAX_ABS, MEAN_ABS})
    cosine = COSINE in want and not scalar
    need_yy = cosine or bool(want & {REL_EUCLID, SQNR})
    need_rel = bool(want & {ACC_REL, MAX_REL, MEAN_REL, REL_RATIO})
    kl = KL in want and n > 0
    std = STD in want and n > 0

    abs_sum, sq_sum = BlockSums(np.float32), BlockSums(np.float32)
    xx_sum, yy_sum = BlockSums(np.float32), BlockSums(np.float32)
    rel_sum = BlockSums(np.float32)
    x_wide_sum, y_wide_sum = BlockSums(np.float64), BlockSums(np.float64)
    abs_max, rel_max, x_ext, y_ext = Extremes(), Extremes(), Extremes(), Extremes()
    below_1e3 = below_5e3 = 0
    for xc, yc in pairs:
        m = xc.shape[0]
        a, b, mask, wide = pairs.a[:m], pairs.b[:m], pairs.mask[:m], pairs.wide[:m]
        if need_diff:
            np.subtract(xc, yc, out=a)
            if need_abs:
                np.abs(a, out=a)
                abs_sum.add(a)
                abs_max.add(a.max())
            np.multiply(a, a, out=a)  # == np.square(x - y), sign does not matter
            sq_sum.add(a)
        if cosine:
            np.multiply(xc, xc, out=b)
            xx_sum.add(b)
        if need_yy:
            np.multiply(yc, yc, out=b)
            yy_sum.add(b)
        if kl:
            x_ext.add(xc.max())
            x_ext.add(xc.min())
            y_ext.add(yc.max())
            y_ext.add(yc.min())
        if need_rel:
            _relative_errors(xc, yc, b, mask)
            rel_sum.add(b)
            rel_max.add(b.max())
            # In float64: float32(0.005) is below 0.005, so a float32 compare would miss it.
            below_1e3 += int(np.count_nonzero(np.less(b, _RATIO_1E3, out=mask)))
            below_5e3 += int(np.count_nonzero(np.less(b, _RATIO_5E3, out=mask)))
        if std:
            np.copyto(wide, xc)
            x_wide_sum.add(wide)
            np.copyto(wide, yc)
            y_wide_sum.add(wide)

    yy = yy_sum.total()
    if cosine:
        norms = cosine_norms(np.sqrt(xx_sum.total()), np.sqrt(yy), out)
    else:
        norms = None
        if COSINE in want:
            out.set(COSINE, 1.0, "This tensor is scalar.")
    kl_shape = (_kl_span(x_ext), _kl_span(y_ext)) if kl else None
    means = (_mean(x_wide_sum, n), _mean(y_wide_sum, n)) if std else None
    cos_sum, px_sum, qy_sum = BlockSums(np.float32), BlockSums(np.float32), BlockSums(np.float32)
    x_var, y_var = BlockSums(np.float64), BlockSums(np.float64)
    if norms or kl_shape or means:
        for xc, yc in pairs:
            m = xc.shape[0]
            a, b, wide = pairs.a[:m], pairs.b[:m], pairs.wide[:m]
            if norms:
                np.divide(xc, norms[0], out=a)
                np.divide(yc, norms[1], out=b)
                np.multiply(a, b, out=a)
                cos_sum.add(a)
            if kl_shape:
                px_sum.add(_kl_normalised(xc, *kl_shape[0], out=a))
                qy_sum.add(_kl_normalised(yc, *kl_shape[1], out=b))
            if means:
                _add_squared_deviation(xc, means[0], wide, x_var)
                _add_squared_deviation(yc, means[1], wide, y_var)
    if norms:
        total = cos_sum.total()
        out.set(COSINE, 1.0 if total > 1.0 else float(total))  # min(result, 1.0)
    if kl_shape:
        _kl_divergence(pairs, kl_shape, px_sum.total(), qy_sum.total(), out)
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
    _diff_metrics(out, n, abs_sum, abs_max, sq_sum.total(), yy)
    _relative_metrics(out, n, rel_sum.total(), rel_max, below_1e3, below_5e3)


def _relative_errors(xc: np.ndarray, yc: np.ndarray, r: np.ndarray, mask: np.ndarray) -> None:
    """r = abs(x/y - 1) where abs(y) > eps, else 0 (NaN y lands in the 0 branch)."""
    np.abs(yc, out=r)
    np.greater(r, _EPS32, out=mask)
    np.logical_not(mask, out=mask)
    np.divide(xc, yc, out=r)
    np.subtract(r, 1, out=r)
    np.abs(r, out=r)
    np.copyto(r, 0, where=mask)


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


def _kl_span(ext: Extremes) -> tuple[np.float32, np.float32]:
    low = ext.min()
    return low, ext.max() - low


def _kl_normalised(
    chunk: np.ndarray, low: np.float32, span: np.float32, out: np.ndarray
) -> np.ndarray:
    """(v - min) / (max - min), left as is when max == min, then clamped to >= 1.19e-7."""
    if span != 0:  # a NaN span normalises too, as in msaccucmp
        np.subtract(chunk, low, out=out)
        np.divide(out, span, out=out)
    else:
        np.copyto(out, chunk)
    np.maximum(out, _KL_FLOOR, out=out)
    return out


def _kl_divergence(
    pairs: Float32Pairs,
    kl_shape: tuple[tuple[np.float32, np.float32], tuple[np.float32, np.float32]],
    px_total: np.float32,
    qy_total: np.float32,
    out: MetricValues,
) -> None:
    kl_sum = BlockSums(np.float32)
    for xc, yc in pairs:
        m = xc.shape[0]
        p = np.divide(_kl_normalised(xc, *kl_shape[0], out=pairs.a[:m]), px_total, out=pairs.a[:m])
        q = np.divide(_kl_normalised(yc, *kl_shape[1], out=pairs.b[:m]), qy_total, out=pairs.b[:m])
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
    np.subtract(chunk, mean, out=wide, dtype=np.float64)
    np.multiply(wide, wide, out=wide)
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
