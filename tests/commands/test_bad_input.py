"""Bad input never crashes a command, and nothing is written beside the user's files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from tests.commands.shell_fixture import (
    CONV2,
    DENSE,
    POOL,
    benchmark_path,
    dump_path,
    open_shell,
    run_fail,
    run_ok,
    tree_snapshot,
)


def test_pt_on_a_truncated_dump_is_one_line_naming_the_file(tiny_demo, tmp_path):
    root, manifest = tiny_demo
    shell = open_shell(root)
    original = dump_path(root, manifest, CONV2)
    cut = tmp_path / "cut.dump"
    shutil.copy(original, cut)
    os.truncate(cut, original.stat().st_size // 2)
    error = run_fail(shell, f"pt {cut}").error
    assert error.startswith(f"{cut}: ") and error.endswith("the dump is truncated")
    assert run_fail(shell, f"dc {cut}").error == error
    assert run_fail(shell, f"cp {cut}:output:0 {DENSE}").error == error


def test_a_truncated_dump_inside_the_workspace_is_reported_by_pt_and_ni(tiny_demo):
    root, manifest = tiny_demo
    path = dump_path(root, manifest, CONV2)
    os.truncate(path, 100)
    shell = open_shell(root)
    error = run_fail(shell, f"pt {path.name}").error
    assert error.startswith(f"{path}: not an NPU dump")
    assert run_fail(shell, f"pt {CONV2}").error == error
    (info,) = run_ok(shell, f"ni {CONV2}").nodes  # the panel still shows the graph side
    assert [(r.label, r.error) for r in info.dump_tensors] == [("file", error)]
    assert len(info.ports) == 4


def test_empty_and_garbage_files(tiny_demo, tmp_path):
    shell = open_shell(tiny_demo[0])
    empty = tmp_path / "empty.dump"
    empty.write_bytes(b"")
    assert run_fail(shell, f"pt {empty}").error == f"{empty}: empty file (0 bytes); not an NPU dump"
    bad_npy = tmp_path / "bad.npy"
    bad_npy.write_bytes(b"\x93NUMPY garbage")
    assert run_fail(shell, f"pt {bad_npy}").error.startswith(f"{bad_npy}: ")
    pickled = tmp_path / "obj.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert run_fail(shell, f"cp {pickled} {pickled}").error.startswith(f"{pickled}: ")


def test_cp_with_a_missing_file_names_it(tiny_demo, tmp_path):
    shell = open_shell(tiny_demo[0])
    missing = tmp_path / "nowhere" / "gone.npy"
    error = run_fail(shell, f"cp {missing} {DENSE}").error
    assert error.startswith(f"{missing}: not a file")
    assert run_fail(shell, f"cp {DENSE} gone.npy").error.startswith("gone.npy: not a file")


def test_dc_to_an_unwritable_output_dir_is_an_error(tiny_demo, tmp_path):
    root, _ = tiny_demo
    shell = open_shell(root)
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    error = run_fail(shell, f"dc {DENSE} -o {a_file / 'sub'}").error
    assert error.startswith(f"{a_file / 'sub'}: cannot create: ")
    # /proc exists but takes no new files, even for root
    error = run_fail(shell, f"dc {DENSE} -o /proc").error
    assert error.startswith("/proc/MatMulV2.dense_MatMul.") and ": cannot write: " in error
    assert a_file.read_text() == "x"


def test_a_session_of_commands_writes_only_under_temp(tiny_demo, tmp_path, monkeypatch):
    root, manifest = tiny_demo
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    outside = tmp_path / "user_files"
    outside.mkdir()
    user_npy = outside / "mine.npy"
    np.save(user_npy, np.arange(6, dtype=np.float32))
    user_dump = outside / "copy.dump"
    shutil.copy(dump_path(root, manifest, CONV2), user_dump)
    temp = root / "precision_data" / "temp"
    before = tree_snapshot(root, skip=temp)
    before_outside = tree_snapshot(outside)
    shell = open_shell(root)
    benchmark = benchmark_path(root, "relu2/Relu")
    for line in [
        "ls",
        "ls -t Conv",
        f"ni {CONV2} -a -s 2",
        f"ni {POOL} -r all",
        f"pt {CONV2}",
        f"pt {dump_path(root, manifest, CONV2).name}",
        f"pt {benchmark}",
        f"pt {user_npy}",
        f"pt {user_dump}",
        f"cp {CONV2} {benchmark.name} -s",
        f"cp {user_npy} {user_npy} -s",
        f"dc {CONV2} -f NCHW",
        f"dc {user_dump}",
        f"dc {user_dump}:input:1 -f HWCN",
    ]:
        run_ok(shell, line)
    assert tree_snapshot(root, skip=temp) == before
    assert tree_snapshot(outside) == before_outside
    assert list(cwd.iterdir()) == []
    written = {p.relative_to(temp).parts[0] for p in temp.rglob("*") if p.is_file()}
    assert written == {"pt", "cp", "decode", "op_graph"}
    assert sorted(p.name for p in root.iterdir()) == ["demo_manifest.json", "precision_data"]


def test_tensor_names_cannot_escape_the_output_dir(tiny_demo, tmp_path):
    root, _ = tiny_demo
    shell = open_shell(root)
    sneaky = tmp_path / ".." / tmp_path.name / "..sneaky name[1].npy"
    np.save(tmp_path / "..sneaky name[1].npy", np.ones(3, dtype=np.float32))
    (item,) = run_ok(shell, f"pt '{sneaky}'").items
    text = Path(item.text_file)
    assert text.parent == root / "precision_data" / "temp" / "pt"
    assert text.name == "sneaky_name_1_.npy.txt"


def test_cp_on_ascend_dumps_refuses_a_foreign_rule_flag(tiny_demo):
    shell = open_shell(tiny_demo[0])
    error = run_fail(shell, f"cp {DENSE} {DENSE} --max-err 0.01").error
    assert error.startswith("cp: --max-err is for a compare of two MegEngine dumps")
