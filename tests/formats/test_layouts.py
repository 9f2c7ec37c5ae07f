"""Layout codes and device <-> origin layout conversions, checked against element-by-element
reference layouts built with explicit loops (here only, never in the package)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from precision_shell.formats.layouts import (
    DumpFormat,
    LayoutError,
    format_code,
    format_name,
    from_origin_layout,
    is_plain_format,
    to_origin_layout,
)


def blocks(size: int, block: int) -> int:
    return -(-size // block)


def nc1hwc0_by_loops(nchw: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = nchw.shape
    out = np.zeros((n, blocks(c, c0), h, w, c0), nchw.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        out[ni, ci // c0, hi, wi, ci % c0] = nchw[ni, ci, hi, wi]
    return out


def ndc1hwc0_by_loops(ncdhw: np.ndarray, c0: int) -> np.ndarray:
    n, c, d, h, w = ncdhw.shape
    out = np.zeros((n, d, blocks(c, c0), h, w, c0), ncdhw.dtype)
    for ni, ci, di, hi, wi in itertools.product(*map(range, ncdhw.shape)):
        out[ni, di, ci // c0, hi, wi, ci % c0] = ncdhw[ni, ci, di, hi, wi]
    return out


def fractal_z_by_loops(nchw: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = nchw.shape
    out = np.zeros((blocks(c, c0) * h * w, blocks(n, 16), 16, c0), nchw.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        row = (ci // c0) * h * w + hi * w + wi
        out[row, ni // 16, ni % 16, ci % c0] = nchw[ni, ci, hi, wi]
    return out


def fractal_nz_by_loops(nd: np.ndarray, c0: int) -> np.ndarray:
    *batch, n, c = nd.shape
    out = np.zeros((*batch, blocks(c, c0), blocks(n, 16), 16, c0), nd.dtype)
    for index in np.ndindex(nd.shape):
        *b, ni, ci = index
        out[(*b, ci // c0, ni // 16, ni % 16, ci % c0)] = nd[index]
    return out


def numbered(*shape: int) -> np.ndarray:
    # Values start at 1 so a pad (0) is never mistaken for data.
    return np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)


def test_format_codes_match_the_dump_schema() -> None:
    expected = {
        "NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "HWCN": 16,
        "NC1KHKWHWC0": 17, "C1HWNCoC0": 25, "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30,
        "DHWCN": 31, "NDC1HWC0": 32, "FRACTAL_Z_3D": 33, "NC": 35, "RESERVED": 40,
    }  # fmt: skip
    assert {name: int(DumpFormat[name]) for name in expected} == expected


def test_names_and_codes() -> None:
    assert format_name(3) == "NC1HWC0"
    assert format_name(99) == "UNKNOWN(99)"
    assert format_code("NC1HWC0") == 3
    assert format_code("FORMAT_FRACTAL_NZ") == 29
    assert format_code("nchw") == 0
    assert format_code("C1HWNCOC0") == 25
    with pytest.raises(LayoutError, match="unknown tensor format 'NCWH'"):
        format_code("NCWH")
    assert is_plain_format("NHWC") and is_plain_format(DumpFormat.ND)
    assert not is_plain_format("NC1HWC0") and not is_plain_format(99)


def test_nc1hwc0_both_directions_with_padding() -> None:
    nchw = numbered(2, 20, 3, 4)  # C = 20: one full C0 block and 4 of 16 in the second
    device = nc1hwc0_by_loops(nchw, 16)
    np.testing.assert_array_equal(from_origin_layout(nchw, "NC1HWC0", "NCHW"), device)
    np.testing.assert_array_equal(to_origin_layout(device, "NC1HWC0", "NCHW", nchw.shape), nchw)
    nhwc = nchw.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(from_origin_layout(nhwc, "NC1HWC0", "NHWC"), device)
    np.testing.assert_array_equal(to_origin_layout(device, 3, 1, nhwc.shape), nhwc)


def test_nc1hwc0_takes_c0_from_the_device_array() -> None:
    nchw = numbered(1, 40, 2, 2).astype(np.int8)
    device = nc1hwc0_by_loops(nchw, 32)
    assert device.shape == (1, 2, 2, 2, 32)
    np.testing.assert_array_equal(from_origin_layout(nchw, "NC1HWC0", "NCHW", c0=32), device)
    np.testing.assert_array_equal(to_origin_layout(device, "NC1HWC0", "NCHW", nchw.shape), nchw)


def test_ndc1hwc0_both_directions() -> None:
    ncdhw = numbered(2, 18, 2, 3, 2)
    device = ndc1hwc0_by_loops(ncdhw, 16)
    np.testing.assert_array_equal(from_origin_layout(ncdhw, "NDC1HWC0", "NCDHW"), device)
    np.testing.assert_array_equal(to_origin_layout(device, "NDC1HWC0", "NCDHW", ncdhw.shape), ncdhw)
    ndhwc = ncdhw.transpose(0, 2, 3, 4, 1)
    np.testing.assert_array_equal(from_origin_layout(ndhwc, "NDC1HWC0", "NDHWC"), device)
    np.testing.assert_array_equal(to_origin_layout(device, "NDC1HWC0", "NDHWC", ndhwc.shape), ndhwc)


def test_fractal_z_both_directions() -> None:
    weights = numbered(18, 20, 3, 2)  # N = 18 and C = 20 both padded
    device = fractal_z_by_loops(weights, 16)
    assert device.shape == (2 * 3 * 2, 2, 16, 16)
    np.testing.assert_array_equal(from_origin_layout(weights, "FRACTAL_Z", "NCHW"), device)
    np.testing.assert_array_equal(
        to_origin_layout(device, "FRACTAL_Z", "NCHW", weights.shape), weights
    )
    hwcn = weights.transpose(2, 3, 1, 0)
    np.testing.assert_array_equal(to_origin_layout(device, "FRACTAL_Z", "HWCN", hwcn.shape), hwcn)
    np.testing.assert_array_equal(from_origin_layout(hwcn, "FRACTAL_Z", "HWCN"), device)
    nhwc = weights.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(to_origin_layout(device, "FRACTAL_Z", "NHWC", nhwc.shape), nhwc)


def test_fractal_nz_with_batch_dims_both_directions() -> None:
    nd = numbered(2, 3, 17, 20)  # rows 17 and columns 20 both padded
    device = fractal_nz_by_loops(nd, 16)
    assert device.shape == (2, 3, 2, 2, 16, 16)
    np.testing.assert_array_equal(from_origin_layout(nd, "FRACTAL_NZ", "ND"), device)
    np.testing.assert_array_equal(to_origin_layout(device, "FRACTAL_NZ", "ND", nd.shape), nd)
    # Batch dims may be grouped differently as long as they hold the same matrices.
    np.testing.assert_array_equal(
        to_origin_layout(device, "FRACTAL_NZ", "ND", (6, 17, 20)), nd.reshape(6, 17, 20)
    )


def test_fractal_nz_one_dimensional_origin() -> None:
    vector = numbered(5)
    device = fractal_nz_by_loops(vector.reshape(1, 5), 16)
    np.testing.assert_array_equal(from_origin_layout(vector, "FRACTAL_NZ", "ND"), device)
    np.testing.assert_array_equal(to_origin_layout(device, "FRACTAL_NZ", "ND", (5,)), vector)


def test_plain_layouts_reshape_as_views() -> None:
    flat = numbered(24)
    out = to_origin_layout(flat, "ND", "NCHW", (2, 3, 4, 1))
    assert out.shape == (2, 3, 4, 1)
    assert np.shares_memory(out, flat)
    same = to_origin_layout(numbered(2, 3), "NC1HWC0", "NC1HWC0", (6,))
    assert same.tolist() == [1, 2, 3, 4, 5, 6]


def test_plain_layouts_with_the_same_axes_transpose() -> None:
    nchw = numbered(2, 3, 4, 5)
    nhwc = to_origin_layout(nchw, "NCHW", "NHWC", (2, 4, 5, 3))
    np.testing.assert_array_equal(nhwc, nchw.transpose(0, 2, 3, 1))
    assert np.shares_memory(nhwc, nchw)
    np.testing.assert_array_equal(from_origin_layout(nhwc, "NCHW", "NHWC"), nchw)


def test_slicing_returns_a_view_of_the_converted_array() -> None:
    device = nc1hwc0_by_loops(numbered(1, 16, 2, 2), 16)
    out = to_origin_layout(device, "NC1HWC0", "NHWC", (1, 2, 2, 16))
    assert out.base is not None


@pytest.mark.parametrize(
    ("device", "device_format", "origin_format", "origin_shape", "message"),
    [
        (
            numbered(24),
            "ND",
            "NCHW",
            (2, 3, 5, 1),
            "cannot convert ND (24) to NCHW (2, 3, 5, 1): the device tensor has 24 elements, "
            "the origin shape 30",
        ),
        (
            np.zeros((2, 2, 3, 4, 16)),
            "NC1HWC0",
            "NCHW",
            (2, 40, 3, 4),
            "cannot convert NC1HWC0 (2, 2, 3, 4, 16) to NCHW (2, 40, 3, 4): C=40 is larger "
            "than the 2 x 16 = 32 the device tensor holds",
        ),
        (
            np.zeros((2, 2, 3, 4, 16)),
            "NC1HWC0",
            "NCHW",
            (3, 20, 3, 4),
            "N is 3 in the origin shape but 2 on the device",
        ),
        (
            np.zeros((2, 2, 3, 4, 16)),
            "NC1HWC0",
            "NCHW",
            (2, 20, 3),
            "NCHW shapes have 4 dims, this one has 3",
        ),
        (
            np.zeros((2, 2, 3, 4, 16)),
            "NC1HWC0",
            "ND",
            (2, 20, 3, 4),
            "cannot convert NC1HWC0 (2, 2, 3, 4, 16) to ND (2, 20, 3, 4): no conversion "
            "between these formats is known",
        ),
        (
            np.zeros((12, 2, 16, 16)),
            "FRACTAL_Z",
            "NCHW",
            (18, 20, 5, 5),
            "the first device dim 12 is not C1 x H x W for H x W = 25",
        ),
        (
            np.zeros((12, 2, 16, 16)),
            "FRACTAL_Z",
            "NCHW",
            (33, 20, 3, 2),
            "N=33 is larger than the 2 x 16 = 32 the device tensor holds",
        ),
        (
            np.zeros((2, 3, 2, 2, 16, 16)),
            "FRACTAL_NZ",
            "ND",
            (5, 17, 20),
            "the origin batch dims (5) hold 5 matrices, the device tensor 6",
        ),
        (
            np.zeros((2, 2, 16, 16)),
            "FRACTAL_NZ",
            "ND",
            (17, 33),
            "C (columns)=33 is larger than the 2 x 16 = 32 the device tensor holds",
        ),
    ],
)
def test_mismatches_name_both_formats_and_the_reason(
    device: np.ndarray,
    device_format: str,
    origin_format: str,
    origin_shape: tuple[int, ...],
    message: str,
) -> None:
    with pytest.raises(LayoutError) as err:
        to_origin_layout(device, device_format, origin_format, origin_shape)
    assert message in str(err.value)
    assert device_format in str(err.value) and origin_format in str(err.value)


def test_from_origin_refuses_unknown_combinations() -> None:
    with pytest.raises(LayoutError, match="cannot lay out ND \\(2, 3\\) as NC1HWC0"):
        from_origin_layout(numbered(2, 3), "NC1HWC0", "ND")
    with pytest.raises(LayoutError, match="a NCHW tensor has 4 dims"):
        from_origin_layout(numbered(2, 3), "NC1HWC0", "NCHW")
