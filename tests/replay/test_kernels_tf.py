"""Every replay kernel TF has an op for, against TensorFlow computing in float64."""

from __future__ import annotations

import os

import numpy as np
import pytest

from precision_shell.replay.kernels import replay_op
from tests.replay.helpers import call

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

RTOL = 1e-12
rng = np.random.default_rng(7)


def _close(actual: np.ndarray, expected: object, rtol: float = RTOL) -> None:
    want = np.asarray(expected, dtype=np.float64)
    assert actual.shape == want.shape
    np.testing.assert_allclose(actual, want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max()))


def _one(kcall) -> np.ndarray:
    (out,) = replay_op(kcall)
    assert out.dtype == np.float64
    return out


def _nchw(x: np.ndarray) -> np.ndarray:
    return x.transpose(0, 3, 1, 2)


# --- Conv2D ---------------------------------------------------------------------------------


def test_conv2d_nhwc_explicit_pads_strides_dilations_bias() -> None:
    x = rng.standard_normal((2, 9, 8, 4))
    w = rng.standard_normal((3, 2, 4, 6))
    bias = rng.standard_normal(6)
    want = (
        tf.nn.conv2d(
            x,
            w,
            strides=[1, 2, 1, 1],
            padding=[[0, 0], [1, 2], [0, 1], [0, 0]],
            dilations=[1, 2, 1, 1],
        ).numpy()
        + bias
    )
    attrs = {"strides": [1, 2, 1, 1], "pads": [1, 2, 0, 1], "dilations": [1, 2, 1, 1]}
    got = _one(call("Conv2D", [x, w, bias], [want.shape], attrs, ["NHWC", "HWCN", "ND"]))
    _close(got, want)


def test_conv2d_nchw_same_with_oihw_filter() -> None:
    x = rng.standard_normal((1, 7, 7, 3))
    w = rng.standard_normal((3, 3, 3, 5))
    want = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME").numpy()
    attrs = {"strides": [1, 1, 2, 2], "padding": "SAME", "data_format": "NCHW"}
    oihw = w.transpose(3, 2, 0, 1)
    kcall = call("Conv2D", [_nchw(x), oihw], [_nchw(want).shape], attrs, ["NCHW", "NCHW"])
    _close(_one(kcall), _nchw(want))


def test_conv2d_grouped_with_ohwi_filter_and_tf_explicit_paddings() -> None:
    x = rng.standard_normal((2, 6, 5, 6))
    w = rng.standard_normal((3, 3, 2, 9))  # 3 groups of 2 input channels
    want = tf.nn.conv2d(x, w, strides=1, padding=[[0, 0], [1, 1], [2, 0], [0, 0]]).numpy()
    attrs = {
        "strides": [1, 1, 1, 1],
        "padding": "EXPLICIT",
        "explicit_paddings": [0, 0, 1, 1, 2, 0, 0, 0],
        "groups": 3,
    }
    ohwi = w.transpose(3, 0, 1, 2)
    got = _one(call("Conv2D", [x, ohwi], [want.shape], attrs, ["NHWC", "NHWC"]))
    _close(got, want)


def test_conv2d_valid_padding() -> None:
    x = rng.standard_normal((1, 6, 6, 2))
    w = rng.standard_normal((3, 3, 2, 3))
    want = tf.nn.conv2d(x, w, strides=[1, 1, 2, 1], padding="VALID").numpy()
    attrs = {"strides": [1, 1, 2, 1], "padding": "VALID"}
    _close(_one(call("Conv2D", [x, w], [want.shape], attrs, ["NHWC", "HWCN"])), want)


