"""The compare plan: one `FileTask` per device dump file, in execution order.

A task is plain picklable data: the device file, and for each of its tensors the mapping
row that says which benchmark stands for it (or why none does). Comparing a task is a pure
function of the task (`compare.worker.compare_file`), so any executor can run the tasks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.pipeline.fusion_groups import FusionGroup, fusion_groups
from precision_shell.compare.pipeline.matcher import (
    Origin,
    input_source,
    is_constant,
    output_origin,
    output_source,
)
from precision_shell.formats.benchmark import BenchmarkIndex, benchmark_key, scan_benchmark_dir
from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.listing_text import in_workspace
from precision_shell.pickling import by_fields
from precision_shell.workspace.benchmark_dirs import scope_of
from precision_shell.workspace.dump_index import DumpFileRef, DumpIndex
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import RunIndex, Workspace


@by_fields
@dataclass(frozen=True, slots=True)
class MappingRow:
    """Which benchmark tensor stands for one device tensor."""

    ground_truth: str  # origin names joined by "," or "*" when there is none
    benchmark_path: str | None  # a benchmark .npy, or another run's dump file
    benchmark_kind: str = "npy"  # "npy" | "dump" (a tensor dump) | "stats" (a statistics dump)
    benchmark_slot: tuple[str, int] | None = None  # (kind, index) inside a benchmark dump
    origin_format: str | None = None
    origin_shape: tuple[int, ...] | None = None
    reason: str = ""  # why there is no benchmark


@by_fields
@dataclass(frozen=True, slots=True)
class FileTask:
    seq: int  # position in execution order; rows are written in this order
    group_index: int
    op_name: str
    op_type: str
    device_file: str
    inputs: tuple[MappingRow, ...]  # by input index
    outputs: tuple[MappingRow, ...]  # by output index; outputs past the descs use outputs[0]
    fallback: MappingRow | None = None  # device mode: every tensor, same slot in the benchmark
    npu_dump: str = ""  # the CSV `NPUDump` cell ("" = op_name)
    ground_truth: str = ""  # the CSV `GroundTruth` cell ("" = each mapping row's own)
    device_kind: str = "dump"  # "dump" (a tensor dump) | "stats" (a statistics dump)
    # benchmark .npy files no later task of the plan compares against (`last_uses`), sorted:
    # the worker forgets what it keeps of them once this task is done. Derived from the rows,
    # so out of the repr, which the plan's fingerprint hashes: a journal written before this
    # field existed still resumes.
    last_uses: tuple[str, ...] = field(default=(), repr=False)

    def rows(self) -> tuple[MappingRow, ...]:
        """Every mapping row of the task: inputs, outputs, then the fallback if any."""
        return (*self.inputs, *self.outputs, *((self.fallback,) if self.fallback else ()))

    def mapping(self, kind: str, index: int) -> MappingRow:
        if self.fallback is not None:
            return self.fallback
        rows = self.inputs if kind == "input" else self.outputs
        if index < len(rows):
            return rows[index]
        if kind == "output" and rows:
            return rows[0]
        return MappingRow("*", None, reason=f"the graph has no {kind} {index} for this op")


@dataclass
class ComparePlan:
    tasks: list[FileTask]
    mode: str  # "benchmark" | "device" | "statistics"
    left: str
    right: str
    graph: str | None
    skipped: list[str]  # ops with dump files but no graph op, etc.
    # ops with several dump files in this dump dir (run in a loop): (op, files, the one
    # compared: the newest)
    repeated: list[tuple[str, int, str]] = field(default_factory=list)
    # what indexing the dirs given by path (-lt/-rt) warned of, for the result to show; the
    # workspace's own dirs warn with the workspace
    index_warnings: list[str] = field(default_factory=list)


def repeated_dumps(dumps: DumpIndex, names: list[tuple[str, str]]) -> list[tuple[str, int, str]]:
    """(op, number of dump files, the newest's name) of each op dumped more than once;
    `names` are (op name, its name as dump files spell it)."""
    found = []
    for op, dump_name in names:
        refs = dumps.for_op(dump_name)
        if len(refs) > 1:
            found.append((op, len(refs), refs[-1].file_name))
    return found


class GraphPlanMemo:
    """What `benchmark_plan` works out from the graph and the benchmark tensors alone: each
    op's name as dump files spell it, the fusion groups, each op's benchmark rows. Kept
    across the plans of one run's dump dirs (ranks, steps) against one graph, where only the
    dumped ops and their files differ: a rank's plan then costs its dump files, not its
    graph (on the large demo's 8 ranks: 36 ms a plan without, 5 ms with). A memo serves one
    (graph, benchmarks) pair, held so neither can be replaced by another at its address;
    given another pair it starts over."""

    def __init__(self) -> None:
        self._graph: GraphIndex | None = None
        self._benchmarks: BenchmarkIndex | None = None
        self.named: list[tuple[OpRecord, str]] | None = None  # (record, dump name)
        self.groups: dict[str, FusionGroup] | None = None
        self.rows: dict[str, tuple[tuple[MappingRow, ...], tuple[MappingRow, ...]]] = {}

    @property
    def graph(self) -> GraphIndex | None:
        return self._graph

    @property
    def benchmarks(self) -> BenchmarkIndex | None:
        return self._benchmarks

    def serves(self, graph: GraphIndex, benchmarks: BenchmarkIndex | None) -> bool:
        return graph is self._graph and benchmarks is self._benchmarks

    def serving(self, graph: GraphIndex, benchmarks: BenchmarkIndex | None) -> GraphPlanMemo:
        if not self.serves(graph, benchmarks):
            self._graph, self._benchmarks = graph, benchmarks
            self.named, self.groups, self.rows = None, None, {}
        return self


def _dumped_ops(
    graph: GraphIndex,
    dumps: DumpIndex,
    statistics: bool = False,
    memo: GraphPlanMemo | None = None,
) -> tuple[list[tuple[OpRecord, DumpFileRef]], list[str]]:
    """Graph ops that have a dump file (the newest; of statistics dumps with `statistics`),
    ordered by id then dump timestamp; and the dump files whose op the graph does not have."""
    files_of = dumps.stats_for_op if statistics else dumps.for_op
    named = memo.named if memo is not None else None
    if named is None:
        named = [(rec, sanitize_dump_name(rec.name)) for rec in graph.records()]
        if memo is not None:
            memo.named = named
    found = []
    matched: set[str] = set()
    for rec, dump_name in named:
        refs = files_of(dump_name)
        if refs:
            found.append((rec, refs[-1]))
            matched.add(dump_name)
    found.sort(key=lambda pair: (pair[0].position, pair[1].timestamp))
    skipped = [
        f"{ref.file_name}: no op {ref.op_name} in the graph"
        for name in dumps.op_names()
        if name not in matched
        for ref in files_of(name)[-1:]
    ]
    return found, skipped


def _benchmark_row(
    benchmark_index: BenchmarkIndex | None,
    origin: Origin | None,
    shape: tuple[int, ...] | None = None,
    constant: bool = False,
) -> MappingRow:
    if origin is None:
        return MappingRow("*", None, reason="no benchmark for this tensor")
    key = benchmark_key(origin.name, origin.index)
    benchmark = benchmark_index.lookup(origin.name, origin.index) if benchmark_index else None
    shape = shape or origin.shape
    if benchmark is None:
        return MappingRow(
            origin.name,
            None,
            origin_format=origin.format,
            origin_shape=shape,
            reason=(
                f"constant input: no benchmark {key}.*.npy (weights are not dumped)"
                if constant
                else f"benchmark {key}.*.npy not found{_in_scope_dir(benchmark_index)}"
            ),
        )
    return MappingRow(origin.name, benchmark.path, origin_format=origin.format, origin_shape=shape)


def _in_scope_dir(index: BenchmarkIndex | None) -> str:
    """` in tf/dump/step1/` for a rank's or step's benchmark dir: the file may well be in
    tf/dump/ itself, which is another step's tensor (and is not used)."""
    if index is None or scope_of(os.path.basename(index.directory)) is None:
        return ""
    return f" in {in_workspace(index.directory)}/"


class _Origins:
    """Benchmark origins of device outputs, with msaccucmp's fallbacks."""

    def __init__(self, graph: GraphIndex, groups: dict[str, FusionGroup]) -> None:
        self.graph = graph
        self.groups = groups

    def of_output(self, op_name: str, k: int) -> Origin | None:
        """The desc's origin; else, as msaccucmp's "rename node" rule, the benchmark op of a
        group of one device op standing for exactly one benchmark op (an op without
        `_datadump_original_op_names` stands for the benchmark op of its own name)."""
        op = self.graph.op(op_name)
        if op is None:
            return None
        origin = output_origin(op, k)
        if origin is not None:
            return origin
        group = self.groups.get(op_name)
        if group is None or len(group.device_ops) != 1 or len(group.original_ops) != 1:
            return None
        desc = op.output_descs[k if k < len(op.output_descs) else 0] if op.output_descs else None
        fmt = desc.origin_format if desc is not None else None
        shape = desc.origin_shape if desc is not None else None
        return Origin(group.original_ops[0], k, fmt, shape)

    def of_source(self, source: tuple[str, int] | None) -> Origin | None:
        return self.of_output(*source) if source is not None else None


def _op_rows(
    graph: GraphIndex, rec: OpRecord, origins: _Origins, benchmarks: BenchmarkIndex | None
) -> tuple[tuple[MappingRow, ...], tuple[MappingRow, ...]]:
    """The benchmark rows of an op's inputs and outputs: what stands for each."""
    op = graph.op(rec.name)
    assert op is not None
    inputs = []
    for k in range(len(rec.data_inputs)):
        source = input_source(graph, rec.name, k)
        origin = origins.of_source(source)
        desc = op.input_descs[k] if k < len(op.input_descs) else None
        shape = desc.origin_shape if desc is not None else None
        # GE folds weights into constants; the benchmark run dumps no tensor for them.
        constant = is_constant(graph, source)
        inputs.append(_benchmark_row(benchmarks, origin, shape, constant))
    outputs = []
    for k in range(max(len(op.output_descs), 1)):
        origin = origins.of_output(rec.name, k)
        if origin is None:
            origin = origins.of_source(output_source(graph, rec.name, k))
        outputs.append(_benchmark_row(benchmarks, origin))
    return tuple(inputs), tuple(outputs)


def last_uses(
    rows_of: list[tuple[tuple[MappingRow, ...], tuple[MappingRow, ...]]],
) -> list[tuple[str, ...]]:
    """For each task's (input rows, output rows), in execution order: the benchmark .npy
    files it compares against and no later task does, sorted."""
    later: set[str] = set()
    found: list[tuple[str, ...]] = []
    for inputs, outputs in reversed(rows_of):
        paths = {
            row.benchmark_path
            for row in (*inputs, *outputs)
            if row.benchmark_path is not None and row.benchmark_kind == "npy"
        }
        found.append(tuple(sorted(paths - later)))
        later |= paths
    found.reverse()
    return found


def benchmark_plan(
    ws: Workspace,
    run: RunIndex,
    graph: GraphIndex,
    benchmark_dir: Path | None = None,
    dumps: DumpIndex | None = None,
    left: str | None = None,
    statistics: bool = False,
    memo: GraphPlanMemo | None = None,
    benchmarks: BenchmarkIndex | None = None,
) -> ComparePlan:
    """Device dump of `run` (or `dumps`, e.g. a dir given with -lt) against benchmark tensors
    (FORMATS.md section 5): `benchmarks` (a rank's or step's), those of `benchmark_dir`, or
    the workspace's for its default dump dir. With `statistics`
    the tasks are the statistics dump files (`.csv`), matched by the same rules. `memo`
    keeps what depends on the graph and the benchmarks only, for the next dump dir's plan.

    Fusion groups are formed over the whole graph (a group's ops need not all be dumped);
    `Index` numbers the groups that have a dump, in execution order.
    """
    given = scan_benchmark_dir(benchmark_dir) if benchmark_dir is not None else None
    if given is not None:
        benchmark_index: BenchmarkIndex | None = given
    else:
        benchmark_index = benchmarks if benchmarks is not None else ws.benchmark_for()
    dump_index = dumps if dumps is not None else run.dumps
    memo = (memo or GraphPlanMemo()).serving(graph, benchmark_index)
    pairs, skipped = _dumped_ops(graph, dump_index, statistics, memo)
    if memo.groups is None:
        memo.groups = fusion_groups(list(graph.records()))
    groups = memo.groups
    origins = _Origins(graph, groups)
    numbers: dict[int, int] = {}
    tasks = []
    rows_of = []
    for rec, _ in pairs:
        rows = memo.rows.get(rec.name)
        if rows is None:
            rows = memo.rows[rec.name] = _op_rows(graph, rec, origins, benchmark_index)
        rows_of.append(rows)
    for seq, ((rec, ref), (inputs, outputs), last) in enumerate(
        zip(pairs, rows_of, last_uses(rows_of), strict=True)
    ):
        group = groups[rec.name]
        tasks.append(
            FileTask(
                seq,
                numbers.setdefault(group.index, len(numbers)),
                rec.name,
                rec.type,
                ref.path,
                inputs,
                outputs,
                npu_dump=group.npu_dump(rec.name),
                ground_truth=group.ground_truth,
                device_kind="stats" if statistics else "dump",
                last_uses=last,
            )
        )
    left = left or str(run.run.dump_dir or run.run.root)
    if benchmark_index is not None:
        right = benchmark_index.directory
    else:
        right = str(ws.layout.benchmark_dir or "")
    repeated = repeated_dumps(dump_index, [(rec.name, ref.op_name) for rec, ref in pairs])
    mode = "statistics" if statistics else "benchmark"
    warnings = list(given.warnings) if given is not None else []
    return ComparePlan(tasks, mode, left, right, graph.root_graph, skipped, repeated, warnings)


def device_plan(
    left: DumpIndex,
    right: DumpIndex,
    left_name: str,
    right_name: str,
    graph: GraphIndex | None = None,
    statistics: bool = False,
) -> ComparePlan:
    """Two device dumps of the same graph: match by op name and tensor index.

    With the graph, ops get their real names (dump file names are sanitized) and graph order.
    With `statistics` (a statistics compare) a side that holds statistics dumps only is paired
    by its statistics files, the other by its tensor dumps.
    """
    left_kind = "stats" if statistics and left.holds_statistics_only() else "dump"
    right_kind = "stats" if statistics and right.holds_statistics_only() else "dump"
    left_files = left.stats_for_op if left_kind == "stats" else left.for_op
    right_files = right.stats_for_op if right_kind == "stats" else right.for_op
    tasks = []
    skipped = []
    entries = []
    for name in left.op_names():
        lrefs = left_files(name)
        if not lrefs:
            continue
        rec = graph.by_dump_name(name) if graph is not None else None
        position = rec.position if rec is not None else len(graph) if graph is not None else 0
        entries.append((position, lrefs[-1].timestamp, name, rec.name if rec else name, lrefs[-1]))
    entries.sort(key=lambda e: e[:3])
    left_names = set(left.op_names())
    for name in right.op_names():
        if name not in left_names and right_files(name):
            skipped.append(f"{right_files(name)[-1].file_name}: no dump of it in {left_name}")
    for seq, (_, _, name, real_name, lref) in enumerate(entries):
        rrefs = right_files(name)
        if not rrefs:
            skipped.append(f"{lref.file_name}: no dump of {real_name} in {right_name}")
            row = MappingRow("*", None, reason=f"op not dumped in {right_name}")
        else:
            row = MappingRow(real_name, rrefs[-1].path, benchmark_kind=right_kind)
        tasks.append(
            FileTask(
                seq, seq, real_name, lref.op_type, lref.path, (), (), row, device_kind=left_kind
            )
        )
    return ComparePlan(
        tasks,
        "statistics" if statistics else "device",
        left_name,
        right_name,
        graph.root_graph if graph else None,
        skipped,
        repeated_dumps(left, [(e[3], e[2]) for e in entries]),
    )
