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

from precision_shell.compare.metrics import compiled
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
    zero_cosine_reason,
)
from precision_shell.compare.metrics.stream import BlockSums, Extremes, Float32Pairs, resident_size
from precision_shell.compare.metrics.totals import (
    BELOW_1E3,
    BELOW_5E3,
    EPS,
    KL_FLOOR,
    REL_EPS32,
    FirstTotals,
    SecondTotals,
)


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


_KlShape = tuple[tuple[np.floating, np.floating], tuple[np.floating, np.floating]]


def float32_metrics(x: np.ndarray, y: np.ndarray, scalar: bool, out: MetricValues) -> None:
    """msaccucmp's algorithms on a flat pair (any float dtypes, read as float32); results go
    to `out`. The passes run in C when the extension is built (`compiled`), else in numpy."""
    want = out.wanted
    n = int(x.size)
    needs = _Needs(want, scalar, n)
    passes: _NumpyPasses | compiled.CompiledPasses = (
        compiled.CompiledPasses(x, y) if compiled.available() else _NumpyPasses(Float32Pairs(x, y))
    )
    first = passes.first(needs.first_pass)

    yy = first.yy_sum
    if needs.cosine:
        norms = cosine_norms(np.sqrt(first.xx_sum), np.sqrt(yy), out)
    else:
        norms = None
        if COSINE in want:
            out.set(COSINE, 1.0, "This tensor is scalar.")
    kl_shape: _KlShape | None = None
    if needs.kl:
        kl_shape = (_kl_span(first.x_min, first.x_max), _kl_span(first.y_min, first.y_max))
    means = (_mean(first.x_wide_sum, n), _mean(first.y_wide_sum, n)) if needs.std else None
    second = passes.second(norms, kl_shape, means)
    if norms:
        total = second.cos_sum
        out.set(COSINE, 1.0 if total > 1.0 else float(total))  # min(result, 1.0)
    if kl_shape:
        _set_kl(passes.kl_sum(kl_shape, second.px_sum, second.qy_sum), out)
    elif KL in want:
        out.skip(KL, "Cannot compare by KullbackLeiblerDivergence. The tensor is empty.")
    if means:
        out.set(
            STD,
            (
                (means[0], math.sqrt(float(second.x_var) / n)),
                (means[1], math.sqrt(float(second.y_var) / n)),
            ),
        )
    elif STD in want:
        out.set(STD, ((math.nan, math.nan), (math.nan, math.nan)))  # np.std of nothing
    _diff_metrics(out, n, first.abs_sum, first.abs_max, first.sq_sum, yy)
    _relative_metrics(out, n, first.rel_sum, first.rel_max, first.below_1e3, first.below_5e3)


