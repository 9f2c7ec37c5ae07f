"""Runs compare tasks over a pool of workers and hands results back in execution order.

Two backends run the same pure tasks: threads (numpy releases the GIL in the heavy parts;
no start-up cost, best for small workspaces) and processes (no GIL at all between the many
short numpy calls of the metrics; workers fork from a server that imported the compare once,
`process_start`, so only the first pool of a session pays for an interpreter start). "auto"
picks processes when there is enough work to pay for them. Without a shared pool, the files
of the next tasks are read ahead (`readahead`). Tasks and results are small picklable
records; tensors never cross process boundaries. At most `window` batches are in flight and
at most `WAITING_RESULTS` results wait for an earlier one, so memory stays bounded by a few
files' tensors and ~17 MB of rows whatever the workspace size. A cancelled run (Ctrl-C)
stops submitting, drops what is queued and returns what is done. A process worker that dies
(killed, out of memory) breaks its pool: the run ends with what is done in order, then raises
`WorkersLost`, so the caller can write what it has and say why it stopped.

A third kind of pool is opened by the caller and shared by several runs: a Dask cluster
(`dask_backend.DaskPool`, a `SharedPool`). The same window and ordering apply; its workers
may live on other machines, and a pool that loses them (the scheduler went away) ends the run
early, like a process pool that loses a worker: what is done, then `WorkersLost`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, suppress
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any, Protocol, TypeVar

from precision_shell import termination
from precision_shell.compare.metrics import compiled
from precision_shell.compare.pipeline.page_reuse import reuse_freed_memory
from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.process_start import process_context, processes_warm
from precision_shell.compare.pipeline.readahead import READAHEAD_BYTES, Readahead
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult, compare_file

ProgressCallback = Callable[[FileResult], None]
T = TypeVar("T")


# Below this much device data a process pool's start-up (~0.3 s) costs more than the GIL
# does. With the compiled metrics (no GIL while a pass runs) threads stay ahead for longer:
# measured on 2 cores, 239 MB of float16 dumps compared in 0.89 s on threads and 1.02 s on
# processes, 1.9 GB (8 ranks) in 5.7-6.2 s and 4.4-4.5 s; the numpy metrics hold the GIL
# between their many calls, and processes win from well below 239 MB (1.2-1.5 s vs 1.7-2.0 s).
# Once the forkserver runs (preloaded: see `process_start`), a pool starts in ~20 ms and
# processes draw level with threads from ~80 MB of dumps: measured on 2 cores with the compiled
# metrics, 83 MB in 0.18-0.26 s on both, 239 MB in 0.45-0.69 s on processes and 0.63-0.87 s on
# threads; 34 MB in 0.11-0.14 s and 0.10-0.11 s.
PROCESS_MIN_BYTES = 64 * 2**20
PROCESS_MIN_BYTES_COMPILED = 512 * 2**20
PROCESS_MIN_BYTES_WARM = 128 * 2**20
BACKENDS = ("auto", "threads", "processes")

# Results that may wait for an earlier task's before they are handed back: a file's result is
# its rows (8.5 KB in memory, measured on the large demo's twin: ~17 MB for 2,048), so a
# worker busy on one big file (an embedding, a model's head) holds back the writing of the
# others' rows, not their computing, for up to 2,048 files. The window of batches in flight
# still bounds what is submitted.
WAITING_RESULTS = 2048


class SharedPool(Protocol):
    """A pool its caller opens and closes (a Dask cluster): run_tasks submits to it, sizes its
    window by it, and stops early when it says it lost its workers."""

    @property
    def executor(self) -> Executor: ...

    def worker_count(self) -> int:
        """How many tasks the pool runs at once now."""
        ...

    def lost(self) -> str | None:
        """Why the pool can no longer run tasks (one line), or None while it can."""
        ...


# Why a run whose process pool broke stopped: the kernel's OOM killer is the usual killer.
WORKER_DIED = "a compare worker died (killed, or out of memory?)"


class WorkersLost(Exception):
    """The pool lost a worker (a process pool) or its workers (a shared pool) mid-run, as its
    message says: the tasks in flight never come back; the results before them in task order
    were yielded. Never raised for Ctrl-C, whatever happens to the pool afterwards."""


def default_workers(configured: int = 0) -> int:
    return configured if configured > 0 else max(1, os.cpu_count() or 1)


def _start_worker(lifeline: Connection) -> None:
    """Initializer of a process worker: ignore Ctrl-C, end when the main process ends, and
    keep freed tensor memory for the next tensor (`page_reuse`).

    Ctrl-C goes to the whole process group; only the main process decides how to stop. The
    worker's parent is the forkserver, which lives as long as any of its workers does, so
    neither would notice the main process being killed: they would wait for tasks forever,
    holding the caller's stdout open. Only the main process holds the write end of
    `lifeline`; when it ends, for whatever reason, the read end reaches EOF.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reuse_freed_memory()
    threading.Thread(target=_exit_on_eof, args=(lifeline,), name="lifeline", daemon=True).start()


def _exit_on_eof(lifeline: Connection) -> None:
    try:
        while True:
            lifeline.recv_bytes()  # nothing is ever sent: this returns only at EOF
    except (EOFError, OSError):
        pass
    os._exit(1)


class _ProcessPool(ProcessPoolExecutor):
    """A process pool whose workers end with the main process (see `_start_worker`)."""

    def __init__(self, workers: int, context: BaseContext) -> None:
        self._lifeline_r, self._lifeline_w = context.Pipe(duplex=False)
        super().__init__(
            max_workers=workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(self._lifeline_r,),
        )

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        # A submit may fork a worker, then start the thread that joins the pool's workers.
        # Ctrl-C or SIGTERM between the two would leave a worker no one joins: it would read
        # the pool's queues after they were dropped and print a FileNotFoundError traceback.
        with termination.deferred():
            return super().submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=wait, cancel_futures=cancel_futures)
        if wait:  # the workers are gone: cutting the line now ends no one mid-task
            self._lifeline_w.close()
            self._lifeline_r.close()


