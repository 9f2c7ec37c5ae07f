"""Fused-op replay: demo-shaped conv and matmul fusions, eltwise chains, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.demo.kernels import conv2d_same
from precision_shell.replay.chain import describe_fused, replay_fused
from precision_shell.replay.kernels import ReplayUnsupported
from tests.replay.helpers import call

rng = np.random.default_rng(3)
CONV_ATTRS = {"strides": [1, 1, 1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1, 1, 1]}


def _demo_conv(shortcut: bool):
    """The demo's fused conv: x (NHWC), folded filter (HWCN origin), folded bias, shortcut."""
    x = rng.standard_normal((2, 6, 6, 4))
    w = rng.standard_normal((3, 3, 4, 8)) * 0.3
    bias = rng.standard_normal(8)
    inputs, fmts = [x, w, bias], ["NHWC", "HWCN", "ND"]
    types = ["Conv2D", "FusedBatchNormV3"]
    names = ["conv3/Conv2D", "bn3/FusedBatchNormV3"]
    expected = conv2d_same(x, w) + bias
    if shortcut:
        skip = rng.standard_normal((2, 6, 6, 8))
        inputs.append(skip)
        fmts.append("NHWC")
        types.append("AddV2")
        names.append("res/add")
        expected = expected + skip
    types.append("Relu")
    names.append("relu3/Relu")
    kcall = call("Conv2D", inputs, [(2, 6, 6, 8)], CONV_ATTRS, fmts, "NHWC", name="".join(names))
    return kcall, types, names, np.maximum(expected, 0.0)


@pytest.mark.parametrize("shortcut", [True, False])
def test_demo_conv_bn_folded_add_relu(shortcut: bool) -> None:
    kcall, types, names, expected = _demo_conv(shortcut)
    (y,) = replay_fused(kcall, types, names)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    described = describe_fused(kcall, types, names)
    assert described["bn3/FusedBatchNormV3 (FusedBatchNormV3)"] == (
        "skipped: folded into the filter and bias constants by ConvBatchnormFusionPass"
    )
    assert described["conv3/Conv2D (Conv2D)"]["strides"] == [1, 1, 1, 1]
    assert described["relu3/Relu (Relu)"] == {}


def test_matmul_bias_add_chain() -> None:
    x, w, b = rng.standard_normal((2, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    kcall = call("MatMulV2", [x, w, b], [(2, 3)], {"transpose_x1": False}, name="dense/MatMul")
    types, names = ["MatMul", "BiasAdd"], ["dense/MatMul", "dense/BiasAdd"]
    (y,) = replay_fused(kcall, types, names)
    np.testing.assert_allclose(y, x @ w + b, rtol=1e-12)
    described = describe_fused(kcall, types, names)
    assert described["dense/BiasAdd (BiasAdd)"].endswith("by MatMulBiasAddFusionPass")


def test_eltwise_chain_consumes_inputs_in_order() -> None:
    a, b, c = (rng.standard_normal((3, 4)) for _ in range(3))
    kcall = call("FusedMulAddRelu", [a, b, c], [(3, 4)], name="mul_add_relu")
    (y,) = replay_fused(kcall, ["Mul", "Sub", "Relu"], ["m", "s", "r"])
    np.testing.assert_allclose(y, np.maximum(a * b - c, 0.0), rtol=1e-15)


def test_single_member_uses_the_fused_ops_own_type() -> None:
    x = rng.standard_normal((2, 3))
    kcall = call("ReduceSumD", [x], [(2,)], {"axes": [1]}, name="l2_loss/Sum")
    (y,) = replay_fused(kcall, ["Sum"], ["l2_loss/Sum"])
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-15)


@pytest.mark.parametrize(
    ("types", "inputs", "message"),
    [
        (
            ["Mul", "FooBar"],
            2,
            "fused op f: original op n1 (FooBar) has no replay kernel",
        ),
        (
            ["Mul", "LeakyRelu"],
            2,
            "fused op f: original op n1 (LeakyRelu) needs attributes the fused node does not "
            "carry, and has no safe defaults",
        ),
        (
            ["Mul", "Relu"],
            3,
            "fused op f: input(s) 2 are not used by any original op (Mul, Relu)",
        ),
        (
            ["Mul", "Add"],
            2,
            "fused op f: original op n1 (Add) needs a second input; the fused op has none left",
        ),
    ],
)
def test_chain_refusals(types: list[str], inputs: int, message: str) -> None:
    arrays = [rng.standard_normal((2, 2)) for _ in range(inputs)]
    names = [f"n{i}" for i in range(len(types))]
    with pytest.raises(ReplayUnsupported) as err:
        replay_fused(call("Fused", arrays, [(2, 2)], name="f"), types, names)
    assert str(err.value) == message


def test_first_member_attribute_error_names_the_member() -> None:
    kcall, types, names, _ = _demo_conv(shortcut=False)
    bad = call(
        "Conv2D",
        list(kcall.inputs),
        [(2, 6, 6, 8)],
        {"pads": [1, 1, 1, 1]},
        ["NHWC", "HWCN", "ND"],
        name="f",
    )
    with pytest.raises(ReplayUnsupported) as err:
        replay_fused(bad, types, names)
    assert str(err.value) == (
        "fused op f: original op conv3/Conv2D (Conv2D): attribute 'strides' is missing"
    )


def test_unfolded_batch_norm_member_is_refused() -> None:
    x = rng.standard_normal((1, 2, 2, 3))
    params = [rng.uniform(0.5, 1.5, 3) for _ in range(4)]
    kcall = call("Fused", [x, x, *params], [x.shape], name="f")
    with pytest.raises(ReplayUnsupported, match=r"original op bn \(FusedBatchNormV3\) needs"):
        replay_fused(kcall, ["Add", "FusedBatchNormV3"], ["add", "bn"])