# --- MatMul family --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_type", "flags", "ta", "tb"),
    [
        ("MatMul", {"transpose_a": True}, True, False),
        ("MatMulV2", {"transpose_x1": False, "transpose_x2": True}, False, True),
        ("MatMul", {}, False, False),
    ],
)
def test_matmul_flags_and_bias(op_type: str, flags: dict, ta: bool, tb: bool) -> None:
    a = rng.standard_normal((5, 4) if ta else (4, 5))
    b = rng.standard_normal((3, 5) if tb else (5, 3))
    bias = rng.standard_normal(3)
    want = tf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy() + bias
    _close(_one(call(op_type, [a, b, bias], [want.shape], flags)), want)


def test_batch_matmul_adj_flags_and_v2_broadcasting() -> None:
    a = rng.standard_normal((2, 3, 5, 4))
    b = rng.standard_normal((3, 6, 5))
    want = tf.linalg.matmul(a, b, adjoint_a=True, adjoint_b=True).numpy()
    attrs = {"adj_x1": True, "adj_x2": True}
    _close(_one(call("BatchMatMulV2", [a, b], [want.shape], attrs)), want)
    a2 = rng.standard_normal((3, 4, 5))
    b2 = rng.standard_normal((3, 5, 2))
    want2 = tf.linalg.matmul(a2, b2).numpy()
    _close(_one(call("BatchMatMul", [a2, b2], [want2.shape], {"adj_x": False})), want2)


# --- pooling --------------------------------------------------------------------------------


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_pools(padding: str, layout: str) -> None:
    x = rng.standard_normal((2, 7, 6, 3))
    ksize, strides = [1, 3, 2, 1], [1, 2, 2, 1]
    for op_type, tf_pool in (("MaxPool", _tf_max_pool), ("AvgPool", tf.nn.avg_pool2d)):
        want = tf_pool(x, ksize=ksize, strides=strides, padding=padding).numpy()
        if layout == "NHWC":
            attrs = {"ksize": ksize, "strides": strides, "padding": padding}
            got = _one(call(op_type, [x], [want.shape], attrs, ["NHWC"]))
        else:
            attrs = {
                "ksize": [1, 1, 3, 2],
                "strides": [1, 1, 2, 2],
                "padding": padding,
                "data_format": "NCHW",
            }
            got = _nchw_back(_one(call(op_type, [_nchw(x)], [_nchw(want).shape], attrs, ["NCHW"])))
        _close(got, want)


def _tf_max_pool(x: np.ndarray, ksize: list[int], strides: list[int], padding: str):
    # MaxPoolV2: this TF build's float64 MaxPool (what tf.nn.max_pool2d calls) rounds through
    # float32 on CPU, so its maxima are not even elements of x; MaxPoolV2 stays in float64.
    return tf.raw_ops.MaxPoolV2(input=x, ksize=ksize, strides=strides, padding=padding)


def _nchw_back(y: np.ndarray) -> np.ndarray:
    return y.transpose(0, 2, 3, 1)


# --- element-wise ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_type", "tf_fn"),
    [
        ("Add", tf.add),
        ("AddV2", tf.add),
        ("Sub", tf.subtract),
        ("Mul", tf.multiply),
        ("RealDiv", tf.math.truediv),
        ("Maximum", tf.maximum),
        ("Minimum", tf.minimum),
    ],
)
def test_binary_broadcasting(op_type: str, tf_fn) -> None:
    a = rng.standard_normal((2, 1, 4))
    b = rng.standard_normal((3, 1)) + 3.0
    want = tf_fn(a, b).numpy()
    _close(_one(call(op_type, [a, b], [want.shape])), want)


def test_bias_add_nhwc_and_nchw() -> None:
    x = rng.standard_normal((2, 3, 4, 5))
    want = tf.nn.bias_add(x, np.arange(5.0)).numpy()
    _close(_one(call("BiasAdd", [x, np.arange(5.0)], [x.shape])), want)
    want_nchw = tf.nn.bias_add(x, np.arange(3.0), data_format="NCHW").numpy()
    got = _one(call("BiasAdd", [x, np.arange(3.0)], [x.shape], {"data_format": "NCHW"}))
    _close(got, want_nchw)


