"""Several compares as one engine run: the tasks of every plan (one per rank, step or rank
pair) go through one worker pool, and each plan's rows stream into its own CSV.

Ranks are just more tasks: one pool start-up, one queue kept full across the plans' seams,
so comparing 8 ranks keeps the throughput of one. Results come back in task order, so a
plan's CSV is complete before the next plan's first row arrives.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Generator, Sequence
from contextlib import ExitStack, closing
from pathlib import Path

from precision_shell.compare.pipeline.engine import choose_backend, default_workers, run_tasks
from precision_shell.compare.pipeline.execute import CompareRun
from precision_shell.compare.pipeline.plan import ComparePlan
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.results.schema import ResultCsvWriter
from precision_shell.compare.results.tally import CompareTally
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.progress import ProgressSink, Tick
from precision_shell.workspace.output_files import create_output_file


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def execute_plans(
    plans: Sequence[ComparePlan],
    csv_paths: Sequence[Path],
    options: CompareOptions,
    rule: ThresholdRule,
    workers: int = 0,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
    backend: str = "auto",
) -> list[CompareRun]:
    """Run every plan's tasks in one engine run, plan k's rows into `csv_paths[k]`.

    A plan's `elapsed` is the time from the end of the plan before it to its last row, so the
    plans' times add up to the whole run. Ctrl-C keeps the rows written; the plans it cut
    short (and those it never reached: files_done 0) are `interrupted`."""
    progress = progress or ProgressSink()
    tasks = [task for plan in plans for task in plan.tasks]
    owner = [k for k, plan in enumerate(plans) for _ in plan.tasks]
    total_bytes = sum(_size(t.device_file) for t in tasks)
    backend = choose_backend(backend, default_workers(workers), total_bytes)
    runs = [
        CompareRun(
            plan.mode,
            plan.left,
            plan.right,
            path,
            len(plan.tasks),
            CompareTally(rule),
            skipped=plan.skipped,
        )
        for plan, path in zip(plans, csv_paths, strict=True)
    ]
    cancel = cancel or threading.Event()
    mark = time.perf_counter()
    with ExitStack() as files:
        writers = [
            ResultCsvWriter(files.enter_context(create_output_file(path)), path, options.overflow)
            for path in csv_paths
        ]
        progress.start(len(tasks), total_bytes)
        results = run_tasks(tasks, options, workers, cancel, backend=backend)
        assert isinstance(results, Generator)  # run_tasks is a generator: closing() needs close()
        try:
            with closing(results):
                for position, result in enumerate(results):
                    k = owner[position]
                    run = runs[k]
                    writers[k].write(result.rows)
                    run.tally.add(result.rows)
                    run.bytes_read += result.bytes_read
                    run.files_done += 1
                    progress.advance(Tick(bytes=result.bytes_read, items=len(result.rows)))
                    if run.files_done == run.tasks:
                        now = time.perf_counter()
                        run.elapsed, mark = now - mark, now
        except KeyboardInterrupt:
            pass
        finally:
            progress.stop()
            cut = next((run for run in runs if run.files_done < run.tasks), None)
            if cut is not None:
                cut.elapsed = time.perf_counter() - mark
    for run in runs:
        run.interrupted = run.files_done < run.tasks
    return runs
