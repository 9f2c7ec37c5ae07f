"""Rendering of statistics compares (`vc`, `vcs` on a statistics dump) and their suspects."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.compare.results.slice_results import rank_step_table, run_slices
from precision_shell.compare.statistics.diagnose import StatisticsDiagnosis
from precision_shell.compare.statistics.dump_config import DumpConfigFiles
from precision_shell.compare.statistics.run import StatisticsCompare, StatisticsCompareResult
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.compare.statistics.view import StatisticsView
from precision_shell.explore.statistics_files import StatisticsFile
from precision_shell.render.columns import facts_table, path_text
from precision_shell.render.compare_views import (
    STATISTICS_RULE,
    render_selection_lines,
    render_vcs_rank_table,
)
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders
from precision_shell.render.summary import render_index_warnings

_SHOWN = 10


def _compare_table(compare: StatisticsCompare, title: str) -> Table:
    table = facts_table(title)
    table.add_row("left", path_text(compare.plan.left))
    table.add_row("right", path_text(compare.plan.right))
    compared = sum(1 for r in compare.rows if r.compared)
    table.add_row(
        "tensors compared",
        f"{compared} of {len(compare.rows)} rows "
        f"({compare.files_done}/{len(compare.plan.tasks)} statistics files)",
    )
    table.add_row("time", f"{compare.elapsed:.2f} s")
    failing = compare.failing
    table.add_row("outputs deviating", Text(str(len(failing)), style="red" if failing else "green"))
    reasons = compare.not_compared_reasons()
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        table.add_row("not compared", f"{count} x {reason}")
    return table


def statistics_rows_table(rows: list[StatisticsRow], title: str) -> Table:
    """Deviating tensors: the statistic that decided, both sides, and how far past the rule."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in (
        "Index",
        "tensor",
        "dtype",
        "statistic",
        "device",
        "benchmark",
        "off",
        "x allowed",
        "verdict",
    ):
        table.add_column(name, overflow="fold")
    for row in rows:
        stat = row.main_statistic
        device, bench, _ = row.statistic(stat) if stat else (None, None, None)
        off = "-"
        if device is not None and bench is not None and math.isfinite(device) and bench:
            off = f"{abs(device - bench) / abs(bench):.3%}"
        table.add_row(
            str(row.index),
            row.tensor_index,
            row.dtype,
            stat or "-",
            fmt_num(device),
            fmt_num(bench),
            off,
            fmt_num(row.deviation),
            Text(row.verdict, style="red" if row.deviates else ""),
        )
    return table


@renders(StatisticsCompareResult)
def render_statistics_compare(console: Console, result: StatisticsCompareResult) -> None:
    render_index_warnings(console, result.index_warnings)
    for n, compare in enumerate(result.compares):
        where = compare.where
        title = (
            "vc: device statistics vs another device dump"
            if compare.against_device
            else "vc: device statistics vs benchmark"
        )
        if len(result.compares) > 1 and where is not None:
            title += f" ({where.label})"
        console.print(_compare_table(compare, title))
        console.print(Text.assemble((" csv ", "bold"), str(compare.csv_path)), soft_wrap=True)
        failing = compare.failing
        if failing and n == 0:
            console.print(statistics_rows_table(failing[:_SHOWN], "first deviating outputs"))
    primary = result.primary.csv_path
    render_selection_lines(
        console,
        result.summary,
        rank_step_table(run_slices(result.summary), primary),
        STATISTICS_RULE,
    )
    console.print(
        Text(
            "statistics rule: help vc; ac -c ranks the suspects and writes the tensor dump config",
            style="dim",
        )
    )