def choose_backend(
    backend: str,
    workers: int,
    total_bytes: int,
    compiled_metrics: bool | None = None,
    warm: bool | None = None,
) -> str:
    """`backend`, or for "auto" what runs `total_bytes` of device dumps fastest on `workers`
    (`compiled_metrics`: whether the metrics run in C; `warm`: whether process workers start
    without importing anything; None: as here and now)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    if compiled_metrics is None:
        compiled_metrics = compiled.available()
    if warm is None:
        warm = processes_warm()
    least = PROCESS_MIN_BYTES
    if compiled_metrics:
        least = PROCESS_MIN_BYTES_WARM if warm else PROCESS_MIN_BYTES_COMPILED
    return "processes" if workers > 1 and total_bytes >= least else "threads"


def _make_pool(backend: str, workers: int) -> Executor:
    if backend == "processes":
        return _ProcessPool(workers, process_context())
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compare")


def _run_batch(
    work: Callable[[FileTask, CompareOptions], FileResult],
    batch: Sequence[FileTask],
    options: CompareOptions,
) -> list[FileResult]:
    return [work(task, options) for task in batch]


# Files per batch: 8, and more on a big cluster, whose scheduler runs ~2,000-5,000 tasks a
# second (Dask's documentation): a file takes ~19 ms (measured, docs/SCALING.md), so W
# workers finish W / (0.019 s x size) batches a second; size >= W / 25 keeps that <= ~1,300.
BATCH_FILES = 8
WORKERS_PER_BATCH_FILE = 25


def batch_size(n_tasks: int, workers: int) -> int:
    """Neighbouring tasks go to one worker together: an op's input is usually its
    producer's output, so the worker's memo measures that pair once. Small enough that
    every worker still gets several batches; bigger on a cluster of hundreds of workers, so
    its scheduler keeps up."""
    most = max(BATCH_FILES, workers // WORKERS_PER_BATCH_FILE)
    return max(1, min(most, n_tasks // (workers * 4)))


def run_tasks(
    tasks: Sequence[FileTask],
    options: CompareOptions,
    workers: int = 0,
    cancel: threading.Event | None = None,
    on_result: ProgressCallback | None = None,
    work: Callable[[FileTask, CompareOptions], FileResult] = compare_file,
    backend: str = "threads",
    pool: SharedPool | None = None,
    readahead: int = READAHEAD_BYTES,
) -> Iterator[FileResult]:
    """Yield one FileResult per task, in task order, computing up to `workers` batches at a time.

    With a `pool`, its executor runs the batches (backend and workers are ignored) and stays
    open; when the pool loses its workers the run ends early with the results in order so far,
    then raises WorkersLost.
    Without one, the files of the next tasks are read ahead, up to `readahead` bytes (0: not).
    A process pool that loses a worker ends the run the same way, then raises WorkersLost."""
    workers = max(1, pool.worker_count()) if pool is not None else default_workers(workers)
    cancel = cancel or threading.Event()
    size = batch_size(len(tasks), workers)
    window = workers * 2
    waiting = max(window * size, WAITING_RESULTS)
    pending: dict[Future[list[FileResult]], int] = {}  # future -> position of its first task
    done: dict[int, FileResult] = {}
    next_submit = 0
    next_yield = 0
    lost: str | None = None  # why the pool can run no more of the tasks
    with ExitStack() as owned:
        executor = (
            pool.executor if pool is not None else owned.enter_context(_make_pool(backend, workers))
        )
        ahead = owned.enter_context(Readahead(tasks, readahead if pool is None else 0))
        try:
            while next_yield < len(tasks):
                while (
                    next_submit < len(tasks)
                    and len(pending) < window
                    and len(done) < waiting
                    and not cancel.is_set()
                    and lost is None
                ):
                    batch = tasks[next_submit : next_submit + size]
                    try:
                        future = executor.submit(_run_batch, work, batch, options)
                    except BrokenProcessPool:  # a worker died since the last results came
                        lost = WORKER_DIED
                        break
                    pending[future] = next_submit
                    next_submit += len(batch)
                if cancel.is_set() and not pending:
                    break
                # a timeout, so that Ctrl-C reaches this thread while workers are busy
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED, timeout=0.2)
                for fut in finished:
                    first = pending.pop(fut)
                    if fut.cancelled():  # not by us (only on the way out): the pool dropped it
                        cancel.set()
                        continue
                    try:
                        batch_results = fut.result()
                    except BrokenProcessPool:  # every task in flight fails with it
                        lost = WORKER_DIED
                        continue
                    for offset, result in enumerate(batch_results):
                        done[first + offset] = result
                        if on_result is not None:
                            on_result(result)
                if lost is None and pool is not None:
                    lost = pool.lost()
                if lost is not None:
                    cancel.set()  # what is in flight will never come back
                    _cancel(pending)
                    pending.clear()
                while next_yield in done:
                    yield done.pop(next_yield)
                    next_yield += 1
                ahead.consumed(next_yield + len(done))
            if lost is None and pool is not None and next_yield < len(tasks):
                lost = pool.lost()  # it may say so only after dropping the tasks
            if lost is not None:
                raise WorkersLost(lost)
        except BaseException:
            cancel.set()
            _cancel(pending)
            raise


def _cancel(pending: dict[Future[list[FileResult]], int]) -> None:
    for fut in pending:
        with suppress(Exception):  # a pool that lost its workers may fail to cancel
            fut.cancel()
