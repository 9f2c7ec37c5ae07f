"""`vc` on a statistics-only dump: every statistics file against its benchmark tensors.

The plan is the tensor compare's (`benchmark_plan(statistics=True)`: the same op and tensor
matching); each task reads one small CSV and the benchmark `.npy` tensors its rows stand for,
whose statistics are computed once per file (a producer's output is its consumer's input).
With `-lt`/`-rt` the benchmark side may be another dump instead (`device_plan(statistics=
True)`: ops paired by name, rows by slot): a statistics dump, or a tensor dump whose
statistics are computed (`sides`); either side may be the tensor dump. Benchmark reads run
on a thread pool (numpy releases the GIL while it reduces). Ctrl-C stops at the next file;
the rows so far are written and the summary says partial.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.pipeline.plan import (
    ComparePlan,
    FileTask,
)
from precision_shell.compare.pipeline.plan_memos import PlanMemos
from precision_shell.compare.plan_selection import EmptySlice, empty_slice, slice_plan
from precision_shell.compare.results.schema import CONSTANT_INPUT
from precision_shell.compare.results.summary import CompareRecord, RunSummary, SummaryBacked
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.compare.statistics.judge import (
    DEVIATES,
    judge,
    judge_rows,
    made_here,
    unit_roundoff,
)
from precision_shell.compare.statistics.sides import SideStatistics, side_statistics
from precision_shell.compare.statistics.sources import blame_sources
from precision_shell.compare.statistics.table import (
    StatisticsRow,
    as_drift,
    row_of,
    write_statistics_csv,
)
from precision_shell.compare.statistics.values import statistics_of
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.stats_dump import StatsRow
from precision_shell.progress import ProgressSink, Tick
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import DumpSlice, RunIndex, Workspace

STATISTICS_MODE = "statistics"


@dataclass
class StatisticsCompare:
    """One statistics compare (one CSV): a (rank, step) dump against the benchmark."""

    plan: ComparePlan
    csv_path: Path
    rows: list[StatisticsRow]
    files_done: int
    interrupted: bool = False
    elapsed: float = 0.0
    where: DumpSlice | None = None
    graph: GraphIndex | None = None

    @property
    def against_device(self) -> bool:
        """True when the right side is another device dump (statistics or tensors), not
        benchmark `.npy` tensors."""
        return any(
            t.fallback is not None and t.fallback.benchmark_kind != "npy" for t in self.plan.tasks
        )

    @property
    def failing(self) -> list[StatisticsRow]:
        return [r for r in self.rows if r.kind == "output" and r.deviates]

    def not_compared_reasons(self) -> dict[str, int]:
        """Rows not compared, by the reason before its first colon ("constant input")."""
        reasons: dict[str, int] = {}
        for row in self.rows:
            if not row.compared:
                key = row.reason.split(":")[0] or "not compared"
                reasons[key] = reasons.get(key, 0) + 1
        return reasons

    def record(self) -> CompareRecord:
        compared = [r for r in self.rows if r.compared]
        failing = self.failing
        reasons = self.not_compared_reasons()
        worst = sorted(
            (r for r in compared if r.deviation is not None and r.kind == "output"),
            key=lambda r: -(r.deviation or 0.0),
        )
        return CompareRecord(
            mode=STATISTICS_MODE,
            left=self.plan.left,
            right=self.plan.right,
            csv=str(self.csv_path),
            rows=len(self.rows),
            compared=len(compared),
            constant_inputs=0,
            failed=len(self.rows) - len(compared),
            failing_outputs=len(failing),
            files_done=self.files_done,
            files_total=len(self.plan.tasks),
            interrupted=self.interrupted,
            failed_by_reason=reasons,
            worst=[r.to_json() for r in worst[:10]],
            failing=[r.to_json() for r in failing[:50]],
            skipped=self.plan.skipped[:50],
            elapsed_s=round(self.elapsed, 3),
        )


@dataclass
class StatisticsCompareResult(SummaryBacked):
    """`vc` on statistics dumps: one compare per selected (rank, step)."""

    out_dir: Path
    summary: RunSummary
    compares: list[StatisticsCompare]
    notes: list[str] = field(default_factory=list)
    index_warnings: list[str] = field(default_factory=list)  # of the dirs given by path

    @property
    def primary(self) -> StatisticsCompare:
        return self.compares[0]


class _BenchmarkStatistics:
    """Statistics of each benchmark file, computed once (threads share it)."""

    def __init__(self) -> None:
        self._done: dict[str, dict[str, float] | str] = {}
        self._lock = threading.Lock()

    def of(self, path: str) -> dict[str, float] | str:
        with self._lock:
            hit = self._done.get(path)
        if hit is not None:
            return hit
        try:
            found: dict[str, float] | str = statistics_of(load_benchmark(path), path)
        except PrecisionError as exc:
            found = str(exc)
        with self._lock:
            self._done[path] = found
        return found


def _origin_count(shape: tuple[int, ...] | None) -> int | None:
    return math.prod(shape) if shape else None


def _side(path: str, kind: str) -> SideStatistics | str:
    try:
        return side_statistics(path, kind)
    except PrecisionError as exc:
        return str(exc)


def compare_task(
    task: FileTask, number: int, benchmarks: _BenchmarkStatistics
) -> list[StatisticsRow]:
    """The rows of one dump file (a file that does not read: one row saying why). Its
    benchmark is `.npy` tensors, or another dump file's statistics (`MappingRow.benchmark_kind`
    "stats", or "dump": a tensor dump's, computed here); either side may be a tensor dump."""
    device_side = _side(task.device_file, task.device_kind)
    if isinstance(device_side, str):
        empty = StatsRow("output", 0, "", "ND", None)
        return [
            row_of(number, task.op_type, task.op_name, "*", "output", 0, empty, None, device_side)
        ]
    dump = device_side.dump
    other: SideStatistics | str | None = None  # the benchmark dump file's, read once
    fallback = task.fallback
    if fallback is not None and fallback.benchmark_path and fallback.benchmark_kind != "npy":
        other = _side(fallback.benchmark_path, fallback.benchmark_kind)
    inputs = list(dump.inputs)
    if isinstance(other, SideStatistics):
        inputs += other.dump.inputs
    input_unit = max((unit_roundoff(r.dtype) for r in inputs), default=0.0)
    rows = []
    for device in (*dump.inputs, *dump.outputs):
        mapping = task.mapping(device.kind, device.index)
        slot = (task.op_type, task.op_name, mapping.ground_truth, device.kind, device.index)
        bench: dict[str, float] | StatsRow | str
        if isinstance(problem := device_side.row(device.kind, device.index), str):
            bench = problem  # the device tensor does not decode
        elif mapping.benchmark_path is None:
            bench = mapping.reason or "no benchmark for this tensor"
        elif mapping.benchmark_kind == "npy":
            bench = benchmarks.of(mapping.benchmark_path)
        elif isinstance(other, SideStatistics):
            bench = other.row(device.kind, device.index)
        else:
            bench = other or f"{mapping.benchmark_path}: not read"
        if isinstance(bench, str):  # why there is nothing to judge against
            rows.append(row_of(number, *slot, device, None, bench))
            continue
        unit = input_unit if device.kind == "output" else 0.0
        origin = _origin_count(mapping.origin_shape)
        if isinstance(bench, StatsRow):
            judgement = judge_rows(device, bench, origin, unit)
        else:
            judgement = judge(device, bench, origin, unit)
        rows.append(row_of(number, *slot, device, judgement))
    return _made_here_or_drift(rows)


