"""The index notices changed files by a few stats, re-reads only what changed, and a bad
graph, fusion or dump-dir file is a warning naming it while the rest of the workspace loads."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import precision_shell.workspace.workspace as workspace_module
from precision_shell.workspace.workspace import Workspace
from tests.workspace.file_times import bump_mtime, settle


def _data(root: Path) -> Path:
    return root / "precision_data"


def _graph_file(root: Path, run: str = "debug_0") -> Path:
    return next((_data(root) / "npu" / run / "graph").glob("ge_proto_*_Build.txt"))


@pytest.fixture
def quiet_demo(tiny_demo):
    """The tiny demo with every file a minute old: only real changes count."""
    settle(tiny_demo[0])
    return tiny_demo


def test_a_fresh_index_is_not_stale(quiet_demo):
    root, _ = quiet_demo
    ws = Workspace.open(root, use_cache=False)
    assert not ws.is_stale()


@pytest.mark.parametrize(
    "change",
    [
        "benchmark file added",
        "benchmark file removed",
        "dump file added",
        "graph rewritten",
        "fusion rewritten",
        "new device run",
        "newer dump dir",
        "new overflow file",
        "benchmark dir created",
    ],
)
def test_each_kind_of_change_makes_the_index_stale(quiet_demo, change):
    root, _ = quiet_demo
    data = _data(root)
    bench = data / "tf" / "dump"
    if change == "benchmark dir created":
        shutil.rmtree(bench)
    ws = Workspace.open(root, use_cache=False)
    if change == "benchmark file added":
        np.save(bench / "extra_op.0.1795399999999999.npy", np.zeros(3, np.float32))
    elif change == "benchmark file removed":
        next(bench.glob("relu1_Relu.0.*.npy")).unlink()
    elif change == "dump file added":
        dump_dir = Path(ws.run().run.graph_dump_dirs[0].path)
        (dump_dir / "Relu.extra_op.99.1.1795329999999999").write_bytes(b"")
    elif change == "graph rewritten":
        graph = _graph_file(root)
        graph.write_text(graph.read_text())  # same size: the mtime says it
        bump_mtime(graph)
    elif change == "fusion rewritten":
        bump_mtime(data / "fusion" / "fusion_result.json")
    elif change == "new device run":
        shutil.copytree(data / "npu" / "debug_1", data / "npu" / "debug_2")
    elif change == "newer dump dir":
        (data / "npu" / "debug_0" / "dump" / "29991231235959").mkdir()
    elif change == "new overflow file":
        opdebug = next((data / "overflow").rglob("Opdebug*"))
        shutil.copy(opdebug, opdebug.with_name("Opdebug.Node_OpDebug.12.1.1795329900120001"))
    elif change == "benchmark dir created":
        bench.mkdir()
    assert ws.is_stale()


def test_reopening_with_the_previous_index_rereads_only_the_changed_piece(quiet_demo):
    root, _ = quiet_demo
    ws = Workspace.open(root, use_cache=False)
    bench = _data(root) / "tf" / "dump"
    old = next(bench.glob("relu1_Relu.0.*.npy"))
    new = bench / "relu1_Relu.0.1795399999999999.npy"
    np.save(new, -np.load(old))
    old.unlink()
    settle(bench)  # else the just-changed dir would be re-read once more, to be safe
    fresh = Workspace.open(root, use_cache=False, previous=ws)
    assert not fresh.is_stale()
    assert fresh.benchmark_file("relu1/Relu", 0).path == str(new)
    # Graphs and dump dirs are the very objects of the previous index: nothing re-read.
    assert [id(g) for r in fresh.runs for g in r.graphs] == [
        id(g) for r in ws.runs for g in r.graphs
    ]
    assert fresh.runs[0].dumps.file_names() == ws.runs[0].dumps.file_names()
    assert fresh.benchmark is not ws.benchmark


def test_a_dump_file_rewritten_in_place_is_read_again(quiet_demo):
    root, manifest = quiet_demo
    ws = Workspace.open(root, use_cache=False)
    first, second = [o for o in manifest.device_ops if o.dump_file][:2]
    target = _data(root) / first.dump_file
    other = _data(root) / second.dump_file
    assert ws.header(str(target)).op_name == first.name
    shutil.copyfile(other, target)
    bump_mtime(target)
    assert ws.header(str(target)).op_name == second.name


# -- bad files ------------------------------------------------------------------------------


def test_a_graph_nested_too_deep_is_a_warning_and_the_other_graphs_load(quiet_demo):
    root, manifest = quiet_demo
    graph_dir = _graph_file(root).parent
    bad = graph_dir / "ge_proto_00000009_Build.txt"
    bad.write_text('{"graph": ' + "[" * 100_000 + "]" * 100_000 + "}")
    ws = Workspace.open(root)
    (warning,) = ws.warnings
    assert warning.startswith(str(bad) + ":")
    assert "\n" not in warning
    assert ws.run().dump_graph().names() == [op.name for op in manifest.device_ops]
    # The bad file's verdict is cached like a good graph's: a warm open says the same.
    assert Workspace.open(root).warnings == [warning]


def test_a_junk_fusion_result_is_a_warning_and_the_graphs_load(quiet_demo):
    root, manifest = quiet_demo
    fusion = _data(root) / "fusion" / "fusion_result.json"
    fusion.write_text('{"graph_fusion": {"SomePass": {"match_times": Infinity}}}')
    ws = Workspace.open(root)
    (warning,) = ws.warnings
    assert warning.startswith(str(fusion) + ":") and "\n" not in warning
    assert ws.fusion == []
    assert len(ws.run().dump_graph()) == len(manifest.device_ops)


def test_an_unforeseen_reader_failure_names_the_file_and_skips_only_it(quiet_demo, monkeypatch):
    root, manifest = quiet_demo
    bad = _graph_file(root, "debug_1")
    real = workspace_module.load_ge_graph

    def flaky(path):
        if Path(path) == bad:
            raise IndexError("list index out of range")
        return real(path)

    monkeypatch.setattr(workspace_module, "load_ge_graph", flaky)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == [f"{bad}: cannot read it (IndexError: list index out of range); skipped"]
    assert ws.run("debug_1").graphs == []
    assert len(ws.run("debug_0").dump_graph()) == len(manifest.device_ops)


def test_an_unlistable_benchmark_dir_is_a_warning(quiet_demo, monkeypatch):
    root, _ = quiet_demo
    bench = _data(root) / "tf" / "dump"

    def refuse(directory):
        raise PermissionError(13, "Permission denied", str(directory))

    monkeypatch.setattr(workspace_module, "scan_benchmark_dir", refuse)
    ws = Workspace.open(root, use_cache=False)
    assert ws.benchmark is None
    (warning,) = ws.warnings
    assert warning.startswith(f"{bench}: cannot read it (PermissionError")
    assert ws.summary().runs[0][2] > 0


def test_fixing_a_bad_file_makes_the_index_stale(quiet_demo):
    root, _ = quiet_demo
    fusion = _data(root) / "fusion" / "fusion_result.json"
    good = fusion.read_bytes()
    fusion.write_text("{ not json")
    ws = Workspace.open(root, use_cache=False)
    assert ws.fusion == [] and len(ws.warnings) == 1
    fusion.write_bytes(good)
    bump_mtime(fusion)
    assert ws.is_stale()
    fixed = Workspace.open(root, use_cache=False, previous=ws)
    assert fixed.warnings == [] and fixed.fusion


def test_a_change_in_the_tick_the_index_was_built_is_not_missed(quiet_demo):
    """The file changes after its fingerprint was taken but keeps the same mtime (a coarse
    clock): the index does not trust a fingerprint that recent and reads it again."""
    root, _ = quiet_demo
    bench = _data(root) / "tf" / "dump"
    # an mtime at or after the moment the fingerprint is taken, whatever the machine's load
    # (a plain "now" could be more than the racy margin old by the time open() looks)
    now = time.time_ns() + 2_000_000_000
    os.utime(bench, ns=(now, now))
    ws = Workspace.open(root, use_cache=False)
    np.save(bench / "late_op.0.1795399999999999.npy", np.zeros(2, np.float32))
    os.utime(bench, ns=(now, now))  # same mtime as when it was indexed
    assert "late_op.0" not in ws.benchmark.newest
    assert ws.is_stale()
    again = Workspace.open(root, use_cache=False, previous=ws)
    assert "late_op.0" in again.benchmark.newest


def test_a_recently_changed_piece_is_not_written_to_the_disk_cache(quiet_demo):
    root, _ = quiet_demo
    bench = _data(root) / "tf" / "dump"
    # an mtime at or after the moment the fingerprint is taken, whatever the machine's load
    # (a plain "now" could be more than the racy margin old by the time open() looks)
    now = time.time_ns() + 2_000_000_000
    os.utime(bench, ns=(now, now))
    Workspace.open(root)
    np.save(bench / "late_op.0.1795399999999999.npy", np.zeros(2, np.float32))
    os.utime(bench, ns=(now, now))
    assert "late_op.0" in Workspace.open(root).benchmark.newest
