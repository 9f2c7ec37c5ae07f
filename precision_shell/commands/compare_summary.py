"""`vcs`: the ops whose outputs fall below the thresholds in a compare result, in execution order."""

from __future__ import annotations

import argparse
import glob
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from precision_shell.compare.metrics.cells import ALIAS_TEXT, COSINE, metric_column
from precision_shell.compare.results.columns import (
    KIND_INPUT,
    ResultColumns,
    load_result_columns,
    position,
)
from precision_shell.compare.results.columns_cache import CACHE_DIR
from precision_shell.compare.results.computed import computed_metrics
from precision_shell.compare.results.diagnosed_slice import diagnosis_elsewhere
from precision_shell.compare.results.input_changes import stale_compare_line, stale_slices_line
from precision_shell.compare.results.run_state import (
    INTERRUPTED,
    ResultPick,
    pick_result_csv,
)
from precision_shell.compare.results.schema import ResultRow, ResultTable, is_statistics_csv
from precision_shell.compare.results.slice_choice import slice_csv
from precision_shell.compare.results.slice_results import (
    RankStepTable,
    compared_run,
    dumped_slices,
    nothing_to_compare_lines,
    rank_step_table,
    recount,
    shown_slice_label,
    unmatched_text,
)
from precision_shell.compare.results.summary import RunSummary, judging_rule, summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.compare.statistics.view import StatisticsView, statistics_view
from precision_shell.errors import PrecisionError
from precision_shell.report.point_arrays import op_cosines_of_columns
from precision_shell.report.points import OpCosine
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command


@dataclass
class OpVerdict:
    index: int | None
    op: str
    op_type: str
    ground_truth: str
    inputs: list[ResultRow] = field(default_factory=list)
    outputs: list[ResultRow] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)  # "output 0: CosineSimilarity 0.88 < 0.98"


@dataclass
class CompareSummary:
    """`vcs`: failing ops with their inputs' and outputs' metrics side by side."""

    path: Path
    rule: ThresholdRule
    columns: list[str]  # the file's metric columns
    shown_metrics: list[str]
    ops: list[OpVerdict]
    failing_total: int
    compared_ops: int
    rows: int = 0
    compared_rows: int = 0
    constant_inputs: int = 0
    not_compared: int = 0  # rows not compared for another reason than being a constant
    # the first of those (`-l`), each with its reason: what `ac` sends the user here for
    uncompared: list[ResultRow] = field(default_factory=list)
    partial: str | None = None  # "partial: 16 of 300 files" when the compare is not whole
    partial_cause: str = INTERRUPTED  # why: interrupted, killed, still running
    root_cause: str | None = None
    diagnosed: bool = False
    plot: list[OpCosine] | None = None  # `--plot`: worst output cosine per op
    ranks: RankStepTable | None = None  # several (rank, step) compared: each one's verdict
    slice_label: str | None = None  # "rank 1 step 0": the compare the op table is of
    root_cause_slice: str | None = None  # where the diagnosis found its root cause
    notes: list[str] = field(default_factory=list)  # e.g. why the columns cache was not used

    @property
    def cosine_threshold(self) -> float | None:
        return self.rule.cosine


def _position(verdict: OpVerdict) -> float:
    """Its graph position; ops without one sort last."""
    return verdict.index if verdict.index is not None else math.inf


