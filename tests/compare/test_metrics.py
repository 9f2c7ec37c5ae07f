"""msaccucmp's ten metrics and our extras: hand-computed values, every edge case, the CSV text.

Expected values come from the formulas worked out in each test. `reference_cells` restates
msaccucmp's algorithms on whole arrays (numpy 1.x summation order, see `legacy_sum`) to check the
streamed implementation on random data, across chunk boundaries and dtypes.
"""

from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest

from precision_shell.compare.metrics import stream as metric_stream
from precision_shell.compare.metrics.cells import format_standard_deviation, format_value
from precision_shell.compare.metrics.compute import (
    EXTRA_METRICS,
    METRIC_COLUMNS,
    METRIC_FIELDS,
    MetricRow,
    compute_metrics,
    csv_values,
)
from precision_shell.compare.metrics.totals import _float32_at_or_above

EPS = float(np.finfo(np.float64).eps)
KL_FLOOR = float(np.finfo(np.float32).eps)
HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)


def legacy_sum(a: np.ndarray) -> np.floating:
    """numpy 1.x's sum of a contiguous array: pairwise inside 8192-blocks, blocks left to right."""
    total = a.dtype.type(0)
    for start in range(0, a.size, 8192):
        total = total + np.add.reduce(a[start : start + 8192])
    return total


def same_value(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, and the same sign of zero; tuples element by element."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def assert_same_rows(row: MetricRow, expected: MetricRow) -> None:
    for field in dataclasses.fields(MetricRow):
        got, want = getattr(row, field.name), getattr(expected, field.name)
        assert same_value(got, want), (field.name, got, want)


def std_cell(pairs: list[float]) -> str:
    shown = [0.0 if abs(v) < 0.001 else v for v in pairs]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*shown)


def reference_cells(device: np.ndarray, benchmark: np.ndarray) -> list[str]:
    """msaccucmp's algorithms on whole float32 arrays (non-scalar, non-empty, nonzero norms)."""
    x = np.asarray(device).astype(np.float32).ravel()
    y = np.asarray(benchmark).astype(np.float32).ravel()
    n = x.size
    with np.errstate(all="ignore"):
        nx, ny = np.sqrt(legacy_sum(x * x)), np.sqrt(legacy_sum(y * y))
        cos = min(legacy_sum((x / nx) * (y / ny)), 1.0)
        d = x - y
        r = np.where(np.abs(y) > EPS, np.abs(x / y - 1), np.float32(0))

        def kl_normalised(v):
            span = v.max() - v.min()
            return np.maximum((v - v.min()) / span if span != 0 else v, np.float32(KL_FLOOR))

        px, qy = kl_normalised(x), kl_normalised(y)
        p, q = px / legacy_sum(px), qy / legacy_sum(qy)
        kl = legacy_sum(p * np.log(p / q))
        kl = 0.0 if abs(kl) < EPS else kl
        stats = []
        for v in (x, y):
            wide = v.astype(np.float64)
            mean = float(legacy_sum(wide)) / n
            stats += [mean, math.sqrt(float(legacy_sum((wide - mean) ** 2)) / n)]
        sq = legacy_sum(d * d)
        values = [
            cos,
            np.abs(d).max(),
            legacy_sum(r),
            float(sq / legacy_sum(y * y)) ** 0.5,
            kl,
            None,
            np.float32(float(legacy_sum(np.abs(d))) / n),
            np.sqrt(np.float32(float(sq) / n)),
            r.max(),
            np.float32(float(legacy_sum(r)) / n),
        ]
    cells = [f"{float(v):.6f}" if v is not None else "" for v in values]
    cells[5] = std_cell(stats)
    return cells


def test_columns_are_the_msaccucmp_header_slice():
    names = HEADER.split(",")
    assert tuple(names[9:19]) == METRIC_COLUMNS
    assert set(METRIC_FIELDS) == set(METRIC_COLUMNS)
    assert EXTRA_METRICS == ("SQNR", "RelativeErrorRatio")


