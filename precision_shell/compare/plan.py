"""The compare plan: one `FileTask` per device dump file, in execution order.

A task is plain picklable data: the device file, and for each of its tensors the mapping
row that says which benchmark stands for it (or why none does). Comparing a task is a pure
function of the task (`compare.worker.compare_file`), so any executor can run the tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from precision_shell.compare.fusion_groups import fusion_groups
from precision_shell.compare.matcher import input_source, output_origin
from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.formats.golden import GoldenIndex, golden_key, scan_golden_dir
from precision_shell.workspace.dump_index import DumpFileRef, DumpIndex
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import RunIndex, Workspace


@dataclass(frozen=True, slots=True)
class MappingRow:
    """Which reference tensor stands for one device tensor."""

    ground_truth: str  # origin names joined by "," or "*" when there is none
    reference_path: str | None  # a benchmark .npy, or another run's dump file
    reference_kind: str = "npy"  # "npy" | "dump"
    reference_slot: tuple[str, int] | None = None  # (kind, index) inside a reference dump
    origin_format: str | None = None
    origin_shape: tuple[int, ...] | None = None
    reason: str = ""  # why there is no reference


@dataclass(frozen=True, slots=True)
class FileTask:
    seq: int  # position in execution order; rows are written in this order
    group_index: int
    op_name: str
    op_type: str
    device_file: str
    inputs: tuple[MappingRow, ...]  # by input index
    outputs: tuple[MappingRow, ...]  # by output index; outputs past the descs use outputs[0]
    fallback: MappingRow | None = None  # device mode: every tensor, same slot in the reference

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
    mode: str  # "benchmark" | "device"
    left: str
    right: str
    graph: str | None
    skipped: list[str]  # ops with dump files but no graph op, etc.


def _dumped_ops(graph: GraphIndex, dumps: DumpIndex) -> list[tuple[OpRecord, DumpFileRef]]:
    """Graph ops that have a dump file (the newest), ordered by id then dump timestamp."""
    found = []
    for rec in graph.records():
        refs = dumps.for_op(sanitize_dump_name(rec.name))
        if refs:
            found.append((rec, refs[-1]))
    found.sort(key=lambda pair: (pair[0].position, pair[1].timestamp))
    return found


def _benchmark_row(
    golden_index: GoldenIndex | None,
    origin: tuple[str, int] | None,
    fmt: str | None = None,
    shape: tuple[int, ...] | None = None,
) -> MappingRow:
    if origin is None:
        return MappingRow("*", None, reason="no benchmark for this tensor")
    name, index = origin
    golden = golden_index.newest.get(golden_key(name, index)) if golden_index else None
    if golden is None:
        return MappingRow(
            name,
            None,
            origin_format=fmt,
            origin_shape=shape,
            reason=f"benchmark {golden_key(name, index)}.*.npy not found",
        )
    return MappingRow(name, golden.path, origin_format=fmt, origin_shape=shape)


def benchmark_plan(
    ws: Workspace, run: RunIndex, graph: GraphIndex, golden_dir: Path | None = None
) -> ComparePlan:
    """Device dump of `run` against benchmark tensors (FORMATS.md section 5): the workspace's,
    or those of `golden_dir`."""
    golden_index = scan_golden_dir(golden_dir) if golden_dir is not None else ws.golden
    pairs = _dumped_ops(graph, run.dumps)
    groups = fusion_groups([rec for rec, _ in pairs])
    tasks = []
    for seq, (rec, ref) in enumerate(pairs):
        op = graph.op(rec.name)
        assert op is not None
        inputs = []
        for k in range(len(rec.data_inputs)):
            source = input_source(graph, rec.name, k)
            producer = graph.get(source[0]) if source else None
            origin = None
            fmt = shape = None
            if producer is not None:
                producer_op = graph.op(producer.name)
                full = output_origin(producer_op, source[1]) if producer_op else None
                if full is not None:
                    origin, fmt, shape = (full.name, full.index), full.format, full.shape
            desc = op.input_descs[k] if k < len(op.input_descs) else None
            if desc is not None and desc.origin_shape:
                shape = desc.origin_shape
            inputs.append(_benchmark_row(golden_index, origin, fmt, shape))
        outputs = []
        for k in range(max(len(op.output_descs), 1)):
            full = output_origin(op, k)
            origin = (full.name, full.index) if full else None
            outputs.append(
                _benchmark_row(
                    golden_index,
                    origin,
                    full.format if full else None,
                    full.shape if full else None,
                )
            )
        tasks.append(
            FileTask(
                seq,
                groups[rec.name].index,
                rec.name,
                rec.type,
                ref.path,
                tuple(inputs),
                tuple(outputs),
            )
        )
    left = str(run.run.dump_dir or run.run.root)
    right = str(golden_dir or ws.layout.golden_dir or "")
    return ComparePlan(tasks, "benchmark", left, right, graph.root_graph, [])


def device_plan(
    left: DumpIndex,
    right: DumpIndex,
    left_name: str,
    right_name: str,
    graph: GraphIndex | None = None,
) -> ComparePlan:
    """Two device dumps of the same graph: match by op name and tensor index.

    With the graph, ops get their real names (dump file names are sanitized) and graph order.
    """
    tasks = []
    skipped = []
    entries = []
    for name in left.op_names():
        lrefs = left.for_op(name)
        if not lrefs:
            continue
        rec = graph.by_dump_name(name) if graph is not None else None
        position = rec.position if rec is not None else len(graph) if graph is not None else 0
        entries.append((position, lrefs[-1].timestamp, name, rec.name if rec else name, lrefs[-1]))
    entries.sort(key=lambda e: e[:3])
    for seq, (_, _, name, real_name, lref) in enumerate(entries):
        rrefs = right.for_op(name)
        if not rrefs:
            skipped.append(f"{lref.file_name}: no dump of {real_name} in {right_name}")
            row = MappingRow("*", None, reason=f"op not dumped in {right_name}")
        else:
            row = MappingRow(real_name, rrefs[-1].path, reference_kind="dump")
        tasks.append(FileTask(seq, seq, real_name, lref.op_type, lref.path, (), (), row))
    return ComparePlan(
        tasks, "device", left_name, right_name, graph.root_graph if graph else None, skipped
    )
