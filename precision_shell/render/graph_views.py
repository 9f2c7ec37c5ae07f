"""Rendering of `ls` and `ni` results.

Names, paths, attribute values and queries come from the user's files: they are always passed
to rich as `Text` (or with `markup=False`), never as markup, so brackets print as typed.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.graph import NodeInfoResult, OpListing, TypeCounts
from precision_shell.explore.node_info import NodeInfo, TensorRow
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders
from precision_shell.workspace.graph_index import OpRecord


def op_line(run: str | None, rec: OpRecord) -> Text:
    text = Text()
    if run:
        text.append(f"{run} ", style="dim")
    text.append(f"[{rec.type}]", style="cyan")
    if rec.pass_name:
        text.append(f"[{rec.pass_name}]", style="magenta")
    text.append(f" {rec.name}")
    return text


@renders(OpListing)
def render_op_listing(console: Console, result: OpListing) -> None:
    runs = {run for run, _ in result.rows}
    for run, rec in result.rows:
        console.print(op_line(run if len(runs) > 1 else None, rec))
    filters = ", ".join(f"{k}~{v!r}" for k, v in result.filters.items())
    console.print(f"{len(result.rows)} op(s) match {filters}", style="dim", markup=False)


@renders(TypeCounts)
def render_type_counts(console: Console, result: TypeCounts) -> None:
    if not result.runs:
        console.print("no device run in this workspace")
        return
    table = Table(show_edge=False)
    table.add_column("op type")
    runs = list(result.runs)
    for run in runs:
        table.add_column(run, justify="right")
    types = sorted({t for counts in result.runs.values() for t in counts})
    for op_type in types:
        table.add_row(Text(op_type), *(str(result.runs[r].get(op_type, 0)) for r in runs))
    table.add_row("total", *(str(sum(result.runs[r].values())) for r in runs), style="bold")
    console.print(table)


def tensor_table(title: str | Text, rows: list[TensorRow], with_file: bool) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    # .npy tensors have no layout: no column of blanks for them
    with_layout = any(row.layout for row in rows)
    cols = ["tensor", "file"] if with_file else ["tensor"]
    cols += ["shape", "dtype", *(["layout"] if with_layout else []), "max", "min", "mean"]
    cols.append("nan/inf")
    for col in cols:
        table.add_column(
            col, justify="right" if col in ("max", "min", "mean") else "left", overflow="fold"
        )
    for row in rows:
        lead = [row.label, Text(row.source)] if with_file else [row.label]
        if row.error:
            table.add_row(*lead, Text(row.error, style="red"))
            continue
        s = row.stats
        assert s is not None
        bad = f"{s.nan_count}/{s.inf_count}"
        table.add_row(
            *lead,
            str(list(row.shape or ())),
            Text(row.dtype),
            *([Text(row.layout)] if with_layout else []),
            fmt_num(s.max),
            fmt_num(s.min),
            fmt_num(s.mean),
            Text(bad, style="red") if s.nan_count or s.inf_count else bad,
        )
    return table


_COMPARE_COLUMNS = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "RelativeEuclideanDistance",
    "MeanRelativeError",
)


def _compare_table(info: NodeInfo) -> Table:
    title = Text.assemble("compare ", (info.compare_file or "", "dim"))
    if info.is_root_cause:
        title.append("  (root cause of this compare)", style="bold red")
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("tensor")
    table.add_column("ground truth", overflow="fold")
    for col in _COMPARE_COLUMNS:
        table.add_column(col, justify="right")
    table.add_column("reason", overflow="fold")
    for row in info.compare_rows:
        label = f"{row.kind} {row.slot}" if row.kind else row.tensor_index
        table.add_row(
            label,
            Text(row.ground_truth),
            *(row.texts.get(c, "-") for c in _COMPARE_COLUMNS),
            Text(row.reason),
        )
    return table


def node_panel(info: NodeInfo) -> Panel:
    rec = info.record
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
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
    ports = Table(show_edge=False, pad_edge=False, title="inputs / outputs", title_justify="left")
    for col in ("port", "dtype", "layout", "shape", "peers", "benchmark"):
        ports.add_column(col)
    for p in info.ports:
        port = "control" if p.kind == "control" else f"{p.kind} {p.index}"
        ports.add_row(
            port,
            Text(p.dtype),
            Text(p.layout),
            str(list(p.shape)) if p.kind != "control" else "",
            Text(", ".join(p.peers) or "-"),
            Text(p.origin or "-"),
        )
    parts: list = [head, Text(""), ports]
    unreadable = [r.error for r in info.dump_tensors if r.label == "file" and r.error]
    if unreadable:
        # The header itself failed: one message (it names the file), not a table of blanks.
        parts += [Text(""), Text(f"device dump: {unreadable[0]}", style="red")]
    elif info.dump_tensors:
        newest = info.dump_files[-1]
        more = f" (+{len(info.dump_files) - 1} older)" if len(info.dump_files) > 1 else ""
        title = Text(f"device dump {newest}{more}")
        parts += [Text(""), tensor_table(title, info.dump_tensors, False)]
    else:
        parts += [Text(""), Text("device dump: none found for this op", style="yellow")]
    if info.benchmarks:
        parts += [Text(""), tensor_table("benchmark tensors", info.benchmarks, True)]
    else:
        parts += [Text(""), Text("benchmark: none found for this op", style="yellow")]
    if info.compare_rows:
        parts += [Text(""), _compare_table(info)]
    if info.attrs is not None:
        attrs = Table(show_edge=False, pad_edge=False, title="attributes", title_justify="left")
        attrs.add_column("key")
        attrs.add_column("value", overflow="fold")
        for key, value in info.attrs.items():
            attrs.add_row(Text(key), Text(repr(value)))
        parts += [Text(""), attrs]
    if info.subgraph is not None:
        sg = info.subgraph
        line = f"subgraph: {sg.nodes} ops, {sg.edges} edges -> {sg.svg or sg.gv}"
        if sg.note:
            line += f" ({sg.note})"
        parts += [Text(""), Text(line)]
    return Panel(Group(*parts), title=Text(rec.name, style="bold"), title_align="left")


@renders(NodeInfoResult)
def render_node_info(console: Console, result: NodeInfoResult) -> None:
    for info in result.nodes:
        console.print(node_panel(info))
    if not result.nodes:
        console.print(f"no op named exactly {result.query!r}; possible ops:", markup=False)
        runs = {run for run, _ in result.candidates}
        for run, rec in result.candidates[:50]:
            console.print(op_line(run if len(runs) > 1 else None, rec))
        if len(result.candidates) > 50:
            console.print(
                f"... and {len(result.candidates) - 50} more (narrow with ls -n)", style="dim"
            )