def test_small_pair_against_the_formulas_by_hand():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([1.0, 2.0, 3.5], np.float32)
    row = compute_metrics(x, y)
    # cos = (1 + 4 + 10.5) / (sqrt(14) sqrt(17.25)); ARE = |3/3.5 - 1| = 1/7;
    # RED = sqrt(0.25 / 17.25); MAE = 0.5/3; RMSE = sqrt(0.25/3); MeanRE = (1/7)/3.
    assert math.isclose(row.cosine, 15.5 / math.sqrt(14 * 17.25), rel_tol=1e-6)
    assert row.max_abs_error == 0.5
    assert math.isclose(row.accumulated_relative_error, 1 / 7, rel_tol=1e-6)
    assert math.isclose(row.relative_euclidean_distance, math.sqrt(0.25 / 17.25), rel_tol=1e-6)
    assert math.isclose(row.mean_abs_error, 0.5 / 3, rel_tol=1e-6)
    assert math.isclose(row.rmse, math.sqrt(0.25 / 3), rel_tol=1e-6)
    assert math.isclose(row.max_relative_error, 1 / 7, rel_tol=1e-6)
    assert math.isclose(row.mean_relative_error, 1 / 21, rel_tol=1e-6)
    # KL: min-max gives x' = [0, .5, 1], y' = [0, .4, 1]; 0 clamps to 2**-23.
    xp = np.array([KL_FLOOR, 0.5, 1.0])
    yp = np.array([KL_FLOOR, 0.4, 1.0])
    p, q = xp / xp.sum(), yp / yp.sum()
    assert math.isclose(row.kl_divergence, float((p * np.log(p / q)).sum()), rel_tol=1e-5)
    (mx, sx), (my, sy) = row.standard_deviation
    assert (mx, my) == (2.0, 6.5 / 3)
    assert math.isclose(sx, math.sqrt(2 / 3), rel_tol=1e-12)
    assert math.isclose(sy, float(np.std([1.0, 2.0, 3.5])), rel_tol=1e-12)
    # Values printed by CANN 8.1 msaccucmp's algorithms for this pair.
    assert csv_values(row) == [
        "0.997409",
        "0.500000",
        "0.142857",
        "0.120386",
        "0.005388",
        "(2.000;0.816),(2.167;1.027)",
        "0.166667",
        "0.288675",
        "0.142857",
        "0.047619",
    ]
    assert row.reasons == ()
    assert row.not_computed == frozenset()
    assert row.element_count == 3


def test_extras_sqnr_and_relative_error_ratios():
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    y = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
    row = compute_metrics(x, y)
    assert row.sqnr_db == pytest.approx(10 * math.log10(39 / 1))  # sum y^2 = 39, noise = 1
    assert row.ratio_rel_err_below_0_001 == 0.75  # r = [0, 0, 0, 0.2]
    assert row.ratio_rel_err_below_0_005 == 0.75
    near = compute_metrics(np.array([1.004, 1.0009, 1.0], np.float32), np.ones(3, np.float32))
    assert near.ratio_rel_err_below_0_001 == pytest.approx(2 / 3)
    assert near.ratio_rel_err_below_0_005 == 1.0
    same = compute_metrics(y, y)
    assert same.sqnr_db == math.inf
    assert compute_metrics(np.ones(2), np.zeros(2)).sqnr_db == -math.inf


@pytest.mark.parametrize("shape", [(1, 1), (), (1,), (2, 0)])
def test_scalar_tensor_has_cosine_one_and_a_reason(shape):
    # msaccucmp's rule is sum(shape) == len(shape): (2, 0) counts as a scalar too.
    x = np.full(shape, 2.5, np.float32)
    y = np.full(shape, 3.0, np.float32)
    row = compute_metrics(x, y)
    cells = csv_values(row)
    assert cells[0] == "1.000000"
    assert row.reasons[0] == "This tensor is scalar."
    if x.size:
        assert row.reasons == ("This tensor is scalar.",)
        assert cells[1:5] == ["0.500000", "0.166667", "0.166667", "0.000000"]
        assert cells[5] == "(2.500;0.000),(3.000;0.000)"


