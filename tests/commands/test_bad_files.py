"""One bad file never disables the workspace: a malformed GE graph or `fusion_result.json`
is a warning naming it and every command works on the rest; one bad Opdebug file does not
stop `ac`; the interactive start shows one warning line, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import precision_shell.explore.overflow_check as overflow_check
import precision_shell.shell.repl as repl
from precision_shell.cli import _interactive
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.summary import read_summary
from precision_shell.errors import FormatError
from precision_shell.formats.ge import graph as ge_graph
from precision_shell.render.output import Renderer, make_console
from precision_shell.workspace.workspace import Workspace
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    POOL,
    benchmark_path,
    open_shell,
    rendered,
    run_ok,
)
from tests.hostile_files import link_to_dev_zero, make_fifo, make_sparse, within
from tests.workspace.file_times import settle


def _data(root: Path) -> Path:
    return root / "precision_data"


def _break_workspace(root: Path) -> tuple[Path, Path]:
    """A second Build graph nested far too deep, and a fusion file with a count of Infinity."""
    graph_dir = _data(root) / "npu" / "debug_0" / "graph"
    bad_graph = graph_dir / "ge_proto_00000009_Build.txt"
    bad_graph.write_text('{"graph": ' + "[" * 100_000 + "]" * 100_000 + "}")
    fusion = _data(root) / "fusion" / "fusion_result.json"
    fusion.write_text('{"graph_fusion": {"ConvBatchnormFusionPass": {"match_times": Infinity}}}')
    return bad_graph, fusion


def test_every_command_works_beside_a_bad_graph_and_a_junk_fusion_file(tiny_demo):
    root, manifest = tiny_demo
    bad_graph, fusion = _break_workspace(root)
    shell = open_shell(root)
    ws = shell.context.workspace
    assert len(ws.warnings) == 2
    assert ws.warnings[0].startswith(f"{bad_graph}:")
    assert ws.warnings[1].startswith(f"{fusion}:")
    listing = run_ok(shell, f"ls -n {CONV2}")
    assert [(run, r.name) for run, r in listing.rows] == [("debug_0", CONV2), ("debug_1", CONV2)]
    node = run_ok(shell, f"ni {POOL}")
    assert [(n.run, n.record.name) for n in node.nodes] == [("debug_0", POOL)]
    result = run_ok(shell, "vc")
    assert result.primary.csv_path.is_file()
    check = run_ok(shell, "ac")
    # The passes still come from the graph; their counts came from the skipped file.
    assert {p.name for p in check.fusion} >= {"ConvBatchnormFusionPass"}
    assert {(p.match_times, p.effect_times) for p in check.fusion} == {(None, None)}
    assert [f.op for f in check.overflows] == ["l2_loss/Sum"]


def test_the_interactive_start_prints_one_warning_line_per_bad_file(tiny_demo, capsys, monkeypatch):
    root, _ = tiny_demo
    bad_graph, fusion = _break_workspace(root)
    shell = open_shell(root)
    with create_pipe_input() as pipe:
        pipe.send_text("exit\n")

        def piped_session(completer, **_):
            return repl.PromptSession(input=pipe, output=DummyOutput())

        monkeypatch.setattr(repl, "make_session", piped_session)
        wide = make_console(False, width=1000)
        status = _interactive(shell.context, shell, Renderer(wide, make_console(False)))
    assert status == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    warnings = [line for line in captured.out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"warning: {bad_graph}:")
    assert warnings[1].startswith(f"warning: {fusion}:")
    assert "warnings: 2" in captured.out


@pytest.fixture
def two_overflows(tiny_demo):
    """The demo's overflow dir with a second, healthy Opdebug file + dump, and a junk one."""
    root, _ = tiny_demo
    opdebug = next((_data(root) / "overflow").rglob("Opdebug*"))
    dump = next(p for p in opdebug.parent.iterdir() if not p.name.startswith("Opdebug"))
    op_type, op, _task, stream, ts = dump.name.split(".")
    second = opdebug.with_name(f"Opdebug.Node_OpDebug.12.{stream}.{int(ts) + 20001}")
    shutil.copy(opdebug, second)
    shutil.copy(dump, dump.with_name(f"{op_type}.{op}.12.{stream}.{int(ts) + 20000}"))
    junk = opdebug.with_name(f"Opdebug.Node_OpDebug.13.{stream}.{int(ts) + 30001}")
    junk.write_bytes(b"\x01" * 100)
    return root, opdebug, second, junk


