"""The engine: results in task order whatever the workers do; Ctrl-C and cancel stop cleanly."""

from __future__ import annotations

import csv
import os
import random
import threading
import time

import pytest

from precision_shell.compare.pipeline.engine import batch_size, run_tasks
from precision_shell.compare.pipeline.execute import execute_plan
from precision_shell.compare.pipeline.plan import FileTask, benchmark_plan
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult
from precision_shell.compare.results.schema import csv_header
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.progress import ProgressSink, Tick
from precision_shell.workspace.workspace import Workspace


def _tasks(n: int) -> list[FileTask]:
    return [FileTask(i, i, f"op{i}", "Relu", f"/nowhere/{i}", (), ()) for i in range(n)]


def _sleepy_work(started: list[int], fail_on: int | None = None):
    rng = random.Random(7)
    delays = [rng.uniform(0, 0.01) for _ in range(200)]
    lock = threading.Lock()

    def work(task: FileTask, options: CompareOptions) -> FileResult:
        with lock:
            started.append(task.seq)
        time.sleep(delays[task.seq])
        if task.seq == fail_on:
            raise KeyboardInterrupt
        return FileResult(task.seq, [], task.seq * 10)

    return work


@pytest.mark.parametrize("workers", [1, 4])
def test_results_come_back_in_task_order(workers):
    tasks = _tasks(40)
    started: list[int] = []
    seen: list[int] = []
    results = list(
        run_tasks(
            tasks,
            CompareOptions(),
            workers=workers,
            on_result=lambda r: seen.append(r.seq),
            work=_sleepy_work(started),
        )
    )
    assert [r.seq for r in results] == list(range(40))
    assert [r.bytes_read for r in results] == [i * 10 for i in range(40)]
    assert sorted(seen) == list(range(40)) and sorted(started) == list(range(40))


@pytest.mark.parametrize(
    ("n_tasks", "workers", "size"),
    [
        (300, 2, 8),  # the large demo on 2 cores
        (20, 2, 2),  # several batches for each worker
        (3, 4, 1),
        (3_000_000, 200, 8),
        (3_000_000, 1_000, 40),  # 1,000 workers: ~1,300 batches a second, not ~6,600
        (50_000, 1_000, 12),  # still several batches for each worker
    ],
)
def test_batch_size(n_tasks, workers, size):
    assert batch_size(n_tasks, workers) == size


def test_one_slow_file_holds_back_only_the_writing_of_the_others():
    """While one worker is busy on the first file, the other computes every later one: it
    waits for the last task to have run (it would wait forever, bounded here, if the results
    waiting for the first one were capped at the window's few batches)."""
    tasks = _tasks(200)
    last_ran = threading.Event()
    waited: list[bool] = []

    def work(task: FileTask, options: CompareOptions) -> FileResult:
        if task.seq == 0:
            waited.append(last_ran.wait(timeout=20))
        elif task.seq == len(tasks) - 1:
            last_ran.set()
        return FileResult(task.seq, [], 0)

    results = list(run_tasks(tasks, CompareOptions(), workers=2, work=work))
    assert waited == [True]
    assert [r.seq for r in results] == list(range(200))


def test_tasks_need_not_be_numbered_from_zero():
    tasks = [FileTask(s, 0, f"op{s}", "Relu", "/x", (), ()) for s in (5, 3, 9)]
    results = list(run_tasks(tasks, CompareOptions(), workers=2, work=_sleepy_work([])))
    assert [r.seq for r in results] == [5, 3, 9]


def test_a_keyboard_interrupt_in_a_task_stops_the_run_and_keeps_what_was_yielded():
    tasks = _tasks(60)
    started: list[int] = []
    got: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        for result in run_tasks(
            tasks, CompareOptions(), workers=2, work=_sleepy_work(started, fail_on=5)
        ):
            got.append(result.seq)
    assert got == list(range(len(got))) and len(got) <= 5
    # nothing was submitted past the in-flight window (2 workers x 2 batches) after task 5 failed
    window_tasks = 2 * 2 * batch_size(len(tasks), 2)
    assert max(started) < 5 + window_tasks + batch_size(len(tasks), 2)
    assert max(started) < len(tasks) - 1