def test_both_norms_near_zero_print_the_literal_one():
    row = compute_metrics(np.zeros(5, np.float32), np.zeros(5, np.float32))
    assert row.cosine == 1.0 and row.cosine_from_zero_norms
    assert csv_values(row)[0] == "1.0"
    assert (
        csv_values(row)[1:] == ["0.000000"] * 4 + ["(0.000;0.000),(0.000;0.000)"] + ["0.000000"] * 4
    )
    # Norms 1.4e-17 < 2.22e-16 on both sides: "1.0" although the data is not zero.
    tiny = np.array([-1e-17, 1e-17], np.float32)
    assert csv_values(compute_metrics(tiny, np.zeros(2, np.float32)))[0] == "1.0"


def test_one_zero_norm_is_not_computed_and_names_the_side():
    zeros, ramp = np.zeros(5, np.float32), np.arange(5, dtype=np.float32)
    device_zero = compute_metrics(zeros, ramp)
    assert csv_values(device_zero)[0] == "NaN"
    assert device_zero.reasons == (
        "Cannot compare by Cosine Similarity. All the data is zero in the device tensor.",
    )
    bench_zero = compute_metrics(ramp, zeros)
    assert math.isnan(bench_zero.cosine) and "CosineSimilarity" in bench_zero.not_computed
    assert bench_zero.reasons == (
        "Cannot compare by Cosine Similarity. All the data is zero in the benchmark tensor.",
    )
    # A tiny but nonzero device norm is compared: sqrt(norm) > eps. cos = 3 / sqrt(10).
    tiny = compute_metrics(np.array([1e-17, 1e-17], np.float32), np.array([1.0, 2.0], np.float32))
    assert csv_values(tiny)[0] == f"{3 / math.sqrt(10):.6f}" == "0.948683"


def test_all_zero_benchmark():
    x = np.array([1.0, -2.0, 4.0], np.float32)
    row = compute_metrics(x, np.zeros(3, np.float32))
    cells = csv_values(row)
    assert cells[0] == "NaN"
    assert cells[1] == "4.000000"
    # Every |y| <= eps: relative errors are all 0; sum y^2 = 0 makes RED 0.
    assert cells[2] == cells[8] == cells[9] == "0.000000"
    assert cells[3] == "0.000000"
    # KL: y has max == min, stays 0, clamps to 2**-23: q uniform. x' = [0.5, 0, 1] -> floor.
    xp = np.array([0.5, KL_FLOOR, 1.0])
    p = xp / xp.sum()
    assert cells[4] == f"{(p * np.log(p / (1 / 3))).sum():.6f}"
    assert cells[6] == f"{7 / 3:.6f}" and cells[7] == f"{math.sqrt(21 / 3):.6f}"


def test_bool_tensors_compute_only_cosine_and_red():
    x = np.array([True, False, True, True])
    y = np.array([True, True, False, True])
    row = compute_metrics(x, y)
    cells = csv_values(row)
    assert cells[0] == f"{2 / 3:.6f}"  # 2 common Trues / (sqrt(3) sqrt(3)), in float64
    # msaccucmp reaches `x - y` for RED, which numpy refuses on bools: a failed algorithm.
    assert cells[1:] == ["NaN"] * 9
    assert row.standard_deviation is None
    assert row.reasons == (
        "Algorithm MaxAbsoluteError does not support Boolean types.",
        "Algorithm AccumulatedRelativeError does not support Boolean types.",
        "Cannot compare by RelativeEuclideanDistance. Boolean tensors cannot be subtracted.",
        "Algorithm KullbackLeiblerDivergence does not support Boolean types.",
        "Algorithm StandardDeviation does not support Boolean types.",
        "Algorithm MeanAbsoluteError does not support Boolean types.",
        "Algorithm RootMeanSquareError does not support Boolean types.",
        "Algorithm MaxRelativeError does not support Boolean types.",
        "Algorithm MeanRelativeError does not support Boolean types.",
    )
    assert math.isnan(row.sqnr_db) and math.isnan(row.ratio_rel_err_below_0_001)
    # An all-False benchmark: sum y^2 = 0 gives RED 0 before the subtraction is reached.
    false_bench = compute_metrics(x, np.zeros(4, bool))
    assert csv_values(false_bench)[:4] == ["NaN", "NaN", "NaN", "0.000000"]
    assert csv_values(compute_metrics(np.array([[True]]), np.array([[False]])))[0] == "1.000000"


