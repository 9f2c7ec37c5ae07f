"""`ac`: auto check. Without -c: what the workspace says by itself (fusion passes, overflow,
dangerous casts, run-to-run differences); with -c: the compare, the advisor and the root cause."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.commands.ac_diagnosis import ReplayChoice, RootCausePanel, diagnose_compare
from precision_shell.commands.compare import compare_request, vc_command
from precision_shell.commands.compare_summary import CompareSummary, summary_of
from precision_shell.commands.dump_slice_args import foreign_dumps, no_rank_step
from precision_shell.commands.foreign_rule_args import (
    foreign_rule,
    foreign_rule_arguments,
    no_foreign_rule,
)
from precision_shell.compare import runner as compare_runner
from precision_shell.compare.diagnosis.diagnose import (
    Diagnosis,
)
from precision_shell.compare.diagnosis.graph_checks import (
    DangerousCast,
    PassUse,
    RunDifference,
    dangerous_casts,
    fusion_uses,
    run_differences,
)
from precision_shell.compare.diagnosis.replay_evidence import (
    DEFAULT_BUDGET_S,
    DEFAULT_REPLAY_MODE,
    REPLAY_MODES,
    ReplayPass,
)
from precision_shell.compare.diagnosis.slice_replays import (
    SliceReplays,
)
from precision_shell.compare.pipeline.execute import VectorCompareResult
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.resume import CompareStopped
from precision_shell.compare.statistics.diagnose import StatisticsDiagnosis, diagnose_statistics
from precision_shell.compare.statistics.dump_config import DEFAULT_DEPTH, DEFAULT_DUMP_PATH
from precision_shell.compare.statistics.run import StatisticsCompareResult
from precision_shell.errors import PrecisionError
from precision_shell.explore.nonfinite_origin import NonfiniteOrigin, nonfinite_origin
from precision_shell.explore.overflow_check import OverflowFinding, overflow_findings
from precision_shell.foreign.explore import compare_paths
from precision_shell.foreign.run import (
    ForeignCompareResult,
    is_foreign_pair,
    run_foreign_compare,
)
from precision_shell.report.writer import write_report
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import REGISTRY, UsageError, argument, command
from precision_shell.termination import stop_name


@dataclass
class AutoCheck:
    """What `ac` checked and found; each section says "nothing found" when empty."""

    fusion: list[PassUse] = field(default_factory=list)
    nonfinite: list[NonfiniteOrigin] = field(default_factory=list)  # one per device run
    overflows: list[OverflowFinding] = field(default_factory=list)
    overflow_total: int = 0
    overflow_errors: list[str] = field(default_factory=list)
    casts: list[DangerousCast] = field(default_factory=list)
    run_diffs: list[RunDifference] = field(default_factory=list)
    run_pair: tuple[str, str] | None = None
    compare: VectorCompareResult | None = None
    summary: CompareSummary | None = None
    compare_error: str | None = None  # why -c could not compare (the panels above still hold)
    compare_stopped: bool = False  # the error is of a compare that ran partway (a full disk)
    diagnosis: Diagnosis | None = None
    diagnosis_skipped: str | None = None  # why no diagnosis ran on this compare
    root_cause: RootCausePanel | None = None
    slice_replays: SliceReplays | None = None  # replays of several (rank, step) compares
    # the other cards named with a fault of their own, each replayed by itself as `ac -c
    # --rank R --step S` replays it (after the passes above)
    named_replays: list[ReplayPass] = field(default_factory=list)
    replay_interrupted: bool = False  # Ctrl-C ended the diagnosis's replay (shown as it stood)
    # Ctrl-C or SIGTERM stopped the diagnosis outside a replay: none is shown or written
    diagnosis_interrupted: str | None = None
    report_path: Path | None = None  # the HTML report (`--report`)
    # a statistics-only dump: its compare and the suspects it points at (instead of the above)
    statistics_compare: StatisticsCompareResult | None = None
    statistics: StatisticsDiagnosis | None = None
    pair_only: bool = False  # `ac -c -lt/-rt`: the pair's compare, no workspace checks

    @property
    def user_interrupted(self) -> bool:
        """Ctrl-C cut its compare (see SummaryBacked.user_interrupted) or its replay."""
        cut = self.statistics_compare or self.compare
        return (
            self.replay_interrupted
            or self.diagnosis_interrupted is not None
            or (cut is not None and cut.user_interrupted)
        )

    @property
    def error_message(self) -> str | None:
        if self.compare_error is not None:
            not_run = "" if self.compare_stopped else "compare not run: "
            return f"ac: {not_run}{self.compare_error}"
        if self.statistics_compare is not None:
            return self.statistics_compare.error_message
        error = self.compare.error_message if self.compare is not None else None
        if error is None and self.diagnosis_interrupted is not None:
            return (
                f"ac: diagnosis interrupted ({self.diagnosis_interrupted}); the compare above is "
                "whole and kept (vcs, report read it): ac -c again compares and diagnoses"
            )
        if error is None and self.replay_interrupted:
            return (
                f"ac: replay interrupted ({stop_name()}): the diagnosis above rests on the "
                "replays done"
            )
        return error


def _static_checks(
    ctx: ShellContext, check: AutoCheck, limit: int, rank: str | None, step: str | None
) -> None:
    ws = ctx.workspace
    for n, run in enumerate(ws.runs):
        try:
            check.nonfinite.append(nonfinite_origin(ws, run, rank, step))
        except PrecisionError:
            if not n:
                raise  # an unknown rank or step of the run compared is the user's error
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


@command("ac")
@argument(
    "-c", "--compare", action="store_true", help="also compare, advise and find the root cause"
)
@argument(
    "-l", "--limit", type=int, default=3, help="overflow ops / failing ops to show (default 3)"
)
@argument("--report", action="store_true", help="write the HTML report at the end (implies -c)")
@argument(
    "--rank",
    metavar="R|all",
    help="ranks to check (as vc: every rank by default; NaN/inf origin: every rank)",
)
@argument(
    "--step",
    metavar="S|all",
    help="steps to check (as vc: each rank's first step; NaN/inf origin: every step)",
)
@argument(
    "--depth",
    type=int,
    default=DEFAULT_DEPTH,
    help="statistics dumps: the tensor dump config also names the suspects' producers this "
    f"many edges back (default {DEFAULT_DEPTH})",
)
@argument(
    "--dump-path",
    default=DEFAULT_DUMP_PATH,
    metavar="DIR",
    help="statistics dumps: dump_path written into the tensor dump config (a dir on the "
    "training host)",
)
@argument(
    "--replay",
    choices=REPLAY_MODES,
    default=DEFAULT_REPLAY_MODE,
    help="ops to recompute on the CPU from the device's own inputs: the root-cause "
    "candidates (default; every op of that rank and step when they prove no fault while "
    "outputs fail, the ops before the first fault when they prove one), every op with a "
    "replay kernel in every rank and step compared, or none",
)
@argument(
    "--replay-budget",
    type=float,
    default=DEFAULT_BUDGET_S,
    metavar="SECONDS",
    help=f"stop replaying after this long (default {DEFAULT_BUDGET_S:g}); ops not reached "
    "are counted",
)
@argument(
    "-lt",
    "--left",
    complete="path",
    help="with -c: a MegEngine io dump or SigmaStar DumpDebug dump (device / fixed run), or "
    "as vc -lt a dump of the workspace's (run name or dir) when a side is a statistics dump",
)
@argument(
    "-rt",
    "--right",
    complete="path",
    help="with -c: the dump to compare with (benchmark / float run; as vc -rt for statistics)",
)
@argument(
    "-o",
    "--output",
    type=Path,
    complete="path",
    help="with -lt/-rt: write the CSV and summary.json into this dir",
)
@foreign_rule_arguments
def ac_command(ctx: ShellContext, args: argparse.Namespace) -> AutoCheck | ForeignCompareResult:
    """ac [-c] [-l N] [--report] [--rank R|all] [--step S|all] [--replay candidates|all|none] [--replay-budget S] [--depth N] [--dump-path DIR] [-lt DUMP -rt DUMP [-o DIR] [--max-err E | --cos-min C --rmse-max R]]

    Auto check: fusion, overflow (first first), casts, first NaN/inf by rank and step.

    With -c: compare, advisor and the root cause: each card's (rank, step) is diagnosed, the
    first step with a root cause is shown, at its earliest op across the cards, and the
    other cards of that step are read against it (the same fault, matching, or a root cause
    of their own, named). On a statistics dump (dump_data: stats), -c ranks the suspect ops
    and writes the tensor dump config (acl.json, TF session options) that dumps exactly them
    for the next run.

    Replay (-c on tensor dumps): each candidate op is recomputed in float64 from the
    device's own inputs; its own error (device vs replay) says whether the kernel itself is
    wrong. Kernels proven wrong (beyond 4 ULP and beyond rounding overall, or a NaN/inf the
    exact result lacks) rank first, by own error; the other causes keep the estimate's order
    (an exact kernel can still be where the error is born: a wrong weight, a float16
    overflow). --replay all also replays every other op with a kernel, candidates first,
    then by the quality each loses, until --replay-budget runs out. On a compare of several
    ranks or steps it replays every (rank, step) under that one budget (the diagnosed one
    first, then those leaving the others most) and shows a kernel it proves wrong on
    another card; candidates replays the diagnosed (rank, step) first, and goes on to every
    other op there when the candidates prove no fault while outputs fail the thresholds (a
    small fault under drift is seldom a candidate), and to the ops before the first fault
    they prove when they prove one (the ops after it are --replay all's). Then the other
    (rank, step)s under the same budget: when it proved no fault, each of them the same way;
    when it proved one, the candidates before it on the other cards of its step and every
    candidate of the earlier steps (where an earlier fault on another card or step would
    be), and the earliest fault proven is shown. summary.json root causes say "evidence":
    "replay" or "estimate" with their "own_error".

    ac -c -lt A -rt B on two MegEngine io dumps (or two SigmaStar DumpDebug dumps): vc's
    compare of the pair, then the root cause: MegEngine, a failing var none of whose inputs
    fail (on the dump's graph); SigmaStar, the first failing layer in layer order.
    --max-err / --cos-min / --rmse-max move the rule's limits as for vc: the root cause is
    found by that rule, and summary.json records it.
    Opened on such dumps (precision-shell DIR_OR_FILE), ac -c alone does this on the opened
    pair.
    ac -c -lt A -rt B with a statistics dump on a side (two runs of the workspace, a run
    against a .npy dir or another dump; as vc -lt/-rt): vc's statistics compare of the pair,
    its suspects and the tensor dump config (the workspace checks above are not run).
    """
    foreign = foreign_dumps(ctx, "ac", args)
    if foreign is not None:
        if not args.compare:
            raise UsageError("ac: on MegEngine / SigmaStar dumps give -c (compare, root cause)")
        if args.report:
            raise UsageError("ac: --report is for workspace compares, not -lt/-rt dump pairs")
        left, right = compare_paths(foreign, "ac", args.left, args.right)
        rule = foreign_rule("ac", args, left, right)
        return run_foreign_compare(
            ctx.workspace_path, left, right, args.output, rule, diagnose=True, command="ac"
        )
    if is_foreign_pair(args.left, args.right):
        no_rank_step("ac", args)
        if args.report:
            raise UsageError("ac: --report is for workspace compares, not -lt/-rt dump pairs")
        # check_pair names a path that is not of the other's kind
        rule = foreign_rule("ac", args, args.left, args.right)
        return run_foreign_compare(
            ctx.workspace_path,
            args.left,
            args.right,
            args.output,
            rule,
            diagnose=True,
            command="ac",
        )
    no_foreign_rule("ac", args)
    pair = args.left is not None or args.right is not None
    if args.output is not None and not pair:
        raise UsageError("ac: -o is for -lt/-rt dump pairs")
    if pair and args.report:
        raise UsageError("ac: --report is for workspace compares, not -lt/-rt dump pairs")
    if args.limit < 0:
        raise UsageError("ac: -l must not be negative")
    if not (args.replay_budget > 0 and args.replay_budget < float("inf")):
        raise UsageError("ac: --replay-budget must be a positive number of seconds")
    if not 0 <= args.depth <= 20:
        raise UsageError("ac: --depth must be between 0 and 20")
    if pair:
        return _statistics_pair_check(ctx, args)
    check = AutoCheck()
    _static_checks(ctx, check, args.limit, args.rank, args.step)
    if args.compare or args.report:
        vc_args = ["--overflow"]
        if args.rank is not None:
            vc_args += ["--rank", args.rank]
        if args.step is not None:
            vc_args += ["--step", args.step]
        try:
            # through vc's own parser, so every vc default applies
            result = vc_command(ctx, REGISTRY.lookup("vc").parse(vc_args))
        except PrecisionError as exc:
            check.compare_error = str(exc)
            check.compare_stopped = isinstance(exc, CompareStopped)
            return check
        if isinstance(result, StatisticsCompareResult):
            check.statistics_compare = result
            cut = result.summary.cut_text()
            if cut is not None:
                check.diagnosis_skipped = f"the compare is {cut}"
            else:
                check.statistics = diagnose_statistics(result, args.depth, args.dump_path)
            if args.report:
                check.diagnosis_skipped = "the HTML report is for tensor compares"
            return check
        assert isinstance(result, VectorCompareResult)
        check.compare = result
        cut = check.compare.summary.cut_text()
        if cut is not None:
            # the interruption is vc's error line; nothing is concluded from part of a run
            check.diagnosis_skipped = f"the compare is {cut}"
            return check
        table = read_result_csv(check.compare.primary.csv_path)
        choice = ReplayChoice(args.replay, args.replay_budget)
        try:
            diagnose_compare(ctx, check, table, args.limit or 0, choice)  # the CSV read once
        except KeyboardInterrupt:
            # QA: a Ctrl-C here printed only "interrupted", nothing of the compare it kept
            check.diagnosis_interrupted = stop_name()
            check.diagnosis_skipped = f"interrupted ({check.diagnosis_interrupted})"
            check.diagnosis = check.root_cause = None
            check.slice_replays, check.named_replays = None, []
            return check
        if check.summary is None:  # no diagnosis: the primary compare's failing ops
            check.summary = summary_of(ctx, table, None, [], args.limit or 0, check.compare.summary)
        if args.report:
            shown = check.summary.path if check.summary is not None else None
            written = write_report(
                ctx.workspace, check.compare.rule, shown or check.compare.primary.csv_path
            )
            check.report_path = written.path
    return check


def _statistics_pair_check(ctx: ShellContext, args: argparse.Namespace) -> AutoCheck:
    """`ac -c -lt A -rt B` on dumps of the workspace's kind: vc's statistics compare of the
    pair and its suspects. The workspace checks (fusion, overflow, casts) are not about the
    pair: not run. Two tensor dumps: an error before anything is compared."""
    if not args.compare:
        raise UsageError("ac: -lt/-rt go with -c (compare the pair, rank its suspects)")
    vc_args = ["--overflow"]
    for flag, value in (
        ("-lt", args.left),
        ("-rt", args.right),
        ("--rank", args.rank),
        ("--step", args.step),
        ("-o", args.output),
    ):
        if value is not None:
            vc_args += [flag, str(value)]
    request = compare_request(ctx, REGISTRY.lookup("vc").parse(vc_args))
    plans = compare_runner.statistics_compares(ctx.workspace, request)
    if plans is None:
        raise UsageError(
            "ac: -lt/-rt take two MegEngine/SigmaStar dumps, or a pair with a statistics dump "
            "(dump_data: stats) on a side; for two tensor dumps run vc -lt/-rt, or ac -c on "
            "the workspace"
        )
    result = compare_runner.run_statistics(
        ctx.workspace,
        request,
        plans,
        lambda title: ctx.progress(title, "files", "tensors"),
    )
    check = AutoCheck(pair_only=True, statistics_compare=result)
    cut = result.summary.cut_text()
    if cut is not None:
        check.diagnosis_skipped = f"the compare is {cut}"
    else:
        check.statistics = diagnose_statistics(result, args.depth, args.dump_path)
    return check