def test_a_cancel_event_ends_the_run_after_the_tasks_in_flight():
    tasks = _tasks(60)
    cancel = threading.Event()
    started: list[int] = []

    def on_result(result: FileResult) -> None:
        if result.seq == 3:
            cancel.set()

    results = list(run_tasks(tasks, CompareOptions(), 2, cancel, on_result, _sleepy_work(started)))
    assert [r.seq for r in results] == list(range(len(results)))
    assert 4 <= len(results) < 60
    assert len(started) < 60


@pytest.fixture(scope="module")
def demo_plan(tiny_demo_shared):
    root, _ = tiny_demo_shared
    ws = Workspace.open(root, use_cache=False)
    run = ws.run()
    return root, benchmark_plan(ws, run, run.dump_graph())


def _csv_rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_execute_plan_on_ctrl_c_keeps_the_rows_written_and_marks_interrupted(demo_plan, tmp_path):
    root, plan = demo_plan
    advanced: list[Tick] = []

    def advance(tick: Tick) -> None:
        advanced.append(tick)
        if len(advanced) == 5:
            raise KeyboardInterrupt  # Ctrl-C reaching the main thread mid-run

    path = tmp_path / "result.csv"
    run = execute_plan(
        plan,
        path,
        CompareOptions(),
        ThresholdRule.default(),
        workers=1,
        progress=ProgressSink(advance=advance),
    )
    assert run.interrupted
    # a tick is sent once a file's rows are written, so the count is exact, never racy
    assert run.files_done == 5 < len(plan.tasks)
    rows = _csv_rows(path)
    assert rows[0] == csv_header(False)
    assert len(rows) - 1 == run.tally.rows > 0
    # the rows kept are those of the first files, in execution order
    ops = list(dict.fromkeys(r[7].rsplit(":", 2)[0] for r in rows[1:]))
    assert ops == [t.op_name for t in plan.tasks[: run.files_done]]
    record = run.record()
    assert record.interrupted is True and record.rows == len(rows) - 1
    assert record.partial_text == f"partial: 5 of {len(plan.tasks)} files"


def test_execute_plan_with_a_cancel_event_is_interrupted_too(demo_plan, tmp_path):
    _, plan = demo_plan
    cancel = threading.Event()

    def advance(tick: Tick) -> None:
        cancel.set()

    run = execute_plan(
        plan,
        tmp_path / "r.csv",
        CompareOptions(),
        ThresholdRule.default(),
        workers=1,
        progress=ProgressSink(advance=advance),
        cancel=cancel,
    )
    assert run.interrupted and run.files_done < len(plan.tasks)
    assert len(_csv_rows(tmp_path / "r.csv")) - 1 == run.tally.rows


def test_execute_plan_complete_run_is_not_interrupted(demo_plan, tmp_path):
    _, plan = demo_plan
    calls = []
    progress = ProgressSink(
        start=lambda files, size: calls.append(("start", files)),
        advance=lambda tick: calls.append(("advance", tick.items)),
        stop=lambda: calls.append(("stop", None)),
    )
    run = execute_plan(
        plan, tmp_path / "r.csv", CompareOptions(), ThresholdRule.default(), 3, progress
    )
    assert not run.interrupted and run.files_done == len(plan.tasks)
    assert calls[0] == ("start", len(plan.tasks)) and calls[-1] == ("stop", None)
    advances = [items for kind, items in calls if kind == "advance"]
    assert len(advances) == len(plan.tasks) and sum(advances) == run.tally.rows
    assert run.bytes_read == sum(os.path.getsize(t.device_file) for t in plan.tasks)


def test_process_backend_gives_the_same_rows_as_threads(tiny_demo):
    root, _ = tiny_demo
    ws = Workspace.open(root)
    run = ws.run()
    plan = benchmark_plan(ws, run, run.dump_graph())
    threads = [r.rows for r in run_tasks(plan.tasks, CompareOptions(), 2, backend="threads")]
    procs = [r.rows for r in run_tasks(plan.tasks, CompareOptions(), 2, backend="processes")]
    assert [[row.tensor_index for row in rows] for rows in procs] == [
        [row.tensor_index for row in rows] for rows in threads
    ]
    # every printed cell identical, whatever process computed it (NaN != NaN in the dataclasses)
    assert [[r.cells(True) for r in rows] for rows in procs] == [
        [r.cells(True) for r in rows] for rows in threads
    ]


