"""`vcs`: the ops whose outputs fall below the thresholds in a compare result, in execution order."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.results.csv_reader import (
    HIGHER_IS_BETTER,
    CsvRow,
    ResultTable,
    find_result_csv,
    read_result_csv,
)
from precision_shell.errors import PrecisionError
from precision_shell.report.data import summary_beside
from precision_shell.report.points import OpCosine, op_cosines
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command


@dataclass(frozen=True)
class Threshold:
    metric: str
    value: float

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    def fails(self, row: CsvRow) -> bool:
        if row.nonfinite(self.metric):
            return True  # NaN/inf propagated from the data fails; "NaN" (not computed) does not
        value = row.metrics.get(self.metric, math.nan)
        if math.isnan(value):
            return False
        return value < self.value if self.higher_is_better else value > self.value


@dataclass
class OpVerdict:
    index: int | None
    op: str
    op_type: str
    ground_truth: str
    inputs: list[CsvRow] = field(default_factory=list)
    outputs: list[CsvRow] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)  # "output 0: CosineSimilarity 0.88 < 0.98"


@dataclass
class CompareSummary:
    """`vcs`: failing ops with their inputs' and outputs' metrics side by side."""

    path: Path
    thresholds: list[Threshold]
    shown_metrics: list[str]
    ops: list[OpVerdict]
    failing_total: int
    compared_ops: int
    root_cause: str | None = None
    plot: list[OpCosine] | None = None  # `--plot`: worst output cosine per op

    @property
    def cosine_threshold(self) -> float | None:
        return next((t.value for t in self.thresholds if t.metric == "CosineSimilarity"), None)


def parse_threshold(text: str, columns: list[str]) -> Threshold:
    name, sep, value = text.partition(":")
    if not sep:
        raise UsageError(f"vcs: --metric wants NAME:THRESHOLD, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"vcs: threshold of {name!r} is not a number: {value!r}") from None
    match = [c for c in columns if c.lower() == name.lower()]
    if not match:
        raise UsageError(f"vcs: unknown metric {name!r}; this file has {', '.join(columns)}")
    return Threshold(match[0], number)


def summarize(table: ResultTable, thresholds: list[Threshold], limit: int | None) -> CompareSummary:
    by_op: dict[str, OpVerdict] = {}
    order: list[str] = []
    for row in table.rows:
        op = row.op_name
        verdict = by_op.get(op)
        if verdict is None:
            verdict = by_op[op] = OpVerdict(row.index, op, row.op_type, row.ground_truth)
            order.append(op)
        (verdict.inputs if row.kind == "input" else verdict.outputs).append(row)
        if row.kind == "input":
            continue
        for t in thresholds:
            if t.fails(row):
                cmp = "<" if t.higher_is_better else ">"
                shown = row.texts.get(t.metric, "")
                verdict.failing.append(
                    f"{row.kind or 'tensor'} {row.slot}: {t.metric} {shown} {cmp} {t.value:g}"
                )
    order.sort(key=lambda op: by_op[op].index if by_op[op].index is not None else math.inf)
    failing = [by_op[op] for op in order if by_op[op].failing]
    shown = [t.metric for t in thresholds]
    for extra in ("CosineSimilarity", "MaxAbsoluteError", "RelativeEuclideanDistance"):
        if extra in table.metric_columns and extra not in shown:
            shown.append(extra)
    return CompareSummary(
        path=table.path,
        thresholds=thresholds,
        shown_metrics=shown,
        ops=failing[:limit] if limit else failing,
        failing_total=len(failing),
        compared_ops=len(order),
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
@argument("-l", "--limit", type=int, default=20, help="ops to show (default 20; 0 = all)")
@argument(
    "--metric",
    action="append",
    default=[],
    metavar="NAME:THRESHOLD",
    help="extra limit, e.g. MaxAbsoluteError:0.1 (errors fail above, cosine below)",
)
@argument(
    "--plot",
    action="store_true",
    help="also plot the worst output cosine per op, with the threshold and the root cause",
)
def vcs_command(ctx: ShellContext, args: argparse.Namespace) -> CompareSummary:
    """vcs [-f FILE_OR_DIR] [-c COS] [-l LIMIT] [--metric NAME:THRESHOLD ...] [--plot]

    Ops whose outputs fall below the thresholds, in execution order, inputs vs outputs.
    """
    if args.limit < 0:
        raise UsageError("vcs: -l must not be negative")
    target = args.file if args.file else ctx.workspace.output_dir("vector_compare")
    table = read_result_csv(find_result_csv(Path(target)))
    result = summary_of(ctx, table, args.cosine, args.metric, args.limit)
    if args.plot:
        threshold = result.cosine_threshold
        result.plot = op_cosines(table.rows, threshold) if threshold is not None else []
        result.root_cause = _root_cause_beside(table.path)
    return result


def _root_cause_beside(csv_path: Path) -> str | None:
    """The root cause `ac -c` wrote into the summary.json next to the CSV, if any."""
    try:
        summary = summary_beside(csv_path)
        causes = summary.root_causes() if summary is not None else []
    except PrecisionError:
        return None  # a plot without the marker beats no plot: the summary is optional here
    op = causes[0].get("op") if causes else None
    return op if isinstance(op, str) else None


def summary_of(
    ctx: ShellContext, table: ResultTable, cosine: float | None, metrics: list[str], limit: int
) -> CompareSummary:
    thresholds = []
    if "CosineSimilarity" in table.metric_columns:
        cos = cosine if cosine is not None else float(ctx.settings.get("thresholds.cosine"))
        thresholds.append(Threshold("CosineSimilarity", cos))
    thresholds += [parse_threshold(m, table.metric_columns) for m in metrics]
    if not thresholds:
        raise UsageError(f"{table.path}: no CosineSimilarity column; give --metric NAME:THRESHOLD")
    return summarize(table, thresholds, limit or None)
