"""The statistics of a tensor (float64, finite-only) and the statistics rule: dtype-aware
allowances, padding-aware like-with-like, NaN/inf births, count mismatches."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from precision_shell.compare.statistics import values as values_module
from precision_shell.compare.statistics.judge import (
    DEVIATES,
    EXTREME_UNITS,
    NONFINITE,
    NOT_COMPARED,
    PASS,
    TOLERANCE_UNITS,
    judge,
    unit_roundoff,
)
from precision_shell.compare.statistics.values import statistics_of
from precision_shell.errors import PrecisionError
from precision_shell.formats.layouts import from_origin_layout
from precision_shell.formats.stats_dump import StatsRow

F16_U = 2.0**-11


def row_of(array: np.ndarray, dtype: str, fmt: str = "ND") -> StatsRow:
    """The statistics row a device would record for `array` as stored."""
    return StatsRow("output", 0, dtype, fmt, tuple(array.shape), None, statistics_of(array))


def numpy_statistics(array: np.ndarray) -> dict[str, float]:
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    finite = flat[np.isfinite(flat)]
    out = {
        "count": float(flat.size),
        "nan_count": float(np.isnan(flat).sum()),
        "neg_inf_count": float(np.isneginf(flat).sum()),
        "pos_inf_count": float(np.isposinf(flat).sum()),
    }
    if finite.size:
        out.update(
            max=float(finite.max()),
            min=float(finite.min()),
            mean=float(finite.mean()),
            l2norm=float(np.linalg.norm(finite)),
        )
    return out


def assert_statistics_close(got: dict[str, float], want: dict[str, float]) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-300), key


# --- statistics_of -----------------------------------------------------------------------------


def test_statistics_with_nan_and_inf() -> None:
    array = np.array([1.0, -2.0, np.nan, np.inf, -np.inf, 3.0, np.nan], dtype=np.float32)
    stats = statistics_of(array)
    assert stats == {
        "count": 7.0,
        "nan_count": 2.0,
        "neg_inf_count": 1.0,
        "pos_inf_count": 1.0,
        "max": 3.0,
        "min": -2.0,
        "mean": pytest.approx(2.0 / 3.0, rel=1e-15),
        "l2norm": pytest.approx(math.sqrt(14.0), rel=1e-15),
    }
    assert_statistics_close(stats, numpy_statistics(array))


def test_all_nan_has_counts_only() -> None:
    stats = statistics_of(np.full((3, 4), np.nan, dtype=np.float16))
    assert stats == {"count": 12.0, "nan_count": 12.0, "neg_inf_count": 0.0, "pos_inf_count": 0.0}
    assert statistics_of(np.zeros((0, 5), np.float32)) == {
        "count": 0.0,
        "nan_count": 0.0,
        "neg_inf_count": 0.0,
        "pos_inf_count": 0.0,
    }


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int8, np.bool_])
def test_integer_statistics_are_exact(dtype: type) -> None:
    array: np.ndarray = np.array([[3, 0, 1], [1, 1, 0]]).astype(dtype)
    stats = statistics_of(array)
    expected = numpy_statistics(array)
    assert stats == expected  # exact
    assert stats["max"] == 3.0 if dtype is not np.bool_ else stats["max"] == 1.0
    big = np.array([2**40, -(2**40), 7], dtype=np.int64)
    assert statistics_of(big)["mean"] == 7.0 / 3.0
    assert statistics_of(big)["l2norm"] == math.sqrt(2.0 * 2.0**80 + 49.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float16_and_bfloat16_statistics_equal_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((37, 29)) * 100
    for array in (base.astype(np.float16), base.astype(ml_dtypes.bfloat16)):
        array.reshape(-1)[[5, 77]] = [np.inf, -np.inf]
        array.reshape(-1)[100] = np.nan
        stats = statistics_of(array)
        assert stats["count"] == 37 * 29
        assert (stats["nan_count"], stats["neg_inf_count"], stats["pos_inf_count"]) == (1, 1, 1)
        assert_statistics_close(stats, numpy_statistics(array.astype(np.float64)))


def test_chunked_statistics_equal_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    array = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    array[[0, 500, 999]] = [np.nan, np.inf, -np.inf]
    whole = statistics_of(array)
    monkeypatch.setattr(values_module, "_CHUNK", 7)
    chunked = statistics_of(array)
    assert_statistics_close(chunked, whole)
    assert_statistics_close(chunked, numpy_statistics(array))
    # a chunk of only non-finite values leaves max/min alone
    tail = np.array([1.0, 2.0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 5.0])
    assert statistics_of(tail)["max"] == 5.0 and statistics_of(tail)["nan_count"] == 7


def test_non_numeric_dtype_names_the_source() -> None:
    with pytest.raises(PrecisionError) as info:
        statistics_of(np.array(["a", "b"]), "bench/x.npy")
    assert str(info.value).startswith("bench/x.npy: dtype <U1 is not numeric")
    with pytest.raises(PrecisionError):
        statistics_of(np.array([1 + 2j]))


def test_unit_roundoff() -> None:
    assert unit_roundoff("FLOAT16") == 2.0**-11
    assert unit_roundoff("BF16") == 2.0**-8
    assert unit_roundoff("FLOAT") == 2.0**-24
    assert unit_roundoff("DOUBLE") == 2.0**-53
    assert unit_roundoff("INT32") == 0.0
    assert unit_roundoff("BOOL") == 0.0
    assert unit_roundoff("MYSTERY8") == 2.0**-11  # unknown: float16's, the loosest common one


# --- (a) rounding passes -----------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 7, 1000, 40_000])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("offset", [0.0, 5.0])  # offset 0: a mean near 0
def test_float16_rounding_passes(size: int, seed: int, offset: float) -> None:
    bench = (np.random.default_rng(seed).standard_normal(size) + offset).astype(np.float32)
    judgement = judge(row_of(bench.astype(np.float16), "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == PASS
    assert judgement.pad_count == 0 and judgement.real_count == size
    assert set(judgement.diffs) == {"max", "min", "mean", "l2norm"}
    # rounding moves each statistic by at most u of its scale: 1/8 of the allowance
    assert judgement.deviation is not None
    assert judgement.deviation <= 1.0 / TOLERANCE_UNITS * (1 + 1e-9)
    assert not judgement.deviates
    assert judgement.notes == []


@pytest.mark.parametrize("seed", [0, 1])
def test_bfloat16_rounding_passes(seed: int) -> None:
    bench = np.random.default_rng(seed).standard_normal(5000).astype(np.float32)
    judgement = judge(row_of(bench.astype(ml_dtypes.bfloat16), "BF16"), statistics_of(bench))
    assert judgement.verdict == PASS
    assert judgement.deviation is not None and judgement.deviation <= 0.125 * (1 + 1e-9)
    # the same bf16 rounding judged as float32 deviates
    judgement32 = judge(row_of(bench.astype(ml_dtypes.bfloat16), "FLOAT"), statistics_of(bench))
    assert judgement32.verdict == DEVIATES


# --- (b) a 5% scale deviates, the L2 norm decides ----------------------------------------------


@pytest.mark.parametrize("size", [100, 1000, 40_000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scaled_tensor_deviates_on_l2norm(size: int, seed: int) -> None:
    bench = np.random.default_rng(seed).standard_normal(size).astype(np.float32)
    device = (bench * np.float32(1.05)).astype(np.float16)
    judgement = judge(row_of(device, "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == DEVIATES
    assert judgement.deviates
    main = judgement.main
    assert main is not None and main.key == "l2norm"
    # 5% off the norm in units of 8u: 0.05 / (8 * 2^-11) = 12.8, give or take the rounding
    assert judgement.deviation is not None and judgement.deviation == main.ratio
    assert 12.8 - 1.0 / 8 <= judgement.deviation <= 12.8 * 1.05 + 1.0 / 8
    assert main.rel_diff == pytest.approx(0.05, abs=F16_U)
    assert main.allowed == pytest.approx(TOLERANCE_UNITS * F16_U * statistics_of(bench)["l2norm"])


# --- (c) padding -------------------------------------------------------------------------------


def nc1hwc0_case(
    bench: np.ndarray, device_dtype: type = np.float16
) -> tuple[StatsRow, dict[str, float], np.ndarray]:
    """An NHWC benchmark (C=24) and its NC1HWC0 device tensor (C1=2, C0=16, 8 pad channels)."""
    device = from_origin_layout(bench.astype(device_dtype), "NC1HWC0", "NHWC")
    assert device.shape == (bench.shape[0], 2, bench.shape[1], bench.shape[2], 16)
    return row_of(device, "FLOAT16", "NC1HWC0"), statistics_of(bench), device


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("origin", [True, False])
def test_nc1hwc0_padding_is_accounted_for(seed: int, origin: bool) -> None:
    bench = (np.random.default_rng(seed).standard_normal((2, 4, 5, 24)) + 0.5).astype(np.float32)
    device_row, bench_stats, device = nc1hwc0_case(bench)
    pads = device.size - bench.size
    assert pads == 2 * 4 * 5 * 8 and device_row.element_count == device.size
    judgement = judge(device_row, bench_stats, origin_count=bench.size if origin else None)
    assert judgement.verdict == PASS, judgement.notes
    assert judgement.pad_count == pads
    assert judgement.real_count == bench.size
    # the device mean, diluted by the pads, is rescaled to the real elements
    stored_mean = device_row.values["mean"]
    mean = judgement.diffs["mean"]
    assert mean.device is not None
    assert mean.device == pytest.approx(stored_mean * device.size / bench.size, rel=1e-12)
    assert mean.device == pytest.approx(statistics_of(bench.astype(np.float16))["mean"], rel=1e-9)
    rms = bench_stats["l2norm"] / math.sqrt(bench.size)
    assert abs(mean.device - bench_stats["mean"]) <= F16_U * rms
    assert mean.ratio is not None and mean.ratio <= 0.125
    # the L2 norm and the extremes are not changed by zero pads
    assert judgement.diffs["l2norm"].device == device_row.values["l2norm"]
    assert judgement.deviation is not None and judgement.deviation <= 0.125 * (1 + 1e-9)


def test_the_same_stored_tensor_without_the_padding_rule_is_not_compared() -> None:
    bench = np.random.default_rng(0).standard_normal((2, 4, 5, 24)).astype(np.float32)
    device_row, bench_stats, device = nc1hwc0_case(bench)
    as_nd = StatsRow("output", 0, "FLOAT16", "ND", device_row.shape, None, device_row.values)
    judgement = judge(as_nd, bench_stats)
    assert judgement.verdict == NOT_COMPARED
    assert judgement.pad_count == 0
    assert f"{device.size} elements stored, the benchmark has {bench.size}" in judgement.notes


def test_all_negative_benchmark_max_is_the_padding() -> None:
    rng = np.random.default_rng(4)
    bench = (-np.abs(rng.standard_normal((1, 3, 3, 24))) - 0.25).astype(np.float32)
    device_row, bench_stats, _ = nc1hwc0_case(bench)
    assert device_row.values["max"] == 0.0 and bench_stats["max"] < 0
    judgement = judge(device_row, bench_stats, origin_count=bench.size)
    assert judgement.verdict == PASS
    max_diff = judgement.diffs["max"]
    assert max_diff.allowed is None and max_diff.ratio is None
    assert max_diff.note == "the padding's 0"
    assert "device max 0 is the padding's (real values all below 0)" in judgement.notes
    assert judgement.diffs["min"].ratio is not None  # min still compared
    assert judgement.main is not None and judgement.main.key != "max"


def test_all_positive_benchmark_min_is_the_padding() -> None:
    rng = np.random.default_rng(5)
    bench = (np.abs(rng.standard_normal((1, 3, 3, 24))) + 0.25).astype(np.float32)
    device_row, bench_stats, _ = nc1hwc0_case(bench)
    assert device_row.values["min"] == 0.0
    judgement = judge(device_row, bench_stats, origin_count=bench.size)
    assert judgement.verdict == PASS
    assert judgement.diffs["min"].allowed is None
    assert judgement.diffs["min"].note == "the padding's 0"
    assert "device min 0 is the padding's (real values all above 0)" in judgement.notes
    assert judgement.diffs["max"].ratio is not None


def test_padding_max_zero_on_a_plain_layout_deviates() -> None:
    # without padding a device max of 0 for an all-negative benchmark is a real difference
    bench = np.full(16, -1.0, dtype=np.float32)
    device = bench.astype(np.float16)
    device[3] = 0.0
    judgement = judge(row_of(device, "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == DEVIATES
    assert judgement.diffs["max"].ratio == pytest.approx(1.0 / (EXTREME_UNITS * F16_U))


# --- (d) NaN / inf -----------------------------------------------------------------------------


def test_nan_born_on_the_device() -> None:
    bench = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    device = bench.astype(np.float16)
    device[[10, 20]] = np.nan
    judgement = judge(row_of(device, "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == NONFINITE
    assert judgement.deviates
    assert judgement.counts["nan_count"] == (2.0, 0.0)
    assert judgement.notes[0] == "nan on the device that the benchmark does not have"


def test_inf_born_by_float16_overflow() -> None:
    bench = np.array([1.0, 70000.0, -70000.0, 2.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        device = bench.astype(np.float16)
    judgement = judge(row_of(device, "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == NONFINITE
    assert judgement.counts["pos_inf_count"] == (1.0, 0.0)
    assert judgement.counts["neg_inf_count"] == (1.0, 0.0)
    assert judgement.notes[0] == "neg inf, pos inf on the device that the benchmark does not have"


def test_nan_on_both_sides_equally_is_not_nonfinite() -> None:
    bench = np.random.default_rng(7).standard_normal(300).astype(np.float32)
    bench[[1, 2, 3]] = np.nan
    bench[4] = np.inf
    judgement = judge(row_of(bench.astype(np.float16), "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == PASS
    assert judgement.counts["nan_count"] == (3.0, 3.0)
    assert judgement.counts["pos_inf_count"] == (1.0, 1.0)
    assert judgement.deviation is not None and judgement.deviation <= 0.125 * (1 + 1e-9)


def test_without_counts_a_nonfinite_extreme_is_a_birth() -> None:
    """A dump configured without the NaN/inf counts: a max of inf (or a NaN mean) on the
    device where the benchmark's is finite is what the counts would have said."""
    values = {"max": math.inf, "min": -1.0, "mean": 0.5, "l2norm": 3.0}
    device = StatsRow("output", 0, "FLOAT16", "ND", (4,), 8, values)
    bench = statistics_of(np.array([1.0, -1.0, 2.0, 0.5], dtype=np.float32))
    judgement = judge(device, bench)
    assert judgement.verdict == NONFINITE
    assert (
        judgement.notes[0] == "max inf on the device, finite in the benchmark (no NaN/inf counts)"
    )
    # with counts, they decide: the same inf on both sides is no birth
    both = {**bench, "max": math.inf, "pos_inf_count": 1.0}
    counted = StatsRow("output", 0, "FLOAT16", "ND", (4,), 8, both)
    assert judge(counted, both).verdict == PASS


