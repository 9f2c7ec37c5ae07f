"""Statistics compares over several ranks and steps (`dump_data: stats`): the targeted tensor
dump put beside the statistics dumps (README's statistics workflow, step 3), vcs's rank x step
table, and what a tensor compare of a slice holding statistics files too says of them.

A tiny statistics demo with a planted fault, and its tensor-dump twin (same spec, same values)
to take tensor files from; ranks and steps are added by copying a step dir, as a user would."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec, Fault
from tests.commands.shell_fixture import CONV2, CONV3, open_shell, rendered, run_ok

SESSION = "20261122063000"  # the demo's dump session dir
LATER = "20261123063000"  # a second dump session: the targeted tensor dump
FAULT = Fault("local_error", "conv2/Conv2D", 0.3)


def _spec(dump_data: str) -> DemoSpec:
    return DemoSpec(size="tiny", dump_data=dump_data, seed=3, second_run=False, faults=(FAULT,))


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The statistics workspace and its tensor-dump twin."""
    stats = tmp_path_factory.mktemp("stats")
    tensor = tmp_path_factory.mktemp("tensor")
    build_demo(stats, _spec("stats"))
    build_demo(tensor, _spec("tensor"))
    return stats, tensor


def _step_dir(root: Path) -> Path:
    """The demo's only step dir: `dump/<session>/<rank>/<graph>/<model>/<step>/`."""
    dump = root / "precision_data/npu/debug_0/dump"
    return next(p for p in dump.rglob("*") if p.is_file() and p.suffix != ".txt").parent


def _at(step: Path, session: str, rank: str, number: str) -> Path:
    """The step dir of (rank, step) in `session`, beside `step` (another dump's)."""
    model = step.parent
    graph = model.parent
    return graph.parents[2] / session / rank / graph.name / model.name / number


def _copy(src: Path, dst: Path, only: str | None = None) -> None:
    """`src`'s files (those whose name holds `only`) hard-linked into a new dir `dst`."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and (only is None or only in f.name):
            os.link(f, dst / f.name)


def _workspace(twins: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """A private copy of the statistics workspace: (root, its step dir, the tensor twin's)."""
    root = tmp_path / "ws"
    shutil.copytree(twins[0], root, symlinks=True)
    return root, _step_dir(root), _step_dir(twins[1])


def test_a_targeted_tensor_dump_beside_statistics_dumps_is_compared(twins, tmp_path) -> None:
    """README's statistics workflow, step 3: the tensor files the dump config asked for, as a
    new dump session of step 1 beside the statistics dump of step 0. `vc --step 1` compares
    them (it said no dump file belonged to the graph: the default slice, step 0, holds only
    statistics files, and its tensor plan was required to be non-empty)."""
    root, step, tensor_step = _workspace(twins, tmp_path)
    _copy(tensor_step, _at(step, LATER, "0", "1"), only="conv2_Conv2Drelu2")
    result = run_ok(open_shell(root), "vc --step 1")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    ((entry),) = saved["results"]
    assert (entry["rank"], entry["step"]) == ("0", "1")
    assert (entry["files_done"], entry["files_total"], entry["failed"]) == (1, 1, 1)
    assert entry["first_failed_op"] == CONV2
    assert "rank 0 step 0" in rendered(result)  # left out, said so
