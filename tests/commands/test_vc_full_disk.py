"""A disk that fills up while `vc --rank all --step all` writes its CSVs (all open at once):
the one-line error names the CSV whose write failed, never another one closed afterwards."""

from __future__ import annotations

import errno
import io
import os
import shutil
import sys
from typing import Any

import pytest

from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.commands.test_cut_short_slices import four_slices_pristine  # noqa: F401  (fixture)


class FullDisk:
    """The disk under the result CSVs, with `room` bytes left: a write past it lands what
    fits, then fails with ENOSPC, as the kernel's does; `failed` names the first CSV it
    failed."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.failed: str | None = None

    def fdopen(self, real: Any) -> Any:
        """`os.fdopen`, with the CSVs' writes going through this disk."""

        def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if "w" not in mode or not path.endswith(".csv"):
                return real(fd, mode, *args, **kwargs)
            raw = _OnDisk(fd, self, path)
            return io.TextIOWrapper(io.BufferedWriter(raw), **kwargs)

        return fdopen


class _OnDisk(io.FileIO):
    def __init__(self, fd: int, disk: FullDisk, path: str) -> None:
        super().__init__(fd, "w")
        self.disk, self.path = disk, path

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        fits = min(len(view), self.disk.room)
        if len(view) and not fits:
            self.disk.failed = self.disk.failed or self.path
            raise OSError(errno.ENOSPC, "No space left on device")
        self.disk.room -= fits
        return super().write(view[:fits])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_a_full_disk_names_the_csv_whose_write_failed(four_slices_pristine, tmp_path, monkeypatch):  # noqa: F811
    root = tmp_path / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)
    whole = run_ok(open_shell(root), "vc --rank all --step all")
    sizes = [run.csv_path.stat().st_size for run in [whole.primary] + [r for _, r in whole.slices]]
    assert len(sizes) == 4
    # room for rank 0 step 0 and half of rank 0 step 1 (the second of four CSVs)
    disk = FullDisk(sizes[0] + sizes[1] // 2)
    monkeypatch.setattr(os, "fdopen", disk.fdopen(os.fdopen))
    out = tmp_path / "out"
    outcome = run_fail(open_shell(root), f"vc --rank all --step all -o {out}")
    stamp = next(out.glob("result_*_rank0_step1.csv")).name.split("_")[1]
    failed = out / f"result_{stamp}_rank0_step1.csv"
    assert disk.failed == str(failed)
    assert outcome.error == (
        f"compare stopped: no space left on {failed}; the rows so far are kept: free space, "
        f"then vc --resume -o {out} completes it"
    )
    # what fitted is there: the CSV is not removed (its journaled rows stay resumable)
    assert failed.stat().st_size == sizes[1] // 2
    assert [p.stat().st_size for p in sorted(out.glob("result_*_rank1_step*.csv"))] == [0, 0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_ac_and_vcs_say_a_full_disk_stopped_the_compare_and_resume_completes_it(
    tiny_demo, monkeypatch
):
    """QA Q7 F5: `ac -c` said "compare not run" of a compare that ran partway, and `vcs`
    said its vc "was killed or crashed"."""
    root, _ = tiny_demo
    monkeypatch.setattr(os, "fdopen", FullDisk(4000).fdopen(os.fdopen))
    outcome = run_fail(open_shell(root), "ac -c")
    out = next((root / "precision_data" / "temp" / "vector_compare").iterdir())
    csv = out / f"result_{out.name}.csv"
    assert outcome.error == (
        f"ac: compare stopped: no space left on {csv}; the rows so far are kept: free space, "
        f"then vc --resume -o {out} completes it"
    )
    assert sorted(p.name for p in out.iterdir()) == [csv.name, "vc.journal", "vc.no_space"]
    monkeypatch.undo()  # the disk has room again
    summary = run_ok(open_shell(root), "vcs")
    assert summary.partial_cause == (
        f"its vc was stopped by a full disk; free space, then vc --resume -o {out} continues it"
    )
    resumed = run_ok(open_shell(root), f"vc --resume -o {out}")
    assert resumed.out_dir == out and not resumed.summary.primary.interrupted
    assert not (out / "vc.no_space").exists() and not (out / "vc.journal").exists()


def test_a_disk_full_before_the_journal_leaves_no_empty_result_dir(tiny_demo, monkeypatch):
    """Nothing compared: the one-line error, and no empty temp/vector_compare/<ts>/ left."""
    from precision_shell.compare.pipeline import journal

    root, _ = tiny_demo
    shell = open_shell(root)
    results = root / "precision_data" / "temp" / "vector_compare"
    before = sorted(results.iterdir()) if results.is_dir() else []
    real_open = os.open

    def no_room(path: Any, flags: int, *args: Any) -> int:
        if str(path).endswith(journal.JOURNAL_NAME):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, *args)

    monkeypatch.setattr(journal.os, "open", no_room)
    failed = run_fail(shell, "vc")
    assert failed.error.startswith("no space left on ") and failed.error.endswith(
        journal.JOURNAL_NAME
    )
    assert (sorted(results.iterdir()) if results.is_dir() else []) == before