def _tf_gelu_tanh(x):
    # tf.nn.gelu(approximate=True) is this formula, but in this build its float64 result is
    # ~1e-9 off the same formula written with TF ops (a fused kernel, presumably), so the
    # reference is the formula in TF's float64 tanh.
    return 0.5 * x * (1.0 + tf.math.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x * x * x)))


@pytest.mark.parametrize(
    ("op_type", "attrs", "tf_fn"),
    [
        ("Relu", {}, tf.nn.relu),
        ("Relu6", {}, tf.nn.relu6),
        # Float attributes are float32 in both GE and TF graphs: use float32 values.
        ("LeakyRelu", {"negative_slope": 0.125}, lambda x: tf.nn.leaky_relu(x, alpha=0.125)),
        ("LeakyRelu", {"alpha": 0.375}, lambda x: tf.nn.leaky_relu(x, alpha=0.375)),
        ("Gelu", {}, _tf_gelu_tanh),
        ("Sigmoid", {}, tf.math.sigmoid),
        ("Tanh", {}, tf.math.tanh),
        ("Swish", {}, tf.nn.silu),
        ("Swish", {"scale": 1.7}, lambda x: x * tf.math.sigmoid(1.7 * x)),
        ("Square", {}, tf.math.square),
        ("Exp", {}, tf.math.exp),
        ("Muls", {"value": -0.75}, lambda x: x * -0.75),
        ("Adds", {"value": 2.5}, lambda x: x + 2.5),
    ],
)
def test_activations_and_unary(op_type: str, attrs: dict, tf_fn) -> None:
    x = rng.standard_normal((3, 17)) * 4
    want = tf_fn(tf.constant(x)).numpy()
    _close(_one(call(op_type, [x], [x.shape], attrs)), want)


@pytest.mark.parametrize(
    ("op_type", "tf_fn"), [("Sqrt", tf.math.sqrt), ("Rsqrt", tf.math.rsqrt), ("Log", tf.math.log)]
)
def test_positive_domain_unary(op_type: str, tf_fn) -> None:
    x = rng.uniform(0.01, 50.0, (4, 6))
    _close(_one(call(op_type, [x], [x.shape])), tf_fn(x).numpy())


# --- normalisation --------------------------------------------------------------------------


def test_softmax_and_log_softmax_axes() -> None:
    x = rng.standard_normal((2, 3, 5)) * 5
    _close(_one(call("SoftmaxV2", [x], [x.shape])), tf.nn.softmax(x).numpy())
    got = _one(call("SoftmaxV2", [x], [x.shape], {"axes": [1]}))
    _close(got, tf.nn.softmax(x, axis=1).numpy())
    _close(_one(call("LogSoftmaxV2", [x], [x.shape])), tf.nn.log_softmax(x).numpy())
    _close(_one(call("Softmax", [x], [x.shape])), tf.nn.softmax(x).numpy())


@pytest.mark.parametrize("op_type", ["FusedBatchNormV3", "BatchNorm", "FusedBatchNorm"])
def test_batch_norm_inference(op_type: str) -> None:
    x = rng.standard_normal((2, 3, 4, 5))
    scale, offset = rng.uniform(0.5, 2, 5), rng.standard_normal(5)
    mean, variance = rng.standard_normal(5), rng.uniform(0.1, 3, 5)
    want = tf.nn.batch_normalization(x, mean, variance, offset, scale, 1e-3).numpy()
    attrs = {"epsilon": 1e-3, "is_training": False}
    outs = replay_op(
        call(
            op_type, [x, scale, offset, mean, variance], [x.shape, (5,), (5,)], attrs, ["NHWC"] * 5
        )
    )
    _close(outs[0], want)
    np.testing.assert_array_equal(outs[1], mean)
    np.testing.assert_array_equal(outs[2], variance)


