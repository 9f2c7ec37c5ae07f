"""Rendering of `ls` and `ni` results.

Names, paths, attribute values and queries come from the user's files: they are always passed
to rich as `Text` (or with `markup=False`), never as markup, so brackets print as typed.
"""

from __future__ import annotations

import io

from rich.console import Console, Group
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.graph import NodeInfoResult, OpListing, TypeCounts
from precision_shell.explore.node_info import NodeInfo, TensorRow
from precision_shell.render.columns import number_column, path_text, text_column
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders
from precision_shell.render.statistics_views import statistics_table
from precision_shell.workspace.graph_index import OpRecord


def op_line(run: str | None, rec: OpRecord, name_filter: str | None = None) -> Text:
    """`[run ][Type][pass] name`; when `name_filter` matched only an original TF name, that
    name follows, so the line says why a differently named op is listed."""
    text = Text()
    if run:
        text.append(f"{run} ", style="dim")
    text.append(f"[{rec.type}]", style="cyan")
    if rec.pass_name:
        text.append(f"[{rec.pass_name}]", style="magenta")
    text.append(f" {rec.name}")
    needle = (name_filter or "").lower()
    if needle and needle not in rec.name.lower():
        fused = [n for n in rec.original_names or () if needle in n.lower()]
        if fused:
            text.append(f" (fuses {', '.join(fused)})", style="dim")
    return text


_EXACT_FILTERS = ("rank", "step")  # `ls --rank/--step`: a dump dir, not a substring


@renders(OpListing)
def render_op_listing(console: Console, result: OpListing) -> None:
    runs = {run for run, _ in result.rows}
    for run, rec in result.rows:
        console.print(op_line(run if len(runs) > 1 else None, rec, result.filters.get("name")))
    filters = ", ".join(
        f"{k}={v}" if k in _EXACT_FILTERS else f"{k}~{v!r}" for k, v in result.filters.items()
    )
    console.print(f"{len(result.rows)} op(s) match {filters}", style="dim", markup=False)


@renders(TypeCounts)
def render_type_counts(console: Console, result: TypeCounts) -> None:
    if not result.runs:
        console.print("no device run in this workspace")
        return
    table = Table(show_edge=False)
    text_column(table, "op type")
    runs = list(result.runs)
    for run in runs:
        number_column(table, run)
    types = sorted({t for counts in result.runs.values() for t in counts})
    for op_type in types:
        table.add_row(Text(op_type), *(str(result.runs[r].get(op_type, 0)) for r in runs))
    table.add_row("total", *(str(sum(result.runs[r].values())) for r in runs), style="bold")
    if result.dump_files:
        table.add_row("tensor dumps", *(str(result.dump_files.get(r, (0, 0))[0]) for r in runs))
        table.add_row("statistics dumps", *(str(result.dump_files.get(r, (0, 0))[1]) for r in runs))
    console.print(table)
    if result.dump_slice:
        where = " ".join(f"{k} {v}" for k, v in result.dump_slice.items())
        console.print(f"ops with a dump file in {where}", style="dim", markup=False)


def _fits(table: Table, width: int | None) -> bool:
    """Whether `table` shows every cell on one line within `width` (None: any width)."""
    if width is None:
        return True
    probe = Console(file=io.StringIO(), width=max(width, 1) * 4)
    return Measurement.get(probe, probe.options, table).maximum <= width


def tensor_table(
    title: str | Text, rows: list[TensorRow], with_file: bool, width: int | None = None
) -> Table:
    """Tensors with their stats; when the columns do not fit `width`, shape, dtype, layout (and
    file) share the first column, so the numbers keep the room they need."""
    wide = _tensor_table(title, rows, with_file, compact=False)
    return wide if _fits(wide, width) else _tensor_table(title, rows, with_file, compact=True)


