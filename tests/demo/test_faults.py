"""The fault rules: what each kind does to a tensor, and where it lands in the device run."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_run import run_device
from precision_shell.demo.faults import FAULT_RULES, c0_block_reversal, nan_count
from precision_shell.demo.network import FP16_MAX, Network
from precision_shell.demo.spec import FAULT_KINDS, DemoSpec, Fault
from precision_shell.errors import PrecisionError


def tiny_network(*faults: Fault, **knobs: object) -> Network:
    spec = DemoSpec(size="tiny", faults=faults, **knobs)
    net = Network(spec.network_shape(), spec.seed, spec.faults)
    net.calibrate()
    return net


def device_outputs(net: Network, faulty: bool = True) -> dict[str, tuple[list, np.ndarray]]:
    plan = plan_device_graph(net, "g")
    return {s.op.name: (s.inputs, s.outputs[0]) for s in run_device(net, plan, faulty)}


def test_every_kind_has_a_rule() -> None:
    assert sorted(FAULT_RULES) == sorted(FAULT_KINDS)
    assert len(FAULT_KINDS) == 6


def test_c0_block_reversal() -> None:
    assert c0_block_reversal(3).tolist() == [2, 1, 0]
    assert c0_block_reversal(24).tolist() == [*range(15, -1, -1), *range(23, 15, -1)]
    assert sorted(c0_block_reversal(40).tolist()) == list(range(40))


def test_wrong_layout_swaps_h_and_w_or_reverses_c0_blocks() -> None:
    rule = FAULT_RULES["wrong_layout"]
    value = np.arange(2 * 3 * 3 * 4, dtype=np.float16).reshape(2, 3, 3, 4)
    hw = rule.device_output(value, Fault("wrong_layout", "x", variant="hw"))
    assert np.array_equal(hw, value.transpose(0, 2, 1, 3))
    assert np.array_equal(rule.device_output(value, Fault("wrong_layout", "x")), hw)
    c0 = rule.device_output(value, Fault("wrong_layout", "x", variant="c0"))
    assert np.array_equal(c0, value[..., ::-1]) and c0.dtype == np.float16
    pooled = value[:, :1, :1, :]  # H = W = 1: only the channels can be misplaced
    assert np.array_equal(rule.device_output(pooled, Fault("wrong_layout", "x")), pooled[..., ::-1])
    logits = np.arange(20, dtype=np.float16).reshape(2, 10)
    assert np.array_equal(rule.device_output(logits, Fault("wrong_layout", "x")), logits[:, ::-1])
    with pytest.raises(
        PrecisionError, match=r"needs a square NHWC output at x, not shape \(2, 10\)"
    ):
        rule.device_output(logits, Fault("wrong_layout", "x", variant="hw"))


def test_local_error_is_a_small_deterministic_relative_error() -> None:
    rule = FAULT_RULES["local_error"]
    value = np.full((2, 16, 16, 16), 2.0, dtype=np.float16)
    fault = Fault("local_error", "block3/res/add", 0.04)
    out = rule.device_output(value, fault)
    assert out.dtype == np.float16
    relative = out.astype(np.float64) / 2.0 - 1.0
    assert 0.036 < np.sqrt(np.mean(relative**2)) < 0.044
    assert abs(relative.mean()) < 0.004
    assert np.array_equal(rule.device_output(value, fault), out)
    other = rule.device_output(value, Fault("local_error", "block4/res/add", 0.04))
    assert not np.array_equal(other, out)


def test_nan_birth_spoils_a_few_spread_elements() -> None:
    rule = FAULT_RULES["nan_birth"]
    value = np.ones((2, 4, 4, 8), dtype=np.float16)
    out = rule.device_output(value, Fault("nan_birth", "x", 3))
    flat = out.reshape(-1)
    bad = np.flatnonzero(~np.isfinite(flat))
    assert bad.tolist() == [63, 127, 191]
    assert np.isnan(flat[63]) and np.isposinf(flat[127]) and np.isnan(flat[191])
    assert np.isfinite(value).all()  # the input is not changed in place
    assert nan_count(Fault("nan_birth", "x", 0.2)) == 1 and nan_count(Fault("nan_birth", "x")) == 1
    one = rule.device_output(value, Fault("nan_birth", "x"))
    assert np.flatnonzero(np.isnan(one.reshape(-1))).tolist() == [127]


def test_corrupt_input_reaches_the_device_feed_of_the_faulty_run_only() -> None:
    swapped = tiny_network(Fault("corrupt_input", "input"))
    assert np.array_equal(swapped.device_input(True), swapped.input_value[..., ::-1])
    assert np.array_equal(swapped.device_input(False), swapped.input_value)
    shifted = tiny_network(Fault("corrupt_input", "input", 0.5, "mean"))
    np.testing.assert_allclose(shifted.device_input(), shifted.input_value + 0.5, rtol=0, atol=1e-6)
    steps = device_outputs(swapped)
    cast_input = steps["trans_Cast_0"][0][0]
    assert np.array_equal(cast_input, swapped.input_value[..., ::-1])
    benchmark = {op.name: value for op, value in swapped.benchmark()}
    assert np.array_equal(benchmark["input"], swapped.input_value)


@pytest.mark.parametrize(
    ("fault", "device_op", "knobs"),
    [
        (Fault("fp16_overflow", "bn2/FusedBatchNormV3", 1.5), "conv2/Conv2Drelu2/Relu", {}),
        (Fault("fp16_overflow", "dense/MatMul", 1.5), "dense/MatMul", {"fp32_head": True}),
    ],
)
def test_main_path_overflow_scales_the_model_to_the_asked_peak(
    fault: Fault, device_op: str, knobs: dict
) -> None:
    net = tiny_network(fault, seed=1, **knobs)
    benchmark = {op.name: value for op, value in net.benchmark()}
    assert benchmark[fault.op].max() == pytest.approx(1.5 * FP16_MAX, rel=1e-5)
    # The next batch norm undoes the gain in float32, so the benchmark stays finite.
    assert all(np.isfinite(value).all() for value in benchmark.values())
    steps = device_outputs(net)
    inputs, output = steps[device_op]
    assert all(np.isfinite(x).all() for x in inputs)  # data and constants fit float16
    assert np.isposinf(output).any() and not np.isnan(output).any()
    assert np.isposinf(device_outputs(net, faulty=False)[device_op][1]).any()  # the model's


def test_overflow_too_large_for_the_device_constants_is_refused() -> None:
    net = tiny_network(Fault("fp16_overflow", "bn2/FusedBatchNormV3", 50.0))
    with pytest.raises(PrecisionError) as error:
        device_outputs(net)
    assert "constant of conv2/Conv2D does not fit float16" in str(error.value)


def test_one_fault_leaves_the_side_branch_healthy() -> None:
    net = tiny_network(Fault("wrong_layout", "relu2/Relu"))
    benchmark = {op.name: value for op, value in net.benchmark()}
    assert benchmark["l2_loss/Sum"].max() == pytest.approx(0.05 * FP16_MAX, rel=1e-5)
    steps = device_outputs(net)
    assert all(np.isfinite(output).all() for _, output in steps.values())