def _made_here_or_drift(rows: list[StatisticsRow]) -> list[StatisticsRow]:
    """Outputs beyond rounding that their inputs explain, and inputs beyond rounding: drift."""
    inputs = [r.deviation for r in rows if r.kind == "input" and r.deviation is not None]
    worst_input = max(inputs) if inputs else None
    out = []
    for row in rows:
        if row.verdict == DEVIATES and (
            row.kind == "input" or not made_here(row.deviation or 0.0, worst_input)
        ):
            row = as_drift(row)
        out.append(row)
    return out


def execute_statistics_plan(
    plan: ComparePlan,
    csv_path: Path,
    workers: int,
    progress: ProgressSink,
    graph: GraphIndex | None = None,
) -> StatisticsCompare:
    """Compare every task of `plan` (in order), write the CSV, return the compare. With the
    dump's `graph`, deviations born at its constants and input data fail where they are read
    (`sources.blame_sources`)."""
    started = time.monotonic()
    benchmarks = _BenchmarkStatistics()
    rows: list[StatisticsRow] = []
    done = 0
    interrupted = False
    progress.start(len(plan.tasks), 0)
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures = [
                pool.submit(compare_task, task, task.group_index, benchmarks) for task in plan.tasks
            ]
            try:
                for future in futures:
                    found = future.result()
                    rows.extend(found)
                    done += 1
                    progress.advance(Tick(1, 0, len(found)))
            except KeyboardInterrupt:
                interrupted = True
                for future in futures:
                    future.cancel()
    finally:
        progress.stop()
    rows = blame_sources(rows, graph)
    write_statistics_csv(csv_path, rows)
    elapsed = time.monotonic() - started
    return StatisticsCompare(plan, csv_path, rows, done, interrupted, elapsed, graph=graph)


def statistics_plans(
    ws: Workspace,
    run: RunIndex,
    slices: list[DumpSlice],
    graph_of: Callable[[DumpSlice], GraphIndex],
) -> tuple[list[tuple[DumpSlice, ComparePlan, GraphIndex]], list[EmptySlice]]:
    """A statistics plan per selected (rank, step) whose dump belongs to its graph, and the
    selected ones with nothing to compare."""
    plans = []
    empty: list[EmptySlice] = []
    memos = PlanMemos(ws)
    for where in slices:
        graph = graph_of(where)
        plan = slice_plan(ws, run, graph, where, memos, statistics=True)
        if isinstance(plan, EmptySlice):
            empty.append(plan)
        elif plan.tasks:
            plans.append((where, plan, graph))
        else:
            empty.append(empty_slice(where, graph, "statistics dump"))
    memos.save()
    if not plans:
        raise PrecisionError(
            f"{run.name}: no selected rank and step has a statistics dump of its graph"
        )
    return plans, empty


def summary_of(ws: Workspace, rule: ThresholdRule, compares: list[StatisticsCompare]) -> RunSummary:
    results: list[dict[str, Any]] = []
    for compare in compares:
        where = compare.where
        failing = compare.failing
        results.append(
            {
                "rank": where.rank if where is not None else None,
                "step": where.step if where is not None else None,
                "graph": ",".join(where.graph_names) if where is not None else None,
                "csv": str(compare.csv_path),
                "right": compare.plan.right,
                "rows": len(compare.rows),
                "failed": len(failing),
                "first_failed_op": failing[0].op_name if failing else None,
                # as a tensor compare's: rows that could not be compared, constants apart
                "not_compared": sum(
                    n for why, n in compare.not_compared_reasons().items() if why != CONSTANT_INPUT
                ),
                "partial": compare.interrupted,
            }
        )
    return RunSummary(
        workspace=str(ws.root), rule=rule, primary=compares[0].record(), results=results
    )
