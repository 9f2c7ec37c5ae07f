"""Work functions the Dask tests send to worker processes (importable there by module name)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult

SECONDS_PER_TASK = 0.1


def slow_work(task: FileTask, options: CompareOptions) -> FileResult:
    """Marks `<task.device_file>/<seq>.<pid>` when it starts, then takes a while; returns the pid
    as `bytes_read` so a test can tell which worker computed each task."""
    Path(task.device_file, f"{task.seq}.{os.getpid()}").touch()
    time.sleep(SECONDS_PER_TASK)
    return FileResult(task.seq, [], os.getpid())


def trivial_work(task: FileTask, options: CompareOptions) -> FileResult:
    """No work at all: what a task costs is then the pool's own overhead."""
    return FileResult(task.seq, [], 0)
