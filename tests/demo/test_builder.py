"""The demo workspace on disk: a "tiny" build read back with the format readers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision_shell.demo.builder import MARKER_FILE_NAME, build_demo, ensure_demo
from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_run import run_device
from precision_shell.demo.network import FP16_MAX, Network
from precision_shell.demo.spec import DemoManifest, DemoSpec, Fault
from precision_shell.demo.workspace_files import graph_name
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import load_benchmark, scan_benchmark_dir
from precision_shell.formats.dump_names import parse_dump_name, read_mapping_csv
from precision_shell.formats.fusion_result import read_fusion_result
from precision_shell.formats.ge.graph import load_ge_graph
from precision_shell.formats.npu_dump import read_dump_header, read_tensor, read_tensor_converted
from precision_shell.formats.overflow import read_opdebug

TINY = DemoSpec(size="tiny")
GRAPH = graph_name()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> DemoManifest:
    return build_demo(tmp_path_factory.mktemp("demo"), TINY)


@pytest.fixture(scope="module")
def network() -> Network:
    net = Network(TINY.network_shape(), TINY.seed, TINY.faults)
    net.calibrate()
    return net


def device_values(net: Network, faulty: bool) -> dict[str, tuple[list, list]]:
    plan = plan_device_graph(net, GRAPH)
    return {s.op.name: (s.inputs, s.outputs) for s in run_device(net, plan, faulty)}


def real_names(directory: Path) -> dict[str, Path]:
    """Real dump file name -> path, resolving mapping.csv."""
    mapping, warnings = read_mapping_csv(directory)
    assert warnings == []
    return {mapping.get(p.name, p.name): p for p in directory.iterdir() if p.name != "mapping.csv"}


def cosine(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_files_are_where_the_formats_say(built: DemoManifest) -> None:
    ws = Path(built.workspace)
    assert ws == Path(built.root) / "precision_data"
    assert (ws / "npu/debug_0/graph/ge_proto_00000001_Build.txt").is_file()
    assert (ws / "npu/debug_1/graph/ge_proto_00000001_Build.txt").is_file()
    dump0 = ws / f"npu/debug_0/dump/20261122063000/0/{GRAPH}/1/0"
    dump1 = ws / f"npu/debug_1/dump/20261122070000/0/{GRAPH}/1/0"
    assert [Path(d) for d in built.dump_dirs] == [dump0, dump1]
    assert Path(built.overflow_dir) == ws / f"overflow/dump/20261122064500/0/{GRAPH}/1/0"
    assert Path(built.benchmark_dir) == ws / "tf/dump"
    assert (ws / "fusion/fusion_result.json").is_file()
    assert built.graph_name == "ge_default_20261122063000_NPU_1"
    manifest = DemoManifest.from_json((Path(built.root) / "demo_manifest.json").read_text())
    assert manifest == built
    assert built.file_counts == {
        "fusion": 1,
        "npu/debug_0": 16,
        "npu/debug_1": 16,
        "overflow": 2,
        "tf": 23,
    }
    data_files = [p for p in ws.rglob("*") if p.is_file() and p.name != MARKER_FILE_NAME]
    assert built.total_bytes == sum(p.stat().st_size for p in data_files)


def test_dump_names_task_ids_and_timestamps_follow_execution(built: DemoManifest) -> None:
    names = sorted(
        (parse_dump_name(real) for real in real_names(Path(built.dump_dirs[0]))),
        key=lambda name: name.task_id,
    )
    assert [n.task_id for n in names] == list(range(3, 3 + len(names)))
    assert all(n.stream_id == 1 for n in names)
    timestamps = [n.timestamp for n in names]
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(timestamps)
    assert names[0].op_type == "Cast" and names[-1].op_type == "SoftmaxV2"
    task_ops = [op for op in built.device_ops if op.dump_file]
    assert len(task_ops) == len(names) == 14


def test_long_name_is_stored_under_a_number(built: DemoManifest) -> None:
    directory = Path(built.dump_dirs[0])
    mapping, _ = read_mapping_csv(directory)
    assert list(mapping) == ["1"]
    real = parse_dump_name(mapping["1"])
    assert real.op_name.endswith("weight_decay") and len(mapping["1"]) > 255
    assert read_dump_header(directory / "1").op_name == built.long_name_op


def test_every_dump_reads_back_as_the_device_values(built: DemoManifest, network: Network) -> None:
    plan = plan_device_graph(network, GRAPH)
    for run, faulty in zip(built.dump_dirs, (True, False), strict=True):
        values = device_values(network, faulty)
        files = real_names(Path(run))
        for real, path in files.items():
            header = read_dump_header(path)
            op = plan.op(header.op_name)
            assert parse_dump_name(real).op_type == op.type
            inputs, outputs = values[op.name]
            assert len(header.inputs) == len(inputs) and len(header.outputs) == len(outputs)
            for kind, expected, descs in (
                ("input", inputs, op.input_descs),
                ("output", outputs, op.output_descs),
            ):
                for index, (value, desc) in enumerate(zip(expected, descs, strict=True)):
                    raw = read_tensor(header, kind, index)
                    assert raw.shape == desc.shape
                    back = read_tensor_converted(header, kind, index, desc.origin_format)
                    assert back.dtype == value.dtype, (op.name, kind, index)
                    assert np.array_equal(back, value, equal_nan=True), (op.name, kind, index)


def test_benchmark_files_hold_the_float32_benchmark(built: DemoManifest) -> None:
    net = Network(TINY.network_shape(), TINY.seed, TINY.faults)
    benchmark = {op.name: value for op, value in net.benchmark()}
    index = scan_benchmark_dir(Path(built.benchmark_dir))
    assert index.warnings == []
    assert len(index) == len(benchmark) == 22
    for name, value in benchmark.items():
        found = index.lookup(name, 0)
        assert found is not None, name
        stored = load_benchmark(found.path)
        assert stored.dtype == np.float32
        assert np.array_equal(stored, value), name
    twice = index.all["dense_BiasAdd.0"]
    assert len(twice) == 2 and twice[0].timestamp < twice[1].timestamp
    assert not np.array_equal(load_benchmark(twice[0].path), benchmark["dense/BiasAdd"])


def test_device_dumps_vs_benchmark_cosine(built: DemoManifest) -> None:
    benchmark = scan_benchmark_dir(Path(built.benchmark_dir))
    graph = load_ge_graph(built.graph_files[0]).graphs[0]
    ops = {op.name: op for op in graph.ops}

    def cosines(run: str) -> dict[str, float]:
        result = {}
        for path in real_names(Path(run)).values():
            header = read_dump_header(path)
            desc = ops[header.op_name].output_descs[0]
            if desc.origin_name is None:
                continue
            device = read_tensor_converted(header, "output", 0, desc.origin_format)
            bench = load_benchmark(benchmark.lookup(desc.origin_name, 0).path)
            if np.isfinite(device).all():
                result[header.op_name] = cosine(device, bench)
        return result

    faulty, fixed = cosines(built.dump_dirs[0]), cosines(built.dump_dirs[1])
    assert faulty["conv1/Conv2Drelu1/Relu"] > 0.9999
    assert faulty["pool1/MaxPool"] > 0.9999
    assert 0.85 < faulty["conv2/Conv2Drelu2/Relu"] < 0.95
    assert faulty["conv3/Conv2Dres/addrelu3/Relu"] < 0.999
    assert len(fixed) == 9  # every finite dumped output with a benchmark
    assert all(value > 0.999 for value in fixed.values()), fixed
    assert built.faults[0].device_op == "conv2/Conv2Drelu2/Relu"


def test_overflow_op_dump_and_opdebug(built: DemoManifest) -> None:
    assert built.overflow_op == "l2_loss/Sum"
    benchmark = scan_benchmark_dir(Path(built.benchmark_dir))
    assert load_benchmark(benchmark.lookup("l2_loss/Sum", 0).path).max() > FP16_MAX
    directory = Path(built.overflow_dir)
    files = sorted(p.name for p in directory.iterdir())
    assert len(files) == 2 and files[0].startswith("Opdebug.Node_OpDebug.11.1.")
    dump = parse_dump_name(files[1])
    assert (dump.op_type, dump.op_name, dump.task_id, dump.stream_id) == (
        "ReduceSumD",
        "l2_loss_Sum",
        11,
        1,
    )
    output = read_tensor(read_dump_header(directory / files[1]), "output", 0)
    assert output.dtype == np.float16 and np.isinf(output).all()
    debug = read_opdebug(directory / files[0])
    assert (debug.layout, debug.task_id, debug.stream_id) == ("old", 11, 1)
    assert debug.timestamp > dump.timestamp
    assert debug.texts == ("floating-point overflow", "overflow converting FP32/INT32 to FP16")
    main_dump = real_names(Path(built.dump_dirs[0]))
    assert any(parse_dump_name(n).task_id == 11 and "l2_loss_Sum" in n for n in main_dump)


def test_graph_parses_and_origins_have_benchmark(built: DemoManifest) -> None:
    first, second = (Path(p) for p in built.graph_files)
    assert first.read_bytes() == second.read_bytes()
    model = load_ge_graph(first)
    (graph,) = model.graphs
    assert graph.name == built.graph_name
    assert graph.attrs["_session_graph_id"] == "0_1"
    benchmark = scan_benchmark_dir(Path(built.benchmark_dir))
    origins = 0
    for op in graph.ops:
        for desc in op.output_descs:
            if desc.origin_name is not None:
                origins += 1
                assert benchmark.lookup(desc.origin_name, desc.origin_output_index) is not None
                assert desc.origin_format in ("NHWC", "ND")
                assert desc.origin_shape is not None
        if op.type in ("Cast", "TransData"):
            assert op.original_op_names == []
        if op.type not in ("Data", "Const", "Reshape"):
            assert op.kernel_name and op.attrs["_ge_attr_op_kernel_lib_name"] == "AIcoreEngine"
    assert origins == 13
    assert [op.id for op in graph.ops] == list(range(len(graph.ops)))
    assert [op.name for op in graph.ops if op.control_inputs] == ["global_pool/Mean"]
    assert [(r.name, r.type) for r in built.device_ops] == [(op.name, op.type) for op in graph.ops]
    conv = next(op for op in graph.ops if op.name == "conv2/Conv2Drelu2/Relu")
    assert conv.pass_name == "ConvBatchnormFusionPass,AutomaticUbFusion"
    assert [d.layout for d in conv.input_descs] == ["NC1HWC0", "FRACTAL_Z", "ND"]


def test_fusion_result_counts_the_passes(built: DemoManifest) -> None:
    passes = {(p.kind, p.name): p.match_times for p in read_fusion_result(built.fusion_file)}
    assert passes == {
        ("graph_fusion", "ConvBatchnormFusionPass"): 3,
        ("graph_fusion", "AReduceSumFusionPass"): 1,
        ("graph_fusion", "AReduceMeanFusionPass"): 1,
        ("graph_fusion", "MatMulBiasAddFusionPass"): 1,
        ("ub_fusion", "AutomaticUbFusion"): 2,
        ("ub_fusion", "TbeConvDoubleInFusionPass"): 1,
        ("ub_fusion", "TbeEltwiseFusionPass"): 1,
    }


def _tree_bytes(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


def test_builds_are_byte_identical(built: DemoManifest, tmp_path: Path) -> None:
    again = build_demo(tmp_path, TINY)
    assert _tree_bytes(Path(again.workspace)) == _tree_bytes(Path(built.workspace))


def test_ensure_demo_reuses_and_rebuilds(tmp_path: Path) -> None:
    spec = DemoSpec(size="tiny", second_run=False, long_name_op=False)
    first = ensure_demo(tmp_path, spec)
    marker = Path(first.workspace) / MARKER_FILE_NAME
    stamp = marker.stat().st_mtime_ns
    assert ensure_demo(tmp_path, spec) == first
    assert marker.stat().st_mtime_ns == stamp  # not rebuilt
    assert first.long_name_op is None and len(first.dump_dirs) == 1
    assert not (Path(first.workspace) / "npu/debug_1").exists()
    other = ensure_demo(tmp_path, DemoSpec(size="tiny", seed=3, second_run=False))
    assert other.spec["seed"] == 3 and other.long_name_op is not None
    saved = json.loads((tmp_path / "demo_manifest.json").read_text())
    assert saved["spec"]["seed"] == 3
    assert not (tmp_path / ".precision_data.demo-staging").exists()


def test_build_refuses_a_foreign_workspace(tmp_path: Path) -> None:
    user_data = tmp_path / "precision_data"
    user_data.mkdir()
    (user_data / "notes.txt").write_text("mine")
    with pytest.raises(PrecisionError) as error:
        build_demo(tmp_path, TINY)
    assert "not empty and not a demo workspace; refusing to write into it" in str(error.value)
    assert str(user_data) in str(error.value)
    assert (user_data / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precision_data"]


def test_build_without_faults_has_no_overflow(tmp_path: Path) -> None:
    manifest = build_demo(tmp_path, DemoSpec(size="tiny", faults=(), second_run=False))
    assert manifest.overflow_op is None and manifest.overflow_dir == ""
    assert manifest.faults == []
    assert not (Path(manifest.workspace) / "overflow").exists()


def test_fault_on_dense_bias(tmp_path: Path) -> None:
    spec = DemoSpec(size="tiny", faults=(Fault("wrong_constant", "dense/BiasAdd", 2.0),))
    manifest = build_demo(tmp_path, spec)
    assert [(f.benchmark_op, f.device_op) for f in manifest.faults] == [
        ("dense/BiasAdd", "dense/MatMul")
    ]


def test_overflow_fault_on_square_moves_the_opdebug(tmp_path: Path) -> None:
    spec = DemoSpec(size="tiny", faults=(Fault("fp16_overflow", "l2_loss/Square", 2.0),))
    manifest = build_demo(tmp_path, spec)
    assert manifest.overflow_op == "l2_loss/Square"
    names = sorted(p.name for p in Path(manifest.overflow_dir).iterdir())
    assert [parse_dump_name(name).task_id for name in names] == [10, 10]
    assert names[1].startswith("Square.l2_loss_Square.10.1.")


def test_spec_json_round_trip() -> None:
    spec = DemoSpec(size="large", seed=7, faults=(Fault("wrong_constant", "dense/MatMul", 0.1),))
    assert DemoSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    knobs = DemoSpec(
        size="tiny",
        faults=(Fault("wrong_layout", "relu2/Relu", 0.5, "c0"),),
        fp32_head=True,
        branch_gain=4.0,
    )
    data = json.loads(json.dumps(knobs.to_json()))
    assert data["faults"] == [
        {"kind": "wrong_layout", "op": "relu2/Relu", "magnitude": 0.5, "variant": "c0"}
    ]
    assert (data["fp32_head"], data["branch_gain"]) == (True, 4.0)
    assert DemoSpec.from_json(data) == knobs
    # A manifest written before faults had a variant still reads.
    assert DemoSpec.from_json({"faults": [{"kind": "nan_birth", "op": "x"}]}).faults == (
        Fault("nan_birth", "x", 0.5, ""),
    )