def test_fewer_nans_on_the_device_is_not_a_birth() -> None:
    bench = np.array([1.0, np.nan, np.nan, 2.0], dtype=np.float32)
    device = np.array([1.0, np.nan, 0.0, 2.0], dtype=np.float16)
    judgement = judge(row_of(device, "FLOAT16"), statistics_of(bench))
    # a NaN fewer is no birth: the values decide (mean 1 vs 1.5, an exact 0.5 off)
    assert judgement.verdict == DEVIATES
    assert judgement.counts["nan_count"] == (1.0, 2.0)
    assert judgement.diffs["mean"].abs_diff == 0.5


# --- (e) element count mismatch ----------------------------------------------------------------


def test_fewer_elements_on_a_plain_layout_not_compared() -> None:
    bench = np.arange(12, dtype=np.float32)
    judgement = judge(row_of(np.arange(10, dtype=np.float16), "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == NOT_COMPARED
    assert judgement.deviation is None and judgement.diffs == {}
    assert judgement.notes == [
        "10 elements on the device, 12 in the benchmark: not the same tensor"
    ]
    assert not judgement.deviates


def test_more_elements_on_a_plain_layout_not_compared() -> None:
    bench = np.arange(10, dtype=np.float32)
    judgement = judge(row_of(np.arange(12, dtype=np.float16), "FLOAT16"), statistics_of(bench))
    assert judgement.verdict == NOT_COMPARED
    assert judgement.pad_count == 0
    assert judgement.notes == [
        "12 elements stored, the benchmark has 10",
        "12 elements on the device, 10 in the benchmark: not the same tensor",
    ]


def test_no_statistic_on_both_sides() -> None:
    device = StatsRow("output", 0, "FLOAT16", "ND", (4,), None, {"count": 4.0, "max": 1.0})
    judgement = judge(device, {"count": 4.0, "l2norm": 2.0})
    assert judgement.verdict == NOT_COMPARED
    assert judgement.notes == ["no statistic both sides have"]


# --- (f) integers, (g) tolerances by dtype ----------------------------------------------------


def test_int32_must_match_exactly() -> None:
    bench = np.arange(-50, 50, dtype=np.int32)
    same = judge(row_of(bench.copy(), "INT32"), statistics_of(bench))
    assert same.verdict == PASS and same.deviation == 0.0
    off = bench.copy()
    off[7] += 1
    judgement = judge(row_of(off, "INT32"), statistics_of(bench))
    assert judgement.verdict == DEVIATES
    assert judgement.deviation is not None and judgement.deviation > 1e20
    assert judgement.diffs["mean"].allowed == 1e-30


@pytest.mark.parametrize(
    ("dtype", "verdict"),
    [("FLOAT16", PASS), ("BF16", PASS), ("FLOAT", DEVIATES), ("MYSTERY8", PASS)],
)
def test_relative_norm_error_scales_with_unit_roundoff(dtype: str, verdict: str) -> None:
    bench = statistics_of(np.random.default_rng(8).standard_normal(4096).astype(np.float32))
    values = dict(bench)
    values["l2norm"] = bench["l2norm"] * (1 + 1e-4)
    judgement = judge(StatsRow("output", 0, dtype, "ND", (4096,), None, values), bench)
    assert judgement.verdict == verdict
    l2 = judgement.diffs["l2norm"]
    u = unit_roundoff(dtype)
    assert l2.allowed == pytest.approx(TOLERANCE_UNITS * u * bench["l2norm"], rel=1e-12)
    assert judgement.deviation == pytest.approx(1e-4 / (TOLERANCE_UNITS * u), rel=1e-6)
    assert judgement.main is l2


def test_mean_allowance_is_relative_to_rms_not_to_the_mean() -> None:
    # a mean of ~0: a tiny absolute move of it passes, whatever its relative size
    bench = {"count": 4.0, "mean": 1e-9, "l2norm": 2.0, "max": 1.0, "min": -1.0}
    device = StatsRow("output", 0, "FLOAT16", "ND", (4,), None, {**bench, "mean": 2e-4})
    judgement = judge(device, bench)
    mean = judgement.diffs["mean"]
    assert mean.allowed == pytest.approx(TOLERANCE_UNITS * F16_U * 1.0)  # rms = 2 / sqrt(4)
    assert mean.rel_diff is not None and mean.rel_diff > 1e4
    assert judgement.verdict == PASS
    assert judgement.diffs["max"].allowed == pytest.approx(EXTREME_UNITS * F16_U * 1.0)
