"""Readahead: which files it advises, in what order, and how far ahead of the workers."""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.pipeline import readahead
from precision_shell.compare.pipeline.engine import run_tasks
from precision_shell.compare.pipeline.plan import FileTask, MappingRow
from precision_shell.compare.pipeline.readahead import Readahead, advise_willneed, task_files
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult


def _task(seq: int, device: str, *benchmarks: str | None) -> FileTask:
    rows = tuple(MappingRow("x", b) for b in benchmarks)
    return FileTask(seq, seq, f"op{seq}", "Add", device, rows, ())


def test_task_files_are_the_dump_then_each_benchmark_once() -> None:
    task = FileTask(
        0,
        0,
        "op",
        "Add",
        "/d/op.dump",
        (MappingRow("a", "/b/a.npy"), MappingRow("*", None), MappingRow("a", "/b/a.npy")),
        (MappingRow("c", "/b/c.npy"),),
    )
    assert task_files(task) == ["/d/op.dump", "/b/a.npy", "/b/c.npy"]


def test_advise_willneed_advises_a_regular_file_of_at_most_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, int, int]] = []
    monkeypatch.setattr(
        readahead, "_ADVISE", lambda fd, off, n, advice: calls.append((off, n, advice))
    )
    monkeypatch.setattr(readahead, "in_page_cache", lambda fd: False)  # as if read from disk
    path = tmp_path / "t.npy"
    path.write_bytes(b"x" * 5000)
    assert advise_willneed(str(path), 5000) == 5000
    assert calls == [(0, 5000, os.POSIX_FADV_WILLNEED)]
    # bigger: the kernel streams it once a worker reads it; advising it would only compete
    assert advise_willneed(str(path), 4999) == 0
    assert len(calls) == 1


def test_advise_willneed_skips_what_is_not_a_readable_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(readahead, "_ADVISE", lambda fd, off, n, advice: calls.append(n))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer: it must not
    assert advise_willneed(str(fifo), 100) == 0
    assert advise_willneed(str(tmp_path), 100) == 0
    assert advise_willneed(str(tmp_path / "missing.npy"), 100) == 0
    assert calls == []


def _first_page_resident(fd: int) -> bool:
    """mincore(2) of the file's first page: asks without reading it (a RWF_NOWAIT probe that
    misses may start reading the page back in, racing the test)."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    mapped = mmap.mmap(fd, page, access=mmap.ACCESS_COPY)  # not touched: nothing is read
    try:
        cell = ctypes.c_char.from_buffer(mapped)
        vec = (ctypes.c_ubyte * 1)()
        status = libc.mincore(ctypes.c_void_p(ctypes.addressof(cell)), ctypes.c_size_t(page), vec)
        del cell
        if status != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return bool(vec[0] & 1)
    finally:
        mapped.close()


def _evicted(path: Path) -> bool:
    """Drop the file's pages from the page cache (written back first: dirty pages stay);
    whether its first page is gone (a filesystem may keep it all in memory)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return not _first_page_resident(fd)
    finally:
        os.close(fd)


needs_probe = pytest.mark.skipif(
    readahead._NOWAIT is None or not hasattr(os, "posix_fadvise"),
    reason="no preadv2 RWF_NOWAIT or posix_fadvise here",
)


@needs_probe
def test_advise_willneed_really_advises(tmp_path: Path) -> None:
    path = tmp_path / "t.bin"
    path.write_bytes(b"y" * 10000)
    if not _evicted(path):
        pytest.skip("this filesystem keeps the file in memory")
    assert advise_willneed(str(path), 2**20) == 10000


@needs_probe
def test_a_file_in_the_page_cache_is_not_advised_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = readahead._ADVISE
    assert real is not None
    monkeypatch.setattr(
        readahead, "_ADVISE", lambda fd, off, n, advice: (calls.append(n), real(fd, off, n, advice))
    )
    path = tmp_path / "t.bin"
    path.write_bytes(b"z" * 10000)  # just written: in the page cache
    fd = os.open(path, os.O_RDONLY)
    try:
        assert readahead.in_page_cache(fd)
    finally:
        os.close(fd)
    assert advise_willneed(str(path), 2**20) == 0
    assert calls == []
    if not _evicted(path):
        pytest.skip("this filesystem keeps the file in memory")
    assert advise_willneed(str(path), 2**20) == 10000
    assert calls == [10000]


