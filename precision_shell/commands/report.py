"""`report`: the self-contained HTML report of a compare (plot, table, advisor, root cause).

Also what `ac -c --report` calls after its diagnosis (through `report.writer`).

A MegEngine or SigmaStar compare (`vc -lt/-rt` on two foreign dumps) is reported without an
Ascend workspace: judged by the rule its summary recorded, written beside its precision_data
(report/writer.py says where).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from precision_shell.commands.compare_summary import named_result
from precision_shell.compare.results.input_changes import stale_compare_line, stale_slices_line
from precision_shell.compare.results.run_state import pick_result_csv
from precision_shell.compare.results.schema import is_statistics_csv
from precision_shell.compare.results.slice_choice import slice_csv
from precision_shell.compare.results.summary import summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.report.writer import (
    DEFAULT_DEPTH,
    ReportWritten,
    is_foreign_result,
    write_report,
)
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.workspace import Workspace


@command("report")
@argument(
    "-f",
    "--file",
    type=Path,
    complete="path",
    help="result CSV or its dir (default: the newest vc result)",
)
@argument(
    "-o",
    "--output",
    type=Path,
    complete="path",
    help="write the page here (default: temp/report/<ts>/report.html; never overwrites)",
)
@argument(
    "-s",
    "--depth",
    type=int,
    default=DEFAULT_DEPTH,
    help=f"hops around the root cause in its subgraph (default {DEFAULT_DEPTH})",
)
@argument("--rank", metavar="R", help="report this rank's compare (default: the primary)")
@argument("--step", metavar="S", help="report this step's compare (default: the primary)")
def report_command(ctx: ShellContext, args: argparse.Namespace) -> ReportWritten:
    """report [-f RESULT_CSV_OR_DIR] [-o FILE] [-s DEPTH] [--rank R] [--step S]

    Self-contained HTML report: accuracy plot, results table, advisor, root cause, subgraph.
    """
    if args.depth < 0:
        raise UsageError("report: -s must not be negative")
    target = named_result(ctx, args.file, "report") if args.file else ctx.compare_results()
    pick = pick_result_csv(Path(target), statistics=True)
    csv_path = pick.csv_path
    if is_statistics_csv(csv_path):
        raise UsageError(
            f"report: {csv_path.name} is a statistics compare; the HTML report is for tensor "
            "compares (vcs shows it, ac -c ranks its suspects)"
        )
    try:
        summary = summary_beside(csv_path)
    except PrecisionError:
        if args.rank is not None or args.step is not None:
            raise
        summary = None  # the report says what is wrong with it
    csv_path = slice_csv(pick.slices(summary), csv_path, args.rank, args.step, "report")
    rule = ThresholdRule.from_settings(ctx.settings)
    ws: Workspace | None
    if is_foreign_result(csv_path):
        try:  # only for where the report goes: a foreign compare needs no workspace
            ws = ctx.workspace
        except PrecisionError:
            ws = None
    else:
        ws = ctx.workspace
    stale = stale_compare_line(ws, summary, csv_path) if ws is not None else None
    others = stale_slices_line(ws, summary, csv_path) if ws is not None else None
    written = write_report(ws, rule, csv_path, args.output, args.depth, pick, stale, others)
    written.notes[:0] = pick.notes("report")
    if others is not None:
        written.notes.insert(0, others)
    if stale is not None:
        written.notes.insert(0, stale)
    return written
