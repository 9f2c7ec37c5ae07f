import math

import ml_dtypes
import numpy as np
import pytest

from precision_shell.errors import PrecisionError
from precision_shell.workspace import tensor_stats
from precision_shell.workspace.tensor_stats import StatsCache, compute_stats


def test_stats_of_known_values():
    s = compute_stats(np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float16))
    assert (s.shape, s.dtype, s.count) == ((2, 2), "float16", 4)
    assert (s.max, s.min, s.mean) == (6.0, 1.0, 3.0)
    assert s.std == pytest.approx(np.std([1, 2, 3, 6]))
    assert (s.nan_count, s.inf_count) == (0, 0)


def test_nan_and_inf_are_counted_not_folded_in():
    s = compute_stats(np.array([1.0, np.nan, np.inf, -np.inf, 3.0], dtype=np.float32))
    assert (s.nan_count, s.inf_count, s.finite_count) == (1, 2, 2)
    assert (s.max, s.min, s.mean) == (3.0, 1.0, 2.0)


def test_all_nan_gives_nan_stats():
    s = compute_stats(np.full(3, np.nan))
    assert math.isnan(s.max) and math.isnan(s.mean) and s.nan_count == 3


def test_chunked_merge_matches_numpy(monkeypatch):
    monkeypatch.setattr(tensor_stats, "_CHUNK", 7)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(1000) * 3 + 1e4).astype(np.float64)
    s = compute_stats(x)
    assert s.mean == pytest.approx(x.mean(), rel=1e-12)
    assert s.std == pytest.approx(x.std(), rel=1e-9)
    assert (s.max, s.min) == (x.max(), x.min())


def test_bfloat16_bool_and_int_tensors():
    assert compute_stats(np.array([1.5, -2], dtype=ml_dtypes.bfloat16)).min == -2.0
    assert compute_stats(np.array([True, False, True])).mean == pytest.approx(2 / 3)
    assert compute_stats(np.array([3, 5], dtype=np.int32)).max == 5.0
    assert compute_stats(np.zeros((0, 4), dtype=np.float32)).count == 0


def test_cache_computes_once():
    cache = StatsCache()
    loads = []

    def load():
        loads.append(1)
        return np.arange(4.0)

    assert cache.get(("f", "output", 0), load).max == 3.0
    assert cache.get(("f", "output", 0), load).max == 3.0
    assert len(loads) == 1 and len(cache) == 1


@pytest.mark.parametrize(
    ("values", "want_max", "want_min", "want_mean"),
    [
        ([np.inf, np.inf], math.inf, math.inf, math.inf),
        ([-np.inf, -np.inf, np.nan], -math.inf, -math.inf, -math.inf),
        ([np.inf, -np.inf], math.inf, -math.inf, math.nan),
    ],
)
def test_all_inf_gives_the_infinities_as_max_and_min(values, want_max, want_min, want_mean):
    """An overflowed float16 tensor reads max inf, min inf; never nan."""
    s = compute_stats(np.array(values, dtype=np.float16))
    assert (s.max, s.min) == (want_max, want_min)
    assert s.mean == want_mean or (math.isnan(want_mean) and math.isnan(s.mean))
    assert math.isnan(s.std) and s.inf_count == 2 and s.finite_count == 0


@pytest.mark.parametrize(
    "array",
    [
        np.array(["a", "bc"]),
        np.array([b"x"]),
        np.zeros(2, dtype=[("a", "<f4"), ("b", "<i2")]),
        np.zeros(2, dtype="V4"),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
    ],
)
def test_non_numeric_dtypes_are_a_user_error_naming_the_file_and_dtype(array):
    with pytest.raises(PrecisionError) as err:
        compute_stats(array, "bench/x.0.1.npy")
    assert str(err.value) == f"bench/x.0.1.npy: dtype {array.dtype} is not numeric; no statistics"


def test_ml_dtypes_are_numbers():
    s = compute_stats(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))
    assert (s.max, s.min, s.dtype) == (1.5, -2.0, "bfloat16")
    assert compute_stats(np.array([3, -4], dtype=ml_dtypes.int4)).min == -4.0


def test_stats_cache_names_the_file_of_a_string_tensor(tmp_path):
    path = tmp_path / "names.0.1.npy"
    np.save(path, np.array(["a", "b"]))
    with pytest.raises(PrecisionError) as err:
        StatsCache().get((str(path), "benchmark", 0), lambda: np.load(path))
    assert str(err.value) == f"{path}: dtype <U1 is not numeric; no statistics"