def parse_limit(text: str, columns: list[str]) -> tuple[str, float]:
    """`NAME:THRESHOLD` (NAME a column or a short name such as `mae`) -> (column, limit)."""
    name, sep, value = text.partition(":")
    if not sep:
        raise UsageError(f"vcs: --metric wants NAME:THRESHOLD, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"vcs: threshold of {name!r} is not a number: {value!r}") from None
    column = metric_column(name)
    if column is None:  # a column of this file by its own name (MegEngineRelativeError...)
        column = next((c for c in columns if c.lower() == name.strip().lower()), None)
    if column is None or column not in columns:
        raise UsageError(f"vcs: unknown metric {name!r}; this file has {', '.join(columns)}")
    return column, number


def _shown_metrics(rule: ThresholdRule, columns: list[str]) -> list[str]:
    shown = [m for m, _ in rule.active(columns)]
    for extra in (COSINE, "MaxAbsoluteError", "RelativeEuclideanDistance"):
        if extra in columns and extra not in shown:
            shown.append(extra)
    return shown


def summarize_columns(
    table: ResultColumns, rule: ThresholdRule, limit: int | None
) -> CompareSummary:
    """`summarize` answered from the columns: the rule and the counts run over arrays, and
    rows are built only for the failing ops shown."""
    failing_rows = table.crossing(rule) & (table.kind != KIND_INPUT)
    failing_codes = np.unique(table.op[failing_rows])
    first = table.op_first_rows()[failing_codes]
    index_texts = table.index_texts(first)
    keyed = sorted(
        zip(first.tolist(), failing_codes.tolist(), index_texts, strict=True),
        key=lambda f: (position(f[2]), f[0]),
    )
    shown = keyed[:limit] if limit else keyed
    rows_of = table.rows_by_op(code for _, code, _ in shown)
    verdicts = []
    for _, code, _ in shown:
        rows = table.rows_at(rows_of[code])
        head = rows[0]
        verdict = OpVerdict(head.index, table.op_names.value(code), head.op_type, head.ground_truth)
        for row in rows:
            (verdict.inputs if row.kind == "input" else verdict.outputs).append(row)
            if row.kind == "input":
                continue
            for crossing in rule.crossings(row):
                verdict.failing.append(f"{row.kind or 'tensor'} {row.slot}: {crossing}")
        verdicts.append(verdict)
    rows_total = len(table)
    compared = int(np.count_nonzero(table.compared))
    constants = int(np.count_nonzero(table.constant))
    uncompared = np.flatnonzero(~table.compared & ~table.constant)
    return CompareSummary(
        path=table.path,
        rule=rule,
        columns=table.metric_columns,
        shown_metrics=_shown_metrics(rule, table.metric_columns),
        ops=verdicts,
        failing_total=len(keyed),
        compared_ops=table.op_names.distinct,
        rows=rows_total,
        compared_rows=compared,
        constant_inputs=constants,
        not_compared=rows_total - compared - constants,
        uncompared=table.rows_at(uncompared[:limit] if limit else uncompared),
        notes=list(table.notes),
    )


def summarize(table: ResultTable, rule: ThresholdRule, limit: int | None) -> CompareSummary:
    by_op: dict[str, OpVerdict] = {}
    order: list[str] = []
    rows = compared = constants = 0
    uncompared: list[ResultRow] = []
    for row in table.rows:
        rows += 1
        if row.compared:
            compared += 1
        elif row.constant_input:
            constants += 1
        else:
            uncompared.append(row)
        op = row.op_name
        verdict = by_op.get(op)
        if verdict is None:
            verdict = by_op[op] = OpVerdict(row.index, op, row.op_type, row.ground_truth)
            order.append(op)
        (verdict.inputs if row.kind == "input" else verdict.outputs).append(row)
        if row.kind == "input":
            continue
        for crossing in rule.crossings(row):
            verdict.failing.append(f"{row.kind or 'tensor'} {row.slot}: {crossing}")
    order.sort(key=lambda op: _position(by_op[op]))
    failing = [by_op[op] for op in order if by_op[op].failing]
    return CompareSummary(
        path=table.path,
        rule=rule,
        columns=table.metric_columns,
        shown_metrics=_shown_metrics(rule, table.metric_columns),
        ops=failing[:limit] if limit else failing,
        failing_total=len(failing),
        compared_ops=len(order),
        rows=rows,
        compared_rows=compared,
        constant_inputs=constants,
        not_compared=rows - compared - constants,
        uncompared=uncompared[:limit] if limit else uncompared,
    )


@command("vcs")
@argument(
    "-f",
    "--file",
    type=Path,
    complete="path",
    help="result CSV or dir (default: the newest vc result)",
)
@argument(
    "-c", "--cosine", type=float, help="cosine similarity threshold (default from settings: 0.98)"
)
@argument(
    "-l",
    "--limit",
    type=int,
    default=20,
    help="ops, and tensors not compared, to show (default 20; 0 = all)",
)
@argument(
    "--metric",
    action="append",
    default=[],
    metavar="NAME:THRESHOLD",
    help=(
        "extra limit, e.g. MaxAbsoluteError:0.1 (errors fail above, cosine below); short "
        f"names: {ALIAS_TEXT}"
    ),
)
@argument(
    "--plot",
    action="store_true",
    help="also plot the worst output cosine per op, with the threshold and the root cause",
)
@argument("--rank", metavar="R", help="the op table of this rank's compare (default: the primary)")
@argument("--step", metavar="S", help="the op table of this step's compare (default: the primary)")
def vcs_command(ctx: ShellContext, args: argparse.Namespace) -> CompareSummary | StatisticsView:
    """vcs [-f FILE_OR_DIR] [-c COS] [-l LIMIT] [--metric NAME:THRESHOLD ...] [--plot] [--rank R] [--step S]

    Ops whose outputs fall below the thresholds, in execution order, inputs vs outputs.

    With several ranks/steps compared, also each one's failing outputs and first failing op.
    """
    if args.limit < 0:
        raise UsageError("vcs: -l must not be negative")
    target = named_result(ctx, args.file, "vcs") if args.file else ctx.compare_results()
    pick = pick_result_csv(Path(target), statistics=True)
    csv_path = pick.csv_path
    summary = _summary_of(csv_path)
    shown = slice_csv(pick.slices(summary), csv_path, args.rank, args.step, "vcs")
    if is_statistics_csv(shown):
        if args.metric or args.cosine is not None or args.plot:
            raise UsageError("vcs: -c, --metric and --plot are for tensor compares")
        view = statistics_view(shown, args.limit or None)
        view.ranks = _rank_table(ctx, summary, shown, pick)
        view.notes = _notes(ctx, summary, shown, pick)
        if view.ranks is None:
            view.notes += _untabled_lines(summary)
        return view
    table = load_result_columns(
        shown, lambda: ctx.workspace.output_dir(CACHE_DIR), pick.journaled_length(shown)
    )
    result = summary_of(ctx, table, args.cosine, args.metric, args.limit, summary, pick)
    result.notes[:0] = _notes(ctx, summary, shown, pick)
    if result.ranks is None:
        result.notes += _untabled_lines(summary)
    others = [m for m, _ in result.rule.active(table.metric_columns) if m != COSINE]
    if args.cosine is not None and others:  # precision_tool's -c was the cosine alone
        result.notes.append(
            f"-c sets the cosine limit; {' and '.join(others)} still "
            f"{'judges' if len(others) == 1 else 'judge'} too (--metric red:inf leaves the "
            "cosine alone)"
        )
    if args.plot:
        result.plot = op_cosines_of_columns(table, result.rule)
    return result


def named_result(ctx: ShellContext, given: Path, command_name: str) -> Path:
    """`-f`'s path, or, when it is a bare name nothing here is called (`result_<ts>.csv`, a
    result dir's `<ts>`), the one result of that name under temp/vector_compare/."""
    if given.exists() or len(given.parts) != 1:
        return given
    root = ctx.compare_results()
    found = [
        p for p in (root / given.name, *root.glob(f"*/{glob.escape(given.name)}")) if p.exists()
    ]
    if len(found) > 1:
        raise UsageError(
            f"{command_name}: {len(found)} results are named {given.name} under {root}: give a path, "
            f"e.g. -f {found[0]}"
        )
    return found[0] if found else given


def _notes(
    ctx: ShellContext, summary: RunSummary | None, csv_path: Path, pick: ResultPick
) -> list[str]:
    """What vcs says of the compare before its rows: inputs changed since, how it was picked."""
    unmatched = unmatched_text(summary, csv_path)
    return (
        _stale_lines(ctx, summary, csv_path)
        + pick.notes("vcs")
        + ([unmatched] if unmatched is not None else [])
    )


def _untabled_lines(summary: RunSummary | None) -> list[str]:
    """With no rank x step table to show them: the dump dirs the compare selected that held
    nothing to compare (a rank that never dumped the step `vc --step` gave)."""
    return [] if summary is None else nothing_to_compare_lines(summary.nothing_to_compare)


def _stale_lines(ctx: ShellContext, summary: RunSummary | None, csv_path: Path) -> list[str]:
    """`stale_compare_line` and, under a rank x step table, `stale_slices_line` for a reader;
    none for a compare outside any workspace."""
    try:
        ws = ctx.workspace
    except PrecisionError:  # a foreign compare opened by itself
        return []
    lines = (stale_compare_line(ws, summary, csv_path), stale_slices_line(ws, summary, csv_path))
    return [line for line in lines if line is not None]


def _summary_of(csv_path: Path) -> RunSummary | None:
    """The summary.json of the run the CSV belongs to (optional: msaccucmp's CSVs have none)."""
    try:
        return summary_beside(csv_path)
    except PrecisionError:
        return None


def summary_of(
    ctx: ShellContext,
    table: ResultTable | ResultColumns,
    cosine: float | None,
    metrics: list[str],
    limit: int,
    summary: RunSummary | None = None,
    pick: ResultPick | None = None,
) -> CompareSummary:
    """Judge `table` by the settings' rule (a MegEngine or SigmaStar compare: the rule its
    summary recorded, that tool's own); `-c` and `--metric` override single limits. `pick`:
    the state of the table's run when its reader has it (its journal is read once)."""
    rule = judging_rule(summary, ThresholdRule.from_settings(ctx.settings))
    asked = [COSINE] if cosine is not None else []  # the metrics the user limited
    try:
        if cosine is not None:
            rule = rule.with_limit(COSINE, cosine)
        for text in metrics:
            column, value = parse_limit(text, table.metric_columns)
            asked.append(column)
            rule = rule.with_limit(column, value)
    except UsageError:
        raise  # says vcs: already
    except PrecisionError as exc:
        raise UsageError(f"vcs: {exc}") from None
    computed = computed_metrics(summary, table)
    if computed is not None:  # vc --alg: a limit on a metric not computed checks nothing
        missing = [m for m in asked if m not in computed]
        if missing:
            raise UsageError(
                f"vcs: this compare did not compute {', '.join(missing)} (vc --alg "
                f"{','.join(computed)}); limit one of those, or run vc without --alg"
            )
        rule = rule.of_metrics(computed)
    if not rule.active(table.metric_columns):
        if computed is not None:
            raise UsageError(
                f"{table.path}: the thresholds limit none of the metrics this compare computed "
                f"(vc --alg {','.join(computed)}); give --metric NAME:LIMIT"
            )
        raise UsageError(f"{table.path}: no column the thresholds limit; give --metric NAME:LIMIT")
    if isinstance(table, ResultColumns):
        result = summarize_columns(table, rule, limit or None)
    else:
        result = summarize(table, rule, limit or None)
    if computed is not None:  # no column of NaN the compare never computed
        result.shown_metrics = [m for m in result.shown_metrics if m in computed]
    state = pick.of(table.path) if pick is not None else ResultPick.at(table.path)
    result.partial, result.partial_cause = state.partial_state(summary, table.path)
    # a killed run has no summary: its journal knows its ranks and steps
    ranks = _rank_table(ctx, summary, table.path, state)
    result.ranks = None if ranks is None else _recount(ctx, ranks, table, rule, state)
    result.slice_label = shown_slice_label(state.slices(summary), summary, table.path)
    if summary is not None:
        result.diagnosed = summary.diagnosis is not None
        elsewhere = diagnosis_elsewhere(summary, table.path)
        if elsewhere is None:
            result.root_cause = summary.diagnosis.root_cause if summary.diagnosis else None
        elif elsewhere.root_cause:
            # the root cause belongs to another compare: not to this op table
            result.root_cause_slice = elsewhere.label
    return result


def _rank_table(
    ctx: ShellContext, summary: RunSummary | None, csv_path: Path, state: ResultPick
) -> RankStepTable | None:
    """The rank x step table of the run `csv_path` is a compare of (None: of one compare),
    as the compare counted it (tensor and statistics compares alike)."""
    try:
        dumped = dumped_slices(compared_run(ctx.workspace, summary))
    except PrecisionError:  # a foreign compare outside any workspace
        dumped = None
    return rank_step_table(state.slices(summary), csv_path, dumped)


def _recount(
    ctx: ShellContext,
    ranks: RankStepTable,
    table: ResultTable | ResultColumns,
    rule: ThresholdRule,
    state: ResultPick,
) -> RankStepTable:
    """The rank x step table counted under `rule` (this look's thresholds) when they are not
    the compare's and the other compares are small enough to read again (`recount`)."""

    def load(path: Path) -> ResultColumns:
        if isinstance(table, ResultColumns) and path.name == table.path.name:
            return table  # the op table's own compare: read already
        return load_result_columns(
            path, lambda: ctx.workspace.output_dir(CACHE_DIR), state.journaled_length(path)
        )

    return recount(ranks, rule, table.path, load)