def test_bool_against_float_is_compared_as_float32():
    row = compute_metrics(np.array([True, False]), np.array([0.5, 1.0], np.float32))
    assert csv_values(row)[1:3] == ["1.000000", "2.000000"]  # |1-.5|, |0-1|; 1 + 1
    assert row.reasons == ()


def test_nan_and_inf_propagate_lower_case():
    row = compute_metrics(
        np.array([1.0, 2.0, np.nan], np.float32), np.array([1.0, np.nan, 3.0], np.float32)
    )
    cells = csv_values(row)
    assert cells[0] == cells[1] == cells[6] == cells[7] == "nan"
    # A NaN benchmark element fails `abs(y) > eps`, so its relative error is 0, but the
    # NaN device element divides into NaN: the relative errors are nan as well.
    assert cells[2] == cells[8] == cells[9] == "nan"
    assert row.reasons == ()
    only_bench_nan = compute_metrics(np.ones(3, np.float32), np.array([1, np.nan, 2], np.float32))
    assert csv_values(only_bench_nan)[8] == "0.500000"
    inf_row = compute_metrics(np.array([np.inf, 1.0], np.float32), np.array([1.0, 1.0], np.float32))
    assert csv_values(inf_row)[1] == "inf"
    assert csv_values(inf_row)[8] == "inf"


def test_empty_tensors_follow_msaccucmp():
    row = compute_metrics(np.zeros(0, np.float32), np.zeros(0, np.float32))
    # Its max() raises (NaN + reason), mean() of nothing is nan, sums of nothing are 0.
    assert csv_values(row) == [
        "1.0",
        "NaN",
        "0.000000",
        "0.000000",
        "NaN",
        "(nan;nan),(nan;nan)",
        "nan",
        "nan",
        "NaN",
        "nan",
    ]
    assert row.reasons == (
        "Cannot compare by MaxAbsoluteError. The tensor is empty.",
        "Cannot compare by KullbackLeiblerDivergence. The tensor is empty.",
        "Cannot compare by MaxRelativeError. The tensor is empty.",
    )
    assert row.element_count == 0


def test_integer_dtypes_are_cast_to_float32():
    x = np.array([3, -4, 100000001], np.int64)  # 100000001 rounds to 1e8 in float32
    y = np.array([3, -5, 100000000], np.int32)
    assert csv_values(compute_metrics(x, y))[1] == "1.000000"
    assert csv_values(compute_metrics(x, y)) == csv_values(
        compute_metrics(x.astype(np.float32), y.astype(np.float32))
    )


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_inputs_equal_their_float32_values(dtype):
    rng = np.random.default_rng(3)
    y = rng.standard_normal(9000).astype(dtype)
    x = (y.astype(np.float32) + np.float32(0.01)).astype(dtype)
    row = compute_metrics(x, y)
    assert csv_values(row) == csv_values(
        compute_metrics(x.astype(np.float32), y.astype(np.float32))
    )


@pytest.mark.parametrize(
    "dtype",
    [np.float16, ml_dtypes.bfloat16, np.int16, np.int8, np.uint8, ml_dtypes.float8_e4m3fn],
)
@pytest.mark.parametrize("finite_only", [True, False])
def test_every_bit_pattern_converts_like_astype(dtype, finite_only):
    # 1- and 2-byte device dtypes go through a table of float32 values; it must give exactly
    # what `astype(float32)` gives, NaN and inf patterns included.
    bits = np.arange(1 << (8 * np.dtype(dtype).itemsize), dtype=np.uint64)
    x = bits.astype(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint8).view(dtype)
    if finite_only:
        x = x[np.isfinite(x.astype(np.float32))]
    y = np.random.default_rng(9).standard_normal(x.size).astype(np.float32)
    row = compute_metrics(x, y)
    assert_same_rows(row, compute_metrics(x.astype(np.float32), y))
    assert_same_rows(compute_metrics(y, x), compute_metrics(y, x.astype(np.float32)))
    assert row.element_count == x.size
    assert math.isfinite(row.max_abs_error) or not finite_only


