"""Rendering of a MegEngine / SigmaStar compare (`vc -lt A -rt B`, `ac -c -lt A -rt B`) and of
`ls`, `ni`, `pt`, `cp`, `dc` on such dumps opened as the workspace."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.summary import none_found_text
from precision_shell.compare.results.thresholds import reason_fails
from precision_shell.foreign.explore import (
    Edge,
    ForeignDecoded,
    ForeignListing,
    ForeignNode,
    ForeignSummaries,
    ForeignTensorCompare,
    label,
)
from precision_shell.foreign.metrics import MEGENGINE_REL, MEGENGINE_REL_AT_LEAST, SIGMASTAR_RMSE
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.render.columns import facts_table, path_text
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders
from precision_shell.render.tensor_views import stats_line

_SHOWN = 10


def _head(result: ForeignCompareResult) -> Table:
    family = "MegEngine" if result.family == "megengine" else "SigmaStar"
    table = facts_table(f"{family} compare")
    compared = sum(1 for r in result.rows if r.compared)
    table.add_row("left", path_text(result.left))
    table.add_row("right", path_text(result.right))
    table.add_row("paired by", result.method)
    table.add_row("tensors compared", f"{compared} of {len(result.rows)} rows")
    table.add_row("rule", result.rule.describe())
    failing = result.failing
    table.add_row("outputs failing", Text(str(len(failing)), style="red" if failing else "green"))
    not_compared = len(result.rows) - compared
    if not_compared:
        table.add_row("not compared", str(not_compared))
    table.add_row("csv", path_text(result.csv_path))
    table.add_row("summary", path_text(result.summary_path))
    return table


def _error_cell(row: ResultRow, metric: str) -> str:
    """The rule's error metric; for a var judged on what a text dump printed, its bound."""
    value = row.value(metric)
    bound = row.value(MEGENGINE_REL_AT_LEAST)
    if value is None and bound is not None:
        return f">= {fmt_num(bound)} (partial)"
    if value is None and row.nonfinite(MEGENGINE_REL_AT_LEAST):
        return "nan/inf (partial)"
    return fmt_num(value)


def _failing(result: ForeignCompareResult) -> Table:
    metric = MEGENGINE_REL if result.family == "megengine" else SIGMASTAR_RMSE
    table = Table(title="failing outputs (execution order)", title_justify="left")
    shown = result.failing[:_SHOWN]
    # a row failed by its reason whatever its cells print (a MegEngine shape mismatch)
    noted = any(reason_fails(row.reason) for row in shown)
    for header in ("#", "op", "type", "tensor", "cos", metric, *(("fails by",) if noted else ())):
        table.add_column(header, overflow="fold")
    for row in shown:
        table.add_row(
            str(row.index),
            row.op_name,
            row.op_type,
            row.npu_dump,
            fmt_num(row.value(COSINE)),
            _error_cell(row, metric),
            *((row.reason if reason_fails(row.reason) else "",) if noted else ()),
        )
    return table


@renders(ForeignCompareResult)
def _foreign(console: Console, result: ForeignCompareResult) -> None:
    console.print(_head(result))
    for note in result.notes:
        console.print(Text(note, style="yellow"), soft_wrap=True)
    if result.failing:
        console.print(_failing(result))
        if len(result.failing) > _SHOWN:
            console.print(f"... {len(result.failing) - _SHOWN} more: vcs -f {result.csv_path}")
    if result.causes is None:
        return
    if not result.causes:
        compared = sum(1 for r in result.rows if r.compared)
        text = none_found_text(
            compared,
            len(result.rows) - compared,
            "nothing fails",
            f"vcs -f {result.csv_path} lists why",
        )
        clean = compared == len(result.rows)
        console.print(Text(f"root cause: {text}", style="green" if clean else "yellow"))
        return
    table = Table(title="root causes (estimate)", title_justify="left")
    for header in ("cause", "op", "type", "#", "why"):  # not "rank": a card's
        table.add_column(header, overflow="fold")
    for cause in result.causes[:_SHOWN]:
        table.add_row(str(cause.rank), cause.op, cause.type, str(cause.index or ""), cause.reason)
    console.print(table)


# ---------------------------------------------------------------------------- the workspace


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


