"""Relative file arguments of `ni` and `pt`: tried against the cwd, then `precision_data/` and
the dir holding it, so paths copied from the tool's output work from any cwd."""

from __future__ import annotations

import os

import numpy as np
import pytest

from precision_shell.explore.user_paths import find_user_file
from tests.commands.shell_fixture import (
    CONV2,
    assert_stats_equal,
    benchmark_path,
    decoded,
    dump_path,
    fractal_z_to_nchw,
    open_shell,
    run_fail,
    run_ok,
)


@pytest.fixture
def elsewhere(tiny_demo_shared, tmp_path, monkeypatch):
    """The demo, with the cwd in an unrelated dir."""
    root, manifest = tiny_demo_shared
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return root, manifest, open_shell(root)


def test_find_user_file_tries_the_cwd_then_precision_data_then_its_parent(tmp_path, monkeypatch):
    data = tmp_path / "ws" / "precision_data"
    (data / "tf").mkdir(parents=True)
    (data / "tf" / "a.npy").write_bytes(b"x")
    (tmp_path / "cwd" / "tf").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cwd")
    assert find_user_file("tf/a.npy", data) == data / "tf" / "a.npy"
    assert find_user_file("precision_data/tf/a.npy", data) == data / "tf" / "a.npy"
    (tmp_path / "cwd" / "tf" / "a.npy").write_bytes(b"y")  # the cwd wins
    assert find_user_file("tf/a.npy", data) == (tmp_path / "cwd" / "tf" / "a.npy").relative_to(
        tmp_path / "cwd"
    )
    assert find_user_file("tf", data) is None  # a dir is no file
    assert find_user_file("tf/nope.npy", data) is None
    assert find_user_file("tf/a.npy", None) is not None  # no workspace: the cwd only
    assert find_user_file("x" * 5000, data) is None  # ENAMETOOLONG is "no such file"


def test_pt_reads_a_path_relative_to_the_workspace_from_another_cwd(elsewhere):
    root, _, shell = elsewhere
    bench = benchmark_path(root, "relu2/Relu")
    for text in (
        str(bench.relative_to(root / "precision_data")),
        str(bench.relative_to(root)),
    ):
        assert not os.path.exists(text)  # not from the cwd
        (item,) = run_ok(shell, f"pt {text}").items
        assert os.path.samefile(item.path, bench)
        assert_stats_equal(item.stats, np.load(bench))


def test_pt_picks_a_tensor_of_a_workspace_relative_dump_path(elsewhere):
    root, manifest, shell = elsewhere
    path = dump_path(root, manifest, CONV2)
    text = str(path.relative_to(root / "precision_data"))
    (item,) = run_ok(shell, f"pt {text}:input:1").items
    # the FRACTAL_Z filter in its benchmark layout (HWCN (3, 3, 8, 8)), as pt summarises it
    want = fractal_z_to_nchw(decoded(path, "input", 1), 8, 8, 3, 3).transpose(2, 3, 1, 0)
    assert_stats_equal(item.stats, want)


def test_ni_of_a_dump_file_path_or_name_shows_the_op_that_wrote_it(elsewhere):
    root, manifest, shell = elsewhere
    path = dump_path(root, manifest, CONV2)
    for text in (str(path.relative_to(root)), path.name):
        result = run_ok(shell, f"ni {text}")
        assert [(i.record.name, i.run) for i in result.nodes] == [(CONV2, "debug_0")]
        assert result.notes[0] == f"{text} is a dump file of {CONV2}"
    # the debug_0 file is not one of debug_1
    run_fail(shell, f"ni {path.relative_to(root)} -r debug_1")
