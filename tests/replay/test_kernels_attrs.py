"""The registry, attribute handling (errors, defaults, describe_attrs) and the kernels TF has no
single op for, checked on small hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.errors import PrecisionError
from precision_shell.formats.layouts import from_origin_layout
from precision_shell.replay.kernels import (
    ReplayUnsupported,
    describe_attrs,
    has_kernel,
    kernel_types,
    replay_op,
)
from tests.replay.helpers import call

X = np.arange(2 * 4 * 4 * 3, dtype=np.float64).reshape(2, 4, 4, 3)
W = np.ones((3, 3, 3, 2))


def _conv(attrs: dict, fmts: tuple[str, str] = ("NHWC", "HWCN")):
    return call("Conv2D", [X, W], [(2, 4, 4, 2)], attrs, list(fmts))


def test_registry_lists_sorted_types() -> None:
    types = kernel_types()
    assert types == sorted(types)
    for op_type in ("Conv2D", "MatMulV2", "BNInfer", "TransData", "ReduceSumD", "Gelu"):
        assert has_kernel(op_type)
    assert not has_kernel("FooBar")
    assert issubclass(ReplayUnsupported, PrecisionError)


def test_unknown_op_type() -> None:
    with pytest.raises(ReplayUnsupported, match=r"^no replay kernel for op type FooBar$"):
        replay_op(call("FooBar", [X]))


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"pads": [1, 1, 1, 1]}, "Conv2D: attribute 'strides' is missing"),
        ({"strides": [1, 1, 1, 1]}, "Conv2D: attribute 'pads' is missing"),
        (
            {"strides": [1, 2], "pads": [0, 0, 0, 0]},
            "Conv2D: attribute 'strides' must be 4 ints, got [1, 2]",
        ),
        (
            {"strides": [1, 1, 1, 1], "padding": "FULL"},
            "Conv2D: attribute 'padding' must be one of SAME, VALID, EXPLICIT, got 'FULL'",
        ),
        (
            {"strides": [1, 1, 1, 1], "padding": "SAME", "groups": 2},
            "Conv2D: filter (3, 3, 3, 2) (HWIO) with groups=2 does not fit 3 input channels",
        ),
        (
            {"strides": [2, 1, 1, 1], "padding": "SAME"},
            "Conv2D: attribute 'strides' [2, 1, 1, 1] moves over N or C (NHWC); only H and W can",
        ),
    ],
)
def test_conv_attribute_errors_are_one_line(attrs: dict, message: str) -> None:
    with pytest.raises(ReplayUnsupported) as err:
        replay_op(_conv(attrs))
    assert str(err.value) == message
    assert "\n" not in str(err.value)


def test_conv_filter_layout_must_be_named() -> None:
    with pytest.raises(ReplayUnsupported, match="filter layout ND is not one of HWCN"):
        replay_op(_conv({"strides": [1, 1, 1, 1], "padding": "SAME"}, ("NHWC", "ND")))


def test_describe_attrs_marks_defaults() -> None:
    described = describe_attrs(_conv({"strides": [1, 1, 1, 1], "padding": "SAME"}))
    assert described["strides"] == [1, 1, 1, 1]
    assert described["padding"] == "SAME"
    assert described["dilations"] == "[1, 1, 1, 1] (default)"
    assert described["groups"] == "1 (default)"
    assert described["data_format"] == "'NHWC' (default)"
    assert described["pads (from SAME)"] == [1, 1, 1, 1]
    matmul = describe_attrs(call("MatMul", [np.ones((2, 3)), np.ones((3, 4))], [(2, 4)]))
    assert matmul == {"transpose_x1": "False (default)", "transpose_x2": "False (default)"}
    alias = describe_attrs(
        call("MatMul", [np.ones((3, 2)), np.ones((3, 4))], [(2, 4)], {"transpose_a": True})
    )
    assert alias["transpose_a"] is True


def test_conv_hand_checked_sums() -> None:
    # A 3x3 all-ones filter with SAME pads: the corner output sums a 2x2 patch per channel.
    (y,) = replay_op(_conv({"strides": [1, 1, 1, 1], "padding": "SAME"}))
    corner = X[0, :2, :2, :].sum()
    assert y[0, 0, 0, 0] == corner == y[0, 0, 0, 1]
    assert y[1, 1, 1, 0] == X[1, :3, :3, :].sum()


def test_missing_required_attributes_elsewhere() -> None:
    x = np.ones((2, 3))
    cases = [
        (call("ReduceSumD", [x], [(2,)]), "ReduceSumD: attribute 'axes' is missing"),
        (call("TransposeD", [x], [(3, 2)]), "TransposeD: attribute 'perm' is missing"),
        (call("ConcatV2D", [x, x], [(4, 3)]), "ConcatV2D: attribute 'concat_dim' is missing"),
        (call("Muls", [x], [(2, 3)]), "Muls: attribute 'value' is missing"),
        (
            call("MaxPool", [np.ones((1, 4, 4, 1))], [(1, 2, 2, 1)], {"ksize": [1, 2, 2, 1]}),
            "MaxPool: attribute 'strides' is missing",
        ),
        (
            call("BNInfer", [np.ones((1, 2, 2, 3))] + [np.ones(3)] * 4, [(1, 2, 2, 3)]),
            "BNInfer: attribute 'epsilon' is missing",
        ),
    ]
    for kcall, message in cases:
        with pytest.raises(ReplayUnsupported) as err:
            replay_op(kcall)
        assert str(err.value) == message


def test_training_batch_norm_is_unsupported_and_default_is_training() -> None:
    inputs = [np.ones((1, 2, 2, 3))] + [np.ones(3)] * 4
    for attrs in ({}, {"is_training": True}):
        with pytest.raises(ReplayUnsupported, match="training-mode batch norm is not replayed"):
            replay_op(call("FusedBatchNormV3", inputs, [(1, 2, 2, 3)], attrs))
    described = describe_attrs(call("BatchNorm", inputs, [(1, 2, 2, 3)], {"is_training": False}))
    assert described["epsilon"] == "0.0001 (default)"


def test_batch_norm_extra_outputs_pass_statistics_through() -> None:
    x = np.full((1, 1, 1, 2), 3.0)
    scale, offset, mean, variance = np.array([2.0, 1.0]), np.zeros(2), np.ones(2), np.full(2, 4.0)
    outs = replay_op(
        call(
            "FusedBatchNormV3",
            [x, scale, offset, mean, variance],
            [x.shape, (2,), (2,), (2,), (2,)],
            {"epsilon": 0.0, "is_training": False},
        )
    )
    np.testing.assert_array_equal(outs[0].ravel(), [2.0, 1.0])  # (3 - 1) / 2 * scale
    for out, want in zip(outs[1:], (mean, variance, mean, variance), strict=True):
        np.testing.assert_array_equal(out, want)


def test_leaky_relu_and_swish_defaults() -> None:
    x = np.array([-2.0, 3.0])
    (y,) = replay_op(call("LeakyRelu", [x], [(2,)]))
    np.testing.assert_array_equal(y, [-0.0, 3.0])  # GE's negative_slope default 0.0
    assert describe_attrs(call("LeakyRelu", [x], [(2,)])) == {"negative_slope": "0.0 (default)"}
    (s,) = replay_op(call("Swish", [np.array([0.0])], [(1,)]))
    assert s[0] == 0.0


def test_layer_norm_defaults_normalise_everything() -> None:
    x = np.array([[1.0, 3.0]])
    outs = replay_op(call("LayerNorm", [x, np.ones(2), np.zeros(2)], [(1, 2)]))
    assert len(outs) == 1  # as many outputs as the graph lists
    np.testing.assert_allclose(outs[0], [[-1.0, 1.0]] / np.sqrt(1.0 + 1e-7), rtol=1e-15)


def test_cast_float_to_int_truncates_and_undefined_is_nan() -> None:
    x = np.array([-2.7, 2.7, 1e10, np.nan])
    (y,) = replay_op(call("Cast", [x], [(4,)], out_dtype="DT_INT32"))
    np.testing.assert_array_equal(y, [-2.0, 2.0, np.nan, np.nan])
    (b,) = replay_op(call("Cast", [np.array([0.0, -0.5, np.nan])], [(3,)], out_dtype="DT_BOOL"))
    np.testing.assert_array_equal(b, [0.0, 1.0, 1.0])
    (w,) = replay_op(
        call("Cast", [np.array([300, -1], dtype=np.int64)], [(2,)], out_dtype="DT_UINT8")
    )
    np.testing.assert_array_equal(w, [44.0, 255.0])
    (h,) = replay_op(call("Cast", [np.array([65520.0, 1 / 3])], [(2,)], out_dtype="DT_FLOAT16"))
    assert h[0] == np.inf and h[1] == float(np.float16(1 / 3))


def test_trans_data_both_directions() -> None:
    nhwc = np.arange(2 * 3 * 3 * 5, dtype=np.float64).reshape(2, 3, 3, 5)
    device = from_origin_layout(nhwc, "NC1HWC0", "NHWC", c0=16)
    to_origin = call("TransData", [device], [nhwc.shape], fmts=["NC1HWC0"], out_fmt="NHWC")
    np.testing.assert_array_equal(replay_op(to_origin)[0], nhwc)
    to_device = call("TransData", [nhwc], [device.shape], fmts=["NHWC"], out_fmt="NC1HWC0")
    np.testing.assert_array_equal(replay_op(to_device)[0], device)
    hwcn = np.arange(3 * 3 * 5 * 4, dtype=np.float64).reshape(3, 3, 5, 4)
    fz = from_origin_layout(hwcn, "FRACTAL_Z", "HWCN")
    back = call("TransData", [fz], [hwcn.shape], fmts=["FRACTAL_Z"], out_fmt="HWCN")
    np.testing.assert_array_equal(replay_op(back)[0], hwcn)
    plain = call("TransData", [nhwc], [(2, 5, 3, 3)], fmts=["NHWC"], out_fmt="NCHW")
    np.testing.assert_array_equal(replay_op(plain)[0], nhwc.transpose(0, 3, 1, 2))
    bad = call("TransData", [device], [(2, 3, 3, 40)], fmts=["NC1HWC0"], out_fmt="NHWC")
    with pytest.raises(ReplayUnsupported, match=r"^TransData: cannot convert NC1HWC0"):
        replay_op(bad)


def test_reshape_family_takes_shape_from_output_desc() -> None:
    x = np.arange(6.0).reshape(1, 2, 3)
    for op_type, shape in (("Reshape", (3, 2)), ("Squeeze", (2, 3)), ("ExpandDims", (1, 1, 2, 3))):
        (y,) = replay_op(call(op_type, [x], [shape]))
        np.testing.assert_array_equal(y, x.reshape(shape))
    with pytest.raises(ReplayUnsupported, match="x has 6 elements"):
        replay_op(call("Reshape", [x], [(4,)]))


def test_output_shape_mismatch_is_reported() -> None:
    with pytest.raises(ReplayUnsupported) as err:
        replay_op(call("Relu", [np.ones((2, 3))], [(3, 2)]))
    assert str(err.value) == "Relu: output 0 replays with shape (2, 3), the graph says (3, 2)"


def test_reduce_empty_axes_refused() -> None:
    with pytest.raises(ReplayUnsupported, match="the axes are empty"):
        replay_op(call("ReduceSumD", [np.ones(3)], [(3,)], {"axes": []}))
