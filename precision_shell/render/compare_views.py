"""Rendering of `vc`, `vcs` and `ac` results."""

from __future__ import annotations

import math

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.compare_summary import CompareSummary, Threshold
from precision_shell.compare.pipeline.execute import CompareRun, VectorCompareResult
from precision_shell.compare.results.csv_reader import CsvRow
from precision_shell.render.numbers import fmt_fixed
from precision_shell.render.output import renders
from precision_shell.render.terminal_plot import render_cosine_plot


def _run_table(title: str, run: CompareRun) -> Table:
    t = run.tally
    table = Table(title=title, title_justify="left", show_header=False, show_edge=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("left", Text(run.left))
    table.add_row("right", Text(run.right))
    table.add_row(
        "tensors compared",
        f"{t.compared} of {t.rows} rows ({run.files_done}/{run.tasks} dump files)",
    )
    table.add_row("time", f"{run.elapsed:.2f} s, {run.mb_per_s:.0f} MB/s of device dumps")
    table.add_row(
        "outputs below threshold", Text(str(len(t.below)), style="red" if t.below else "green")
    )
    for reason, count in t.failed_reasons.most_common():
        table.add_row("not compared", Text(f"{count} x {reason}"))
    if run.skipped:
        table.add_row("dump files not matched", Text(f"{len(run.skipped)}, e.g. {run.skipped[0]}"))
    table.add_row("csv", Text(str(run.csv_path)))
    return table


def _cos_text(value: float | None, threshold: float) -> Text:
    if value is None or math.isnan(value):
        return Text("nan", style="red")
    style = "red" if value < threshold else "green"
    return Text(fmt_fixed(value), style=style)


@renders(VectorCompareResult)
def render_vector_compare(console: Console, result: VectorCompareResult) -> None:
    console.print(
        _run_table(
            "vc: device vs benchmark"
            if result.primary.plan_mode == "benchmark"
            else "vc: device vs device",
            result.primary,
        )
    )
    below = result.first_below(10)
    if below:
        table = Table(
            title=f"first ops below cosine {result.cosine_threshold:g}",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        for col in ("Index", "op", "type", "tensor", "cosine", "max abs err"):
            table.add_column(col)
        for row in below:
            m = row.metrics
            table.add_row(
                str(row.index),
                Text(row.op_name or row.npu_dump),
                Text(row.op_type),
                Text(row.tensor_index),
                _cos_text(m.cosine if m else None, result.cosine_threshold),
                fmt_fixed(m.max_abs_error) if m else "NaN",
            )
        console.print(table)
    else:
        console.print(f"no output below cosine {result.cosine_threshold:g}", style="green")
    if result.secondary is not None:
        console.print(_run_table("vc: device vs device", result.secondary))
    console.print(Text(f"summary: {result.summary_path}"), style="dim")
    if result.primary.interrupted:
        console.print("interrupted: the rows written so far are kept", style="yellow")


def _metric_cells(row: CsvRow, metrics: list[str], thresholds: dict[str, Threshold]) -> list[Text]:
    cells = []
    for name in metrics:
        text = row.texts.get(name, "")
        t = thresholds.get(name)
        style = ""
        if t is not None and text and text != "NaN":
            style = "red" if t.fails(row) else "green"
        cells.append(Text(text or "-", style=style))
    return cells


@renders(CompareSummary)
def render_compare_summary(console: Console, result: CompareSummary) -> None:
    limits = ", ".join(
        f"{t.metric} {'<' if t.higher_is_better else '>'} {t.value:g}" for t in result.thresholds
    )
    console.print(
        Text(f"{result.path}: {result.failing_total} of {result.compared_ops} ops fail ({limits})")
    )
    thresholds = {t.metric: t for t in result.thresholds}
    for verdict in result.ops:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("tensor")
        table.add_column("ground truth")
        for name in result.shown_metrics:
            table.add_column(name, justify="right")
        for row in [*verdict.inputs, *verdict.outputs]:
            label = Text(f"{row.kind} {row.slot}" if row.kind else row.tensor_index)
            table.add_row(
                label, Text(row.ground_truth), *_metric_cells(row, result.shown_metrics, thresholds)
            )
        title = Text.assemble(
            (f"[{verdict.index}] ", "dim"), (f"[{verdict.op_type}] ", "cyan"), verdict.op
        )
        console.print(
            Panel(
                Group(table, Text("; ".join(verdict.failing), style="red")),
                title=title,
                title_align="left",
            )
        )
    if result.failing_total > len(result.ops):
        console.print(
            f"... {result.failing_total - len(result.ops)} more failing ops (-l 0 shows all)",
            style="dim",
        )
    if result.plot is not None:
        threshold = result.cosine_threshold
        render_cosine_plot(
            console, result.plot, threshold if threshold is not None else 1.0, result.root_cause
        )
