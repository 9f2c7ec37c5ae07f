"""The compare plan on the tiny demo workspace: tasks, order, mapping rows and their reasons."""

from __future__ import annotations

import shutil

import pytest

from precision_shell.compare.pipeline.fusion_groups import fusion_groups
from precision_shell.compare.pipeline.matcher import Origin
from precision_shell.compare.pipeline.plan import FileTask, _Origins, benchmark_plan, device_plan
from precision_shell.formats.ge.graph import GraphDef, ModelDef
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import Workspace
from tests.commands.shell_fixture import CONV1, CONV2, DENSE, benchmark_path
from tests.workspace.graph_fixture import desc
from tests.workspace.graph_fixture import op as ge_op


def _plan(root, benchmark_dir=None):
    ws = Workspace.open(root, use_cache=False)
    run = ws.run()
    return ws, benchmark_plan(ws, run, run.dump_graph(), benchmark_dir=benchmark_dir)


@pytest.fixture(scope="module")
def demo_plan(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    ws, plan = _plan(root)
    return root, manifest, plan


def _task(plan, op_name) -> FileTask:
    return next(t for t in plan.tasks if t.op_name == op_name)


def test_every_dumped_op_has_a_task_in_execution_order(demo_plan):
    root, manifest, plan = demo_plan
    dumped = [op for op in manifest.device_ops if op.dump_file]
    assert [t.op_name for t in plan.tasks] == [op.name for op in dumped]
    assert [t.device_file for t in plan.tasks] == [
        str(root / "precision_data" / op.dump_file) for op in dumped
    ]
    assert [t.op_type for t in plan.tasks] == [op.type for op in dumped]
    assert [t.seq for t in plan.tasks] == list(range(len(dumped)))
    # one device op per group here, numbered among the dumped groups in order
    assert [t.group_index for t in plan.tasks] == list(range(len(dumped)))
    assert plan.mode == "benchmark" and plan.skipped == []


def test_group_cells_name_the_fused_benchmark_ops(demo_plan):
    _, manifest, plan = demo_plan
    for op in manifest.device_ops:
        if not op.dump_file:
            continue
        task = _task(plan, op.name)
        assert task.npu_dump == op.name
        assert task.ground_truth == (",".join(op.original_op_names) or "*")
    assert _task(plan, CONV2).ground_truth == "conv2/Conv2D,bn2/FusedBatchNormV3,relu2/Relu"


def test_inputs_walk_through_the_ge_cast_and_transdata_to_the_benchmark(demo_plan):
    root, _, plan = demo_plan
    conv1 = _task(plan, CONV1)
    # input <- trans_TransData_1 <- trans_Cast_0 <- input (Data)
    row = conv1.inputs[0]
    assert row.ground_truth == "input"
    assert row.benchmark_path == str(benchmark_path(root, "input"))
    assert row.origin_format == "NHWC" and row.origin_shape == (2, 8, 8, 3)
    assert row.reason == ""
    # dense/MatMul input 0 <- trans_TransData_2 <- flatten/Reshape (in the graph, not dumped)
    dense_in = _task(plan, DENSE).inputs[0]
    assert dense_in.ground_truth == "flatten/Reshape"
    assert dense_in.benchmark_path == str(benchmark_path(root, "flatten/Reshape"))


def test_cast_and_transdata_outputs_compare_with_what_is_upstream_as_msaccucmp_does(demo_plan):
    root, _, plan = demo_plan
    cast_out = _task(plan, "trans_Cast_0").outputs[0]
    assert (cast_out.ground_truth, cast_out.benchmark_path) == (
        "input",
        str(benchmark_path(root, "input")),
    )
    trans_out = _task(plan, "trans_TransData_2").outputs[0]
    assert trans_out.ground_truth == "global_pool/Mean"
    assert trans_out.benchmark_path == str(benchmark_path(root, "global_pool/Mean"))


def test_outputs_use_their_desc_origin_and_past_the_descs_desc_zero(demo_plan):
    root, _, plan = demo_plan
    conv2 = _task(plan, CONV2)
    assert len(conv2.outputs) == 1
    out = conv2.outputs[0]
    assert out.ground_truth == "relu2/Relu"
    assert out.benchmark_path == str(benchmark_path(root, "relu2/Relu"))
    assert out.origin_format == "NHWC" and out.origin_shape == (2, 4, 4, 8)
    assert conv2.mapping("output", 3) is out
    missing = conv2.mapping("input", 9)
    assert (missing.ground_truth, missing.benchmark_path) == ("*", None)
    assert missing.reason == "the graph has no input 9 for this op"


def test_folded_constants_without_the_attribute_look_for_a_benchmark_of_their_own_name(demo_plan):
    _, _, plan = demo_plan
    weights = _task(plan, CONV2).inputs[1]
    assert weights.ground_truth == "conv2/Conv2D/folded_filter"
    assert weights.benchmark_path is None
    assert weights.reason == (
        "constant input: no benchmark conv2_Conv2D_folded_filter.0.*.npy (weights are not dumped)"
    )


def test_a_missing_benchmark_gives_a_mapping_row_with_a_reason(tiny_demo):
    root, _ = tiny_demo
    benchmark_path(root, "relu2/Relu").unlink()
    _, plan = _plan(root)
    out = _task(plan, CONV2).outputs[0]
    assert out.ground_truth == "relu2/Relu"
    assert out.benchmark_path is None
    assert out.reason == "benchmark relu2_Relu.0.*.npy not found"
    # the consumer's input of the same tensor says the same
    conv3_in = _task(plan, "conv3/Conv2Dres/addrelu3/Relu").inputs[0]
    assert conv3_in.reason == "benchmark relu2_Relu.0.*.npy not found"


def test_dump_files_of_ops_missing_from_the_graph_are_listed_as_skipped(tiny_demo):
    root, manifest = tiny_demo
    source = root / "precision_data" / next(o for o in manifest.device_ops if o.dump_file).dump_file
    ghost = source.parent / "Relu.ghost_op.99.1.1795329000199999"
    shutil.copyfile(source, ghost)
    _, plan = _plan(root)
    assert plan.skipped == [f"{ghost.name}: no op ghost_op in the graph"]
    assert "ghost_op" not in [t.op_name for t in plan.tasks]


def test_another_benchmark_dir_is_used_when_given(tiny_demo, tmp_path):
    root, _ = tiny_demo
    other = tmp_path / "benchmark"
    other.mkdir()
    shutil.copy(benchmark_path(root, "relu2/Relu"), other)
    _, plan = _plan(root, benchmark_dir=other)
    assert plan.right == str(other)
    out = _task(plan, CONV2).outputs[0]
    assert out.benchmark_path == str(other / benchmark_path(root, "relu2/Relu").name)
    assert _task(plan, CONV1).outputs[0].reason == "benchmark relu1_Relu.0.*.npy not found"


def test_device_plan_matches_ops_by_name_in_graph_order(demo_plan):
    root, manifest, _ = demo_plan
    ws = Workspace.open(root, use_cache=False)
    left, right = ws.run("debug_0"), ws.run("debug_1")
    plan = device_plan(left.dumps, right.dumps, "debug_0", "debug_1", left.dump_graph())
    dumped = [op for op in manifest.device_ops if op.dump_file]
    assert [t.op_name for t in plan.tasks] == [op.name for op in dumped]
    task = plan.tasks[0]
    row = task.mapping("output", 5)
    assert row is task.fallback and row.benchmark_kind == "dump"
    assert row.benchmark_path == right.dumps.for_op("trans_Cast_0")[-1].path
    assert plan.skipped == []


def test_rename_rule_gives_descs_without_an_origin_the_single_original_name():

    plain = desc(None, shape=(4, 4))
    plain.attrs.update({"origin_format": "NCHW", "origin_shape": [4, 4]})
    ops = [
        ge_op("relu", "Relu", 1, [], [plain], {"_datadump_original_op_names": ["tf/relu"]}),
        ge_op(
            "fused",
            "Conv2D",
            2,
            ["relu:0"],
            [desc(None)],
            {"_datadump_original_op_names": ["a", "b"]},
        ),
        ge_op("bare", "Abs", 3, ["fused:0"], [desc(None)]),
        ge_op("cast", "Cast", 4, ["bare:0"], [desc(None)], {"_datadump_original_op_names": []}),
    ]
    graph = GraphIndex.from_model(ModelDef(name="m", graphs=[GraphDef(name="g", ops=ops)]), "m")
    origins = _Origins(graph, fusion_groups(list(graph.records())))
    assert origins.of_output("relu", 0) == Origin("tf/relu", 0, "NCHW", (4, 4))
    assert origins.of_output("relu", 2) == Origin("tf/relu", 2, "NCHW", (4, 4))
    assert origins.of_output("fused", 0) is None  # several benchmark ops: no guess
    assert origins.of_output("bare", 0) == Origin("bare", 0, None, None)  # attribute absent
    assert origins.of_output("cast", 0) is None
    assert origins.of_source(None) is None


def test_the_graph_part_of_a_plan_is_worked_out_once_for_several_dump_dirs(tiny_demo, monkeypatch):
    """Two ranks of one graph, rank 1 missing an op's dump: plans made with one memo equal
    those made afresh, and each op's benchmark rows are worked out once."""
    import os

    from precision_shell.compare.pipeline import plan as plan_module
    from precision_shell.compare.pipeline.plan import GraphPlanMemo
    from tests.commands.test_second_dump_dir import _add, _step_dir

    root, _ = tiny_demo
    rank, _step = _add(root, "device")
    assert rank == "1"
    rank1 = _step_dir(root).parents[2].parent / "1"
    dropped = sorted(p for p in rank1.rglob("*") if p.is_file())[0]
    os.unlink(dropped)
    ws = Workspace.open(root)
    run = ws.run()
    assert len(run.slices) == 2
    graph = run.dump_graph()
    fresh = [benchmark_plan(ws, run, graph, dumps=w.dumps) for w in run.slices]
    assert len(fresh[1].tasks) == len(fresh[0].tasks) - 1
    calls: list[str] = []
    real = plan_module._op_rows

    def counted(graph, rec, origins, benchmarks):
        calls.append(rec.name)
        return real(graph, rec, origins, benchmarks)

    monkeypatch.setattr(plan_module, "_op_rows", counted)
    memo = GraphPlanMemo()
    shared = [benchmark_plan(ws, run, graph, dumps=w.dumps, memo=memo) for w in run.slices]
    assert shared == fresh
    assert sorted(calls) == sorted({t.op_name for t in fresh[0].tasks})  # each op once


def test_a_plan_memo_starts_over_for_another_graph_or_benchmark_index(demo_plan):
    from precision_shell.compare.pipeline.plan import GraphPlanMemo

    memo = GraphPlanMemo()
    graph_a, graph_b = GraphIndex("a", [], [], []), GraphIndex("b", [], [], [])
    memo.serving(graph_a, None).rows["x"] = ((), ())
    assert memo.serving(graph_a, None).rows == {"x": ((), ())}
    assert memo.serving(graph_b, None).rows == {}
    memo.rows["y"] = ((), ())
    assert memo.serving(graph_b, object()).rows == {}  # type: ignore[arg-type]


def test_each_benchmark_file_is_marked_at_the_last_task_that_uses_it(demo_plan):
    _, _, plan = demo_plan
    seen_later: set[str] = set()
    marked: dict[str, int] = {}
    for task in reversed(plan.tasks):
        used = {
            row.benchmark_path
            for row in (*task.inputs, *task.outputs)
            if row.benchmark_path is not None
        }
        assert set(task.last_uses) == used - seen_later
        assert list(task.last_uses) == sorted(task.last_uses)
        for path in task.last_uses:
            marked[path] = task.seq
        seen_later |= used
    assert set(marked) == seen_later  # every file once
    # the demo chains ops: some output's benchmark is used again by its consumer's input
    assert any(
        marked[row.benchmark_path] > task.seq
        for task in plan.tasks
        for row in task.outputs
        if row.benchmark_path is not None
    )


def test_last_uses_stay_out_of_the_repr_the_plan_fingerprint_hashes(demo_plan):
    """A journal written before tasks had last_uses must still resume: same repr."""
    import dataclasses

    _, _, plan = demo_plan
    task = next(t for t in plan.tasks if t.last_uses)
    assert repr(task) == repr(dataclasses.replace(task, last_uses=()))
    assert "last_uses" not in repr(task)
