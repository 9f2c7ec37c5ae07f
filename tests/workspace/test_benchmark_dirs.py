"""Benchmark dirs of one rank or step (`tf/dump/step<S>/`, `rank<R>/`, `rank<R>/step<S>/`,
`step<S>/rank<R>/`): which exist, which one a (rank, step) dump dir is compared with, and that
adding one makes the index stale."""

from __future__ import annotations

import shutil
from pathlib import Path

from precision_shell.workspace.benchmark_dirs import find_scoped_dirs
from precision_shell.workspace.workspace import Workspace
from tests.workspace.file_times import settle
from tests.workspace.test_rank_step_checks import _add, _step_dir


def _dirs(top: Path, *names: str) -> None:
    for name in names:
        (top / name).mkdir(parents=True)


def test_the_rank_and_step_dirs_are_found_and_other_dirs_left(tmp_path):
    top = tmp_path / "dump"
    _dirs(top, "step1", "rank0/step1", "rank2", "step3/rank1", "run_1_2", "stepx", "rank0/x")
    (top / "step4").write_text("a file, not a dir")
    warnings: list[str] = []
    found = find_scoped_dirs(top, warnings)
    assert {scope: str(p.relative_to(top)) for scope, p in found.dirs.items()} == {
        (None, "1"): "step1",
        ("0", None): "rank0",
        ("0", "1"): "rank0/step1",
        ("2", None): "rank2",
        (None, "3"): "step3",
        ("1", "3"): "step3/rank1",
    }
    # a name meant as a step dir and not written as one, and a step "dir" that is a file,
    # are said (QA: step 1 was then silently compared with tf/dump/, step 0's tensors)
    assert warnings == [
        f"{top / 'stepx'}: not a rank or step benchmark dir name (rank<R>, step<S>, numbered as "
        "the dump dirs are: step1, not step01); its tensors are not used",
        f"{top / 'step4'}: not a dir; no benchmark of step4",
    ]
    assert found.blocked == {(None, "4"): "step4/ is not a dir"}
    assert sorted(p.name for p, _ in found.listed) == ["rank0", "rank2", "step1", "step3", "step4"]


def test_one_rank_and_step_in_both_nestings_is_a_warning_and_rank_first_is_used(tmp_path):
    top = tmp_path / "dump"
    _dirs(top, "rank0/step1", "step1/rank0")
    warnings: list[str] = []
    found = find_scoped_dirs(top, warnings)
    assert found.dirs[("0", "1")] == top / "rank0" / "step1"
    assert warnings == [
        f"{top / 'step1' / 'rank0'}: the benchmark of rank 0 step 1 is in "
        f"{top / 'rank0' / 'step1'} too; using {top / 'rank0' / 'step1'}"
    ]


def _benchmark_copy(root: Path, name: str) -> Path:
    """tf/dump/<name>/ holding copies of tf/dump/'s tensors."""
    top = root / "precision_data" / "tf" / "dump"
    target = top / name
    target.mkdir(parents=True)
    for f in top.glob("*.npy"):
        shutil.copy(f, target / f.name)
    return target


def test_a_dump_dir_is_compared_with_the_most_specific_benchmark_dir(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    _add(step, "0", "1")
    _add(step, "1", "0")
    _add(step, "1", "1")
    for name in ("rank0/step1", "step1", "rank1"):
        _benchmark_copy(root, name)
    ws = Workspace.open(root, use_cache=False)
    top = root / "precision_data" / "tf" / "dump"

    def used(rank: str, step: str) -> str:
        found = ws.benchmark_for(rank, step)
        assert found is not None
        return str(Path(found.directory).relative_to(top))

    assert used("0", "1") == "rank0/step1"  # its rank's step dir
    assert used("1", "1") == "step1"  # its step's before its rank's
    assert used("1", "0") == "rank1"
    assert used("0", "0") == "."  # rank0/ holds step dirs only: tf/dump/ itself
    assert ws.benchmark_for() is ws.benchmark  # the default dump dir is rank 0 step 0
    file = ws.benchmark_file("relu2/Relu", 0, "0", "1")
    assert file is not None and Path(file.path).parent == top / "rank0" / "step1"
    assert ws.benchmark_name(file) == f"rank0/step1/{Path(file.path).name}"


def test_a_benchmark_dir_added_after_opening_makes_the_index_stale(tiny_demo):
    root, _ = tiny_demo
    rank_dir = _benchmark_copy(root, "rank0")
    settle(root)
    ws = Workspace.open(root, use_cache=False)
    assert not ws.is_stale()
    _benchmark_copy(root, "step1")
    assert ws.is_stale()
    settle(root)
    ws = Workspace.open(root, use_cache=False)
    assert not ws.is_stale()
    assert set(ws.scoped_benchmarks) == {("0", None), (None, "1")}
    (rank_dir / "step2").mkdir()  # a step dir inside a rank dir: its parent's stamp changes
    assert ws.is_stale()