class _NumpyPasses:
    """The passes as chunked numpy calls (when the compiled extension is not there)."""

    def __init__(self, pairs: Float32Pairs) -> None:
        self.pairs = pairs
        # KL's normalised tensors, kept whole from the second pass for the last one when they
        # fit (resident_size); else the last pass normalises each chunk again.
        size = resident_size(pairs.n)
        self._kl_store = (
            pairs.scratch.get("px", size, np.float32),
            pairs.scratch.get("qy", size, np.float32),
        )
        self._resident = size == pairs.n

    def first(self, needed: bool) -> FirstTotals:
        acc = _Accumulators()
        if needed:
            _first_pass(self.pairs, acc)
        return acc.totals()

    def second(
        self,
        norms: tuple[np.floating, np.floating] | None,
        kl_shape: _KlShape | None,
        means: tuple[float, float] | None,
    ) -> SecondTotals:
        pairs = self.pairs
        cos_sum, px_sum, qy_sum = (BlockSums(np.float32) for _ in range(3))
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
                if kl_shape:
                    px, qy = self._kl_slices(start, m)
                    px_sum.add(_kl_normalised(xc, *kl_shape[0], out=px))
                    qy_sum.add(_kl_normalised(yc, *kl_shape[1], out=qy))
                if means:
                    _add_squared_deviation(xc, means[0], wide, x_var)
                    _add_squared_deviation(yc, means[1], wide, y_var)
        return SecondTotals(
            cos_sum.total(), px_sum.total(), qy_sum.total(), x_var.total(), y_var.total()
        )

    def kl_sum(
        self, kl_shape: _KlShape, px_total: np.floating, qy_total: np.floating
    ) -> np.floating:
        """sum p * log(p / q) of KL's normalised tensors (kept from the second pass when they
        fit, else normalised again chunk by chunk)."""
        pairs = self.pairs
        kl_sum = BlockSums(np.float32)
        for start, xc, yc in pairs.chunks():
            m = xc.shape[0]
            px, qy = self._kl_slices(start, m)
            if not self._resident:
                _kl_normalised(xc, *kl_shape[0], out=px)
                _kl_normalised(yc, *kl_shape[1], out=qy)
            p = np.divide(px, px_total, out=pairs.a[:m])
            q = np.divide(qy, qy_total, out=pairs.b[:m])
            np.divide(p, q, out=q)
            np.log(q, out=q)
            np.multiply(p, q, out=q)
            kl_sum.add(q)
        return kl_sum.total()

    def _kl_slices(self, start: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        if self._resident:
            return self._kl_store[0][start : start + m], self._kl_store[1][start : start + m]
        return self._kl_store[0][:m], self._kl_store[1][:m]


class _Accumulators:
    """The numpy path's running sums and extremes of the first pass."""

    def __init__(self) -> None:
        self.abs_sum, self.sq_sum = BlockSums(np.float32), BlockSums(np.float32)
        self.xx_sum, self.yy_sum = BlockSums(np.float32), BlockSums(np.float32)
        self.rel_sum = BlockSums(np.float32)
        self.x_wide_sum, self.y_wide_sum = BlockSums(np.float64), BlockSums(np.float64)
        self.abs_max, self.rel_max = Extremes(), Extremes()
        self.x_ext, self.y_ext = Extremes(), Extremes()
        self.below_1e3 = self.below_5e3 = 0

    def totals(self) -> FirstTotals:
        nan = np.float32(np.nan)

        def top(ext: Extremes) -> np.floating:
            return ext.max() if ext.seen else nan

        def bottom(ext: Extremes) -> np.floating:
            return ext.min() if ext.seen else nan

        return FirstTotals(
            abs_sum=self.abs_sum.total(),
            sq_sum=self.sq_sum.total(),
            xx_sum=self.xx_sum.total(),
            yy_sum=self.yy_sum.total(),
            rel_sum=self.rel_sum.total(),
            x_wide_sum=self.x_wide_sum.total(),
            y_wide_sum=self.y_wide_sum.total(),
            abs_max=top(self.abs_max),
            rel_max=top(self.rel_max),
            x_max=top(self.x_ext),
            x_min=bottom(self.x_ext),
            y_max=top(self.y_ext),
            y_min=bottom(self.y_ext),
            below_1e3=self.below_1e3,
            below_5e3=self.below_5e3,
        )


def _first_pass(pairs: Float32Pairs, acc: _Accumulators) -> None:
    """Every first-pass quantity (the compiled path computes them all too: asking for a subset
    of the metrics saves little, and one rule keeps both paths alike)."""
    for _, xc, yc in pairs.chunks():
        m = xc.shape[0]
        a, b, wide = pairs.a[:m], pairs.b[:m], pairs.wide[:m]
        np.subtract(xc, yc, out=a)
        np.abs(a, out=a)
        acc.abs_sum.add(a)
        acc.abs_max.add(a.max())
        np.square(a, out=a)  # == np.square(x - y): the sign does not matter
        acc.sq_sum.add(a)
        np.square(xc, out=b)
        acc.xx_sum.add(b)
        np.square(yc, out=b)
        acc.yy_sum.add(b)
        acc.x_ext.add(xc.max())
        acc.x_ext.add(xc.min())
        acc.y_ext.add(yc.max())
        acc.y_ext.add(yc.min())
        # `a` is free again: it carries the keep-mask bits.
        _relative_errors(xc, yc, b, pairs.mask[:m], a.view(np.uint32))
        acc.rel_sum.add(b)
        acc.rel_max.add(b.max())
        mask = pairs.mask[:m]
        acc.below_1e3 += int(np.count_nonzero(np.less(b, BELOW_1E3, out=mask)))
        acc.below_5e3 += int(np.count_nonzero(np.less(b, BELOW_5E3, out=mask)))
        np.copyto(wide, xc)
        acc.x_wide_sum.add(wide)
        np.copyto(wide, yc)
        acc.y_wide_sum.add(wide)


def _relative_errors(
    xc: np.ndarray, yc: np.ndarray, r: np.ndarray, keep: np.ndarray, bits: np.ndarray
) -> None:
    """r = abs(x/y - 1) where abs(y) > eps, else 0 (NaN y lands in the 0 branch)."""
    np.abs(yc, out=r)
    np.greater(r, REL_EPS32, out=keep)
    # A masked write of 0 branches per element (slow on mixed data); ANDing the float's bits with
    # all ones (keep) or all zeros (+0.0) gives the same floats without branches.
    np.copyto(bits, keep)
    np.negative(bits, out=bits)
    np.divide(xc, yc, out=r)
    np.subtract(r, 1, out=r)
    np.abs(r, out=r)
    np.bitwise_and(r.view(np.uint32), bits, out=r.view(np.uint32))


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
            out.skip(COSINE, zero_cosine_reason(side))
            return None
    return x_norm, y_norm


def _kl_span(low: np.floating, high: np.floating) -> tuple[np.floating, np.floating]:
    return low, high - low


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
        np.maximum(out, KL_FLOOR, out=out)
    else:
        np.maximum(chunk, KL_FLOOR, out=out)
    return out


def _set_kl(total: np.floating, out: MetricValues) -> None:
    value = 0.0 if abs(total) < EPS else float(total)
    reason = None
    if value == math.inf:
        reason = "Cannot compare by KL Divergence. The data contains 0 in the benchmark tensor."
    out.set(KL, value, reason)


def _mean(wide_sum: np.floating, n: int) -> float:
    return float(wide_sum) / n  # np.mean(x, dtype=np.float64)


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
    abs_sum: np.floating,
    abs_max: np.floating,
    sq_total: np.float32,
    yy: np.float32,
) -> None:
    want = out.wanted
    if MAX_ABS in want:
        if n:
            out.set(MAX_ABS, float(abs_max))
        else:
            out.skip(MAX_ABS, "Cannot compare by MaxAbsoluteError. The tensor is empty.")
    if REL_EUCLID in want:
        # numpy 1.x evaluates np.float32 ** 0.5 in float64; numpy 2 would stay in float32.
        if float(yy) ** 0.5 <= EPS:
            out.set(REL_EUCLID, 0.0)
        else:
            out.set(REL_EUCLID, float(np.float32(sq_total / yy)) ** 0.5)
    if MEAN_ABS in want:
        out.set(MEAN_ABS, _float32_mean(abs_sum, n))
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
    rel_max: np.floating,
    below_1e3: int,
    below_5e3: int,
) -> None:
    want = out.wanted
    if ACC_REL in want:
        out.set(ACC_REL, float(rel_total))
    if MAX_REL in want:
        if n:
            out.set(MAX_REL, float(rel_max))
        else:
            out.skip(MAX_REL, "Cannot compare by MaxRelativeError. The tensor is empty.")
    if MEAN_REL in want:
        out.set(MEAN_REL, _float32_mean(rel_total, n))
    if REL_RATIO in want:
        if n:
            out.set(REL_RATIO, (below_1e3 / n, below_5e3 / n))
        else:
            out.skip(REL_RATIO)