def _tensor_table(
    title: str | Text, rows: list[TensorRow], with_file: bool, compact: bool
) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    # .npy tensors have no layout: no column of blanks for them
    with_layout = any(row.layout for row in rows)
    if compact:
        text_column(table, "tensor")
    else:
        text_column(table, "tensor")
        if with_file:
            text_column(table, "file")
        for col in ("shape", "dtype", *(["layout"] if with_layout else [])):
            text_column(table, col)
    for col in ("max", "min", "mean", "nan/inf"):
        number_column(table, col)
    for row in rows:
        described = [Text(row.label)]
        if with_file:
            described.append(Text(row.source))
        if row.error:
            if compact:  # the number columns do not wrap: the message goes under the name
                cell = Text(" ").join(described)
                cell.append(f"\n{row.error}", style="red")
                table.add_row(cell)
            else:
                table.add_row(*described, Text(row.error, style="red"))
            continue
        s = row.stats
        assert s is not None
        described += [
            Text(str(list(row.shape or ()))),
            Text(row.dtype),
            *([Text(row.layout)] if with_layout else []),
        ]
        lead = [Text(" ").join(described)] if compact else described
        bad = f"{s.nan_count}/{s.inf_count}"
        table.add_row(
            *lead,
            fmt_num(s.max),
            fmt_num(s.min),
            fmt_num(s.mean),
            Text(bad, style="red") if s.nan_count or s.inf_count else bad,
        )
    return table


# Full metric names are as wide as three numbers: short headers keep the values on one line.
_COMPARE_COLUMNS = (
    ("CosineSimilarity", "cosine"),
    ("MaxAbsoluteError", "max abs err"),
    ("RelativeEuclideanDistance", "rel euclid"),
    ("MeanRelativeError", "mean rel err"),
)


def _compare_table(info: NodeInfo, width: int | None) -> Table:
    wide = _compare_rows_table(info, compact=False)
    return wide if _fits(wide, width) else _compare_rows_table(info, compact=True)


def _compare_rows_table(info: NodeInfo, compact: bool) -> Table:
    title = Text.assemble("compare ", (info.compare_file or "", "dim"))
    if info.compare_slice:
        title.append(f" ({info.compare_slice})")
    if info.is_root_cause:
        title.append("  (root cause of this compare)", style="bold red")
    elif info.root_cause_elsewhere:
        title.append(f"  (root cause of this compare in {info.root_cause_elsewhere})", style="red")
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    text_column(table, "tensor")
    if not compact:
        text_column(table, "ground truth")
    for _, header in _COMPARE_COLUMNS:
        number_column(table, header)
    if not compact:
        text_column(table, "reason")
    for row in info.compare_rows:
        label = f"{row.kind} {row.slot}" if row.kind else row.tensor_index
        metrics = [row.texts.get(column, "-") for column, _ in _COMPARE_COLUMNS]
        if compact:
            cell = Text(f"{label} {row.ground_truth}")
            if row.reason:
                cell.append(f"\n{row.reason}", style="dim")
            table.add_row(cell, *metrics)
        else:
            table.add_row(label, Text(row.ground_truth), *metrics, Text(row.reason))
    return table


def _ports_table(info: NodeInfo, width: int | None) -> Table:
    wide = _ports_rows_table(info, compact=False)
    return wide if _fits(wide, width) else _ports_rows_table(info, compact=True)


def _ports_rows_table(info: NodeInfo, compact: bool) -> Table:
    ports = Table(show_edge=False, pad_edge=False, title="inputs / outputs", title_justify="left")
    columns = ("port", "tensor") if compact else ("port", "dtype", "layout", "shape")
    for col in (*columns, "peers", "benchmark"):
        text_column(ports, col)
    for p in info.ports:
        port = "control" if p.kind == "control" else f"{p.kind} {p.index}"
        shape = str(list(p.shape)) if p.kind != "control" else ""
        described = [Text(p.dtype), Text(p.layout), Text(shape)]
        if compact:
            described = [Text(" ").join(d for d in described if d.plain)]
        ports.add_row(port, *described, Text(", ".join(p.peers) or "-"), Text(p.origin or "-"))
    return ports


