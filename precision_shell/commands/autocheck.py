"""`ac`: auto check. Without -c: what the workspace says by itself (fusion passes, overflow,
dangerous casts, run-to-run differences); with -c: the compare, the advisor and the root cause."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.commands.compare import vc_command
from precision_shell.commands.compare_summary import CompareSummary, summary_of
from precision_shell.compare.diagnosis.advisor import ACCUMULATED_DRIFT, Finding, OverflowHit
from precision_shell.compare.diagnosis.diagnose import Diagnosis, diagnose
from precision_shell.compare.diagnosis.graph_checks import (
    DangerousCast,
    PassUse,
    RunDifference,
    dangerous_casts,
    fusion_uses,
    run_differences,
)
from precision_shell.compare.diagnosis.root_cause import RootCause
from precision_shell.compare.pipeline.execute import VectorCompareResult
from precision_shell.compare.results.schema import ResultRow, ResultTable, read_result_csv
from precision_shell.errors import PrecisionError
from precision_shell.explore.overflow_check import OverflowFinding, overflow_findings
from precision_shell.report.writer import write_report
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import REGISTRY, UsageError, argument, command
from precision_shell.workspace.graph_index import OpRecord


@dataclass
class RootCausePanel:
    """The best root cause with what a user needs to act on it."""

    cause: RootCause
    record: OpRecord | None
    rows: list[ResultRow]  # its input and output compare rows
    findings: list[Finding]
    next_commands: list[str]


@dataclass
class AutoCheck:
    """What `ac` checked and found; each section says "nothing found" when empty."""

    fusion: list[PassUse] = field(default_factory=list)
    overflows: list[OverflowFinding] = field(default_factory=list)
    overflow_total: int = 0
    overflow_errors: list[str] = field(default_factory=list)
    casts: list[DangerousCast] = field(default_factory=list)
    run_diffs: list[RunDifference] = field(default_factory=list)
    run_pair: tuple[str, str] | None = None
    compare: VectorCompareResult | None = None
    summary: CompareSummary | None = None
    compare_error: str | None = None  # why -c could not compare (the panels above still hold)
    diagnosis: Diagnosis | None = None
    diagnosis_skipped: str | None = None  # why no diagnosis ran on this compare
    root_cause: RootCausePanel | None = None
    report_path: Path | None = None  # the HTML report (`--report`)

    @property
    def error_message(self) -> str | None:
        if self.compare_error is not None:
            return f"ac: compare not run: {self.compare_error}"
        return self.compare.error_message if self.compare is not None else None


def _next_commands(ctx: ShellContext, cause: RootCause, rows: list[ResultRow]) -> list[str]:
    commands = [f"ni {_quote(cause.op)} -s 2"]
    ws = ctx.workspace
    refs = ws.dump_files(ws.run(), cause.op)
    benchmark = None
    graph = ws.run().dump_graph()
    rec = graph.get(cause.op) if graph else None
    if rec is not None:
        benchmark = ws.output_benchmark(rec, 0)
    if refs and benchmark is not None:
        commands.append(f"cp {refs[-1].file_name}:output:0 {os.path.basename(benchmark.path)}")
    elif refs:
        commands.append(f"pt {refs[-1].file_name}:output:0")
    return commands


def _quote(name: str) -> str:
    return f'"{name}"' if any(c.isspace() for c in name) else name


def _static_checks(ctx: ShellContext, check: AutoCheck, limit: int) -> None:
    ws = ctx.workspace
    graph = ws.run().dump_graph() if ws.runs else None
    check.fusion = fusion_uses(ws.fusion, graph)
    findings, check.overflow_errors = overflow_findings(ws)
    check.overflow_total = len(findings)
    check.overflows = findings[:limit] if limit else findings
    if graph is not None:
        check.casts = dangerous_casts(graph)
    if len(ws.runs) > 1:
        left, right = ws.runs[0], ws.runs[1]
        lg, rg = left.dump_graph(), right.dump_graph()
        if lg is not None and rg is not None:
            check.run_pair = (left.name, right.name)
            check.run_diffs = run_differences(lg, rg)


def _diagnose(ctx: ShellContext, check: AutoCheck, table: ResultTable) -> None:
    """Diagnose a complete device-vs-benchmark compare and record it in its summary."""
    compare = check.compare
    assert compare is not None
    if compare.primary.plan_mode != "benchmark":
        check.diagnosis_skipped = "no benchmark: the root cause needs device vs benchmark"
        return
    graph = ctx.workspace.run().dump_graph()
    if graph is None:
        check.diagnosis_skipped = "no parsed graph to walk"
        return
    hits = [OverflowHit(f.op, f.texts) for f in check.overflows]
    diagnosis = diagnose(graph, table.rows, compare.rule, hits)
    compare.summary.diagnosis = diagnosis.record()
    compare.summary.write(compare.summary_path)
    check.diagnosis = diagnosis
    if diagnosis.causes:
        cause = diagnosis.causes[0]
        rows = [r for r in table.rows if r.op_name == cause.op]
        # the advisor's reading: its findings on this op, and network-wide ones (drift)
        readings = diagnosis.findings_for(cause.op) + [
            f for f in diagnosis.findings if f.detection == ACCUMULATED_DRIFT and f.op != cause.op
        ]
        check.root_cause = RootCausePanel(
            cause, graph.get(cause.op), rows, readings, _next_commands(ctx, cause, rows)
        )


@command("ac")
@argument(
    "-c", "--compare", action="store_true", help="also compare, advise and find the root cause"
)
@argument(
    "-l", "--limit", type=int, default=3, help="overflow ops / failing ops to show (default 3)"
)
@argument("--report", action="store_true", help="write the HTML report at the end (implies -c)")
def ac_command(ctx: ShellContext, args: argparse.Namespace) -> AutoCheck:
    """ac [-c] [-l N] [--report]

    Auto check: fusion, overflow (first first), casts; with -c compare, advisor and root cause.
    """
    if args.limit < 0:
        raise UsageError("ac: -l must not be negative")
    check = AutoCheck()
    _static_checks(ctx, check, args.limit)
    if args.compare or args.report:
        try:
            # through vc's own parser, so every vc default applies
            check.compare = vc_command(ctx, REGISTRY.lookup("vc").parse(["--overflow"]))
        except PrecisionError as exc:
            check.compare_error = str(exc)
            return check
        if check.compare.summary.partial:
            # the interruption is vc's error line; nothing is concluded from part of a run
            check.diagnosis_skipped = f"the compare is {check.compare.summary.primary.partial_text}"
            return check
        table = read_result_csv(check.compare.primary.csv_path)
        check.summary = summary_of(ctx, table, None, [], args.limit or 0, check.compare.summary)
        _diagnose(ctx, check, table)  # the CSV just read, not read again
        if args.report:
            written = write_report(
                ctx.workspace, check.compare.rule, check.compare.primary.csv_path
            )
            check.report_path = written.path
    return check