def test_ac_names_a_junk_opdebug_file_and_reports_the_others(two_overflows):
    root, opdebug, second, junk = two_overflows
    check = run_ok(open_shell(root), "ac")
    assert [(f.op, f.count, f.first_file) for f in check.overflows] == [
        ("l2_loss/Sum", 2, opdebug.name)
    ]
    (error,) = check.overflow_errors
    assert error.startswith(f"{junk}:")


def test_ac_goes_on_when_reading_one_opdebug_file_fails_unexpectedly(two_overflows, monkeypatch):
    root, opdebug, second, junk = two_overflows
    real = overflow_check.read_opdebug

    def flaky(path):
        if Path(path) == opdebug:
            raise ValueError("buffer size must be a multiple of element size")
        return real(path)

    monkeypatch.setattr(overflow_check, "read_opdebug", flaky)
    check = run_ok(open_shell(root), "ac")
    assert [(f.op, f.count, f.first_file) for f in check.overflows] == [
        ("l2_loss/Sum", 1, second.name)
    ]
    assert len(check.overflow_errors) == 2
    assert check.overflow_errors[0] == (
        f"{opdebug}: cannot read it (ValueError: buffer size must be a multiple of element "
        "size); skipped"
    )
    assert check.overflow_errors[1].startswith(f"{junk}:")


def test_a_structured_benchmark_is_counted_by_a_whole_kind_and_its_rows_say_why(tiny_demo):
    root, _ = tiny_demo
    npy = benchmark_path(root, "relu1/Relu")
    shape = np.load(npy).shape
    npy.unlink()
    np.save(npy, np.zeros(shape, dtype=[("re", "<f4"), ("im", "<f4")]))
    result = run_ok(open_shell(root), "vc")
    why = (
        f"benchmark: {npy}: a structured dtype with fields re, im ([('re', '<f4'), ('im', "
        "'<f4')]), not a tensor of numbers; save one field (e.g. array['name']) as the benchmark"
    )
    # the conv's output and the pool's input read that tensor
    rows = [r for r in read_result_csv(result.primary.csv_path).rows if r.reason == why]
    assert [r.tensor_index for r in rows] == [f"{CONV1}:output:0", f"{POOL}:input:0"]
    summary = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert summary["not_compared"]["by_reason"] == {"structured benchmark dtype": 2}
    assert " failed                          2 x structured benchmark dtype" in (
        rendered(result).splitlines()
    )


# -- files that are not what their names promise: a FIFO, a link to /dev/zero, a huge sparse
# file. None may block, exhaust memory, or cost more than its own content.


def _counts(ws: Workspace) -> tuple:
    summary = ws.summary()
    return summary.runs, summary.benchmark_tensors, summary.overflow_files, summary.fusion_passes


