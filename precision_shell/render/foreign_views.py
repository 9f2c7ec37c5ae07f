"""Rendering of a MegEngine / SigmaStar compare (`vc -lt A -rt B`, `ac -c -lt A -rt B`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.foreign.metrics import MEGENGINE_REL, SIGMASTAR_RMSE
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.render.columns import path_text
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders

_SHOWN = 10


def _head(result: ForeignCompareResult) -> Table:
    family = "MegEngine" if result.family == "megengine" else "SigmaStar"
    table = Table(
        title=f"{family} compare",
        title_justify="left",
        show_header=False,
        show_edge=False,
        box=None,
    )
    table.add_column(style="bold")
    table.add_column()
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


def _failing(result: ForeignCompareResult) -> Table:
    metric = MEGENGINE_REL if result.family == "megengine" else SIGMASTAR_RMSE
    table = Table(title="failing outputs (execution order)", title_justify="left")
    for header in ("#", "op", "type", "tensor", "cos", metric):
        table.add_column(header, overflow="fold")
    for row in result.failing[:_SHOWN]:
        table.add_row(
            str(row.index),
            row.op_name,
            row.op_type,
            row.npu_dump,
            fmt_num(row.value(COSINE)),
            fmt_num(row.value(metric)),
        )
    return table


@renders(ForeignCompareResult)
def _foreign(console: Console, result: ForeignCompareResult) -> None:
    console.print(_head(result))
    if result.failing:
        console.print(_failing(result))
        if len(result.failing) > _SHOWN:
            console.print(f"... {len(result.failing) - _SHOWN} more: vcs -f {result.csv_path}")
    if result.causes is None:
        return
    if not result.causes:
        console.print(Text("root cause: nothing fails", style="green"))
        return
    table = Table(title="root causes (estimate)", title_justify="left")
    for header in ("rank", "op", "type", "#", "why"):
        table.add_column(header, overflow="fold")
    for cause in result.causes[:_SHOWN]:
        table.add_row(str(cause.rank), cause.op, cause.type, str(cause.index or ""), cause.reason)
    console.print(table)