def node_panel(info: NodeInfo, width: int | None = None) -> Panel:
    """One op; `width` is the console's: tables inside are laid out to fit it."""
    inner = None if width is None else width - 4  # the panel's borders and padding
    rec = info.record
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    text_column(head)
    if inner is not None and len(rec.name) + 4 > inner:
        head.add_row("name", Text(rec.name))  # the title line would cut it
    head.add_row("type", Text(rec.type))
    head.add_row("id", str(rec.id))
    head.add_row("graph", Text(f"{info.graph} ({info.run})"))
    head.add_row("kernel", Text(rec.kernel_name or "-"))
    head.add_row("fusion pass", Text(rec.pass_name or "-"))
    if rec.original_names is None:
        originals = "- (no _datadump_original_op_names)"
    else:
        originals = ", ".join(rec.original_names) or "none: no benchmark counterpart (GE-inserted)"
    head.add_row("original ops", Text(originals))
    parts: list = [head, Text(""), _ports_table(info, inner)]
    unreadable = [r.error for r in info.dump_tensors if r.label == "file" and r.error]
    if unreadable:
        # The header itself failed: one message (it names the file), not a table of blanks.
        parts += [Text(""), Text(f"device dump: {unreadable[0]}", style="red")]
    elif info.dump_tensors:
        newest = info.dump_files[-1]
        more = f" (+{len(info.dump_files) - 1} older)" if len(info.dump_files) > 1 else ""
        where = f" ({info.dump_slice})" if info.dump_slice else ""
        title = Text(f"device dump {newest}{more}{where}")
        parts += [Text(""), tensor_table(title, info.dump_tensors, False, inner)]
    elif info.statistics is not None:
        newest = info.dump_files[-1]
        where = f" ({info.dump_slice})" if info.dump_slice else ""
        parts += [
            Text(""),
            statistics_table(Text(f"statistics dump {newest}{where}"), info.statistics),
            Text(info.statistics.note, style="dim"),  # pads included: not the benchmark's
        ]
    elif info.statistics_error is not None:
        parts += [Text(""), Text(f"statistics dump: {info.statistics_error}", style="red")]
    else:
        where = f" in {info.dump_slice}" if info.dump_slice else ""
        parts += [Text(""), Text(f"device dump: none found for this op{where}", style="yellow")]
    if len(info.dump_files_by_slice) > 1:
        slices = Table(show_edge=False, pad_edge=False, title="dump files by rank and step")
        text_column(slices, "rank, step")
        text_column(slices, "files (oldest first)")
        for label, names in info.dump_files_by_slice:
            slices.add_row(Text(label), Text(", ".join(names)))
        parts += [Text(""), slices]
    if info.benchmarks:
        parts += [Text(""), tensor_table("benchmark tensors", info.benchmarks, True, inner)]
    else:
        parts += [Text(""), Text("benchmark: none found for this op", style="yellow")]
    if info.compare_rows:
        parts += [Text(""), _compare_table(info, inner)]
        parts += [Text(note, style="yellow") for note in info.compare_notes]
    elif info.compare_missing:
        parts += [Text(""), Text(f"compare: {info.compare_missing}", style="yellow")]
    if info.attrs == {}:
        parts += [Text(""), Text(f"attributes: no name holds {info.attr_query!r}", style="dim")]
    elif info.attrs is not None:
        attrs = Table(show_edge=False, pad_edge=False, title="attributes", title_justify="left")
        text_column(attrs, "key")
        text_column(attrs, "value")
        for key, value in info.attrs.items():
            attrs.add_row(Text(key), Text(repr(value)))
        parts += [Text(""), attrs]
    if info.subgraph is not None:
        sg = info.subgraph
        line = path_text(f"subgraph: {sg.nodes} ops, {sg.edges} edges -> {sg.svg or sg.gv}")
        if sg.note:
            line.append(f" ({sg.note})")
        parts += [Text(""), line]
    return Panel(Group(*parts), title=Text(rec.name, style="bold"), title_align="left")


@renders(NodeInfoResult)
def render_node_info(console: Console, result: NodeInfoResult) -> None:
    for note in result.notes:
        console.print(Text(note), style="yellow")
    for info in result.nodes:
        console.print(node_panel(info, console.width))
    if not result.nodes:
        console.print(f"no op named exactly {result.query!r}; possible ops:", markup=False)
        runs = {run for run, _ in result.candidates}
        for run, rec in result.candidates[:50]:
            console.print(op_line(run if len(runs) > 1 else None, rec, result.query))
        if len(result.candidates) > 50:
            console.print(
                f"... and {len(result.candidates) - 50} more (narrow with ls -n)", style="dim"
            )