def test_auto_backend_picks_processes_only_for_big_workspaces():
    from precision_shell.compare.pipeline.engine import (
        PROCESS_MIN_BYTES,
        PROCESS_MIN_BYTES_COMPILED,
        PROCESS_MIN_BYTES_WARM,
        choose_backend,
    )

    assert choose_backend("auto", 2, PROCESS_MIN_BYTES, compiled_metrics=False) == "processes"
    assert choose_backend("auto", 2, PROCESS_MIN_BYTES - 1, compiled_metrics=False) == "threads"
    # the compiled metrics hold no GIL while they run: threads stay ahead for longer
    big = PROCESS_MIN_BYTES_COMPILED
    assert choose_backend("auto", 2, big - 1, compiled_metrics=True, warm=False) == "threads"
    assert choose_backend("auto", 2, big, compiled_metrics=True, warm=False) == "processes"
    # once the preloaded forkserver runs, a pool costs ~20 ms: processes from less data
    mid = PROCESS_MIN_BYTES_WARM
    assert mid < big
    assert choose_backend("auto", 2, mid, compiled_metrics=True, warm=True) == "processes"
    assert choose_backend("auto", 2, mid - 1, compiled_metrics=True, warm=True) == "threads"
    assert choose_backend("auto", 2, mid, compiled_metrics=True, warm=False) == "threads"
    assert choose_backend("auto", 1, big, compiled_metrics=True, warm=True) == "threads"
    assert choose_backend("auto", 1, 10 * PROCESS_MIN_BYTES) == "threads"
    assert choose_backend("threads", 8, 10 * PROCESS_MIN_BYTES) == "threads"
    with pytest.raises(ValueError, match="unknown backend"):
        choose_backend("gpu", 2, 0)


def test_a_pool_broken_at_the_next_submit_is_a_lost_worker_not_an_internal_error(monkeypatch):
    """CI: a worker died between two results, so the next submit raised BrokenProcessPool
    out of the engine, and `vc` failed with "internal error: BrokenProcessPool"."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from precision_shell.compare.pipeline import engine

    class BreaksAtThirdSubmit(ThreadPoolExecutor):
        submitted = 0

        def submit(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            type(self).submitted += 1
            if type(self).submitted >= 3:
                raise BrokenProcessPool("A child process terminated abruptly")
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(engine, "_make_pool", lambda backend, workers: BreaksAtThirdSubmit(1))
    got: list[int] = []
    with pytest.raises(engine.WorkersLost, match="a compare worker died"):
        for result in run_tasks(_tasks(40), CompareOptions(), workers=1, work=_sleepy_work([])):
            got.append(result.seq)
    assert got == list(range(len(got))) and got  # what came back before is kept, in order


def test_ctrl_c_while_a_submit_forks_a_worker_leaves_no_worker_unjoined(monkeypatch):
    """Ctrl-C landing between the fork of a worker and the start of the thread that joins the
    pool's workers left that worker unjoined: it read the pool's queues after they were
    dropped and printed a FileNotFoundError traceback (about 2 runs in 5 interrupted 0.7 s
    into a process-backed vc). The Ctrl-C now comes once the submit is whole."""
    import signal

    from precision_shell.compare.pipeline import engine
    from precision_shell.compare.pipeline.process_start import process_context

    spawn = engine._ProcessPool._spawn_process

    def spawn_then_ctrl_c(self):  # noqa: ANN001, ANN202
        spawn(self)
        os.kill(os.getpid(), signal.SIGINT)  # lands right after the fork

    monkeypatch.setattr(engine._ProcessPool, "_spawn_process", spawn_then_ctrl_c)
    pool = engine._ProcessPool(1, process_context())
    with pytest.raises(KeyboardInterrupt):
        pool.submit(abs, -1)
    workers = list(pool._processes.values())
    try:
        assert len(workers) == 1
        assert pool._executor_manager_thread is not None  # what joins the worker runs
        pool.shutdown(wait=True, cancel_futures=True)
        assert [worker.exitcode for worker in workers] == [0]  # joined, ended cleanly
    finally:  # an unjoined worker would wait for tasks, and the exit of pytest for it
        for worker in workers:
            if worker.exitcode is None:
                worker.kill()
                worker.join()