# A file planted where a small file is read that is no regular file: a FIFO, a link to a device.
NO_REGULAR_FILE = pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (link_to_dev_zero, "not a regular file (a character device)"),
    ],
    ids=["fifo", "dev-zero"],
)


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (
            lambda p: make_sparse(p, 20 << 30),
            "20 GiB, larger than such a file can be (at most 1 GiB)",
        ),
    ],
    ids=["fifo", "sparse"],
)
def test_hostile_index_cache_entries_are_misses_and_every_piece_is_rebuilt(
    tiny_demo, plant, problem
):
    root, _ = tiny_demo
    settle(root)  # else the pieces are not cached (files changed within a clock tick)
    clean = Workspace.open(root)
    entries = sorted((_data(root) / "temp" / "index_cache").glob("*.pkl"))
    assert len(entries) >= 4 and clean.warnings == []
    for entry in entries:
        entry.unlink()
        plant(entry)
    ws = within(30, lambda: Workspace.open(root), entries)
    assert _counts(ws) == _counts(clean)
    assert sorted(ws.warnings) == sorted(
        f"{entry}: {problem}; ignored, the index is rebuilt from the files"
        for entry in entries
        if not entry.name.startswith("planmemo-")  # a compare's memo: not read by an open
    )
    assert Workspace.open(root).warnings == []  # the rebuilt entries took their places


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (link_to_dev_zero, "not a regular file (a character device)"),
        (
            lambda p: make_sparse(p, 65 << 20),
            "65 MiB, larger than such a file can be (at most 64 MiB)",
        ),
    ],
    ids=["fifo", "dev-zero", "sparse"],
)
def test_a_hostile_mapping_csv_costs_its_names_not_the_dump_dir(tiny_demo, plant, problem):
    root, manifest = tiny_demo
    clean = Workspace.open(root, use_cache=False)
    mapping = next((_data(root) / "npu" / "debug_0" / "dump").rglob("mapping.csv"))
    renamed = [line.split(",")[0] for line in mapping.read_text().splitlines() if line]
    plant(mapping)
    ws = within(30, lambda: Workspace.open(root, use_cache=False), [mapping])
    assert ws.warnings[0] == f"{mapping}: {problem}; names in it are not resolved"
    # the files it named are the only ones lost (each a warning of its own)
    assert len(ws.run().dumps) == len(clean.run().dumps) - len(renamed)
    assert len(ws.warnings) == 1 + len(renamed)
    assert all(
        f"{mapping.parent / name}: not a dump file name" in w
        for name, w in zip(renamed, ws.warnings[1:], strict=True)
    )


@NO_REGULAR_FILE
def test_a_hostile_benchmark_mapping_csv_is_named_and_the_tensors_still_count(
    tiny_demo, plant, problem
):
    root, _ = tiny_demo
    clean = Workspace.open(root, use_cache=False)
    mapping = _data(root) / "tf" / "dump" / "mapping.csv"
    plant(mapping)
    ws = within(30, lambda: Workspace.open(root, use_cache=False), [mapping])
    assert ws.warnings == [f"{mapping}: {problem}; names in it are not resolved"]
    assert _counts(ws) == _counts(clean)


@NO_REGULAR_FILE
def test_a_graph_file_that_is_no_regular_file_is_named_not_reported_missing(
    tiny_demo, plant, problem
):
    root, _ = tiny_demo
    graph = _data(root) / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"
    plant(graph)
    ws = within(30, lambda: Workspace.open(root, use_cache=False), [graph])
    assert ws.warnings == [f"{graph}: {problem}; skipped"]
    assert ws.run().graphs == []


def test_a_graph_file_too_large_to_be_one_is_named_unread(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    monkeypatch.setattr(ge_graph, "MAX_GRAPH_BYTES", 1 << 20)  # a sparse 2 GiB file is slow
    graph = _data(root) / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"
    make_sparse(graph, 3 << 20)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == [f"{graph}: 3 MiB, larger than such a file can be (at most 1 MiB)"]


def test_a_hostile_fusion_result_or_summary_is_a_one_line_error(tiny_demo):
    root, _ = tiny_demo
    fusion = _data(root) / "fusion" / "fusion_result.json"
    make_sparse(fusion, 300 << 20)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == [f"{fusion}: 300 MiB, larger than such a file can be (at most 256 MiB)"]
    summary = _data(root) / "temp" / "summary.json"  # as if left by a compare
    summary.parent.mkdir(exist_ok=True)
    make_fifo(summary)
    with pytest.raises(FormatError) as caught:
        within(10, lambda: read_summary(summary), [summary])
    assert str(caught.value) == f"{summary}: not a regular file (a FIFO)"
