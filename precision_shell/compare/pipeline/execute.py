"""One whole-network compare, end to end: plan -> engine -> CSV + summary.json.

Rows are written as they complete, in execution order; Ctrl-C stops the engine, and what
was written stays (the summary says the run was interrupted).
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.pipeline.engine import choose_backend, default_workers, run_tasks
from precision_shell.compare.pipeline.plan import ComparePlan
from precision_shell.compare.pipeline.worker import CompareOptions, ResultRow
from precision_shell.compare.results.csv_writer import CompareTally, ResultCsvWriter, row_json
from precision_shell.progress import ProgressSink, Tick


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

    @property
    def mb_per_s(self) -> float:
        return self.bytes_read / 1e6 / self.elapsed if self.elapsed > 0 else 0.0


def result_dir(base: Path, now: _dt.datetime | None = None) -> tuple[Path, str]:
    """A fresh `<YYYYmmddHHMMSS>` dir under base (suffixed when two runs share a second)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d%H%M%S")
    candidate = base / stamp
    n = 1
    while candidate.exists():
        candidate = base / f"{stamp}_{n}"
        n += 1
    candidate.mkdir(parents=True)
    return candidate, stamp


def execute_plan(
    plan: ComparePlan,
    csv_path: Path,
    options: CompareOptions,
    cosine_threshold: float,
    workers: int = 0,
    progress: ProgressSink | None = None,
    cancel: threading.Event | None = None,
    backend: str = "auto",
) -> CompareRun:
    progress = progress or ProgressSink()
    total_bytes = sum(_size(t.device_file) for t in plan.tasks)
    backend = choose_backend(backend, default_workers(workers), total_bytes)
    tally = CompareTally(cosine_threshold)
    run = CompareRun(
        plan.mode, plan.left, plan.right, csv_path, len(plan.tasks), tally, skipped=plan.skipped
    )
    cancel = cancel or threading.Event()
    t0 = time.perf_counter()
    with ResultCsvWriter(csv_path, options.overflow) as writer:
        progress.start(len(plan.tasks), total_bytes)
        results = run_tasks(plan.tasks, options, workers, cancel, backend=backend)
        try:
            # closing() stops the engine (and its threads) at once when the loop is left early
            with closing(results):
                for result in results:
                    writer.write(result.rows)
                    tally.add(result.rows)
                    run.bytes_read += result.bytes_read
                    run.files_done += 1
                    # reported once written, so what the display counts is on disk
                    progress.advance(Tick(bytes=result.bytes_read, items=len(result.rows)))
        except KeyboardInterrupt:
            run.interrupted = True
        finally:
            progress.stop()
            run.elapsed = time.perf_counter() - t0
    # a cancel event set from outside ends the engine early without an exception
    run.interrupted = run.interrupted or run.files_done < len(plan.tasks)
    return run


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def summary_payload(
    workspace: str,
    run: CompareRun,
    thresholds: dict[str, float],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    tally = run.tally
    payload: dict[str, Any] = {
        "workspace": workspace,
        "created": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "rows": tally.rows,
        "compared": tally.compared,
        "failed": tally.failed,
        "thresholds": thresholds,
        "worst": [row_json(r) for r in tally.worst(10)],
        "root_causes": [],
        "advice": [],
        "mode": run.plan_mode,
        "left": run.left,
        "right": run.right,
        "csv": str(run.csv_path),
        "failed_by_reason": dict(tally.failed_reasons),
        "below_threshold": [row_json(r) for r in tally.below[:50]],
        "interrupted": run.interrupted,
        "skipped": run.skipped[:50],
        "elapsed_s": round(run.elapsed, 3),
    }
    payload.update(extra or {})
    return payload


@dataclass
class VectorCompareResult:
    """`vc`: the primary compare, and the device-vs-device one when a second run exists."""

    out_dir: Path
    summary_path: Path
    primary: CompareRun
    secondary: CompareRun | None = None
    cosine_threshold: float = 0.98
    notes: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str | None:
        interrupted = self.primary.interrupted or (
            self.secondary is not None and self.secondary.interrupted
        )
        return "vc: interrupted; the rows written so far are kept" if interrupted else None

    def first_below(self, n: int = 10) -> list[ResultRow]:
        return self.primary.tally.below[:n]
