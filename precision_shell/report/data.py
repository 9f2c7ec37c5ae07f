"""Everything the report shows, gathered from a result CSV and the `summary.json` beside it.

Counts come from the CSV itself (the store's row rules); the summary, optional (an msaccucmp
CSV has none), gives the threshold rule, whether the run is partial, and the diagnosis when
one ran: without it the page says the compare was not diagnosed.

The CSV is read through its columns cache (results/columns.py). A result of more than
`BIG_ROWS` rows keeps every output point as arrays (`BigResult`) but only the rows of the ops
with a failing output, of the root cause and of their neighbours as rows: the page says where
the full table is.

A MegEngine or SigmaStar compare (`FOREIGN_MODES`, vc -lt/-rt on two foreign dumps) is judged
by the rule its summary recorded (that tool's own, as `vcs` judges it); its CSV has no
relative Euclidean distance, so the plot's second panel is the rule's error metric
(`ErrorPanel`: MegEngineRelativeError on a log scale, SigmaStarRMSE).

A run of several (rank, step) compares has one diagnosis, of one of them
(`slice_results.diagnosis_elsewhere`): the page of another names where its root cause was
found, labels the advisor's findings with that compare and leaves out its baseline; every
count, the first failing op and the partial state are the page's own compare's.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precision_shell.compare.results.columns import (
    KIND_OUTPUT,
    ResultColumns,
    load_result_columns,
)
from precision_shell.compare.results.computed import computed_metrics
from precision_shell.compare.results.diagnosed_slice import DiagnosisElsewhere, diagnosis_elsewhere
from precision_shell.compare.results.run_state import INTERRUPTED, ResultPick
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.slice_results import (
    RankStepTable,
    benchmark_of,
    failing_outputs,
    nothing_to_compare_lines,
    rank_step_table,
    recount,
    shown_slice_label,
    unmatched_text,
)
from precision_shell.compare.results.summary import (
    RunSummary,
    judging_rule,
    none_proven,
    proven_root,
    shown_first,
    summary_beside,
)
from precision_shell.compare.results.tally import reason_kind
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.foreign.dumps import MEGENGINE, SIGMASTAR
from precision_shell.report.point_arrays import PointArrays, op_x, point_arrays
from precision_shell.report.points import COSINE, RED, ErrorPanel, PlotPoint, output_points
from precision_shell.report.replay_caveat import replay_caveat

# Above this many rows the page carries only the failing outputs' ops and their neighbours
# (the plot still shows every output); the full table stays in the CSV.
BIG_ROWS = 100_000
MAX_CARRIED_ROWS = 15_000  # rows the big page's table carries at most (~10 MB of HTML)
ENV_FULL_TABLE = "PRECISION_SHELL_REPORT_FULL_TABLE"  # "1": every row on the page, any size

# Compares of two foreign dumps: judged by their own tool's rule, which summary.json records
# (`RunSummary.own_tool_rule`); the page's name for each.
FOREIGN_MODES = {MEGENGINE: "MegEngine", SIGMASTAR: "SigmaStar"}
_LOG_SCALE = frozenset({"MegEngineRelativeError"})  # errors spanning decades


@dataclass
class BigResult:
    """A result too big for one page: what the page carries instead of every row."""

    points: PointArrays  # every output point, for the page's script to draw
    total_rows: int
    carried_ops: int
    failing_ops: int
    neighbours: str  # "graph": neighbours in the device graph; else "execution order"
    dropped_ops: int = 0  # failing ops' neighbours (or failing ops) past MAX_CARRIED_ROWS


@dataclass
class ReportData:
    csv_path: Path
    header: list[str]
    rows: list[ResultRow]
    cells: dict[int, list[str]]  # ResultRow.line -> the row's raw cells, every column
    metric_columns: list[str]
    rule: ThresholdRule
    points: list[PlotPoint]
    summary: RunSummary | None
    workspace: str
    created: str  # when the compare ran (summary), else the CSV's modification time
    total_rows: int
    compared: int
    constant_inputs: int
    failed: int
    root_causes: list[dict[str, Any]] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ranks: RankStepTable | None = None  # several (rank, step) compared: each one's verdict
    slice_label: str | None = None  # "rank 1 step 0": the compare this page is of
    # the diagnosis (root cause, advisor, baseline) is about another compare: which one
    elsewhere: DiagnosisElsewhere | None = None
    first_failing_op: str | None = None  # of this page's compare, as the ranks table counts
    failed_by_reason: dict[str, int] = field(default_factory=dict)  # this CSV's, not compared
    partial: str | None = None  # "partial: ..." when this page's compare is not whole
    partial_cause: str = INTERRUPTED  # why: interrupted, killed, still running
    big: BigResult | None = None  # the page carries part of the table (see BigResult)
    columns: ResultColumns | None = None
    notes: list[str] = field(default_factory=list)  # why the columns cache was not used
    error_panel: ErrorPanel | None = None  # the plot's second panel when there is no SQNR
    # "the compare ... predates a change to a file it compared": its rows may be stale
    stale: str | None = None
    # under the rank x step table: the other cards whose files changed since (their cells may
    # be stale), or how many were not checked (`input_changes.stale_slices_line`)
    stale_others: str | None = None
    benchmark: str | None = None  # the benchmark dir this page's compare read (`tf/dump/`)
    unmatched: str | None = None  # dump files vc could not place in the graph: no rows here

    @property
    def untabled_lines(self) -> list[str]:
        """With no rank x step table to show them: the dump dirs the compare selected that
        held nothing to compare (ranks that never dumped the step `vc --step` gave)."""
        if self.ranks is not None or self.summary is None:
            return []
        return nothing_to_compare_lines(self.summary.nothing_to_compare)

    @property
    def foreign(self) -> str | None:
        """ "MegEngine" / "SigmaStar" for a compare of two such dumps, else None."""
        return foreign_family(self.summary)

    @property
    def judged(self) -> bool:
        """Some metric the compare computed has a limit (`vc --alg mae`: none, not judged)."""
        return bool(self.rule.active(self.metric_columns))

    @property
    def point_count(self) -> int:
        return len(self.big.points) if self.big is not None else len(self.points)

    @property
    def failing_points(self) -> int:
        if self.big is not None:
            return int(np.count_nonzero(self.big.points.fails))
        return sum(1 for p in self.points if p.fails)

    def rows_for_ops(self, ops: Iterable[str]) -> list[ResultRow]:
        """Every row of these ops (from the whole result, also on a big page)."""
        wanted = set(ops)
        if self.big is None or self.columns is None:
            return [r for r in self.rows if r.op_name in wanted]
        table = self.columns
        codes = [k for k in range(table.op_names.distinct) if table.op_names.value(k) in wanted]
        by_op = table.rows_by_op(codes)
        rows = sorted(int(i) for c in codes for i in by_op[c])
        return table.rows_at(rows)

    @property
    def root_cause(self) -> str | None:
        """The root cause the page marks (`proven_root`): none when the replay finds no fault
        at the first cause (the page then says where the deviation shows first)."""
        return proven_root(self.root_causes)

    @property
    def shows_first(self) -> str | None:
        return shown_first(self.root_causes)

    @property
    def none_proven(self) -> bool:
        return none_proven(self.root_causes)

    @property
    def marked_cause(self) -> dict[str, Any]:
        """The cause the plot marks and labels: the root cause's, none when none is proven."""
        return self.root_causes[0] if self.root_cause else {}

    @property
    def diagnosed(self) -> bool:
        """A diagnosis ran on this compare (`ac -c`); `vc` alone writes none."""
        return self.summary is not None and self.summary.diagnosis is not None

    @property
    def replay_unfinished(self) -> str | None:
        """What the diagnosis's replay, cut short, left undone (as `ac -c` said it)."""
        diagnosis = self.summary.diagnosis if self.summary is not None else None
        return replay_caveat(diagnosis.replay) if diagnosis is not None else None

    @property
    def baseline_first_below(self) -> str | None:
        """What older tools name (the first op below the cosine threshold), when the
        diagnosis that worked it out is about this page's compare."""
        diagnosis = self.summary.diagnosis if self.summary is not None else None
        if diagnosis is None or self.elsewhere is not None:
            return None
        return diagnosis.baseline_first_below

    @property
    def cosine_line(self) -> bool:
        """The cosine panel draws its threshold line: always for our rule, for another tool's
        rule only when it limits the cosine."""
        return self.error_panel is None or self.rule.cosine is not None

    @property
    def cosine_threshold(self) -> float:
        cos = self.rule.cosine
        return cos if cos is not None else 1.0

    def fails(self, row: ResultRow) -> bool:
        """A compared output the threshold rule fails."""
        return row.kind == "output" and self.rule.fails(row)

    def rows_of(self, op: str) -> list[ResultRow]:
        return [r for r in self.rows if r.op_name == op]


