"""Runs compare tasks over a pool of threads and hands results back in execution order.

numpy releases the GIL in the heavy parts (decoding, transposes, reductions), so threads
keep every core busy without pickling tensors between processes. At most `window` tasks
are in flight, so memory stays bounded by a few files whatever the workspace size. A
cancelled run (Ctrl-C) stops submitting, drops what is queued and returns what is done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from precision_shell.compare.plan import FileTask
from precision_shell.compare.worker import CompareOptions, FileResult, compare_file

ProgressCallback = Callable[[FileResult], None]


def default_workers(configured: int = 0) -> int:
    return configured if configured > 0 else max(1, os.cpu_count() or 1)


def run_tasks(
    tasks: Sequence[FileTask],
    options: CompareOptions,
    workers: int = 0,
    cancel: threading.Event | None = None,
    on_result: ProgressCallback | None = None,
    work: Callable[[FileTask, CompareOptions], FileResult] = compare_file,
) -> Iterator[FileResult]:
    """Yield one FileResult per task, in task order, computing up to `workers` at a time."""
    workers = default_workers(workers)
    cancel = cancel or threading.Event()
    window = workers * 2
    pending: dict[Future[FileResult], int] = {}  # future -> position in `tasks`
    done: dict[int, FileResult] = {}
    next_submit = 0
    next_yield = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compare") as pool:
        try:
            while next_yield < len(tasks):
                while (
                    next_submit < len(tasks)
                    and len(pending) + len(done) < window
                    and not cancel.is_set()
                ):
                    pending[pool.submit(work, tasks[next_submit], options)] = next_submit
                    next_submit += 1
                if cancel.is_set() and not pending:
                    break
                # a timeout, so that Ctrl-C reaches this thread while workers are busy
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED, timeout=0.2)
                for fut in finished:
                    position = pending.pop(fut)
                    result = fut.result()
                    done[position] = result
                    if on_result is not None:
                        on_result(result)
                while next_yield in done:
                    yield done.pop(next_yield)
                    next_yield += 1
        except BaseException:
            cancel.set()
            for fut in pending:
                fut.cancel()
            raise
