"""Compares run by the engine: each plan's rows stream into its own CSV (several plans, one
per rank, step or rank pair, go through one worker pool: ranks are just more tasks).

Rows are written as they complete, in execution order; Ctrl-C stops the engine, and what
was written stays (the summary says the run was interrupted). So does a pool that lost a
worker (the runs it cut short say why: `lost`).

Given a place for it (`columns_cache`), the rows written are also gathered as typed columns
(`ColumnsBuilder`, a few thousand rows at a time while the workers compute), and once a
plan's CSV is closed for good, whole or partial, they become its columns cache: the first
`vcs` or `report` on the result then reads arrays instead of parsing the CSV.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.pipeline.engine import (
    SharedPool,
    WorkersLost,
    choose_backend,
    default_workers,
    run_tasks,
)
from precision_shell.compare.pipeline.journal import JOURNAL_NAME, RunJournal
from precision_shell.compare.pipeline.plan import ComparePlan
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.results.columns import ColumnsBuilder
from precision_shell.compare.results.columns_cache import caching_enabled, store_columns
from precision_shell.compare.results.schema import ResultCsvWriter, ResultRow, RowLayout, csv_header
from precision_shell.compare.results.summary import (
    SUMMARY_NAME,
    CompareRecord,
    RunSummary,
    SummaryBacked,
)
from precision_shell.compare.results.tally import CompareTally
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.progress import ProgressSink, Tick
from precision_shell.workspace.output_files import create_output_file, create_unique_dir

# vc caches the columns of at most this many CSVs per run (the primary first): the cache dir
# keeps the newest files only, and the first slices are those read most
CACHED_PLANS = 8
# Rows gathered between two encodings (a short pause of the writer). Small, so that little is
# left to encode after the last row, when the workers are done and nothing else runs: per row
# a chunk of 1,000 costs what one of 8,192 does (5.8 vs 5.9 us); fewer would pass the columns'
# coded-or-plain sample (`columns._SAMPLE`), which sets the floor anyway.
_CACHE_CHUNK = 1_000


@dataclass
class CompareRun:
    """What one compare produced."""

    plan_mode: str
    left: str
    right: str
    csv_path: Path
    tasks: int
    tally: CompareTally
    elapsed: float = 0.0
    bytes_read: int = 0
    interrupted: bool = False
    files_done: int = 0
    skipped: list[str] = field(default_factory=list)  # dump files the plan could not place
    repeated: list[tuple[str, int, str]] = field(default_factory=list)  # see ComparePlan
    resumed_from: int | None = None  # `vc --resume`: the files an earlier run had compared
    lost: str | None = None  # why the pool stopped running it, when it lost a worker mid-run

    @property
    def mb_per_s(self) -> float:
        return self.bytes_read / 1e6 / self.elapsed if self.elapsed > 0 else 0.0

    def record(self) -> CompareRecord:
        """This compare as the summary keeps it."""
        return CompareRecord.from_tally(
            self.tally,
            mode=self.plan_mode,
            left=self.left,
            right=self.right,
            csv=self.csv_path,
            files_done=self.files_done,
            files_total=self.tasks,
            interrupted=self.interrupted,
            skipped=self.skipped,
            elapsed_s=self.elapsed,
            repeated=self.repeated,
            resumed_from=self.resumed_from,
        )


def result_dir(base: Path, now: _dt.datetime | None = None) -> tuple[Path, str]:
    """A fresh `<YYYYmmddHHMMSS>` dir under base (suffixed when two runs share a second).

    Created with one `mkdir` per candidate name, so concurrent runs never share a dir; `base`
    must exist (Workspace.output_dir). Raises OutputError."""
    stamp = result_stamp(now)
    return create_unique_dir(base, stamp), stamp


def given_result_dir(output: Path) -> tuple[Path, str]:
    """`-o DIR`: the result dir itself (relative to the cwd; created if missing). One result
    per dir: one already holding a summary.json is refused (a second run's CSVs, made
    O_EXCL, could not go beside it anyway). Raises PrecisionError."""
    out = output if output.is_absolute() else Path.cwd() / output
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PrecisionError(f"{output}: not a directory (give a dir for -o)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PrecisionError(f"{output}: cannot create: {exc.strerror}") from None
    if (out / SUMMARY_NAME).exists():
        kept = (out / JOURNAL_NAME).exists()  # a run stopped there, kept for --resume
        raise PrecisionError(
            f"{output}: already holds a summary.json; give an empty or new dir for -o"
            + (f" (its run was cut short: vc --resume -o {output} completes it)" if kept else "")
        )
    return out, result_stamp()


def result_stamp(now: _dt.datetime | None = None) -> str:
    """`YYYYmmddHHMMSS`: the name of a result dir and the stamp in its CSV names."""
    return (now or _dt.datetime.now()).strftime("%Y%m%d%H%M%S")


def execute_plan(
    plan: ComparePlan,
    csv_path: Path,
    options: CompareOptions,
    rule: ThresholdRule,
    workers: int = 0,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
    backend: str = "auto",
    pool: SharedPool | None = None,
    journal: RunJournal | None = None,
    journal_first: int = 0,
) -> CompareRun:
    """Run the plan's tasks and stream their rows into a new `csv_path`, in execution order
    (a full disk says so, naming the CSV whose write failed; Ctrl-C keeps the rows written)."""
    (run,) = execute_plans(
        [plan],
        [csv_path],
        options,
        rule,
        workers,
        progress,
        cancel,
        backend,
        pool,
        journal=journal,
        journal_first=journal_first,
    )
    return run


def execute_plans(
    plans: Sequence[ComparePlan],
    csv_paths: Sequence[Path],
    options: CompareOptions,
    rule: ThresholdRule,
    workers: int = 0,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
    backend: str = "auto",
    pool: SharedPool | None = None,
    journal: RunJournal | None = None,
    journal_first: int = 0,
    columns_cache: Callable[[], Path] | None = None,
) -> list[CompareRun]:
    """Run every plan's tasks in one engine run, plan k's rows into `csv_paths[k]`.

    A plan's `elapsed` is the time from the end of the plan before it to its last row, so the
    plans' times add up to the whole run. Ctrl-C keeps the rows written; the plans it cut
    short (and those it never reached: files_done 0) are `interrupted`; a pool that lost a
    worker ends the run the same way, and the runs it cut say why (`lost`).

    With a `journal` (plan k is its plan `journal_first + k`) each task is journaled once its
    rows are flushed, and the tasks it already holds are not run again: their rows stay in the
    CSV (cut back to them) and count in the tally; the other tasks' rows are appended.

    With `columns_cache` (the cache dir), each of the first `CACHED_PLANS` CSVs made anew gets
    its columns cache from the rows written, once it is closed: when its plan is done, or at
    the end of a partial run (a row Ctrl-C cut in the middle of its writing leaves that CSV to
    be cached by its first reader)."""
    progress = progress or ProgressSink()
    runs = [
        CompareRun(
            plan.mode,
            plan.left,
            plan.right,
            path,
            len(plan.tasks),
            CompareTally(rule),
            skipped=plan.skipped,
            repeated=plan.repeated,
        )
        for plan, path in zip(plans, csv_paths, strict=True)
    ]
    cancel = cancel or threading.Event()
    lost: str | None = None
    if columns_cache is not None and not caching_enabled():
        columns_cache = None
    columns: list[ColumnsBuilder | None] = [None] * len(runs)
    writing: int | None = None  # the plan whose rows are being written (Ctrl-C's victim)
    with ExitStack() as files:
        writers: list[ResultCsvWriter] = []
        plan_files = [files.enter_context(ExitStack()) for _ in runs]  # closed when done
        for k, (run, path) in enumerate(zip(runs, csv_paths, strict=True)):
            if journal is None:
                fh = plan_files[k].enter_context(create_output_file(path))
                writers.append(ResultCsvWriter(fh, path, options.overflow))
                rows: list[ResultRow] = []
            else:
                writer, rows = journal.open_csv(
                    journal_first + k, path, options.overflow, plan_files[k]
                )
                writers.append(writer)
                run.tally.add(rows)
                run.files_done = journal.progress(journal_first + k).done
                run.resumed_from = run.files_done if journal.resumed else None
            if columns_cache is not None and k < CACHED_PLANS and not rows:
                layout = RowLayout.of(path, csv_header(options.overflow))
                builder = ColumnsBuilder(layout, chunk=_CACHE_CHUNK)
                columns[k] = builder
                writers[k].on_written = builder.add_written
        left = [plan.tasks[run.files_done :] for plan, run in zip(plans, runs, strict=True)]
        tasks = [task for part in left for task in part]
        owner = [k for k, part in enumerate(left) for _ in part]
        total_bytes = sum(_size(t.device_file) for t in tasks)
        backend = choose_backend(backend, default_workers(workers), total_bytes)
        mark = time.perf_counter()
        progress.start(len(tasks), total_bytes)
        results = run_tasks(tasks, options, workers, cancel, backend=backend, pool=pool)
        assert isinstance(results, Generator)  # run_tasks is a generator: closing() needs close()
        try:
            with closing(results):
                for position, result in enumerate(results):
                    k = owner[position]
                    run = runs[k]
                    writing = k
                    writers[k].write(result.rows)
                    writing = None
                    if journal is not None:
                        journal.record(journal_first + k, tasks[position], result.rows)
                    run.tally.add(result.rows)
                    run.bytes_read += result.bytes_read
                    run.files_done += 1
                    progress.advance(Tick(bytes=result.bytes_read, items=len(result.rows)))
                    if run.files_done == run.tasks:
                        now = time.perf_counter()
                        run.elapsed, mark = now - mark, now
                        plan_files[k].close()  # the CSV is whole: cache its columns now
                        _cache_columns(run.csv_path, columns, k, columns_cache)
        except KeyboardInterrupt:
            if writing is not None:  # its CSV may hold rows its columns lack
                columns[writing] = None
        except WorkersLost as exc:  # raised between two results: every CSV is whole so far
            lost = str(exc)
        finally:
            progress.stop()
            cut = next((run for run in runs if run.files_done < run.tasks), None)
            if cut is not None:
                cut.elapsed = time.perf_counter() - mark
    for run in runs:
        run.interrupted = run.files_done < run.tasks
        run.lost = lost if run.interrupted else None
    try:  # the CSVs are closed: those not done yet are as partial as they stay
        for k, run in enumerate(runs):
            _cache_columns(run.csv_path, columns, k, columns_cache)
    except KeyboardInterrupt:
        pass  # a second Ctrl-C: their first reader caches them
    return runs


def _cache_columns(
    csv_path: Path,
    columns: list[ColumnsBuilder | None],
    k: int,
    cache_dir: Callable[[], Path] | None,
) -> None:
    """Plan k's columns (if gathered) into the columns cache of its closed CSV."""
    builder, columns[k] = columns[k], None
    if builder is None or cache_dir is None:
        return
    store_columns(csv_path, cache_dir, builder.layout, [], builder.arrays())


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@dataclass
class VectorCompareResult(SummaryBacked):
    """`vc`: the primary compare, and the device-vs-device one when a second run exists."""

    out_dir: Path
    summary: RunSummary
    primary: CompareRun
    secondary: CompareRun | None = None
    notes: list[str] = field(default_factory=list)
    index_warnings: list[str] = field(default_factory=list)  # of the dirs given by path
    # the other (rank, step) compares of a run with several dump dirs, in order
    slices: list[tuple[Any, CompareRun]] = field(default_factory=list)

    def first_failing(self, n: int = 10) -> list[ResultRow]:
        return self.primary.tally.failing[:n]
