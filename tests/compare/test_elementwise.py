"""`compare_elements`: worst/first rows, allclose, cosine, error ratio, counts, NaN/inf."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision_shell.compare.metrics.elementwise import compare_elements
from precision_shell.errors import PrecisionError


@pytest.fixture
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    right = rng.standard_normal((4, 5, 6)).astype(np.float32)
    left = (right + rng.standard_normal(right.shape) * 0.01).astype(np.float32)
    return left, right


def test_worst_rows_are_the_true_top_n_abs_diffs(pair):
    left, right = pair
    rep = compare_elements(left, right, top=7)
    x, y = left.astype(np.float64).ravel(), right.astype(np.float64).ravel()
    diff = np.abs(x - y)
    top = np.argsort(-diff)[:7]
    assert [r.index for r in rep.worst] == [np.unravel_index(i, left.shape) for i in top]
    assert [r.diff for r in rep.worst] == diff[top].tolist()
    assert [(r.left, r.right) for r in rep.worst] == list(zip(x[top], y[top], strict=True))
    assert [r.relative for r in rep.worst] == (diff[top] / np.abs(y[top])).tolist()
    assert [r.index for r in rep.first] == [np.unravel_index(i, left.shape) for i in range(7)]
    assert rep.shape == (4, 5, 6) and rep.count == 120


def test_cosine_error_ratio_and_max_errors_follow_their_formulas(pair):
    left, right = pair
    atol, rtol = 0.005, 0.01
    rep = compare_elements(left, right, atol=atol, rtol=rtol)
    x, y = left.astype(np.float64).ravel(), right.astype(np.float64).ravel()
    cosine = np.sum((x / np.linalg.norm(x)) * (y / np.linalg.norm(y)))
    assert math.isclose(rep.cosine, cosine, abs_tol=1e-12)
    mismatched = np.abs(x - y) > atol + rtol * np.abs(y)
    assert 0 < mismatched.sum() < x.size  # the tolerances split this data
    assert rep.mismatch_count == int(mismatched.sum())
    assert rep.error_ratio == mismatched.mean()
    assert rep.allclose is False
    assert rep.max_abs_error == np.abs(x - y).max()
    assert rep.max_relative_error == (np.abs(x - y) / np.abs(y)).max()
    loose = compare_elements(left, right, atol=1.0, rtol=0.0)
    assert loose.allclose and loose.mismatch_count == 0 and loose.error_ratio == 0.0


def test_float16_values_are_cast_up_before_differencing():
    left = np.array([2048.0, 1.0], dtype=np.float16)
    right = np.array([2049.0, 1.0009765625], dtype=np.float32)
    rep = compare_elements(left, right)
    assert [r.diff for r in rep.first] == [1.0, 0.0009765625]


def test_different_counts_are_an_error_unless_flatten_to_min():
    left, right = np.arange(6.0).reshape(2, 3), np.arange(10.0)
    with pytest.raises(PrecisionError) as err:
        compare_elements(left, right)
    assert str(err.value) == (
        "element counts differ: left 6 (2, 3) vs right 10 (10,); "
        "use --flatten-to-min to compare the first 6 elements"
    )
    rep = compare_elements(left, right + 1, flatten_to_min=True, top=3)
    assert rep.truncated_from == (6, 10) and rep.count == 6 and rep.shape == (6,)
    assert [r.index for r in rep.first] == [(0,), (1,), (2,)]
    assert rep.max_abs_error == 1.0 and rep.mismatch_count == 6


def test_same_count_other_shape_compares_flat():
    rep = compare_elements(np.zeros((2, 3)), np.ones(6), top=2)
    assert rep.shape == (6,) and [r.index for r in rep.worst] == [(0,), (1,)]


def test_cosine_special_cases_follow_formats_section_6():
    zeros, ones = np.zeros(4), np.ones(4)
    assert compare_elements(zeros, zeros).cosine == 1.0
    assert math.isnan(compare_elements(zeros, ones).cosine)
    assert math.isnan(compare_elements(ones, zeros).cosine)
    assert compare_elements(np.array([3.0]), np.array([-5.0])).cosine == 1.0  # scalar
    assert compare_elements(np.array(0.0), np.array(2.0)).cosine == 1.0
    assert compare_elements(ones, -ones).cosine == -1.0


def test_nan_and_inf_rank_first_and_propagate_to_the_max_errors():
    left = np.array([1.0, np.nan, 3.0, np.inf, 5.0])
    right = np.array([1.0, 2.0, 3.5, 4.0, 5.0])
    rep = compare_elements(left, right, top=3)
    assert {r.index for r in rep.worst[:2]} == {(1,), (3,)}
    assert rep.worst[2].index == (2,) and rep.worst[2].diff == 0.5
    assert math.isnan(rep.max_abs_error) and math.isnan(rep.max_relative_error)
    assert math.isnan(rep.cosine)
    assert rep.mismatch_count == 3
    both_nan = compare_elements(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert both_nan.mismatch_count == 0  # NaN against NaN is a match (equal_nan)
    inf_only = compare_elements(np.array([np.inf, 1.0]), np.array([1.0, 1.0]))
    assert inf_only.max_abs_error == math.inf


def test_relative_error_is_zero_where_the_benchmark_is_zero():
    rep = compare_elements(np.array([0.5, 2.0]), np.array([0.0, 1.0]))
    assert [r.relative for r in rep.first] == [0.0, 1.0]
    assert rep.max_relative_error == 1.0


def test_top_zero_and_empty_tensors():
    rep = compare_elements(np.ones(3), np.ones(3), top=0)
    assert rep.worst == [] and rep.first == [] and rep.allclose
    empty = compare_elements(np.zeros((0, 4)), np.zeros((0, 4)))
    assert empty.count == 0 and empty.worst == [] and empty.error_ratio == 0.0
    assert math.isnan(empty.max_abs_error) and empty.allclose


def test_top_larger_than_the_tensor_lists_every_element_once():
    rep = compare_elements(np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.0, 1.0]), top=10)
    assert [r.index for r in rep.worst] == [(2,), (0,), (1,)]
    assert len(rep.first) == 3