def test_batch_norm_nchw_and_bninfer_layout_from_desc() -> None:
    x = rng.standard_normal((2, 4, 3, 3))
    params = [rng.uniform(0.5, 2, 4), rng.standard_normal(4), rng.standard_normal(4)]
    variance = rng.uniform(0.1, 3, 4)
    shape = (1, 4, 1, 1)
    want = tf.nn.batch_normalization(
        x,
        params[2].reshape(shape),
        variance.reshape(shape),
        params[1].reshape(shape),
        params[0].reshape(shape),
        1e-4,
    ).numpy()
    inputs = [x, *params, variance]
    attrs = {"data_format": "NCHW", "is_training": False}
    _close(_one(call("FusedBatchNormV3", inputs, [x.shape], attrs, ["NHWC"] * 5)), want)
    _close(_one(call("BNInfer", inputs, [x.shape], {"epsilon": 1e-4}, ["NCHW"] * 5)), want)


def test_layer_norm_three_outputs() -> None:
    x = rng.standard_normal((2, 3, 8))
    gamma, beta = rng.standard_normal(8), rng.standard_normal(8)
    mean, variance = tf.nn.moments(tf.constant(x), axes=[2], keepdims=True)
    want = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-5).numpy()
    attrs = {"begin_norm_axis": -1, "begin_params_axis": -1, "epsilon": 1e-5}
    outs = replay_op(call("LayerNorm", [x, gamma, beta], [x.shape, (2, 3, 1), (2, 3, 1)], attrs))
    _close(outs[0], want)
    _close(outs[1], mean.numpy())
    _close(outs[2], variance.numpy())


# --- reductions and shapes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_type", "tf_fn"),
    [("Sum", tf.reduce_sum), ("Mean", tf.reduce_mean), ("Max", tf.reduce_max)],
)
def test_reductions_attr_and_input_axes(op_type: str, tf_fn) -> None:
    x = rng.standard_normal((2, 3, 4))
    want = tf_fn(x, axis=[0, 2], keepdims=True).numpy()
    attrs = {"axes": [0, -1], "keep_dims": True}
    _close(_one(call(f"Reduce{op_type}D", [x], [want.shape], attrs)), want)
    want2 = tf_fn(x, axis=[1]).numpy()
    axes = np.array([1], dtype=np.int32)
    _close(_one(call(f"Reduce{op_type}", [x, axes], [want2.shape])), want2)


@pytest.mark.parametrize(
    ("dtype", "tf_dtype"),
    [
        ("DT_FLOAT16", tf.float16),
        ("DT_FLOAT", tf.float32),
        ("DT_BF16", tf.bfloat16),
        ("DT_INT32", tf.int32),
        ("DT_BOOL", tf.bool),
    ],
)
def test_cast(dtype: str, tf_dtype) -> None:
    x = np.array([-2.7, -0.5, 0.0, 0.4999, 1.5, 3.14159265, 1e5, 70000.0])
    want = tf.cast(tf.constant(x), tf_dtype).numpy().astype(np.float64)
    if dtype == "DT_BF16":  # TF's double -> bfloat16 goes through float32; both round to nearest
        want = tf.cast(tf.constant(x, tf.float32), tf_dtype).numpy().astype(np.float64)
    got = _one(call("Cast", [x], [x.shape], out_dtype=dtype))
    np.testing.assert_array_equal(got, want)


def test_transpose_and_concat() -> None:
    x = rng.standard_normal((2, 3, 4))
    want = tf.transpose(x, [2, 0, 1]).numpy()
    _close(_one(call("TransposeD", [x], [want.shape], {"perm": [2, 0, 1]})), want)
    parts = [rng.standard_normal((2, k, 4)) for k in (1, 3, 2)]
    want = tf.concat(parts, axis=1).numpy()
    _close(_one(call("ConcatV2D", parts, [want.shape], {"concat_dim": -2, "N": 3})), want)
    _close(_one(call("ConcatD", parts, [want.shape], {"concat_dim": 1})), want)
