"""Own-error metrics: ULP spacing by hand-checked values, rounding, scaling and non-finites."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from precision_shell.errors import PrecisionError
from precision_shell.replay.measure import own_error, ulp

rng = np.random.default_rng(11)


def test_ulp_spacings_by_hand() -> None:
    np.testing.assert_array_equal(
        ulp(np.array([1.0, 1.5, 2.0, 1024.0, 65504.0, 1e6, 0.0, 1e-8]), "DT_FLOAT16"),
        [2.0**-10, 2.0**-10, 2.0**-9, 1.0, 32.0, 32.0, 2.0**-24, 2.0**-24],
    )
    # 2047.9 rounds to 2048 in float16, where the spacing is 2.
    assert ulp(np.array([2047.9]), "DT_FLOAT16")[0] == 2.0
    np.testing.assert_array_equal(
        ulp(np.array([1.0, 3.0, -0.75, 1e-45, 1e39]), "DT_BF16"),
        [2.0**-7, 2.0**-6, 2.0**-8, 2.0**-133, 2.0**120],
    )
    assert ulp(np.array([1.0]), "DT_FLOAT")[0] == 2.0**-23
    assert ulp(np.array([1.0]), "DT_FLOAT")[0] == np.spacing(np.float32(1.0))
    np.testing.assert_array_equal(ulp(np.array([5.0, 1e9]), "DT_INT32"), [1.0, 1.0])
    with pytest.raises(PrecisionError, match="no ULP rule for device dtype DT_STRING"):
        ulp(np.array([1.0]), "DT_STRING")


def _by_rounding(values: np.ndarray, kind: type, bits: int, emin: int, emax: int) -> np.ndarray:
    """`ulp`'s definition, spelled out: round |value| to the dtype, take floor(log2) of it
    (emin at zero, emax past the largest finite), spacing 2^(e - bits)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.abs(values).astype(kind).astype(np.float64)
    finite = np.isfinite(rounded)
    _, exponent = np.frexp(np.where(finite, rounded, 0.0))
    e = np.where(finite, np.where(rounded > 0, exponent - 1, emin), emax)
    return np.ldexp(1.0, np.clip(e, emin, emax) - bits)


@pytest.mark.parametrize(
    ("dtype", "kind", "bits", "emin", "emax"),
    [
        ("DT_FLOAT16", np.float16, 10, -14, 15),
        ("DT_FLOAT", np.float32, 23, -126, 127),
        ("DT_DOUBLE", np.float64, 52, -1022, 1023),
    ],
)
def test_ieee_spacing_from_the_bits_equals_rounding_first(dtype, kind, bits, emin, emax) -> None:
    """`ulp` reads IEEE dtypes' spacing off the float64 bits (rounding float64 to float16 is
    slow in numpy); every power of two, the midpoints below them (ties round up, to the even
    power) and their neighbours, subnormals, the overflow edge and NaN/inf agree."""
    powers = np.exp2(np.arange(-1080, 1024).astype(np.float64))
    mids = powers * (1 - 2.0 ** -(bits + 2))
    edges = np.concatenate([powers, mids, [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324]])
    edges = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf)])
    spread = rng.standard_normal(200_000) * np.exp2(rng.integers(-160, 140, 200_000).astype(float))
    values = np.concatenate([edges, -edges, spread])
    np.testing.assert_array_equal(ulp(values, dtype), _by_rounding(values, kind, bits, emin, emax))


def test_bf16_spacing_matches_ml_dtypes() -> None:
    values = np.abs(rng.standard_normal(1000)) * 10.0 ** rng.integers(-30, 30, 1000)
    rounded = values.astype(ml_dtypes.bfloat16)
    step = np.nextafter(rounded, np.array(np.inf, dtype=ml_dtypes.bfloat16)).astype(np.float64)
    np.testing.assert_array_equal(ulp(values, "DT_BF16"), step - rounded.astype(np.float64))


def test_correctly_rounded_float16_is_within_half_ulp() -> None:
    exact = rng.standard_normal(10_000) * 100.0
    device = exact.astype(np.float16).astype(np.float64)
    err = own_error(device, exact, "DT_FLOAT16")
    assert 0.4 < err.max_ulp <= 0.5
    assert err.cosine > 0.999999
    assert err.relative_euclidean_distance < 2.0**-11


