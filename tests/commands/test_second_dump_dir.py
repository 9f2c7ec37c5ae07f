"""A workspace with a second step dir (or a second device dir) beside the first: every command
still works (the index once crashed building its merged view). Ranks and steps as such are
issue 11; this keeps the shape from breaking the shell."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.commands.shell_fixture import CONV2, open_shell, run_ok


def _step_dir(root: Path) -> Path:
    dump = root / "precision_data" / "npu" / "debug_0" / "dump"
    files = [p for p in dump.rglob("*") if p.is_file()]
    return files[0].parent


def _link_copy(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            os.link(f, dst / f.name)


@pytest.mark.parametrize("shape", ["step", "device"])
def test_a_second_dump_dir_keeps_every_command_working(tiny_demo, shape):
    root, _ = tiny_demo
    step = _step_dir(root)
    if shape == "step":  # .../<graph>/<model_id>/0 and .../1
        _link_copy(step, step.parent / str(int(step.name) + 1))
    else:  # <ts>/0/... and <ts>/1/...
        device = step.parents[2]
        _link_copy(step, device.parent / "1" / step.relative_to(device))
    shell = open_shell(root)
    assert run_ok(shell, "ls") is not None
    info = run_ok(shell, f"ni {CONV2}")
    assert len(info.nodes[0].dump_files) >= 2  # the op's file in both dirs
    result = run_ok(shell, "vc")
    assert result.primary.tally.compared > 0
