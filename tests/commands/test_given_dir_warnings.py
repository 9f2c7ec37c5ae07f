"""Dump dirs given by path (`vc -lt/-rt`, `ac -c -lt/-rt`, `dc DIR`) warn of what they hold
that is no readable dump file, in the lines the workspace's own dump dirs warn with, once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec
from tests.commands.shell_fixture import CONV1, dump_path, open_shell, rendered, run_fail, run_ok
from tests.conftest import rel
from tests.unlistable_dirs import refuse_listing

ODD = "Conv2D.conv1.5.x"  # named like a dump file, but its timestamp is no number
NAME_FORMAT = (
    "{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}"
    "[.{task_type}.{context_id}.{thread_id}.{n}][.csv]"
)


def _odd_name_warning(directory: Path) -> str:
    return (
        f"warning: {directory / ODD}: not a dump file name ('{ODD}' is not a dump file name "
        f"({NAME_FORMAT}): 'x' after the op name is not a number)"
    )


def _warning_lines(result: object) -> list[str]:
    return [ln for ln in rendered(result, width=2000).splitlines() if ln.startswith("warning:")]


def _with_odd_name(source: Path, copy: Path) -> Path:
    shutil.copytree(source, copy)
    (copy / ODD).write_bytes(b"not a dump")
    return copy


def test_vc_of_two_given_dump_dirs_shows_what_indexing_them_warned_of(tiny_demo_shared, tmp_path):
    root, manifest = tiny_demo_shared
    left = _with_odd_name(Path(manifest.dump_dirs[0]), tmp_path / "left")
    result = run_ok(
        open_shell(root), f"vc -lt {left} -rt {manifest.dump_dirs[1]} -o {tmp_path / 'out'}"
    )
    assert result.primary.plan_mode == "device" and result.primary.files_done > 0
    assert _warning_lines(result) == [_odd_name_warning(left)]


def test_vc_of_a_given_dump_dir_against_a_npy_dir_shows_an_unlistable_sub_dir(
    tiny_demo_shared, tmp_path, monkeypatch
):
    root, manifest = tiny_demo_shared
    given = tmp_path / "given"
    shutil.copytree(manifest.dump_dirs[0], given / "dump")
    (given / "locked").mkdir()
    refuse_listing(monkeypatch, given / "locked")
    benchmark = root / "precision_data" / "tf" / "dump"
    result = run_ok(open_shell(root), f"vc -lt {given} -rt {benchmark} -o {tmp_path / 'out'}")
    assert result.primary.plan_mode == "benchmark" and result.primary.files_done > 0
    assert _warning_lines(result) == [
        f"warning: {given / 'locked'}: cannot list: Permission denied"
    ]


def test_a_workspace_run_given_by_name_warns_with_the_workspace_not_again(tiny_demo, tmp_path):
    root, manifest = tiny_demo
    right = rel(manifest.dump_dirs[1], manifest.root, root)
    (right / ODD).write_bytes(b"not a dump")
    shell = open_shell(root)
    reloaded = run_ok(shell, "reload")
    assert _warning_lines(reloaded) == [_odd_name_warning(right)]
    result = run_ok(shell, f"vc -lt debug_0 -rt debug_1 -o {tmp_path / 'out'}")
    assert result.primary.files_done > 0 and _warning_lines(result) == []


def test_dc_of_a_given_dump_dir_shows_what_indexing_it_warned_of(tiny_demo_shared, tmp_path):
    root, manifest = tiny_demo_shared
    given = tmp_path / "given"
    given.mkdir()
    shutil.copy(dump_path(root, manifest, CONV1), given)
    (given / ODD).write_bytes(b"not a dump")
    result = run_ok(open_shell(root), f"dc {given} -o {tmp_path / 'out'}")
    # the given dump file's four tensors (data, weight and bias in, one out) are decoded
    dumped = dump_path(root, manifest, CONV1).name
    assert [label.split()[0] for label, *_ in result.files] == [dumped] * 4
    assert _warning_lines(result) == [_odd_name_warning(given)]


@pytest.fixture(scope="module")
def statistics_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stats")
    build_demo(root, DemoSpec(dump_data="stats", size="tiny", seed=7, second_run=True))
    return root


def test_ac_of_a_given_statistics_dump_dir_shows_what_indexing_it_warned_of(
    statistics_demo, tmp_path
):
    (leaf,) = {p.parent for p in (statistics_demo / "precision_data/npu/debug_1").rglob("*.csv")}
    right = _with_odd_name(leaf, tmp_path / "right")
    check = run_ok(
        open_shell(statistics_demo), f"ac -c -lt debug_0 -rt {right} -o {tmp_path / 'out'}"
    )
    assert check.statistics_compare is not None
    assert _warning_lines(check) == [_odd_name_warning(right)]


def test_a_given_dir_with_no_dump_file_says_the_warning_that_may_be_why(
    tiny_demo_shared, tmp_path, monkeypatch
):
    root, manifest = tiny_demo_shared
    locked = tmp_path / "locked"
    locked.mkdir()
    refuse_listing(monkeypatch, locked)
    error = run_fail(open_shell(root), f"vc -lt {locked} -rt {manifest.dump_dirs[1]}").error
    assert error == (
        f"{locked}: no dump files found (searched its sub-dirs too); "
        f"{locked}: cannot list: Permission denied"
    )
    odd = tmp_path / "odd"
    odd.mkdir()
    for name in (ODD, "README.txt"):
        (odd / name).write_bytes(b"not a dump")
    error = run_fail(open_shell(root), f"dc {odd}").error
    assert error == (
        f"{odd}: no dump files found (searched its sub-dirs too); "
        f"{_odd_name_warning(odd).removeprefix('warning: ')} (+1 more warnings)"
    )