def test_cosine_is_clipped_to_one():
    # In float32 these normalised squares sum to 1.0000001; msaccucmp prints min(., 1.0).
    x = np.array([-7.75, 3.75, 6.125, -6.625, -5.5, -1.625, -5.875, 11.625, -8, 9.75, 7.25])
    x = x.astype(np.float32)
    norm = np.sqrt(np.add.reduce(x * x))
    assert np.add.reduce((x / norm) * (x / norm)) > 1
    row = compute_metrics(x, x.copy())
    assert row.cosine == 1.0 and csv_values(row)[0] == "1.000000"


def test_cosine_float32_against_float64_reference():
    rng = np.random.default_rng(11)
    y = rng.standard_normal(20000).astype(np.float32)
    x = (y + rng.standard_normal(20000).astype(np.float32)).astype(np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    exact = float(np.dot(x64, y64) / (np.linalg.norm(x64) * np.linalg.norm(y64)))
    assert abs(compute_metrics(x, y).cosine - exact) < 1e-6
    # FORMATS.md section 6: msaccucmp's float32 normalise-then-sum can differ from the float64
    # dot product in the 6th decimal. For this pair float64 gives 0.266743, msaccucmp 0.266744.
    x = np.array([-7.0, 5.0, 9.5, 7.875], np.float32)
    y = np.array([2.375, -12.25, 7.25, 10.125], np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    exact = float(np.dot(x64, y64) / (np.linalg.norm(x64) * np.linalg.norm(y64)))
    assert format_value(exact) == "0.266743"
    assert csv_values(compute_metrics(x, y))[0] == "0.266744"


def test_relative_euclidean_distance_takes_the_root_in_float64():
    # numpy 1.x evaluates np.float32 ** 0.5 in float64: 0.821964, where float32 gives 0.821965.
    x = np.array([8.0, -2.125, -6.75], np.float32)
    y = np.array([5.5, 9.125, -9.875], np.float32)
    ratio = np.float32(np.add.reduce((x - y) ** 2) / np.add.reduce(y * y))
    assert format_value(float(np.sqrt(ratio))) == "0.821965"
    assert csv_values(compute_metrics(x, y))[3] == "0.821964" == format_value(float(ratio) ** 0.5)


def test_sums_follow_numpy_1x_block_order():
    # 8192 errors of 2048 sum to 2**24; then 8 blocks of 0.5 each vanish one by one (ulp 2)
    # in numpy 1.x's block-by-block sum, but survive a whole-array pairwise sum.
    x = np.concatenate([np.full(8192, 2049, np.float32), np.full(8192 * 8, 1 + 2**-14, np.float32)])
    y = np.ones_like(x)
    assert csv_values(compute_metrics(x, y))[2] == "16777216.000000"
    assert legacy_sum(np.abs(x / y - 1)) == 2**24


def test_kl_when_max_equals_min_and_the_clamp():
    ramp = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
    # Constant 3: left as is (no min-max), all 3 -> p uniform; ramp -> [0,1/3,2/3,1] -> floor.
    yp = np.array([KL_FLOOR, 1 / 3, 2 / 3, 1.0])
    q = yp / yp.sum()
    expected = float((0.25 * np.log(0.25 / q)).sum())
    row = compute_metrics(np.full(4, 3.0, np.float32), ramp)
    assert math.isclose(row.kl_divergence, expected, rel_tol=1e-5)
    # Constant -2: left as is, then every value clamps to 2**-23: p uniform again.
    assert compute_metrics(np.full(4, -2.0, np.float32), ramp).kl_divergence == row.kl_divergence
    # Equal tensors: |KL| < eps prints 0.000000, not -0.000000.
    assert csv_values(compute_metrics(ramp, ramp.copy()))[4] == "0.000000"


def test_relative_error_where_benchmark_is_within_eps():
    x = np.array([5.0, 5.0, 5.0, 3.0], np.float32)
    y = np.array([0.0, 1e-17, 2.0**-52, 2.0], np.float32)  # |y| <= 2**-52 (eps): error 0
    cells = csv_values(compute_metrics(x, y))
    assert cells[2] == cells[8] == "0.500000"
    assert cells[9] == f"{0.5 / 4:.6f}"
    just_above = compute_metrics(np.array([5.0], np.float32), np.array([1e-15], np.float32))
    assert just_above.max_relative_error == float(np.abs(np.float32(5) / np.float32(1e-15) - 1))


def test_relative_error_is_zero_where_benchmark_is_zero_or_nan():
    x = np.array([np.inf, np.nan, 5.0, 1.0, 3.0], np.float32)
    y = np.array([0.0, 0.0, np.nan, -0.0, 2.0], np.float32)
    row = compute_metrics(x, y)
    assert row.accumulated_relative_error == 0.5 and row.max_relative_error == 0.5
    assert row.ratio_rel_err_below_0_001 == 0.8  # the four zeros count as below


def test_relative_error_ratio_limits_match_a_float64_compare():
    # Relative errors below 1 lie on a 2**-24 grid: x = 1 - k * 2**-24 against y = 1 gives
    # exactly k * 2**-24. These k straddle 0.001 * 2**24 = 16777.2 and 0.005 * 2**24 = 83886.1.
    k = np.array([16776, 16777, 16778, 83885, 83886, 83887, 83888])
    x = (1 - k * 2.0**-24).astype(np.float32)
    row = compute_metrics(x, np.ones_like(x))
    assert row.ratio_rel_err_below_0_001 == 2 / 7
    assert row.ratio_rel_err_below_0_005 == 5 / 7
    # The float32 limits compare like float64 for every float32 near them.
    for limit in (0.001, 0.005):
        at_or_above = _float32_at_or_above(limit)
        near = np.float32(limit) + np.arange(-40, 41, dtype=np.float32) * np.spacing(
            np.float32(limit)
        )
        assert np.array_equal(near < at_or_above, near.astype(np.float64) < limit)


def test_tensors_too_long_to_keep_whole_give_the_same_row(monkeypatch):
    rng = np.random.default_rng(21)
    n = 3 * metric_stream.CHUNK + 4321
    y = np.maximum(rng.standard_normal(n), 0).astype(ml_dtypes.bfloat16)
    x = (y.astype(np.float32) + rng.standard_normal(n).astype(np.float32) / 50).astype(np.float16)
    kept_whole = compute_metrics(x, y)
    monkeypatch.setattr(metric_stream, "RESIDENT", metric_stream.CHUNK)
    streamed = compute_metrics(x, y)
    assert_same_rows(streamed, kept_whole)
    assert csv_values(streamed) == reference_cells(x, y)


def test_reused_buffers_leave_no_trace_between_calls_and_threads():
    rng = np.random.default_rng(22)

    def pair(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.standard_normal(n).astype(np.float32)
        return (y + np.float32(0.01)).astype(np.float16), y.astype(np.float16)

    pairs = [pair(n) for n in (150_000, 9_000, 70_000, 150_000, 5)]
    alone = [ThreadPoolExecutor(1).submit(compute_metrics, x, y).result() for x, y in pairs]
    # One thread, big then small (its buffers hold the previous tensor's data) ...
    for (x, y), expected in zip(pairs, alone, strict=True):
        assert_same_rows(compute_metrics(x, y), expected)
    # ... and four threads at once, each with its own buffers.
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda p: compute_metrics(*p), pairs * 3))
    for row, expected in zip(rows, alone * 3, strict=True):
        assert_same_rows(row, expected)
    assert csv_values(alone[1]) == reference_cells(*pairs[1])


def test_algorithms_limit_the_work():
    rng = np.random.default_rng(2)
    y = rng.standard_normal(1000).astype(np.float32)
    x = y + np.float32(0.1)
    full = csv_values(compute_metrics(x, y))
    row = compute_metrics(x, y, ["KullbackLeiblerDivergence", "MaxRelativeError"])
    cells = csv_values(row)
    assert cells[4] == full[4] and cells[8] == full[8]
    assert [c for i, c in enumerate(cells) if i not in (4, 8)] == ["NaN"] * 8
    assert math.isnan(row.sqnr_db) and math.isnan(row.ratio_rel_err_below_0_005)
    assert row.reasons == ()
    extras = compute_metrics(x, y, ["SQNR"])
    assert extras.sqnr_db == compute_metrics(x, y).sqnr_db and csv_values(extras) == ["NaN"] * 10
    with pytest.raises(ValueError, match="unknown metric Cosine"):
        compute_metrics(x, y, ["Cosine"])


def test_element_counts_differ_raise_and_failed_row():
    with pytest.raises(
        ValueError, match=r"element counts differ: device 6 \(2, 3\) vs benchmark 5"
    ):
        compute_metrics(np.zeros((2, 3)), np.zeros(5))
    row = MetricRow.failed("shapes [2,3] vs [5]", element_count=6)
    assert csv_values(row) == ["NaN"] * 10
    assert row.reasons == ("shapes [2,3] vs [5]",) and row.standard_deviation is None


def test_inputs_are_not_modified_and_layout_is_c_order():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 500)).astype(np.float32)
    y = rng.standard_normal((500, 300)).astype(np.float32)
    x_before, y_before = x.copy(), y.copy()
    row = compute_metrics(x, y.T)
    assert np.array_equal(x, x_before) and np.array_equal(y, y_before)
    assert csv_values(row) == csv_values(compute_metrics(x.ravel(), y.T.copy().ravel()))
    strided = rng.standard_normal(2 * 20000).astype(np.float32)
    assert csv_values(compute_metrics(strided[::2], strided[1::2])) == reference_cells(
        strided[::2].copy(), strided[1::2].copy()
    )


