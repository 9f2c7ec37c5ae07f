"""The float32 head (GE's Casts around it) and the branch gain of deep, drifting stacks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_run import run_device
from precision_shell.demo.network import HEAD_SCALE, Network
from precision_shell.demo.spec import DemoSpec, Fault
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import load_benchmark, scan_benchmark_dir
from precision_shell.formats.ge.graph import load_ge_graph
from precision_shell.formats.npu_dump import read_dump_header, read_tensor_converted

HEAD = DemoSpec(size="tiny", faults=(), fp32_head=True, second_run=False)


def network(spec: DemoSpec) -> Network:
    return Network(spec.network_shape(), spec.seed, spec.faults)


def cosine(x: np.ndarray, y: np.ndarray) -> float:
    x = x.astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_fp32_head_plan_casts_around_the_head() -> None:
    net = network(HEAD)
    assert [op.name for op in net.ops[-6:]] == [
        "global_pool/Mean",
        HEAD_SCALE,
        "flatten/Reshape",
        "dense/MatMul",
        "dense/BiasAdd",
        "softmax/Softmax",
    ]
    plan = plan_device_graph(net, "g")
    tail = [op for op in plan.ops if op.id > plan.op("global_pool/Mean").id - 2]
    assert [(op.name, op.type) for op in tail] == [
        ("trans_Cast_2", "Cast"),
        ("global_pool/Mean", "ReduceMeanD"),
        (HEAD_SCALE, "Mul"),
        ("trans_TransData_3", "TransData"),
        ("flatten/Reshape", "Reshape"),
        ("trans_Cast_4", "Cast"),
        ("dense/MatMul", "MatMulV2"),
        ("softmax/Softmax", "SoftmaxV2"),
    ]
    dtypes = {op.name: (op.input_descs[0].dtype, op.output_descs[0].dtype) for op in tail}
    assert dtypes["trans_Cast_2"] == ("DT_FLOAT16", "DT_FLOAT")
    assert dtypes[HEAD_SCALE] == ("DT_FLOAT", "DT_FLOAT")
    assert dtypes["trans_Cast_4"] == ("DT_FLOAT", "DT_FLOAT16")
    assert dtypes["dense/MatMul"] == ("DT_FLOAT16", "DT_FLOAT16")
    mul = plan.op(HEAD_SCALE)
    assert mul.inputs == ("global_pool/Mean:0", "head/mul/y:0")
    assert plan.op("head/mul/y").output_descs[0].dtype == "DT_FLOAT"
    assert plan.op("global_pool/Mean").inputs == ("trans_Cast_2:0", "l2_loss/Sum:-1")
    assert plan.op("dense/MatMul").inputs[0] == "trans_Cast_4:0"
    assert [op.original_names for op in plan.ops if op.type == "Cast"] == [(), (), ()]


def test_fp32_head_runs_in_float32_and_stays_healthy() -> None:
    net = network(HEAD)
    benchmark = {op.name: value for op, value in net.benchmark()}
    plan = plan_device_graph(net, "g")
    outputs = {s.op.name: s.outputs[0] for s in run_device(net, plan)}
    for name in ("trans_Cast_2", "global_pool/Mean", HEAD_SCALE, "flatten/Reshape"):
        assert outputs[name].dtype == np.float32, name
    assert outputs["dense/MatMul"].dtype == np.float16
    y = net.params[HEAD_SCALE]["y"]
    assert y.shape == (8,) and y.min() >= 0.5 and y.max() <= 1.5
    np.testing.assert_allclose(benchmark[HEAD_SCALE], benchmark["global_pool/Mean"] * y, rtol=1e-6)
    for step in run_device(net, plan):
        origin = step.op.output_descs[0].origin
        if origin and step.op.kind != "data":
            assert cosine(step.outputs[0], benchmark[origin]) > 0.9999, step.op.name


def test_fp32_head_dumps_read_back_as_float32(tmp_path: Path) -> None:
    spec = DemoSpec(
        size="tiny",
        fp32_head=True,
        second_run=False,
        faults=(Fault("wrong_constant", HEAD_SCALE, 0.3),),
    )
    manifest = build_demo(tmp_path, spec)
    assert [(f.benchmark_op, f.device_op) for f in manifest.faults] == [(HEAD_SCALE, HEAD_SCALE)]
    record = next(op for op in manifest.device_ops if op.name == HEAD_SCALE)
    header = read_dump_header(Path(manifest.workspace) / record.dump_file)
    graph = load_ge_graph(manifest.graph_files[0]).graphs[0]
    desc = next(op for op in graph.ops if op.name == HEAD_SCALE).output_descs[0]
    assert (desc.dtype, desc.layout, desc.origin_name) == ("DT_FLOAT", "NC1HWC0", HEAD_SCALE)
    device = read_tensor_converted(header, "output", 0, desc.origin_format)
    constant = read_tensor_converted(header, "input", 1)
    assert device.dtype == np.float32 and device.shape == (2, 1, 1, 8)
    benchmark = scan_benchmark_dir(Path(manifest.benchmark_dir))
    mean = load_benchmark(benchmark.lookup("global_pool/Mean", 0).path)
    net = network(spec)
    net.calibrate()
    wrong = net.params[HEAD_SCALE]["y"] * np.array([1.3, 0.7] * 4, dtype=np.float32)
    np.testing.assert_allclose(constant, wrong, rtol=1e-6)
    np.testing.assert_allclose(device, mean * wrong, rtol=1e-3, atol=1e-4)
    assert cosine(device, load_benchmark(benchmark.lookup(HEAD_SCALE, 0).path)) < 0.99


def test_branch_gain_scales_only_the_residual_ends() -> None:
    plain = network(DemoSpec(size="tiny", blocks=16, faults=()))
    strong = network(DemoSpec(size="tiny", blocks=16, faults=(), branch_gain=4.0))
    for name, params in plain.params.items():
        for key, value in params.items():
            other = strong.params[name][key]
            if name.endswith("bn3/FusedBatchNormV3") and key in ("scale", "offset"):
                # plain shrinks with depth (2 / sqrt(16) = 0.5), strong is 4x the unshrunk scale
                np.testing.assert_allclose(other, value * 8.0, rtol=1e-5)
            else:
                assert np.array_equal(other, value), (name, key)
    with pytest.raises(PrecisionError, match="branch_gain must be positive, got 0.0"):
        DemoSpec(branch_gain=0.0).network_shape()


def test_branch_gain_makes_a_deep_stack_drift() -> None:
    def last_conv_cosine(spec: DemoSpec) -> float:
        net = network(spec)
        benchmark = {op.name: value for op, value in net.benchmark()}
        plan = plan_device_graph(net, "g")
        convs = [s for s in run_device(net, plan) if s.op.type == "Conv2D"]
        return cosine(convs[-1].outputs[0], benchmark[convs[-1].op.output_descs[0].origin])

    tame = last_conv_cosine(DemoSpec(size="tiny", blocks=72, faults=()))
    drifting = last_conv_cosine(DemoSpec(size="tiny", blocks=72, faults=(), branch_gain=4.0))
    assert tame > 0.99999
    assert 0.98 < drifting < 0.995