def _carried(
    table: ResultColumns,
    rule: ThresholdRule,
    root_cause: str | None,
    neighbours: Callable[[str], Iterable[str]] | None,
    max_rows: int,
) -> tuple[np.ndarray, int, int, str, int]:
    """The rows a big page carries: every row of the ops with a failing output, of the root
    cause, and of their neighbours (in the graph when given, else the ops just before and
    after in execution order), at most `max_rows` (failing ops first).

    Returns (row numbers, carried ops, failing ops, neighbour kind, ops dropped)."""
    failing = np.unique(table.op[table.crossing(rule) & (table.kind == KIND_OUTPUT)])
    names = {table.op_names.value(int(c)): int(c) for c in failing}
    wanted: list[int] = failing.tolist()
    kind = "execution order"
    if neighbours is not None or root_cause is not None:
        all_names = {n: k for k, n in enumerate(table.op_names.values())}
        if root_cause in all_names:
            wanted.insert(0, all_names[root_cause])
    if neighbours is not None:
        kind = "graph"
        for name in list(names):
            wanted += [all_names[n] for n in neighbours(name) if n in all_names]
    else:
        xs = op_x(table)
        order = np.lexsort((table.op_first_rows(), xs))  # op codes in execution order
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        for c in failing.tolist():
            at = int(place[c])
            wanted += [int(order[k]) for k in (at - 1, at + 1) if 0 <= k < len(order)]
    seen: dict[int, None] = {}
    for code in wanted:
        seen.setdefault(code, None)
    by_op = table.rows_by_op(seen)
    rows: list[np.ndarray] = []
    taken = dropped = 0
    for code in seen:
        got = by_op[code]
        if taken + len(got) > max_rows:
            dropped += 1
            continue
        rows.append(got)
        taken += len(got)
    picked = np.sort(np.concatenate(rows)) if rows else np.zeros(0, dtype=np.int64)
    return picked, len(seen) - dropped, len(failing), kind, dropped