def test_a_filesystem_that_cannot_tell_gets_the_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(readahead, "_ADVISE", lambda fd, off, n, advice: calls.append(n))

    def no_nowait(*args: object) -> int:
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(readahead.os, "preadv", no_nowait)
    path = tmp_path / "t.bin"
    path.write_bytes(b"w" * 300)
    assert advise_willneed(str(path), 2**20) == 300
    assert calls == [300]
    # and an empty file has nothing to read ahead
    (tmp_path / "empty").write_bytes(b"")
    assert advise_willneed(str(tmp_path / "empty"), 2**20) == 0
    assert calls == [300]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the advised paths instead of advising; every file counts 1000 bytes."""
    seen: list[str] = []

    def advise(path: str, limit: int) -> int:
        seen.append(path)
        return 1000

    monkeypatch.setattr(readahead, "_ADVISE", object())  # as on a system that has it
    monkeypatch.setattr(readahead, "advise_willneed", advise)
    return seen


def _settled(seen: list[str], count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(seen) < count and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # and no further
    return list(seen)


def test_readahead_stays_within_its_budget_of_the_tasks_not_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _spy(monkeypatch)
    tasks = [_task(i, f"/d/{i}.dump") for i in range(10)]  # 1000 bytes each (the spy)
    with Readahead(tasks, budget=2500) as ahead:
        # a task is advised while less than the budget is ahead: 3 tasks, 3000 bytes
        assert _settled(seen, 3) == ["/d/0.dump", "/d/1.dump", "/d/2.dump"]
        assert ahead.ahead() == 3000
        ahead.consumed(2)
        assert _settled(seen, 5) == [f"/d/{i}.dump" for i in range(5)]
        assert ahead.ahead() == 3000
        ahead.consumed(10)
        assert _settled(seen, 5) == [f"/d/{i}.dump" for i in range(5)]  # all done: no reads
    assert ahead.ahead() <= 0


def test_readahead_close_stops_a_waiting_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    tasks = [_task(i, f"/d/{i}.dump") for i in range(100)]
    ahead = Readahead(tasks, budget=1)
    _settled(seen, 1)
    ahead.close()
    assert ahead._thread is not None and not ahead._thread.is_alive()
    assert seen == ["/d/0.dump"]


def test_no_budget_or_no_fadvise_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = [_task(0, "/d/0.dump")]
    assert Readahead(tasks, budget=0)._thread is None
    monkeypatch.setattr(readahead, "_ADVISE", None)
    assert Readahead(tasks)._thread is None


def _work(task: FileTask, options: CompareOptions) -> FileResult:
    return FileResult(task.seq, [], 0)


def test_run_tasks_reads_ahead_in_task_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spy(monkeypatch)
    tasks = [_task(i, f"/d/{i}.dump", f"/b/{i}.npy") for i in range(20)]
    results = list(run_tasks(tasks, CompareOptions(), workers=2, work=_work))
    assert [r.seq for r in results] == list(range(20))
    # each file at most once, dump before benchmark, tasks in order
    assert len(seen) == len(set(seen))
    order = [p for i in range(20) for p in (f"/d/{i}.dump", f"/b/{i}.npy")]
    assert seen == order[: len(seen)]


def test_run_tasks_reads_nothing_ahead_with_readahead_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    tasks = [_task(i, f"/d/{i}.dump") for i in range(5)]
    list(run_tasks(tasks, CompareOptions(), workers=1, work=_work, readahead=0))
    assert seen == []


def test_an_advised_file_reads_back_unchanged(tmp_path: Path) -> None:
    """The advice changes when bytes arrive, never which."""
    data = np.arange(50000, dtype=np.float32)
    path = tmp_path / "a.npy"
    np.save(path, data)
    if hasattr(os, "posix_fadvise") and not _evicted(path):
        pytest.skip("this filesystem keeps the file in memory")
    assert advise_willneed(str(path), 2**30) == path.stat().st_size
    np.testing.assert_array_equal(np.load(path), data)