def test_one_percent_scaled_output_is_far_beyond_rounding() -> None:
    # 1% is 2^-6.6: against float16's relative spacing of 2^-10..2^-11 that is 10-21 ULP
    # (not hundreds: float16 has only 10 mantissa bits); against float32's, ~10^5 ULP.
    exact = rng.uniform(1.0, 2.0, 1000)
    device16 = (exact * 1.01).astype(np.float16).astype(np.float64)
    err16 = own_error(device16, exact, "DT_FLOAT16")
    assert 10.0 < err16.max_ulp < 22.0
    assert err16.relative_euclidean_distance == pytest.approx(0.01, rel=0.05)
    device32 = (exact * 1.01).astype(np.float32).astype(np.float64)
    assert own_error(device32, exact, "DT_FLOAT").max_ulp > 80_000


def test_metrics_by_hand() -> None:
    err = own_error(np.array([3.0, 4.5]), np.array([3.0, 4.0]), "DT_FLOAT16")
    assert err.max_abs_error == 0.5
    assert err.max_ulp == 0.5 / 2.0**-8  # spacing at 4 is 2^-8
    assert err.relative_euclidean_distance == pytest.approx(0.5 / 5.0, rel=1e-15)
    assert err.cosine == pytest.approx((9.0 + 18.0) / (5.0 * math.sqrt(9.0 + 20.25)), rel=1e-15)


def test_zero_reference_and_empty() -> None:
    zero = np.zeros(3)
    same = own_error(zero, zero, "DT_FLOAT")
    assert (same.cosine, same.max_abs_error, same.relative_euclidean_distance) == (1.0, 0.0, 0.0)
    off = own_error(np.array([0.0, 2.0**-24, 0.0]), zero, "DT_FLOAT16")
    assert off.relative_euclidean_distance == math.inf
    assert off.cosine == 0.0
    assert off.max_ulp == 1.0  # one subnormal step
    empty = own_error(np.array([]), np.array([]), "DT_FLOAT16")
    assert (empty.cosine, empty.max_ulp) == (1.0, 0.0)


def test_non_finite_rules() -> None:
    ref = np.array([1.0, np.inf, np.nan, 2.0])
    both = own_error(np.array([1.0, np.inf, np.nan, 2.0]), ref, "DT_FLOAT16")
    assert both.max_ulp == 0.0 and both.max_abs_error == 0.0
    assert both.cosine == pytest.approx(1.0, abs=1e-15)
    one_side = own_error(np.array([1.0, np.inf, np.nan, np.inf]), ref, "DT_FLOAT16")
    assert one_side.max_ulp == math.inf and one_side.max_abs_error == math.inf
    assert one_side.cosine == pytest.approx(1.0, abs=1e-15)  # over the finite pairs
    flipped = own_error(np.array([-np.inf]), np.array([np.inf]), "DT_FLOAT16")
    assert flipped.max_ulp == math.inf
    # nothing finite on both sides and they differ: no cosine to give, every error inf
    overflowed = own_error(np.array([np.inf, np.inf]), np.array([2.4e5, 2.6e5]), "DT_FLOAT16")
    assert math.isnan(overflowed.cosine)
    assert overflowed.relative_euclidean_distance == overflowed.max_abs_error == math.inf
    assert overflowed.max_ulp == math.inf


def test_the_elements_left_out_of_cosine_and_distance_are_counted_by_side() -> None:
    """cosine and rel. Euclidean are over the elements finite on both sides: what they leave
    out is counted, by which side holds the NaN/inf, so a reader can say so."""

    def counts(e):
        return (
            e.elements,
            e.nonfinite_first,
            e.nonfinite_second,
            e.nonfinite_differ,
            e.nonfinite_same,
            e.left_out,
            e.nonfinite_mismatch,
        )

    device = np.array([1.0, np.inf, np.nan, 2.0, np.inf, 3.0, -np.inf, np.nan])
    other = np.array([1.0, 5.0, 4.0, np.nan, np.inf, 3.0, np.inf, np.nan])
    assert counts(own_error(device, other, "DT_FLOAT16")) == (8, 2, 1, 1, 2, 6, 4)
    assert counts(own_error(other, device, "DT_FLOAT16")) == (8, 1, 2, 1, 2, 6, 4)
    clean = own_error(np.array([1.0, 2.0]), np.array([1.0, 2.5]), "DT_FLOAT16")
    assert counts(clean) == (2, 0, 0, 0, 0, 0, 0)


def test_values_beyond_the_dtype_use_the_spacing_at_max() -> None:
    err = own_error(np.array([65504.0]), np.array([70000.0]), "DT_FLOAT16")
    assert err.max_ulp == (70000.0 - 65504.0) / 32.0


def test_shapes_must_hold_the_same_elements() -> None:
    assert own_error(np.ones((2, 3)), np.ones(6), "DT_FLOAT").max_ulp == 0.0
    with pytest.raises(PrecisionError, match="not comparable"):
        own_error(np.ones(5), np.ones(6), "DT_FLOAT")
