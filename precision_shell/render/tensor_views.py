"""Rendering of `pt`, `cp` and `dc` results.

Lines holding paths or value lists are printed with `soft_wrap` so rich never breaks them:
a path cut in two cannot be copied, and a log keeps one line per fact.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.commands.tensor import DecodedFiles, TensorComparison, TensorSummaries
from precision_shell.compare.metrics.elementwise import ElementRow
from precision_shell.render.numbers import fmt_fixed, fmt_num
from precision_shell.render.output import renders
from precision_shell.render.summary import render_index_warnings
from precision_shell.workspace.tensor_stats import TensorStats


def stats_line(stats: TensorStats) -> str:
    return (
        f"shape {list(stats.shape)}  dtype {stats.dtype}  max {fmt_num(stats.max)}  "
        f"min {fmt_num(stats.min)}  mean {fmt_num(stats.mean)}  std {fmt_num(stats.std)}  "
        f"nan {stats.nan_count}  inf {stats.inf_count}"
    )


@renders(TensorSummaries)
def render_tensor_summaries(console: Console, result: TensorSummaries) -> None:
    for item in result.items:
        title = Text(item.label, style="bold")
        if item.where:
            title.append(f"  ({item.where})")
        console.print(title, soft_wrap=True)
        stored = f" (stored as {item.stored})" if item.stored else ""
        console.print(
            f"  {stats_line(item.stats)}  layout {item.layout}{stored}",
            markup=False,
            soft_wrap=True,
        )
        if item.note:
            console.print(
                f"  kept the stored layout, pads included: {item.note}",
                markup=False,
                style="yellow",
                soft_wrap=True,
            )
        preview = ", ".join(fmt_num(v) for v in item.preview)
        more = " ..." if item.stats.count > len(item.preview) else ""
        console.print(f"  values: [{preview}{more}]", markup=False, soft_wrap=True)
        console.print(f"  saved {item.text_file}", markup=False, style="dim", soft_wrap=True)


def _element_table(title: str, rows: list[ElementRow]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in ("index", "left", "right", "abs diff", "rel diff"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(list(r.index)),
            fmt_num(r.left),
            fmt_num(r.right),
            fmt_num(r.diff),
            fmt_num(r.relative),
        )
    return table


@renders(TensorComparison)
def render_tensor_comparison(console: Console, result: TensorComparison) -> None:
    rep = result.report
    left = f"  ({result.left_where})" if result.left_where else ""
    right = f"  ({result.right_where})" if result.right_where else ""
    console.print(f"left:  {result.left}{left}", markup=False, soft_wrap=True)
    console.print(f"       {stats_line(result.left_stats)}", markup=False, soft_wrap=True)
    console.print(f"right: {result.right}{right}", markup=False, soft_wrap=True)
    console.print(f"       {stats_line(result.right_stats)}", markup=False, soft_wrap=True)
    if rep.truncated_from:
        console.print(
            f"compared the first {rep.count} elements (counts {rep.truncated_from[0]} vs "
            f"{rep.truncated_from[1]}, --flatten-to-min)",
            style="yellow",
            soft_wrap=True,
        )
    if rep.worst:
        console.print(_element_table(f"{len(rep.worst)} largest differences", rep.worst))
        console.print(_element_table(f"first {len(rep.first)} elements", rep.first))
    verdict = (
        Text("allclose: yes", style="green") if rep.allclose else Text("allclose: no", style="red")
    )
    console.print(verdict)
    console.print(
        f"cosine {fmt_fixed(rep.cosine)}  max abs error {fmt_num(rep.max_abs_error)}  "
        f"max relative error {fmt_num(rep.max_relative_error)}  error ratio "
        f"{fmt_fixed(rep.error_ratio)} ({rep.mismatch_count}/{rep.count} with |l-r| > "
        f"{rep.atol:g} + {rep.rtol:g}*|r|)",
        markup=False,
        soft_wrap=True,
    )
    if result.saved:
        console.print(f"saved {result.saved}", markup=False, style="dim", soft_wrap=True)


@renders(DecodedFiles)
def render_decoded(console: Console, result: DecodedFiles) -> None:
    render_index_warnings(console, result.index_warnings)
    for label, path, shape, layout in result.files:
        console.print(f"{label} -> {path}  {list(shape)} {layout}", markup=False, soft_wrap=True)
    for note in result.notes:
        console.print(note, markup=False, style="yellow", soft_wrap=True)
    console.print(
        f"{len(result.files)} file(s) written under {result.out_dir}",
        style="dim",
        markup=False,
        soft_wrap=True,
    )
