import math

import ml_dtypes
import numpy as np
import pytest

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