def render_statistics_diagnosis(console: Console, diagnosis: StatisticsDiagnosis) -> None:
    title = "Suspects (statistics)" + (f", {diagnosis.where}" if diagnosis.where else "")
    for note in diagnosis.nonfinite_sources:
        console.print(Text(f"NaN/inf at a source: {note.text}", style="yellow"))
    if not diagnosis.suspects:
        console.print(Text(f"{title}: no op makes a deviation of its own", style="green"))
        return
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in ("#", "Index", "op", "type", "kind", "evidence"):
        table.add_column(name, overflow="fold")
    for n, suspect in enumerate(diagnosis.suspects[:_SHOWN], start=1):
        table.add_row(
            str(n), str(suspect.index), suspect.op, suspect.type, suspect.kind, suspect.reason
        )
    console.print(table)
    if diagnosis.cards is not None:
        console.print(Text.assemble(("cards ", "bold"), (diagnosis.cards, "bold yellow")))
    for where, suspects in diagnosis.others:
        first = suspects[0]
        console.print(
            Text(
                f"{where.label}: a suspect of its own: {first.op} (index {first.index}): "
                f"{first.reason}"
                + (f" (+{len(suspects) - 1} more)" if len(suspects) > 1 else "")
                + f" (ac -c --rank {where.rank} --step {where.step})",
                style="yellow",
            )
        )
    if diagnosis.dump_config is not None:
        render_dump_config(console, diagnosis.dump_config)


@renders(StatisticsView)
def render_statistics_view(console: Console, view: StatisticsView) -> None:
    console.print(Text.assemble((" csv ", "bold"), str(view.csv_path)), soft_wrap=True)
    if view.ranks is not None:
        shown = f"the rows below: {view.slice_label or 'the primary compare'}"
        render_vcs_rank_table(console, view.ranks, STATISTICS_RULE, shown)
    if view.slice_label:
        console.print(Text(f"the compare of {view.slice_label}"), style="dim")
    for note in view.notes:
        console.print(Text(note), style="yellow")
    if view.partial:
        console.print(Text(f"{view.partial}: only the files compared are judged", style="yellow"))
    style = "red" if view.deviating_total else "green"
    console.print(
        Text(
            f"{view.deviating_total} of {view.outputs_compared} compared outputs deviate "
            "(statistics rule: help vc)",
            style=style,
        )
    )
    if view.deviating:
        console.print(statistics_rows_table(view.deviating, "deviating outputs, execution order"))
    if view.suspects:
        ops = ", ".join(str(s.get("op")) for s in view.suspects[:5])
        console.print(Text.assemble(("suspects: ", "bold"), ops))
    elif view.diagnosed_elsewhere:
        console.print(
            Text(
                f"suspects: ac -c diagnosed {view.diagnosed_elsewhere}, not this compare; "
                "ac -c --rank R --step S diagnoses this one",
                style="dim",
            )
        )
    elif not view.diagnosed:
        console.print(
            Text("ac -c ranks the suspects and writes the tensor dump config", style="dim")
        )


def statistics_table(title: Text | str, stats: StatisticsFile) -> Table:
    """The rows of a statistics dump file as recorded (pads included)."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in (
        "tensor",
        "dtype",
        "layout",
        "shape",
        "count",
        "max",
        "min",
        "mean",
        "l2norm",
        "nan/inf",
    ):
        table.add_column(name, overflow="fold")
    for row in stats.rows:
        v = row.values
        nan = v.get("nan_count")
        inf = (v.get("neg_inf_count") or 0) + (v.get("pos_inf_count") or 0)
        nonfinite = "-" if nan is None else f"{int(nan)}/{int(inf)}"
        table.add_row(
            row.label,
            row.dtype,
            row.format,
            "-" if row.shape is None else str(list(row.shape)),
            fmt_num(v.get("count")),
            fmt_num(v.get("max")),
            fmt_num(v.get("min")),
            fmt_num(v.get("mean")),
            fmt_num(v.get("l2norm")),
            nonfinite,
        )
    return table


@renders(StatisticsFile)
def render_statistics_file(console: Console, stats: StatisticsFile) -> None:
    console.print(statistics_table(Text(stats.path, style="bold"), stats))
    console.print(Text(stats.note, style="dim"))


@renders(DumpConfigFiles)
def render_dump_config(console: Console, files: DumpConfigFiles) -> None:
    plan = files.plan
    console.print(
        Text(
            f"tensor dump config: {len(plan.ops)} ops ({len(plan.suspects)} "
            f"suspect{'s' if len(plan.suspects) != 1 else ''} + producers "
            f"to depth {plan.depth}), ~{plan.tensor_bytes:,} bytes, {plan.ratio:.1f}x less than "
            f"a full dump of {plan.full_bytes:,} bytes"
        )
    )
    for label, path in (
        ("acl.json", files.acl_json),
        ("TF session", files.session_options),
        ("summary", files.summary),
    ):
        console.print(Text.assemble((f" {label} ", "bold"), str(path)), soft_wrap=True)
