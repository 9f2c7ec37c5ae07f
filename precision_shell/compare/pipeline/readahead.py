"""Start reading the files of the next tasks while the workers compute the current ones.

A worker reads a task's files and then computes; while it computes, nothing asks the disk
for anything, and the next task starts with a read that waits on the disk. With dumps that
are not in the page cache (a real dump of hundreds of GB never is), the compare then takes
the disk's time plus the compute's. `Readahead` asks the kernel (posix_fadvise WILLNEED)
to bring the files of the next tasks into the page cache, from a thread of its own, at most
`budget` bytes ahead so that it never evicts what a worker is about to read, and only files
of up to READAHEAD_FILE_MAX (below). Measured on the large demo's distinct twin (0.6 MB files,
median) with a cold page cache, 2 threads, eight interleaved runs: `vc` compared in 0.74 s
(median) instead of 0.83 s.

Only files the plan already names are opened (read-only, non-blocking, and only regular
files are advised). Where the OS has no posix_fadvise it does nothing. For a pool on other
machines (Dask) it is not used: it would read the files into the wrong machine's cache.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Sequence

from precision_shell.compare.pipeline.plan import FileTask

READAHEAD_BYTES = 256 * 2**20
# Only files this small are advised: a read of one waits mostly on the disk's latency, which
# reading ahead hides. A bigger file is streamed by the kernel's own readahead as soon as a
# worker reads it, and advising it as well queued its pages in front of that worker's:
# on a twin of the demo with 8 MB files (median), cold cache, 0.39-0.40 s with them advised
# against 0.31-0.35 s without.
READAHEAD_FILE_MAX = 4 * 2**20
_ADVISE = getattr(os, "posix_fadvise", None)
_NOWAIT = getattr(os, "RWF_NOWAIT", None) if hasattr(os, "preadv") else None


def task_files(task: FileTask) -> list[str]:
    """The files a task reads: its device dump and each distinct benchmark file."""
    files = [task.device_file]
    for row in task.rows():
        if row.benchmark_path and row.benchmark_path not in files:
            files.append(row.benchmark_path)
    return files


def in_page_cache(fd: int) -> bool:
    """Whether the first page of the open file is in the page cache, asked without waiting on
    the disk (preadv2 RWF_NOWAIT); False when the OS or the filesystem cannot say.

    The first page of a file read through is the first the kernel evicts (oldest in its LRU):
    while it is there, the rest most likely is."""
    if _NOWAIT is None:
        return False
    try:
        os.preadv(fd, [bytearray(1)], 0, _NOWAIT)
    except OSError:  # BlockingIOError: not cached; EOPNOTSUPP & co: cannot tell
        return False
    return True


def advise_willneed(path: str, limit: int) -> int:
    """Ask the kernel to read `path` when it is a readable regular file of at most `limit`
    bytes that is not in the page cache already; the bytes advised (0 otherwise).

    Advising a cached file costs the kernel a walk over its pages for nothing: on a warm
    cache, the 1,041 files of the large demo's distinct twin took 14 ms of CPU to advise,
    7 ms to find cached."""
    if _ADVISE is None:
        return 0
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit or info.st_size == 0:
            return 0
        if in_page_cache(fd):
            return 0
        _ADVISE(fd, 0, info.st_size, os.POSIX_FADV_WILLNEED)
        return info.st_size
    except OSError:
        return 0
    finally:
        os.close(fd)


class Readahead:
    """Reads ahead of the workers: `consumed(n)` says the first n tasks are done; the thread
    advises the files of the tasks in order while the bytes advised for tasks not done stay
    within `budget`. `close()` stops it (also as a context manager)."""

    def __init__(self, tasks: Sequence[FileTask], budget: int = READAHEAD_BYTES) -> None:
        self._tasks = tasks
        self._budget = budget
        self._cond = threading.Condition()
        self._consumed = 0
        self._stopped = False
        self._ends: list[int] = []  # bytes advised for tasks 0..i
        self._thread: threading.Thread | None = None
        if _ADVISE is not None and tasks and budget > 0:
            self._thread = threading.Thread(target=self._run, name="readahead", daemon=True)
            self._thread.start()

    def __enter__(self) -> Readahead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def consumed(self, count: int) -> None:
        with self._cond:
            self._consumed = count
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def ahead(self) -> int:
        """Bytes advised for tasks not done yet."""
        with self._cond:
            return self._ahead()

    def _ahead(self) -> int:
        done = min(self._consumed, len(self._ends))
        before = self._ends[done - 1] if done else 0
        return (self._ends[-1] if self._ends else 0) - before

    def _run(self) -> None:
        total = 0
        for i, task in enumerate(self._tasks):
            with self._cond:
                while not self._stopped and self._ahead() >= self._budget:
                    self._cond.wait()
                if self._stopped:
                    return
                late = i < self._consumed  # done already: nothing to read ahead for
            if not late:
                for path in task_files(task):
                    total += advise_willneed(path, READAHEAD_FILE_MAX)
            with self._cond:
                self._ends.append(total)
