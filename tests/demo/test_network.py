"""The demo network in memory: kernels, weights, faults, the device plan and the device run."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_run import run_device
from precision_shell.demo.kernels import batch_norm, conv2d_same, max_pool_2x2
from precision_shell.demo.network import FP16_MAX, LONG_SCOPE, Network
from precision_shell.demo.spec import DEFAULT_FAULTS, DemoSpec, Fault
from precision_shell.errors import PrecisionError
from precision_shell.formats.layouts import from_origin_layout


def tiny_network(**changes: object) -> Network:
    spec = DemoSpec(size="tiny", **changes)
    return Network(spec.network_shape(), spec.seed, spec.faults)


def cosine(x: np.ndarray, y: np.ndarray) -> float:
    x = x.astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_conv2d_same_matches_a_sum_over_kernel_offsets() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    filters = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    expected = sum(
        padded[:, i : i + 5, j : j + 6, :] @ filters[i, j] for i in range(3) for j in range(3)
    )
    np.testing.assert_allclose(conv2d_same(x, filters), expected, rtol=1e-5, atol=1e-5)


def test_max_pool_and_batch_norm_values() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    assert max_pool_2x2(x)[0, :, :, 0].tolist() == [[5, 7], [13, 15]]
    params = {
        "mean": np.float32([1.0]),
        "variance": np.float32([3.999]),
        "scale": np.float32([2.0]),
        "offset": np.float32([0.5]),
    }
    # (x - 1) / sqrt(3.999 + 0.001) * 2 + 0.5 = x - 0.5
    np.testing.assert_allclose(batch_norm(x, params), x - 0.5, rtol=1e-6)


def test_benchmark_is_deterministic_per_seed() -> None:
    first = {op.name: value for op, value in tiny_network().benchmark()}
    second = {op.name: value for op, value in tiny_network().benchmark()}
    other = {op.name: value for op, value in tiny_network(seed=1).benchmark()}
    assert first.keys() == second.keys()
    for name in first:
        assert np.array_equal(first[name], second[name]), name
    assert not np.array_equal(first["softmax/Softmax"], other["softmax/Softmax"])


def test_benchmark_names_shapes_and_healthy_ranges() -> None:
    net = tiny_network()
    outputs = {op.name: value for op, value in net.benchmark()}
    assert [op.name for op in net.ops[:5]] == [
        "input",
        "conv1/Conv2D",
        "bn1/FusedBatchNormV3",
        "relu1/Relu",
        "pool1/MaxPool",
    ]
    shapes = net.output_shapes()
    for name, value in outputs.items():
        assert value.dtype == np.float32, name
        assert value.shape == shapes[name], name
    assert outputs["relu3/Relu"].shape == (2, 4, 4, 8)
    np.testing.assert_allclose(outputs["softmax/Softmax"].sum(axis=1), 1.0, rtol=1e-6)
    # Activations stay O(1) on the main path, far from float16's limit.
    for name in ("relu1/Relu", "relu2/Relu", "relu3/Relu", "dense/BiasAdd"):
        assert 0.5 < np.abs(outputs[name]).max() < 20, name


def test_overflow_fault_calibrates_the_side_branch_peak() -> None:
    outputs = {op.name: value for op, value in tiny_network().benchmark()}
    assert outputs["l2_loss/Sum"].max() == pytest.approx(4.0 * FP16_MAX, rel=1e-5)
    assert outputs["l2_loss/Square"].max() < FP16_MAX
    healthy = {op.name: value for op, value in tiny_network(faults=()).benchmark()}
    assert healthy["l2_loss/Sum"].max() == pytest.approx(0.05 * FP16_MAX, rel=1e-5)


def test_wrong_constant_scales_alternate_channels_on_the_device_only() -> None:
    net = tiny_network()
    net.calibrate()
    true_scale = net.params["bn2/FusedBatchNormV3"]["scale"]
    faulty = net.device_parameters("bn2/FusedBatchNormV3", faulty=True)["scale"]
    fixed = net.device_parameters("bn2/FusedBatchNormV3", faulty=False)["scale"]
    expected = true_scale * np.array([1.5, 0.5] * 4, dtype=np.float32)
    np.testing.assert_allclose(faulty, expected, rtol=1e-6)
    assert np.array_equal(fixed, true_scale)
    untouched = net.device_parameters("bn1/FusedBatchNormV3")["scale"]
    assert np.array_equal(untouched, net.params["bn1/FusedBatchNormV3"]["scale"])


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault("bit_flip", "relu1/Relu"), "unknown demo fault kind 'bit_flip'"),
        (Fault("wrong_constant", "no/such/op"), "names op 'no/such/op', not in the demo network"),
        (Fault("wrong_constant", "relu1/Relu"), "cannot hit relu1/Relu (type Relu)"),
        (
            Fault("fp16_overflow", "conv1/Conv2D"),
            "must hit a side-branch op (l2_loss/scaled, l2_loss/Square, l2_loss/Sum, "
            f"{LONG_SCOPE}/half, {LONG_SCOPE}/weight_decay) or a FusedBatchNormV3 or MatMul op, "
            "not 'conv1/Conv2D'",
        ),
        (
            Fault("wrong_layout", "flatten/Reshape"),
            "cannot hit flatten/Reshape (type Reshape): the device runs no kernel for it",
        ),
        (Fault("nan_birth", "input"), "cannot hit input (type Placeholder)"),
        (
            Fault("corrupt_input", "relu1/Relu"),
            "fault corrupt_input hits the network input, not relu1/Relu (type Relu)",
        ),
        (
            Fault("wrong_layout", "relu1/Relu", variant="xy"),
            "fault wrong_layout has no variant 'xy'; choose one of 'hw', 'c0'",
        ),
        (
            Fault("wrong_constant", "dense/MatMul", variant="c0"),
            "fault wrong_constant has no variant 'c0'; choose one of 'nan'",
        ),
        (
            Fault("nan_birth", "relu1/Relu", variant="c0"),
            "fault nan_birth takes no variant, got 'c0'",
        ),
        (
            Fault("local_error", "relu1/Relu", 0.0),
            "local_error needs a positive magnitude, got 0.0",
        ),
    ],
)
def test_bad_faults_are_refused(fault: Fault, message: str) -> None:
    with pytest.raises(PrecisionError) as error:
        tiny_network(faults=(fault,))
    assert message in str(error.value)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(PrecisionError, match="unknown demo size 'huge'"):
        DemoSpec(size="huge").network_shape()
    with pytest.raises(PrecisionError, match="even and >= 2, got 7"):
        DemoSpec(size="tiny", spatial=7).network_shape()


def test_device_plan_fuses_and_inserts_ge_ops() -> None:
    net = tiny_network()
    plan = plan_device_graph(net, "g")
    assert [op.id for op in plan.ops] == list(range(len(plan.ops)))
    conv2 = plan.op("conv2/Conv2Drelu2/Relu")
    assert conv2.type == "Conv2D"
    assert conv2.original_names == ("conv2/Conv2D", "bn2/FusedBatchNormV3", "relu2/Relu")
    assert conv2.graph_passes == ("ConvBatchnormFusionPass",)
    assert conv2.ub_pass == "AutomaticUbFusion"
    assert [d.layout for d in conv2.input_descs] == ["NC1HWC0", "FRACTAL_Z", "ND"]
    conv3 = plan.op("conv3/Conv2Dres/addrelu3/Relu")
    assert conv3.original_names[-2:] == ("res/add", "relu3/Relu")
    assert conv3.inputs[-1] == "pool1/MaxPool:0"  # the shortcut
    dense = plan.op("dense/MatMul")
    assert (dense.type, dense.original_names) == ("MatMulV2", ("dense/MatMul", "dense/BiasAdd"))
    assert dense.output_descs[0].origin == "dense/BiasAdd"
    casts = [op for op in plan.ops if op.type == "Cast"]
    assert len(casts) == 1 and casts[0].original_names == ()
    transdata = [op for op in plan.ops if op.type == "TransData"]
    assert [d.layout for op in transdata for d in (op.input_descs[0], op.output_descs[0])] == [
        "NHWC",
        "NC1HWC0",
        "NC1HWC0",
        "NHWC",
    ]
    control = [edge for op in plan.ops for edge in op.inputs if edge.endswith(":-1")]
    assert control == ["l2_loss/Sum:-1"]
    long_op = plan.device_op_of(f"{LONG_SCOPE}/weight_decay")
    assert long_op is not None and len(long_op.name) > 255


def test_device_shapes_in_the_plan_match_the_layout_conversion() -> None:
    net = tiny_network()
    plan = plan_device_graph(net, "g")
    for step in run_device(net, plan):
        pairs = [
            *zip(step.inputs, step.op.input_descs, strict=True),
            *zip(step.outputs, step.op.output_descs, strict=True),
        ]
        for value, desc in pairs:
            assert value.shape == desc.origin_shape, (step.op.name, desc.name)
            laid_out = from_origin_layout(value, desc.layout, desc.origin_format)
            assert laid_out.shape == desc.shape, (step.op.name, desc.name)


def test_device_run_drifts_like_float16_and_the_fault_shows() -> None:
    net = tiny_network()
    benchmark = {op.name: value for op, value in net.benchmark()}
    plan = plan_device_graph(net, "g")
    faulty = {s.op.name: s.outputs[0] for s in run_device(net, plan, faulty=True)}
    fixed = {s.op.name: s.outputs[0] for s in run_device(net, plan, faulty=False)}
    assert faulty["conv2/Conv2Drelu2/Relu"].dtype == np.float16
    assert cosine(faulty["conv1/Conv2Drelu1/Relu"], benchmark["relu1/Relu"]) > 0.9999
    assert cosine(faulty["pool1/MaxPool"], benchmark["pool1/MaxPool"]) > 0.9999
    assert cosine(faulty["conv2/Conv2Drelu2/Relu"], benchmark["relu2/Relu"]) < 0.95
    # The error propagates downstream of the faulty op.
    assert cosine(faulty["conv3/Conv2Dres/addrelu3/Relu"], benchmark["relu3/Relu"]) < 0.999
    assert cosine(fixed["conv2/Conv2Drelu2/Relu"], benchmark["relu2/Relu"]) > 0.9999
    assert cosine(fixed["softmax/Softmax"], benchmark["softmax/Softmax"]) > 0.999
    assert np.isinf(faulty["l2_loss/Sum"]).all()
    assert np.isinf(fixed["l2_loss/Sum"]).all()  # the overflow is the model's, not fixed
    assert np.isfinite(faulty["l2_loss/Square"]).all()


def test_default_faults() -> None:
    kinds = [(fault.kind, fault.op, fault.magnitude) for fault in DEFAULT_FAULTS]
    assert kinds == [
        ("wrong_constant", "bn2/FusedBatchNormV3", 0.5),
        ("fp16_overflow", "l2_loss/Sum", 4.0),
    ]
