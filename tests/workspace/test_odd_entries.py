"""Entries that are no readable file are warnings naming them and what is wrong: a dangling
symlink or a dir where a dump file or a benchmark `.npy` is expected, a dump dir that cannot
be listed. The rest of the workspace still loads, and the warnings come back from the index
cache and from `reload`."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_shell.workspace.workspace import Workspace
from tests.commands.shell_fixture import CONV1, benchmark_path, dump_path, open_shell, run_ok
from tests.unlistable_dirs import refuse_listing
from tests.workspace.file_times import settle


def _dangling(path: Path) -> None:
    path.symlink_to("/nonexistent/target")


def _dir(path: Path) -> None:
    path.mkdir()
    (path / "x").write_text("x")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_dangling, "a dangling symlink (to /nonexistent/target: no such file)"),
        (_dir, "a directory, not a file"),
    ],
)
def test_an_entry_named_like_a_dump_file_that_is_no_file_is_a_warning(tiny_demo, make, problem):
    root, manifest = tiny_demo
    dump = dump_path(root, manifest, CONV1)
    dumped = len(Workspace.open(root, use_cache=False).run().dumps)
    dump.unlink()
    make(dump)
    settle(root)  # else the index is not cached (a file changed within a clock tick)
    expected = [f"{dump}: {problem}; skipped"]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert len(cold.run().dumps) == dumped - 1
    assert cold.dump_files(cold.run(), CONV1) == []
    warm = Workspace.open(root)
    assert warm.cache.hits > 0 and warm.cache.misses == 0
    assert warm.warnings == expected


def test_reload_names_a_dangling_dump_file_link(tiny_demo):
    root, manifest = tiny_demo
    dump = dump_path(root, manifest, CONV1)
    shell = open_shell(root)
    run_ok(shell, "ls")
    dump.unlink()
    _dangling(dump)
    result = run_ok(shell, "reload")
    assert result.warnings == [
        f"{dump}: a dangling symlink (to /nonexistent/target: no such file); skipped"
    ]
    assert result.summary.warnings == 1


def test_a_dir_named_like_a_benchmark_tensor_is_a_warning_and_other_dirs_are_not(tiny_demo):
    root, _ = tiny_demo
    npy = benchmark_path(root, "relu1/Relu")
    tensors = Workspace.open(root, use_cache=False).summary().benchmark_tensors
    npy.unlink()
    npy.mkdir()
    (npy.parent / "run_1").mkdir()  # tf_dump --all's run dirs are no benchmark tensors
    settle(root)
    expected = [f"{npy}: a directory, not a file; skipped"]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert cold.summary().benchmark_tensors == tensors - 1
    warm = Workspace.open(root)
    assert warm.cache.misses == 0 and warm.warnings == expected


def _run_dump_dir(data: Path) -> Path:
    return data / "npu" / "debug_1" / "dump"


def _device_dir(data: Path) -> Path:
    (session,) = _run_dump_dir(data).iterdir()
    return session / "0"


@pytest.mark.parametrize("unlistable", [_run_dump_dir, _device_dir])
def test_a_dump_dir_that_cannot_be_listed_is_a_warning_saying_why(
    tiny_demo, monkeypatch, unlistable
):
    root, _ = tiny_demo
    refused = unlistable(Workspace.open(root, use_cache=False).root)
    refuse_listing(monkeypatch, refused)
    ws = Workspace.open(root, use_cache=False)
    # not "no dump/<timestamp>/ dir" or "empty device dir": the dir is there, unreadable
    assert ws.warnings == [f"{refused}: cannot list: Permission denied"]
    assert ws.run("debug_1").slices == []
    assert len(ws.run("debug_0").dumps) > 0


def test_an_overflow_dump_sub_dir_that_cannot_be_listed_is_a_warning_naming_it(
    tiny_demo, monkeypatch
):
    root, _ = tiny_demo
    ws = Workspace.open(root, use_cache=False)
    assert len(ws.overflow_files()) == 1 and ws.warnings == []
    (session,) = (ws.root / "overflow" / "dump").iterdir()
    refused = session / "0"  # the device dir: the Opdebug file is below it
    refuse_listing(monkeypatch, refused)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == [f"{refused}: cannot list: Permission denied"]
    assert ws.overflow_files() == []