@renders(ForeignListing)
def _listing(console: Console, result: ForeignListing) -> None:
    console.print(result.title, markup=False, soft_wrap=True)
    meg = result.family == "megengine"
    headers = ("#", "var", "name", "op", "type", "dtype", "shape", "runs")
    table = Table(show_edge=False, pad_edge=False)
    for header in headers if meg else headers[:1] + headers[2:]:
        table.add_column(header, overflow="fold")
    for row in result.rows:
        cells = [str(row.order), row.key, row.name, row.op_name, row.op_type, row.dtype]
        cells += [_shape(row.shape), ", ".join(row.runs)]
        table.add_row(*(cells if meg else cells[:1] + cells[2:]))
    console.print(table)
    filters = " ".join(f"{k}={v}" for k, v in result.filters.items())
    shown = f"{len(result.rows)} of {result.total}" if filters else str(result.total)
    console.print(f"{shown} tensors{(' matching ' + filters) if filters else ''}", markup=False)


def _edges(edges: list[Edge], empty: str) -> Text:
    if not edges:
        return Text(empty, style="dim")
    lines = []
    for e in edges:
        where = f"{e.op_name} ({e.op_type})"
        tail = "" if e.dumped else "  [not dumped; from the title]"
        name = f"var{e.key} {e.name}" if e.key.isdigit() else e.name
        lines.append(f"{name}  <- {where}{tail}" if e.dumped or e.op_name != "?" else name)
    return Text("\n".join(lines))


@renders(ForeignNode)
def _node(console: Console, node: ForeignNode) -> None:
    table = facts_table(f"{node.kind} {node.query}", fold=True)
    table.add_row("op", f"{node.op_name} ({node.op_type})")
    outputs = "\n".join(
        f"{label(t)}  {t.dtype} {_shape(t.shape)}" + (f"  ({t.detail})" if t.detail else "")
        for t in node.outputs
    )
    table.add_row("outputs", outputs)
    if node.family == "megengine":
        table.add_row("inputs", _edges(node.inputs, "none (a source op)"))
        consumers = "\n".join(
            f"{op}: " + ", ".join(f"var{e.key} {e.name}" for e in node.consumers if e.op_name == op)
            for op in node.consumer_ops
        )
        table.add_row("consumers", consumers or Text("none dumped", style="dim"))
    else:
        table.add_row("graph", Text("SigmaStar dumps hold no edges; layers in order", style="dim"))
    table.add_row("runs", f"{', '.join(node.runs)} (shown: {node.run})")
    console.print(table)


@renders(ForeignSummaries)
def _summaries(console: Console, result: ForeignSummaries) -> None:
    for item in result.items:
        console.print(Text(f"{item.run}: {item.label}", style="bold"), soft_wrap=True)
        detail = f"  ({item.detail})" if item.detail else ""
        console.print(f"  {stats_line(item.stats)}{detail}", markup=False, soft_wrap=True)
        preview = ", ".join(fmt_num(v) for v in item.preview)
        more = " ..." if item.stats.count > len(item.preview) else ""
        console.print(f"  values: [{preview}{more}]", markup=False, soft_wrap=True)
        console.print(f"  saved {item.text_file}", markup=False, style="dim", soft_wrap=True)


@renders(ForeignTensorCompare)
def _tensor_compare(console: Console, result: ForeignTensorCompare) -> None:
    table = facts_table(f"cp {result.name}", fold=True)
    table.add_row(
        "left", f"{result.left_run}: {result.left}  {result.left_dtype} {_shape(result.left_shape)}"
    )
    table.add_row(
        "right",
        f"{result.right_run}: {result.right}  {result.right_dtype} {_shape(result.right_shape)}",
    )
    table.add_row("paired by", result.method)
    for name, value in result.metrics.items():
        table.add_row(name, fmt_num(value))
    if result.note:
        table.add_row("note", result.note)
    if result.metrics:
        verdict = Text("fails", style="red") if result.fails else Text("passes", style="green")
        table.add_row("verdict", verdict + Text(f"  ({result.rule})"))
    console.print(table)


@renders(ForeignDecoded)
def _decoded(console: Console, result: ForeignDecoded) -> None:
    for run, name, path, shape, dtype in result.files:
        console.print(f"{run}: {name}  {dtype} {list(shape)}", markup=False, soft_wrap=True)
        console.print(f"  -> {path}", markup=False, soft_wrap=True)
    console.print(f"{len(result.files)} file(s) in {result.out_dir}", markup=False, soft_wrap=True)
