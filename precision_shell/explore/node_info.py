"""Gathering what `ni` shows about one op: descs with peers, dump tensors, benchmark tensors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precision_shell.compare.pipeline.matcher import input_origin, record_output_origin
from precision_shell.compare.results.input_changes import stale_compare_line
from precision_shell.compare.results.latest import LatestCompare, latest_compare
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.explore.statistics_files import (
    StatisticsFile,
    read_statistics_file,
)
from precision_shell.explore.tensor_target import (
    dump_file_tensors,
    tensor_stats_in_benchmark_layout,
)
from precision_shell.formats.benchmark import BenchmarkFile
from precision_shell.formats.ge.graph import OpDef, TensorDesc
from precision_shell.shell.context import ShellContext
from precision_shell.workspace.dump_index import DumpFileRef
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.subgraph import SubgraphFiles, neighbourhood
from precision_shell.workspace.tensor_stats import TensorStats
from precision_shell.workspace.workspace import RunIndex, Workspace


@dataclass(frozen=True)
class PortInfo:
    """One input or output desc of the op and the ops on the other side of its edges."""

    kind: str
    index: int
    dtype: str
    layout: str
    shape: tuple[int, ...]
    peers: list[str]
    origin: str | None  # benchmark tensor it stands for, "name:k"


@dataclass(frozen=True)
class TensorRow:
    """A tensor with its statistics, or the reason it could not be read."""

    label: str  # "input 0", "output 1"
    source: str  # file name
    shape: tuple[int, ...] | None = None
    dtype: str = ""
    layout: str = ""
    stats: TensorStats | None = None
    error: str | None = None


@dataclass
class NodeInfo:
    run: str
    graph: str
    record: OpRecord
    op: OpDef
    ports: list[PortInfo]
    dump_files: list[str]  # of the (rank, step) shown
    dump_tensors: list[TensorRow]
    benchmarks: list[TensorRow]
    attrs: dict[str, Any] | None = None
    attr_query: str | None = None  # `ni -a ATTR`: what the attribute names were to hold
    subgraph: SubgraphFiles | None = None
    compare_rows: list[ResultRow] = field(default_factory=list)  # from the newest vc result
    compare_file: str | None = None
    compare_slice: str = ""  # "rank 2 step 0": whose rows, when the compare holds several
    # why there are no compare rows: the (rank, step) asked for was not compared (or not
    # begun), or its compare was cut short before this op
    compare_missing: str | None = None
    compare_notes: list[str] = field(default_factory=list)  # partial rows, newer runs skipped
    is_root_cause: bool = False  # of the compare rows shown
    root_cause_elsewhere: str = ""  # "rank 2 step 0": this op is the root cause found there
    dump_slice: str = ""  # "rank 0 step 1" when the run has several dump dirs
    statistics: StatisticsFile | None = None  # its statistics dump, when that is all there is
    statistics_error: str | None = None
    # every (rank, step) holding the op: ("rank 0 step 1", its file names), when several
    dump_files_by_slice: list[tuple[str, list[str]]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def _port(
    kind: str, index: int, desc: TensorDesc | None, peers: list[str], origin: str | None
) -> PortInfo:
    if desc is None:
        return PortInfo(kind, index, "?", "?", (), peers, origin)
    return PortInfo(kind, index, desc.dtype, desc.layout, tuple(desc.shape), peers, origin)


def _ports(graph: GraphIndex, rec: OpRecord, op: OpDef) -> list[PortInfo]:
    ports = []
    for k, (src, idx) in enumerate(rec.data_inputs):
        desc = op.input_descs[k] if k < len(op.input_descs) else None
        origin = input_origin(graph, rec.name, k)
        ports.append(
            _port(
                "input", k, desc, [f"{src}:{idx}"], f"{origin[0]}:{origin[1]}" if origin else None
            )
        )
    consumers = graph.consumers(rec.name)
    n_out = max(len(op.output_descs), 1 + max((c.output_index for c in consumers), default=-1))
    for k in range(n_out):
        desc = op.output_descs[k] if k < len(op.output_descs) else None
        peers = [f"{c.op}:{c.input_index}" for c in consumers if c.output_index == k]
        origin = record_output_origin(rec, k)
        ports.append(
            _port("output", k, desc, peers, f"{origin[0]}:{origin[1]}" if origin else None)
        )
    for src in rec.control_inputs:
        ports.append(PortInfo("control", -1, "", "", (), [src], None))
    return ports


def dump_tensor_rows(ws: Workspace, ref: DumpFileRef) -> list[TensorRow]:
    """Every input and output of one dump file with its stats (or the reason it can't be read).

    Raises PrecisionError when the file's header itself is unreadable."""
    rows: list[TensorRow] = []
    for handle in dump_file_tensors(ws, ref.path):
        meta = handle.meta
        assert meta is not None
        label = f"{meta.kind} {meta.index}"
        common = (label, ref.file_name, meta.shape, meta.dtype_name, meta.format_name)
        try:
            # in the benchmark layout, as pt/cp/vc see it: a C0 pad is not data
            stats = tensor_stats_in_benchmark_layout(ws, handle)
            origin = handle.origin_format()
            moved = origin is not None and origin != meta.format_name  # a same-shape transpose
            if stats.shape != tuple(meta.shape) or moved:  # the shape and layout stats are of
                layout = f"{meta.format_name}→{origin or 'original'}"
                common = (label, ref.file_name, stats.shape, meta.dtype_name, layout)
            rows.append(TensorRow(*common, stats))
        except PrecisionError as exc:
            rows.append(TensorRow(*common, error=str(exc)))
    return rows


def _dump_rows(
    ctx: ShellContext, run: RunIndex, rec: OpRecord, rank: str | None, step: str | None
) -> tuple[list[str], list[TensorRow]]:
    ws = ctx.workspace
    refs = ws.dump_files(run, rec.name, rank, step)
    if not refs:
        return [], []
    newest = refs[-1]
    files = [r.file_name for r in refs]
    try:
        return files, dump_tensor_rows(ws, newest)
    except PrecisionError as exc:
        return files, [TensorRow("file", newest.file_name, error=str(exc))]


def _op_benchmarks(
    ws: Workspace,
    graph: GraphIndex,
    rec: OpRecord,
    n_out: int,
    scope: tuple[str | None, str | None],
) -> list[tuple[str, int, BenchmarkFile]]:
    """(kind, index, benchmark file) of the op's inputs and outputs that have one."""
    wanted = [
        ("input", k, ws.input_benchmark(graph, rec, k, *scope)) for k in range(len(rec.data_inputs))
    ]
    wanted += [("output", k, ws.output_benchmark(rec, k, *scope)) for k in range(n_out)]
    return [(kind, k, b) for kind, k, b in wanted if b is not None]


def _benchmark_rows(
    ctx: ShellContext,
    graph: GraphIndex,
    rec: OpRecord,
    n_out: int,
    scope: tuple[str | None, str | None],
) -> list[TensorRow]:
    """The benchmark tensors of the op's inputs and outputs, from the benchmark dir of the
    (rank, step) shown; a rank's or step's dir is named with the file (`step1/x.0.1.npy`)."""
    ws = ctx.workspace
    rows: list[TensorRow] = []
    for kind, k, benchmark in _op_benchmarks(ws, graph, rec, n_out, scope):
        shown = ws.benchmark_name(benchmark)
        try:
            stats = ws.benchmark_stats(benchmark)
            rows.append(
                TensorRow(
                    f"{kind} {k}",
                    shown,
                    stats.shape,
                    stats.dtype,
                    "",
                    stats,
                )
            )
        except PrecisionError as exc:
            rows.append(TensorRow(f"{kind} {k}", shown, error=str(exc)))
    return rows


def collect_node_info(
    ctx: ShellContext,
    run: RunIndex,
    graph: GraphIndex,
    rec: OpRecord,
    with_attrs: bool | str,
    depth: int | None,
    rank: str | None = None,
    step: str | None = None,
) -> NodeInfo:
    op = graph.op(rec.name)
    assert op is not None
    ports = _ports(graph, rec, op)
    latest, missing = _latest_compare(ctx, run, rank, step)
    if (
        rank is None
        and step is None
        and latest is not None
        and latest.entry is not None
        and any(s.rank == latest.entry.rank and s.step == latest.entry.step for s in run.slices)
    ):
        # the dump shown is of the (rank, step) whose compare rows are shown beside it (QA:
        # after `vc --rank 2 --step 10`, rank 0 step 0's dump sat over rank 2's rows)
        rank, step = latest.entry.rank, latest.entry.step
    files, dump_rows = _dump_rows(ctx, run, rec, rank, step)
    n_out = sum(1 for p in ports if p.kind == "output")
    here = run.slice(rank, step) if run.slices else None
    scope = (here.rank, here.step) if here is not None else (None, None)
    info = NodeInfo(
        run=run.name,
        graph=rec.graph,
        record=rec,
        op=op,
        ports=ports,
        dump_files=files,
        dump_tensors=dump_rows,
        benchmarks=_benchmark_rows(ctx, graph, rec, n_out, scope),
        attrs=_attrs(op.attrs, with_attrs),
        attr_query=with_attrs if isinstance(with_attrs, str) else None,
    )
    if len(run.slices) > 1:
        info.dump_slice = run.slice(rank, step).label
        info.dump_files_by_slice = [
            (s.label, [r.file_name for r in refs])
            for s, refs in ctx.workspace.dump_files_everywhere(run, rec.name)
        ]
    if not files:
        stats_refs = ctx.workspace.dump_files(run, rec.name, rank, step, statistics=True)
        if stats_refs:
            info.dump_files = [r.file_name for r in stats_refs]
            try:
                info.statistics = read_statistics_file(stats_refs[-1].path)
            except PrecisionError as exc:
                info.statistics_error = str(exc)
    info.compare_missing = missing
    if latest is not None:
        info.compare_rows = latest.rows_by_op.get(rec.name, [])
        info.compare_file = str(latest.csv_path)
        info.compare_slice = latest.slice_label
        info.compare_notes = latest.notes
        if files:  # dumped, no rows: a compare cut short did not reach it yet
            info.compare_missing = latest.not_reached_text(rec.name)
        info.is_root_cause = latest.root_cause_here == rec.name
        stale = _stale_line(ctx, run, graph, rec, n_out, latest, scope)
        if stale is not None:
            info.compare_notes = [stale, *info.compare_notes]
        if latest.root_cause == rec.name:
            info.root_cause_elsewhere = latest.root_cause_slice
    if depth is not None:
        from precision_shell.workspace.subgraph_files import write_subgraph

        sub = neighbourhood(graph, rec.name, depth)
        if latest is not None:
            rule = latest.rule_or(ThresholdRule.from_settings(ctx.settings))
            sub.node_colors = {name: latest.color(name, rule) for name in sub.nodes}
            cause = latest.root_cause_here
            if cause in sub.nodes:
                sub.node_marks[cause] = "root cause"
        prefix = run.name
        if len(run.slices) > 1:  # one file per (rank, step): each says whose colours it holds
            where_rank, where_step = _coloured_slice(run, rank, step, latest)
            sub.title = f"{run.name} rank {where_rank} step {where_step}"
            prefix = f"{run.name}_rank{where_rank}_step{where_step}"
        info.subgraph = write_subgraph(sub, ctx.workspace.output_dir("op_graph"), prefix)
    return info


def _stale_line(
    ctx: ShellContext,
    run: RunIndex,
    graph: GraphIndex,
    rec: OpRecord,
    n_out: int,
    latest: LatestCompare,
    scope: tuple[str | None, str | None],
) -> str | None:
    """The line beside the op's compare rows when files that compare read changed since: the
    op's own dump and benchmark files are always checked (they are what its rows are of)."""
    ws = ctx.workspace
    if latest.entry is not None:
        scope = (latest.entry.rank, latest.entry.step)
    files = [r.path for r in ws.dump_files(run, rec.name, *scope)]
    files += [b.path for _, _, b in _op_benchmarks(ws, graph, rec, n_out, scope)]
    return stale_compare_line(ws, latest.summary, latest.csv_path, files)


def _coloured_slice(
    run: RunIndex, rank: str | None, step: str | None, latest: LatestCompare | None
) -> tuple[str, str]:
    """The (rank, step) whose compare rows colour the subgraph; the dump's shown when none do.
    Without --rank/--step the colours are the primary compare's, which need not be the lowest
    rank's first step."""
    if latest is not None and latest.entry is not None:
        return latest.entry.rank, latest.entry.step
    shown = run.slice(rank, step)
    return shown.rank, shown.step


def _latest_compare(
    ctx: ShellContext, run: RunIndex, rank: str | None, step: str | None
) -> tuple[LatestCompare | None, str | None]:
    """The newest compare's rows of the (rank, step) shown when `--rank/--step` picked one
    (else a line saying it did not compare that one); else its primary CSV's, as before."""
    ws = ctx.workspace
    if run is not ws.runs[0]:
        return None, None  # compares are of the first run
    if rank is None and step is None:
        found = latest_compare(ws)
    else:
        shown = run.slice(rank, step)
        found = latest_compare(ws, shown.rank, shown.step)
    if found is None or isinstance(found, LatestCompare):
        return found, None
    return None, found.message


def _attrs(attrs: dict[str, Any], wanted: bool | str) -> dict[str, Any] | None:
    """The attributes shown: none, all (True), or those whose name contains `wanted`."""
    if wanted is False:
        return None
    if wanted is True:
        return dict(sorted(attrs.items()))
    return {k: v for k, v in sorted(attrs.items()) if wanted.lower() in k.lower()}
