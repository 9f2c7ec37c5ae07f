"""Rendering of `vc`, `vcs` and `ac` results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.compare_summary import CompareSummary
from precision_shell.compare.pipeline.execute import CompareRun, VectorCompareResult
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.slice_results import (
    DUMPED_AFTER,
    DUMPED_AFTER_MEANS,
    NOT_COMPARED,
    NOT_COMPARED_MEANS,
    RankStepTable,
    entry_for_csv,
    nothing_to_compare_lines,
    rank_step_table,
    run_slices,
)
from precision_shell.compare.results.summary import RunSummary, not_begun_text
from precision_shell.compare.results.thresholds import NOT_JUDGED, ThresholdRule
from precision_shell.listing_text import some_of
from precision_shell.render.columns import facts_table, number_column, path_text, text_column
from precision_shell.render.output import renders
from precision_shell.render.summary import render_index_warnings
from precision_shell.render.terminal_plot import render_cosine_plot


def _run_table(title: str, run: CompareRun, judged: bool = True) -> Table:
    t = run.tally
    table = facts_table(title)
    table.add_row("left", path_text(run.left))
    table.add_row("right", path_text(run.right))
    table.add_row(
        "tensors compared",
        f"{t.compared} of {t.rows} rows ({run.files_done}/{run.tasks} dump files)",
    )
    if run.resumed_from and run.resumed_from >= run.tasks:  # QA: "0.00 s, 0 MB/s"
        table.add_row("time", f"all {run.tasks} dump files compared before the resume")
    else:
        table.add_row("time", f"{run.elapsed:.2f} s, {run.mb_per_s:.0f} MB/s of device dumps")
    table.add_row(
        "outputs failing the thresholds",
        Text(str(len(t.failing)), style="red" if t.failing else "green")
        if judged
        else Text(NOT_JUDGED, style="yellow"),
    )
    if t.constant_inputs:
        table.add_row("not compared", Text(f"{t.constant_inputs} x constant input (no benchmark)"))
    if t.cut:
        table.add_row(
            "compared in part",
            Text(
                f"{t.cut} rows of a device tensor larger than its benchmark, compared on its "
                "shape (CompareFailReason says what was cut)",
                style="yellow",
            ),
        )
    for reason, count in t.failed_reasons.most_common():
        table.add_row("failed", Text(f"{count} x {reason}"))
    if t.failed_reasons:  # the counts group reasons: which tensors and files, vcs lists
        table.add_row("", Text("vcs lists each tensor and its reason", style="dim"))
    if run.repeated:
        op, n, name = run.repeated[0]
        more = f" (+{len(run.repeated) - 1} more ops)" if len(run.repeated) > 1 else ""
        table.add_row(
            "dumped several times",
            Text(
                f"{len(run.repeated)} ops, the newest file compared: e.g. {op} x{n} -> {name}{more}"
            ),
        )
    if run.skipped:
        table.add_row("dump files not matched", Text(f"{len(run.skipped)}, e.g. {run.skipped[0]}"))
    return table


def _csv_line(console: Console, run: CompareRun) -> None:
    # On a line of its own, never wrapped: the whole path, to copy, at any terminal width.
    console.print(Text.assemble((" csv ", "bold"), str(run.csv_path)), soft_wrap=True)


def _cell(row: ResultRow, column: str, rule: ThresholdRule) -> Text:
    """A metric cell as printed; red when it is one of the limits the row crosses."""
    text = row.texts.get(column, "NaN")
    crossed = {c.metric for c in rule.crossings(row)}
    return Text(text, style="red" if column in crossed else "")


@renders(VectorCompareResult)
def render_vector_compare(console: Console, result: VectorCompareResult) -> None:
    render_index_warnings(console, result.index_warnings)
    rule = result.rule
    judged = bool(rule.active())
    console.print(
        _run_table(
            "vc: device vs benchmark"
            if result.primary.plan_mode == "benchmark"
            else "vc: device vs device",
            result.primary,
            judged,
        )
    )
    _csv_line(console, result.primary)
    failing = result.first_failing(10)
    slices = run_slices(result.summary)
    several = result.slices or slices.not_begun
    ranks = rank_step_table(slices, result.primary.csv_path) if several else None
    shown = entry_for_csv(ranks.results, result.primary.csv_path) if ranks else None
    where = f" in {shown.label}" if shown else ""
    if failing:
        table = Table(
            title=f"first outputs failing the thresholds{where} ({rule.describe()})",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        number_column(table, "Index", justify="left")
        for col in ("op", "type", "tensor"):
            text_column(table, col)
        for col in ("cosine", "rel euclid", "max abs err"):
            number_column(table, col)
        for row in failing:
            table.add_row(
                str(row.index),
                Text(row.op_name),
                Text(row.op_type),
                Text(row.tensor_index),
                _cell(row, "CosineSimilarity", rule),
                _cell(row, "RelativeEuclideanDistance", rule),
                _cell(row, "MaxAbsoluteError", rule),
            )
        console.print(table)
    elif not judged:
        computed = ", ".join(result.summary.metrics or ())
        console.print(
            f"no output judged: the thresholds limit none of the metrics computed ({computed})",
            style="yellow",
        )
    elif ranks is None:
        console.print(f"no output fails the thresholds ({rule.describe()})", style="green")
    else:
        console.print(f"no output fails the thresholds{where}", style="green")
    render_selection_lines(console, result.summary, ranks, Judged.of(rule))
    if result.secondary is not None:
        console.print(_run_table("vc: device vs device", result.secondary, judged))
        _csv_line(console, result.secondary)
    console.print(Text(f"summary: {result.summary_path}"), style="dim", soft_wrap=True)


@dataclass(frozen=True)
class Judged:
    """How a compare's failing outputs are judged, in the words of the lines counting them:
    the thresholds of a tensor compare, or the statistics rule."""

    fails: str  # what one failing output does: "fails the thresholds"
    fail: str  # what several do
    rule: str  # the rule, in the brackets after the count

    @classmethod
    def of(cls, rule: ThresholdRule) -> Judged:
        return cls(THRESHOLDS.fails, THRESHOLDS.fail, rule.describe())


THRESHOLDS = Judged("fails the thresholds", "fail the thresholds", "")
STATISTICS_RULE = Judged("deviates", "deviate", "statistics rule: help vc")


def render_selection_lines(
    console: Console, summary: RunSummary, ranks: RankStepTable | None, judged: Judged
) -> None:
    """Under `vc` (and `ac -c`) of a run's dump dirs, tensor or statistics compare alike: the
    rank x step table and what holds for all of them, then the dirs selected with nothing to
    compare, the ones a cut-short run never began, and the ones the selection left out."""
    if ranks is not None:
        left_out = {(str(e.get("rank")), str(e.get("step"))) for e in summary.not_selected}
        dirs = ranks.empty - ranks.undumped
        dumped = frozenset({(r.rank, r.step) for r in ranks.results} | left_out | dirs)
        grid = RankStepTable(
            ranks.results,
            dumped=dumped,
            empty=ranks.empty,
            not_begun=ranks.not_begun,
            undumped=ranks.undumped,
        )
        console.print(rank_step_grid(grid))
        console.print(rank_step_verdict(ranks, judged))
    _nothing_to_compare_line(console, summary.nothing_to_compare)
    _not_begun_line(console, summary)
    _not_selected_line(console, summary.not_selected)


def rank_step_verdict(ranks: RankStepTable, judged: Judged) -> Text:
    """What holds for every (rank, step) compared, not just the one whose rows are listed:
    the line under the rank x step table of `vc` and `vcs`. `judged`: the rule the table's
    counts are under."""
    results = ranks.results
    n = len(results)
    # the ranks and steps never begun are no part of the counts: say so beside them
    more = f", {len(ranks.not_begun)} more not begun" if ranks.not_begun else ""
    failing = [r for r in results if r.failed]
    if not failing:
        return Text(
            f"no output {judged.fails} in any of the {n} ranks and steps compared{more} "
            f"({judged.rule})",
            style="green",
        )
    first = failing[0]
    total = sum(r.failed for r in failing)
    return Text(
        f"{total} output{'s' if total != 1 else ''} "
        f"{judged.fail if total != 1 else judged.fails} in "
        f"{len(failing)} of {n} ranks and steps{more} ({judged.rule}); "
        f"first: {first.label} at {first.first_failed_op} "
        f"(vcs --rank {first.rank} --step {first.step} lists them)",
        style="red",
    )


def _nothing_to_compare_line(console: Console, empty: list[dict[str, Any]]) -> None:
    """The dump dirs selected that held nothing to compare, each with why: not the ones the
    selection left out (`_not_selected_line`), which another --rank/--step would compare."""
    for line in nothing_to_compare_lines(empty):
        console.print(Text(line, style="yellow"))


def _not_begun_line(console: Console, summary: RunSummary) -> None:
    """The selected dump dirs the run was cut short before, and what compares them."""
    if not summary.not_begun:
        return
    left = summary.not_begun
    names = some_of([f"rank {e.get('rank')} step {e.get('step')}" for e in left], 6)
    where = summary.path.parent if summary.path is not None else "DIR"
    console.print(
        Text(
            f"{not_begun_text(len(left))} ({names}); vc --resume -o {where} compares them",
            style="yellow",
        ),
        soft_wrap=True,
    )


def _not_selected_line(console: Console, left_out: list[dict[str, Any]]) -> None:
    if not left_out:
        return
    names = ", ".join(f"rank {e.get('rank')} step {e.get('step')}" for e in left_out[:6])
    more = f" and {len(left_out) - 6} more" if len(left_out) > 6 else ""
    console.print(
        Text(
            f"not compared: {len(left_out)} more dump dirs of this run ({names}{more}); "
            "--rank all --step all compares every one",
            style="yellow",
        )
    )


def _metric_cells(row: ResultRow, metrics: list[str], rule: ThresholdRule) -> list[Text]:
    crossed = {c.metric for c in rule.crossings(row)}
    limited = {m for m, _ in rule.active()}
    cells = []
    for name in metrics:
        text = row.texts.get(name, "")
        style = ""
        if name in limited and text and text != "NaN":
            style = "red" if name in crossed else "green"
        cells.append(Text(text or "-", style=style))
    return cells


def rank_step_grid(ranks: RankStepTable, rule: ThresholdRule | None = None) -> Group:
    """Rank per row, step per column: failing outputs and the first failing op. `rule`: the
    thresholds of the look it sits in; counts under other ones (the compare's) say so."""
    versus = f" against rank {ranks.against}" if ranks.against is not None else ""
    title = f"failing outputs per rank{versus} and step (first failing op)"
    if ranks.recounted:
        title += ", at the thresholds below"
    elif rule is not None and ranks.rule is not None and not ranks.rule.judges_like(rule):
        title += (
            f", at the compare's thresholds ({ranks.rule.describe()}), not the ones below:"
            " too many rows to count again"
        )
    table = Table(show_edge=False, pad_edge=False)
    text_column(table, "rank")
    for step in ranks.steps:
        text_column(table, f"step {step}")
    for rank in ranks.ranks:
        cells: list[Text] = []
        for step in ranks.steps:
            entry = ranks.cell(rank, step)
            if entry is None:
                cells.append(Text(ranks.missing(rank, step) or "-", style="dim"))
                continue
            mark = "*" if ranks.shown == (rank, step) else ""
            if entry.failed:
                cell = Text(f"{mark}{entry.failed} ({entry.first_failed_op})", style="red")
            else:
                cell = Text(f"{mark}0", style="yellow" if entry.not_compared else "green")
            if entry.not_compared:
                cell.append(f" ({entry.not_compared} not compared)", style="yellow")
            if entry.partial:
                cell.append(" partial", style="yellow")
            cells.append(cell)
        table.add_row(Text(rank), *cells)
    parts: list[Text | Table] = [Text(title), table]  # the title on its own line: not wrapped
    for line in ranks.omitted_lines():
        parts.append(Text(line, style="dim"))
    for line in ranks.benchmark_dir_lines():
        parts.append(Text(line, style="dim"))
    return Group(*parts)


def render_vcs_rank_table(
    console: Console,
    ranks: RankStepTable,
    judged: Judged,
    shown: str,
    rule: ThresholdRule | None = None,
) -> None:
    """`vcs` of one of several (rank, step) compares: the table of them all, what holds for
    all, which one `shown` (the `*` cell) is, and what the table's cell words mean. `rule`:
    the thresholds of this look (a tensor compare's)."""
    console.print(rank_step_grid(ranks, rule))
    console.print(rank_step_verdict(ranks, judged))
    console.print(Text(f"* {shown} (vcs --rank R --step S shows another)"), style="dim")
    if ranks.dumped_not_compared:
        console.print(Text(f"{NOT_COMPARED}: {NOT_COMPARED_MEANS}"), style="dim")
    if ranks.dumped_after:
        console.print(Text(f"{DUMPED_AFTER}: {DUMPED_AFTER_MEANS}"), style="dim")


@renders(CompareSummary)
def render_compare_summary(console: Console, result: CompareSummary) -> None:
    if result.ranks is not None:
        render_vcs_rank_table(
            console,
            result.ranks,
            Judged.of(result.ranks.rule or result.rule),
            f"the op table below: {result.slice_label or 'the primary compare'}",
            result.rule,
        )
    # one (rank, step) of a run that has others, without the table: whose rows these are
    of = f" ({result.slice_label})" if result.ranks is None and result.slice_label else ""
    console.print(
        Text(
            f"{result.path}{of}: {result.failing_total} of {result.compared_ops} ops fail "
            f"({result.rule.describe(result.columns)})"
        )
    )
    counts = f"{result.compared_rows} of {result.rows} tensors compared"
    if result.constant_inputs:
        counts += f"; not compared: {result.constant_inputs} constant inputs"
    if result.not_compared:
        counts += f"; could not be compared: {result.not_compared}"
    console.print(Text(counts), style="dim")
    if result.partial:
        console.print(Text(f"{result.partial}: {result.partial_cause}"), style="yellow")
    for note in result.notes:
        console.print(Text(note), style="yellow")
    if result.root_cause_slice:
        console.print(Text(f"root cause: found in {result.root_cause_slice}"), style="dim")
    for verdict in result.ops:
        table = Table(show_edge=False, pad_edge=False)
        text_column(table, "tensor")
        text_column(table, "ground truth")
        for name in result.shown_metrics:
            number_column(table, name)
        for row in [*verdict.inputs, *verdict.outputs]:
            label = Text(f"{row.kind} {row.slot}" if row.kind else row.tensor_index)
            table.add_row(
                label,
                Text(row.ground_truth),
                *_metric_cells(row, result.shown_metrics, result.rule),
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
    if result.uncompared:
        _uncompared_table(console, result)
    if result.plot is not None:
        threshold = result.cosine_threshold
        render_cosine_plot(
            console, result.plot, threshold if threshold is not None else 1.0, result.root_cause
        )


def _uncompared_table(console: Console, result: CompareSummary) -> None:
    """The tensors that could not be compared, each with its reason (QA Q27 #3: `ac` said
    "vcs lists why" and `vcs` only counted them)."""
    shown, total = len(result.uncompared), result.not_compared
    more = f"; the first {shown} shown, -l 0 shows all" if shown < total else ""
    table = Table(
        title=f"could not be compared ({total}{more})",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    number_column(table, "#")
    text_column(table, "op")
    text_column(table, "tensor")
    text_column(table, "why")
    for row in result.uncompared:
        table.add_row(
            Text(str(row.index) if row.index is not None else "-"),
            Text(row.op_name),
            Text(row.tensor_index),
            Text(row.reason or "no benchmark op"),
        )
    console.print(table)