def test_csv_text_of_values():
    assert format_value(-0.0) == "-0.000000"
    assert format_value(float("-inf")) == "-inf"
    assert format_value(1234.5678901) == "1234.567890"
    # |v| < 0.001 becomes 0.0, so a tiny negative mean never prints -0.000.
    assert format_standard_deviation(((-0.0004, 0.001), (1234.5678, -0.0009))) == (
        "(0.000;0.001),(1234.568;0.000)"
    )
    assert format_standard_deviation(((math.nan, math.inf), (0.0, 0.0))) == (
        "(nan;inf),(0.000;0.000)"
    )


@pytest.mark.parametrize(
    ("n", "dtype"),
    [
        (5, np.float32),
        (8192, np.float16),
        (8193, np.int32),
        (3 * 131072 + 77, np.float32),
        (131073, np.float64),
        (40000, ml_dtypes.bfloat16),
    ],
)
def test_streamed_values_equal_whole_array_reference(n, dtype):
    rng = np.random.default_rng(n)
    y = (rng.standard_normal(n) * 40 + 3).astype(dtype)
    x = (y.astype(np.float64) + rng.standard_normal(n)).astype(dtype)
    y[:: max(2, n // 7)] = 0
    assert csv_values(compute_metrics(x, y)) == reference_cells(x, y)


def test_ten_million_elements():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(10_000_000, dtype=np.float32)
    x = y + rng.standard_normal(10_000_000, dtype=np.float32) * np.float32(1e-3)
    start = time.perf_counter()
    row = compute_metrics(x, y)
    elapsed = time.perf_counter() - start
    print(f"\ncompute_metrics on 10M float32 elements: {elapsed * 1000:.0f} ms")
    assert csv_values(row) == reference_cells(x, y)
    assert row.element_count == 10_000_000
