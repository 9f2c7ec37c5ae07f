"""The workspace index on a tiny demo workspace: queries, links, cache, and bad input."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.workspace.workspace import Workspace
from tests.workspace.file_times import settle


def test_summary_counts_match_what_the_builder_wrote(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    summary = ws.summary()
    n_ops = len(manifest.device_ops)
    dumped = sum(1 for op in manifest.device_ops if op.dump_file)
    assert [(name, graphs, ops) for name, graphs, ops, _ in summary.runs] == [
        ("debug_0", 1, n_ops),
        ("debug_1", 1, n_ops),
    ]
    assert summary.runs[0][3] == dumped
    assert summary.benchmark_tensors == len(ws.benchmark.newest) > 0
    assert summary.overflow_files == 1
    assert summary.fusion_passes > 0
    assert ws.warnings == []


def test_ops_are_found_by_name_type_pass_and_kernel(tiny_demo):
    root, manifest = tiny_demo
    graph = Workspace.open(root).run().dump_graph()
    names = [op.name for op in manifest.device_ops]
    assert graph.names() == names  # execution order, as the builder recorded it
    conv = [op for op in manifest.device_ops if op.type == "Conv2D"]
    assert [r.name for r in graph.search(op_type="Conv2D")] == [op.name for op in conv]
    fused = graph.get(conv[0].name)
    assert list(fused.original_names) == conv[0].original_op_names
    assert fused.pass_name and graph.search(pass_name=fused.pass_name.split(",")[0])
    assert fused.kernel_name and [r.name for r in graph.search(kernel=fused.kernel_name)] == [
        fused.name
    ]


def test_every_dumped_op_links_to_its_dump_file(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    run = ws.run("debug_0")
    for op in manifest.device_ops:
        files = ws.dump_files(run, op.name)
        if op.dump_file is None:
            assert files == []
        else:
            assert [f.path for f in files] == [str(root / "precision_data" / op.dump_file)]


def test_long_op_name_resolves_through_mapping_csv(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    run = ws.run("debug_0")
    files = ws.dump_files(run, manifest.long_name_op)
    assert len(files) == 1
    assert files[0].file_name.isdigit()  # stored under a numeric name, never renamed
    header = ws.header(files[0])
    assert header.op_name == manifest.long_name_op


def test_outputs_link_to_their_benchmark_and_values_agree(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    graph = ws.run().dump_graph()
    checked = 0
    for op in manifest.device_ops:
        rec = graph.get(op.name)
        benchmark = ws.output_benchmark(rec, 0)
        if not op.original_op_names or op.dump_file is None or op.type in ("Data", "Const"):
            continue
        if op.name == manifest.overflow_op:
            continue
        assert benchmark is not None, op.name
        device = ws.tensor(ws.dump_files(ws.run(), op.name)[-1], "output", 0)
        bench = load_benchmark(benchmark.path)
        assert bench.dtype == np.float32 and device.dtype == np.float16
        assert device.size >= bench.size  # device layouts are padded, never smaller
        checked += 1
    assert checked >= 5


def test_inputs_link_through_ge_inserted_cast(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    graph = ws.run().dump_graph()
    first_conv = next(op for op in manifest.device_ops if op.type == "Conv2D")
    rec = graph.get(first_conv.name)
    benchmark = ws.input_benchmark(graph, rec, 0)
    assert benchmark is not None and benchmark.key == "input.0"


def test_newest_benchmark_timestamp_wins(tiny_demo):
    root, _ = tiny_demo
    ws = Workspace.open(root)
    repeated = [key for key, files in ws.benchmark.all.items() if len(files) > 1]
    assert repeated, "the demo dumps one tensor twice"
    for key in repeated:
        stamps = [f.timestamp for f in ws.benchmark.all[key]]
        assert ws.benchmark.newest[key].timestamp == max(stamps)


def test_stats_are_cached(tiny_demo):
    root, manifest = tiny_demo
    ws = Workspace.open(root)
    conv = next(op for op in manifest.device_ops if op.type == "Conv2D")
    ref = ws.dump_files(ws.run(), conv.name)[0]
    first = ws.tensor_stats(ref, "output", 0)
    assert ws.tensor_stats(ref, "output", 0) is first
    values = ws.tensor(ref, "output", 0).astype(np.float64)
    finite = values[np.isfinite(values)]
    assert first.max == finite.max() and first.min == finite.min()


def test_warm_open_uses_the_cache_and_a_new_file_rebuilds_only_its_dir(tiny_demo):
    root, _ = tiny_demo
    settle(root)  # a file changed just now is never cached (it may change again this tick)
    cold = Workspace.open(root)
    assert cold.cache.hits == 0
    warm = Workspace.open(root)
    assert warm.cache.misses == 0 and warm.cache.hits == cold.cache.misses
    assert warm.run().dump_graph().names() == cold.run().dump_graph().names()
    dump_dir = Path(warm.run("debug_1").run.graph_dump_dirs[0].path)
    (dump_dir / "Relu.extra_op.99.1.1795329999999999").write_bytes(b"")
    settle(dump_dir)
    again = Workspace.open(root)
    assert again.cache.misses == 1  # only debug_1's dump dir
    assert len(again.run("debug_1").dumps) == len(warm.run("debug_1").dumps) + 1


def test_no_cache_mode_writes_nothing(tiny_demo):
    root, _ = tiny_demo
    Workspace.open(root, use_cache=False)
    assert not (root / "precision_data" / "temp" / "index_cache").exists()


# -- bad input: collected as warnings, the rest of the workspace still loads ------------------


def _graph_file(root: Path) -> Path:
    return next(
        (root / "precision_data" / "npu" / "debug_1" / "graph").glob("ge_proto_*_Build.txt")
    )


def test_unparsable_graph_is_a_warning_with_line_and_column(tiny_demo):
    root, _ = tiny_demo
    graph = _graph_file(root)
    lines = graph.read_text().splitlines()
    lines[3] = lines[3] + " }}} oops"
    graph.write_text("\n".join(lines) + "\n")
    ws = Workspace.open(root)
    assert len(ws.run("debug_0").graphs) == 1 and ws.run("debug_1").graphs == []
    (warning,) = [w for w in ws.warnings if str(graph) in w]
    assert "line 4" in warning


def test_odd_file_names_are_warnings_naming_the_file(tiny_demo):
    root, _ = tiny_demo
    dump_dir = Path(Workspace.open(root).run().run.graph_dump_dirs[0].path)
    (dump_dir / "notes.txt").write_text("hello")
    ws = Workspace.open(root)
    (warning,) = ws.warnings
    assert str(dump_dir / "notes.txt") in warning and "not a dump file name" in warning


def test_truncated_dump_fails_on_read_with_the_file_named(tiny_demo):
    root, _ = tiny_demo
    ws = Workspace.open(root)
    ref = ws.run().dumps.files[-1]
    size = os.path.getsize(ref.path)
    with open(ref.path, "r+b") as fh:
        fh.truncate(size - 10)
    fresh = Workspace.open(root)
    with pytest.raises(FormatError) as err:
        fresh.tensor(ref.path, "output", 0)
    assert ref.path in str(err.value) and "past the end" in str(err.value)


def test_opening_never_writes_next_to_user_files(tiny_demo):
    root, _ = tiny_demo
    before = {p for p in root.rglob("*") if "temp" not in p.parts}
    Workspace.open(root)
    after = {p for p in root.rglob("*") if "temp" not in p.parts}
    assert before == after
