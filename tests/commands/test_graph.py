"""`ls` and `ni` through the real dispatcher on the tiny demo workspace."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from precision_shell.commands.graph import NodeInfoResult, OpListing, TypeCounts
from precision_shell.explore import tensor_target
from precision_shell.formats.npu_dump import read_dump_header
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.workspace import workspace as workspace_module
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    CONV3,
    DENSE,
    POOL,
    assert_stats_equal,
    benchmark_path,
    decoded,
    dump_path,
    fractal_z_to_nchw,
    nc1hwc0_to_nhwc,
    op_block,
    open_shell,
    rendered,
    run_fail,
    run_ok,
    top_level_attr_keys,
)
from tests.commands.test_second_dump_dir import _add

RUNS = ("debug_0", "debug_1")


@pytest.fixture(scope="module")
def demo(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    return root, manifest, open_shell(root)


def _expected_rows(manifest, keep) -> list[tuple[str, str]]:
    """(run, op) for every manifest op `keep` accepts, per run, in execution order."""
    return [(run, op.name) for run in RUNS for op in manifest.device_ops if keep(op)]


def _rows(result: OpListing) -> list[tuple[str, str]]:
    return [(run, rec.name) for run, rec in result.rows]


# -- ls ---------------------------------------------------------------------------------------


def test_ls_without_filter_counts_op_types_per_run_as_the_builder_wrote(demo):
    _, manifest, shell = demo
    result = run_ok(shell, "ls")
    assert isinstance(result, TypeCounts)
    expected = dict(sorted(Counter(op.type for op in manifest.device_ops).items()))
    assert result.runs == {"debug_0": expected, "debug_1": expected}
    assert list(result.runs["debug_0"]) == sorted(expected)


def test_ls_by_type_lists_exactly_the_convolutions(demo):
    _, manifest, shell = demo
    result = run_ok(shell, "ls -t Conv")
    assert result.filters == {"type": "Conv"}
    assert _rows(result) == _expected_rows(manifest, lambda op: "conv" in op.type.lower())
    assert [name for _, name in _rows(result)[:3]] == [CONV1, CONV2, CONV3]


def test_ls_by_name_is_a_case_insensitive_substring(demo):
    _, manifest, shell = demo
    result = run_ok(shell, "ls -n FOLDED")
    assert _rows(result) == _expected_rows(manifest, lambda op: "folded" in op.name.lower())
    assert len(result.rows) == 12  # filter and bias of three convs, in two runs


def test_ls_by_fusion_pass(demo):
    _, _, shell = demo
    assert _rows(run_ok(shell, "ls -f AutomaticUbFusion")) == [
        (run, op) for run in RUNS for op in (CONV1, CONV2)
    ]
    assert _rows(run_ok(shell, "ls -f DoubleIn")) == [(run, CONV3) for run in RUNS]
    assert _rows(run_ok(shell, "ls -f MatMulBiasAdd")) == [(run, DENSE) for run in RUNS]


def test_ls_by_kernel(demo):
    _, _, shell = demo
    assert _rows(run_ok(shell, "ls -k te_maxpool")) == [(run, POOL) for run in RUNS]
    assert _rows(run_ok(shell, "ls -k conv2d")) == [
        (run, op) for run in RUNS for op in (CONV1, CONV2, CONV3)
    ]


def test_ls_by_graph_and_combined_filters(demo):
    _, manifest, shell = demo
    result = run_ok(shell, f"ls -g {manifest.graph_name}")
    assert _rows(result) == _expected_rows(manifest, lambda op: True)
    combined = run_ok(shell, "ls -t conv2d -f doublein -n res")
    assert combined.filters == {"name": "res", "type": "conv2d", "pass": "doublein"}
    assert _rows(combined) == [(run, CONV3) for run in RUNS]


def test_ls_with_no_match_is_an_empty_listing_not_an_error(demo):
    _, _, shell = demo
    result = run_ok(shell, "ls -t NoSuchType")
    assert isinstance(result, OpListing) and result.rows == []


# -- ni ---------------------------------------------------------------------------------------


def _port_table(info) -> list[tuple]:
    return [(p.kind, p.index, p.dtype, p.layout, p.shape, p.peers, p.origin) for p in info.ports]


def test_ni_shows_type_pass_kernel_originals_and_ports_of_the_fused_conv(demo):
    root, manifest, shell = demo
    result = run_ok(shell, f"ni {CONV2}")
    assert isinstance(result, NodeInfoResult) and result.candidates == []
    (info,) = result.nodes  # the first run holding the op, by default
    assert info.run == "debug_0"
    rec = info.record
    assert rec.type == "Conv2D"
    assert list(rec.original_names) == next(
        op.original_op_names for op in manifest.device_ops if op.name == CONV2
    )
    block = op_block(
        (root / "precision_data/npu/debug_0/graph/ge_proto_00000001_Build.txt").read_text(),
        CONV2,
    )
    kernel = re.search(rf'key: "{re.escape(CONV2)}_kernelname"\n\s+value {{\n\s+s: "(\w+)"', block)
    assert rec.kernel_name == kernel.group(1)
    assert rec.pass_name == "ConvBatchnormFusionPass,AutomaticUbFusion"
    assert rec.id == int(re.search(r"^    id: (\d+)$", block, flags=re.M).group(1))
    # batch 2, 8 channels in one C0=16 block, 4x4 after the pool; HWCN filter 3x3x8x8
    assert _port_table(info) == [
        ("input", 0, "DT_FLOAT16", "NC1HWC0", (2, 1, 4, 4, 16), [f"{POOL}:0"], f"{POOL}:0"),
        ("input", 1, "DT_FLOAT16", "FRACTAL_Z", (9, 1, 16, 16),
         ["conv2/Conv2D/folded_filter:0"], None),
        ("input", 2, "DT_FLOAT16", "ND", (8,), ["conv2/Conv2D/folded_bias:0"], None),
        ("output", 0, "DT_FLOAT16", "NC1HWC0", (2, 1, 4, 4, 16), [f"{CONV3}:0"], "relu2/Relu:0"),
    ]  # fmt: skip


def test_ni_output_peers_list_every_consumer_with_its_input_slot(demo):
    _, _, shell = demo
    (info,) = run_ok(shell, f"ni {POOL}").nodes
    outputs = [p for p in info.ports if p.kind == "output"]
    assert [(p.index, p.peers) for p in outputs] == [(0, [f"{CONV2}:0", f"{CONV3}:3"])]


def test_ni_control_edges_are_ports_of_their_own(demo):
    _, _, shell = demo
    (info,) = run_ok(shell, "ni global_pool/Mean").nodes
    assert [(p.kind, p.peers) for p in info.ports if p.kind == "control"] == [
        ("control", ["l2_loss/Sum"])
    ]


def test_ni_dump_tensor_stats_equal_numpy_on_the_decoded_file(demo):
    root, manifest, shell = demo
    (info,) = run_ok(shell, f"ni {CONV2}").nodes
    path = dump_path(root, manifest, CONV2)
    assert info.dump_files == [path.name]
    assert [r.label for r in info.dump_tensors] == ["input 0", "input 1", "input 2", "output 0"]
    # statistics in the benchmark layout (pads cut off), as pt, cp and vc see the tensors
    converted = {
        "input 0": nc1hwc0_to_nhwc(decoded(path, "input", 0), 8),
        "input 1": fractal_z_to_nchw(decoded(path, "input", 1), 8, 8, 3, 3).transpose(2, 3, 1, 0),
        "input 2": decoded(path, "input", 2),
        "output 0": nc1hwc0_to_nhwc(decoded(path, "output", 0), 8),
    }
    for row in info.dump_tensors:
        assert row.error is None and row.source == path.name
        # QA: the stats of the real elements sat beside the stored, padded shape
        assert row.shape == converted[row.label].shape and row.dtype == "FLOAT16"
        assert_stats_equal(row.stats, converted[row.label])
    assert [r.layout for r in info.dump_tensors] == [
        "NC1HWC0→NHWC",
        "FRACTAL_Z→HWCN",
        "ND",
        "NC1HWC0→NHWC",
    ]


def test_ni_benchmark_stats_equal_numpy_on_the_npy(demo):
    root, _, shell = demo
    (info,) = run_ok(shell, f"ni {CONV2}").nodes
    expected = {
        "input 0": benchmark_path(root, POOL),
        "output 0": benchmark_path(root, "relu2/Relu"),
    }
    assert {r.label: r.source for r in info.benchmarks} == {k: p.name for k, p in expected.items()}
    for row in info.benchmarks:
        values = np.load(expected[row.label], allow_pickle=False)
        assert row.shape == values.shape == (2, 4, 4, 8)
        assert_stats_equal(row.stats, values)


def test_ni_picks_the_newest_of_two_benchmark_timestamps(demo):
    root, _, shell = demo
    (info,) = run_ok(shell, f"ni {DENSE}").nodes
    (out,) = [r for r in info.benchmarks if r.label == "output 0"]
    older = sorted((root / "precision_data/tf/dump").glob("dense_BiasAdd.0.*.npy"))
    assert len(older) == 2 and out.source == benchmark_path(root, "dense/BiasAdd").name
    assert_stats_equal(out.stats, np.load(benchmark_path(root, "dense/BiasAdd")))


def test_ni_run_all_gives_one_panel_per_run_and_bad_run_is_an_error(demo):
    _, _, shell = demo
    result = run_ok(shell, f"ni -n {CONV2} -r all")
    assert [i.run for i in result.nodes] == ["debug_0", "debug_1"]
    assert [i.run for i in run_ok(shell, f"ni {CONV2} -r debug_1").nodes] == ["debug_1"]
    error = run_fail(shell, f"ni {CONV2} -r debug_9").error
    assert error == "no device run named 'debug_9'; runs: debug_0, debug_1"


def test_ni_partial_name_lists_the_candidates_and_fails(demo):
    _, manifest, shell = demo
    outcome = run_fail(shell, "ni Conv2Drelu")
    result = outcome.result
    assert result.nodes == []
    want = _expected_rows(manifest, lambda op: "conv2drelu" in op.name.lower())
    assert [(run, rec.name) for run, rec in result.candidates] == want
    assert [name for _, name in want[:2]] == [CONV1, CONV2]
    # one line naming each candidate once, though both runs hold it
    assert outcome.error == (f"ni: no op named 'Conv2Drelu'; 2 op(s) contain it: {CONV1}, {CONV2}")


def test_ni_with_many_candidates_names_the_first_eight_in_its_error(demo):
    _, manifest, shell = demo
    names = list(dict.fromkeys(op.name for op in manifest.device_ops if "conv" in op.name.lower()))
    assert len(names) > 8
    error = run_fail(shell, "ni conv").error
    assert error == (
        f"ni: no op named 'conv'; {len(names)} op(s) contain it: {', '.join(names[:8])}, ... "
        f"(+{len(names) - 8} more; ls -n conv lists them)"
    )


def test_ni_unknown_name_and_missing_name_are_one_line_errors(demo):
    _, _, shell = demo
    assert run_fail(shell, "ni zzz_nothing").error == (
        "ni: no op named or containing 'zzz_nothing'; try ls -n PART"
    )
    assert "ni: give an op name" in run_fail(shell, "ni").error
    assert "-s DEPTH must be between 0 and 20" in run_fail(shell, f"ni {CONV2} -s 21").error
    assert "invalid int value: 'x'" in run_fail(shell, f"ni {CONV2} -s x").error


def test_ni_graph_filter(demo):
    _, manifest, shell = demo
    assert len(run_ok(shell, f"ni {CONV2} -g {manifest.graph_name.upper()}").nodes) == 1


@pytest.mark.parametrize("line", ["ls -g other_graph", f"ni {CONV2} -g other_graph"])
def test_a_graph_filter_naming_no_graph_is_an_error_listing_the_graphs(demo, line):
    _, manifest, shell = demo
    error = run_fail(shell, line).error
    assert error == f"no graph named 'other_graph'; graphs: {manifest.graph_name}"


def test_ni_finds_a_fused_op_by_an_original_tf_name_and_says_so(demo):
    _, manifest, shell = demo
    result = run_ok(shell, "ni bn2/FusedBatchNormV3")
    (info,) = result.nodes
    assert info.record.name == CONV2 and info.run == "debug_0"
    assert "bn2/FusedBatchNormV3" in info.record.original_names
    assert result.notes[0] == f"bn2/FusedBatchNormV3 is fused into {CONV2}"
    (dense,) = run_ok(shell, "ni -r debug_1 dense/BiasAdd").nodes  # MatMul+BiasAdd fused
    assert (dense.record.name, dense.run) == (DENSE, "debug_1")
    holders = [op.name for op in manifest.device_ops if "dense/BiasAdd" in op.original_op_names]
    assert holders == [DENSE]


def test_ls_name_filter_matches_original_tf_names_too(demo):
    _, manifest, shell = demo
    result = run_ok(shell, "ls -n bn2/Fused")
    want = _expected_rows(
        manifest, lambda op: any("bn2/fused" in n.lower() for n in op.original_op_names)
    )
    assert want and _rows(result) == want
    assert (RUNS[0], CONV2) in want


def test_ni_picks_the_first_run_holding_the_op_and_names_the_others(demo):
    _, _, shell = demo
    result = run_ok(shell, f"ni {CONV2}")
    assert [i.run for i in result.nodes] == ["debug_0"]
    assert result.notes == [f"{CONV2} (in debug_0; also in debug_1: use -r debug_1)"]
    assert run_ok(shell, f"ni {CONV2} -r debug_1").notes == []
    assert run_ok(shell, f"ni {CONV2} -r all").notes == []


def test_ni_a_holds_every_attribute_of_the_op(demo):
    root, _, shell = demo
    (info,) = run_ok(shell, f"ni -a {CONV2}").nodes
    text = (root / "precision_data/npu/debug_0/graph/ge_proto_00000001_Build.txt").read_text()
    keys = top_level_attr_keys(op_block(text, CONV2))
    # names, types, pass names, kernel lib, kernel name + the conv's 5 kernel attributes
    assert sorted(info.attrs) == sorted(keys) and len(keys) == 11
    assert info.attrs["_datadump_original_op_names"] == [
        "conv2/Conv2D",
        "bn2/FusedBatchNormV3",
        "relu2/Relu",
    ]
    assert info.attrs["pass_name_ub"] == "AutomaticUbFusion"
    assert run_ok(shell, f"ni {CONV2}").nodes[0].attrs is None
    # precision_tool's `ni -n OP -a ATTR`: the attributes whose name holds ATTR
    (named,) = run_ok(shell, f"ni -n {CONV2} -a PASS_name").nodes
    assert sorted(named.attrs) == sorted(k for k in keys if "pass_name" in k)
    none = run_ok(shell, f"ni -n {CONV2} -a nothing_like_it")
    assert none.nodes[0].attrs == {}
    assert "attributes: no name holds 'nothing_like_it'" in rendered(none)


def test_ni_refuses_two_op_names_rather_than_drop_one(demo):
    _, _, shell = demo
    refused = run_fail(shell, f"ni {POOL} -n {CONV2}")
    assert refused.error == (
        f"ni: two op names, {POOL!r} and -n {CONV2!r}: give one (-a ATTR names an attribute)"
    )
    assert [n.record.name for n in run_ok(shell, f"ni {CONV2} -n {CONV2}").nodes] == [CONV2]


def _parse_gv(text: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    nodes = set(re.findall(r'^  "([^"]+)" \[label=', text, flags=re.M))
    edges = set(re.findall(r'^  "([^"]+)" -> "([^"]+)" \[label="([^"]+)"\];', text, flags=re.M))
    return nodes, edges


def test_ni_s_writes_the_subgraph_under_temp_op_graph(demo):
    root, _, shell = demo
    (info,) = run_ok(shell, f"ni {CONV2} -s 1").nodes
    sub = info.subgraph
    gv = root / "precision_data/temp/op_graph" / "debug_0_conv2_Conv2Drelu2_Relu_d1.gv"
    assert sub.gv == str(gv) and gv.is_file()
    assert "labelloc" not in gv.read_text()  # one rank, one step: no slice to name
    nodes, edges = _parse_gv(gv.read_text())
    filt, bias = "conv2/Conv2D/folded_filter", "conv2/Conv2D/folded_bias"
    assert nodes == {CONV2, POOL, filt, bias, CONV3}
    assert edges == {
        (POOL, CONV2, "0->0"),
        (filt, CONV2, "0->1"),
        (bias, CONV2, "0->2"),
        (CONV2, CONV3, "0->0"),
        (POOL, CONV3, "0->3"),
    }
    assert (sub.nodes, sub.edges) == (5, 5)
    if shutil.which("dot") is None:
        print("SKIPPED .svg assertion: graphviz `dot` is not installed")
        assert sub.svg is None and sub.note == "graphviz `dot` not installed: wrote the .gv only"
    else:
        assert sub.svg == str(gv.with_suffix(".svg"))
        assert "<svg" in gv.with_suffix(".svg").read_text()


def test_ni_s_names_the_rank_and_step_in_the_file_and_the_graph(tiny_demo):
    """Two cards: `ni -s` with and without --rank writes one file per (rank, step), each
    labelled with it, instead of one name the last call wins."""
    root, _ = tiny_demo
    rank, step = _add(root, "device")
    shell = open_shell(root)
    out = root / "precision_data/temp/op_graph"
    for flags, shown in ((f"--rank {rank} --step {step}", rank), ("", "0")):
        (info,) = run_ok(shell, f"ni {CONV2} -s 1 {flags}").nodes
        gv = out / f"debug_0_rank{shown}_step{step}_conv2_Conv2Drelu2_Relu_d1.gv"
        assert info.subgraph.gv == str(gv)
        assert f'  label="debug_0 rank {shown} step {step}";' in gv.read_text().splitlines()
    assert sorted(p.name for p in out.glob("*.gv")) == [
        f"debug_0_rank0_step{step}_conv2_Conv2Drelu2_Relu_d1.gv",
        f"debug_0_rank{rank}_step{step}_conv2_Conv2Drelu2_Relu_d1.gv",
    ]


def test_ni_s_0_is_the_op_alone_and_depth_2_reaches_further(demo):
    root, _, shell = demo
    (info,) = run_ok(shell, f"ni {CONV2} -s 0").nodes
    nodes, edges = _parse_gv(Path(info.subgraph.gv).read_text())
    assert (nodes, edges) == ({CONV2}, set())
    (info,) = run_ok(shell, f"ni {CONV2} -s 2").nodes
    nodes, _ = _parse_gv(Path(info.subgraph.gv).read_text())
    # two hops: conv1 feeds the pool, conv3 feeds global_pool and l2_loss/scaled
    assert {CONV1, "global_pool/Mean", "l2_loss/scaled", "conv3/Conv2D/folded_filter"} <= nodes
    assert "dense/MatMul" not in nodes
    assert Path(info.subgraph.gv).parent == root / "precision_data/temp/op_graph"


def test_ni_s_follows_control_edges_both_ways(demo):
    _, manifest, shell = demo
    (info,) = run_ok(shell, "ni global_pool/Mean -s 1").nodes
    text = Path(info.subgraph.gv).read_text()
    nodes, edges = _parse_gv(text)
    assert nodes == {"global_pool/Mean", CONV3, "l2_loss/Sum", "trans_TransData_2"}
    assert edges == {(CONV3, "global_pool/Mean", "0->0"),
                     ("global_pool/Mean", "trans_TransData_2", "0->0")}  # fmt: skip
    assert '  "l2_loss/Sum" -> "global_pool/Mean" [style=dashed, color=gray];' in text
    (info,) = run_ok(shell, "ni l2_loss/Sum -s 1").nodes  # the control consumer side
    nodes, _ = _parse_gv(Path(info.subgraph.gv).read_text())
    # its producer, its data consumer (the long-named Muls) and its control consumer
    assert nodes == {"l2_loss/Sum", "l2_loss/Square", manifest.long_name_op, "global_pool/Mean"}


# -- a dump file of many tensors --------------------------------------------------------------

MANY = 300  # inputs of the rewritten conv1 dump: enough that a parse per tensor would show


@pytest.fixture
def many_inputs(tiny_demo, monkeypatch):
    """conv1's dump rewritten with MANY float32 inputs (input k holds k and -k) and one output;
    (root, its path, the header reads of that path, counted)."""
    root, manifest = tiny_demo
    path = dump_path(root, manifest, CONV1)
    inputs = [TensorSpec(np.array([k, -k], dtype=np.float32)) for k in range(MANY)]
    write_dump(path, CONV1, inputs, [TensorSpec(np.ones((2, 8), dtype=np.float32))])
    reads: Counter[str] = Counter()

    def counted(p):
        reads[str(p)] += 1
        return read_dump_header(p)

    for module in (workspace_module, tensor_target):
        monkeypatch.setattr(module, "read_dump_header", counted)
    return root, path, reads


@pytest.mark.parametrize("line", [f"ni {CONV1}", f"ni -a {CONV1} -s 1"])
def test_ni_of_a_dump_file_of_many_inputs_reads_its_header_once(many_inputs, line):
    root, path, reads = many_inputs
    (info,) = run_ok(open_shell(root), line).nodes
    assert reads[str(path)] == 1  # not once per tensor: that was quadratic in the inputs
    rows = info.dump_tensors
    assert [r.label for r in rows] == [f"input {k}" for k in range(MANY)] + ["output 0"]
    assert all(r.error is None for r in rows)
    assert [(r.stats.max, r.stats.min) for r in rows[:MANY]] == [(k, -k) for k in range(MANY)]


@pytest.mark.parametrize("command", ["pt {name}", "dc {op}", "cp {name}:input:7 {name}:input:9"])
def test_commands_over_every_tensor_of_a_file_read_its_header_once(many_inputs, command):
    root, path, reads = many_inputs
    result = run_ok(open_shell(root), command.format(name=path.name, op=CONV1))
    assert reads[str(path)] == 1
    if command.startswith("pt"):
        assert [s.stats.max for s in result.items[:MANY]] == list(range(MANY))
    elif command.startswith("dc"):
        assert len(result.files) == MANY + 1