def _slice_columns(
    path: Path, cache_dir: Callable[[], Path] | None, state: ResultPick
) -> ResultColumns:
    """Another (rank, step) compare's columns, read as far as its run's journal vouches."""
    return load_result_columns(path, cache_dir, state.journaled_length(path))


def foreign_family(summary: RunSummary | None) -> str | None:
    """The family name of a compare of two foreign dumps (its summary's mode), else None."""
    return FOREIGN_MODES.get(summary.primary.mode) if summary is not None else None


def error_panel_of(rule: ThresholdRule, metric_columns: list[str]) -> ErrorPanel | None:
    """The first error metric (not the cosine) the rule limits and the CSV holds, when the
    CSV has no relative Euclidean distance to plot as SQNR."""
    if RED in metric_columns:
        return None
    for column, limit in rule.active(metric_columns):
        if column != COSINE:
            return ErrorPanel(column, limit, column in _LOG_SCALE)
    return None


def gather_report(
    csv_path: Path,
    fallback: ThresholdRule,
    cache_dir: Callable[[], Path] | None = None,
    big_rows: int = BIG_ROWS,
    neighbours: Callable[[str], Iterable[str]] | None = None,
    max_carried_rows: int = MAX_CARRIED_ROWS,
    dumped: frozenset[tuple[str, str]] | None = None,
    pick: ResultPick | None = None,
) -> ReportData:
    """Read the CSV (through its columns cache when `cache_dir` gives one) and its summary;
    judged by `judging_rule` (`fallback`: the settings'). Above `big_rows` rows the page
    carries the rows `_carried` picks; `neighbours(op)` names an op's graph neighbours;
    `dumped` the (rank, step)s the run dumped (the ranks table tells "not dumped" apart);
    `pick` the state of the CSV's run when the caller has it (its journal is read once)."""
    state = pick.of(csv_path) if pick is not None else ResultPick.at(csv_path)
    table = load_result_columns(csv_path, cache_dir, state.journaled_length(csv_path))
    summary = summary_beside(csv_path)
    rule = judging_rule(summary, fallback).of_metrics(computed_metrics(summary, table))
    panel = error_panel_of(rule, table.metric_columns) if foreign_family(summary) else None
    diagnosis = summary.diagnosis if summary is not None else None
    causes = diagnosis.root_causes if diagnosis is not None else []
    slices = state.slices(summary)
    ranks = rank_step_table(slices, csv_path, dumped)
    if ranks is not None and not ranks.counted:  # a killed run's: counted from its CSVs
        ranks = recount(ranks, rule, csv_path, lambda path: _slice_columns(path, cache_dir, state))
    elsewhere = diagnosis_elsewhere(summary, csv_path)
    partial, partial_cause = state.partial_state(summary, csv_path)
    if elsewhere is not None:
        causes = []  # the diagnosis belongs to another compare, not to these rows
    shows = shown_first(causes)  # kept in a big page's rows, proven or not
    root = proven_root(causes)  # marked on the plot
    compared = int(np.count_nonzero(table.compared))
    constants = int(np.count_nonzero(table.constant))
    uncompared = table.rows_at(np.flatnonzero(~table.compared & ~table.constant))
    reasons: dict[str, int] = {}
    for row in uncompared:
        kind = reason_kind(row.reason)
        reasons[kind] = reasons.get(kind, 0) + 1
    created = summary.created if summary is not None else ""
    if not created:
        mtime = csv_path.stat().st_mtime
        created = _dt.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
    big = None
    if len(table) > big_rows and os.environ.get(ENV_FULL_TABLE, "") in ("", "0"):
        picked, carried, failing_ops, kind, dropped = _carried(
            table, rule, shows, neighbours, max_carried_rows
        )
        big = BigResult(
            point_arrays(table, rule, root, panel),
            len(table),
            carried,
            failing_ops,
            kind,
            dropped,
        )
        rows = table.rows_at(picked)
        cells = {int(table.line[i]): table.record(int(i)) for i in picked}
        points: list[PlotPoint] = []
    else:
        rows = table.rows
        cells = {int(table.line[i]): table.record(i) for i in range(len(table))}
        points = output_points(rows, rule, root, panel)
    return ReportData(
        csv_path=csv_path,
        header=table.header,
        rows=rows,
        cells=cells,
        metric_columns=table.metric_columns,
        rule=rule,
        points=points,
        summary=summary,
        workspace=summary.workspace if summary is not None else "",
        created=created,
        total_rows=len(table),
        compared=compared,
        constant_inputs=constants,
        failed=len(table) - compared - constants,
        root_causes=causes,
        advice=diagnosis.advice if diagnosis is not None else [],
        warnings=list(table.warnings),
        ranks=ranks,
        slice_label=shown_slice_label(slices, summary, csv_path),
        elsewhere=elsewhere,
        first_failing_op=failing_outputs(table, rule)[1],
        failed_by_reason=dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        partial=partial,
        partial_cause=partial_cause,
        big=big,
        columns=table,
        notes=list(table.notes),
        error_panel=panel,
        benchmark=benchmark_of(summary, csv_path),
        unmatched=unmatched_text(summary, csv_path),
    )
