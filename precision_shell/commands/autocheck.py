"""`ac`: auto check. Without -c: what the workspace says by itself (fusion, overflow);
with -c: the whole-network compare and the ops below the thresholds."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from precision_shell.commands.compare import vc_command
from precision_shell.commands.compare_summary import CompareSummary, summary_of
from precision_shell.compare.result_csv import read_result_csv
from precision_shell.compare.run import VectorCompareResult
from precision_shell.errors import PrecisionError
from precision_shell.formats.overflow import read_opdebug
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import REGISTRY, UsageError, argument, command


@dataclass(frozen=True)
class OverflowFinding:
    file: str
    op: str | None  # the op dumped beside it with the same task and stream id
    timestamp: int
    texts: tuple[str, ...]


@dataclass
class AutoCheck:
    """What `ac` checked and found; each section says "nothing found" when empty."""

    fusion: list[tuple[str, str, int, int]] = field(
        default_factory=list
    )  # kind, pass, match, effect
    overflows: list[OverflowFinding] = field(default_factory=list)
    overflow_errors: list[str] = field(default_factory=list)
    compare: VectorCompareResult | None = None
    summary: CompareSummary | None = None
    not_yet: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str | None:
        return self.compare.error_message if self.compare is not None else None


def overflow_findings(ctx: ShellContext, limit: int) -> tuple[list[OverflowFinding], list[str]]:
    ws = ctx.workspace
    if ws.overflow_dumps is None:
        return [], []
    found, errors = [], []
    files = sorted(ws.overflow_files(), key=lambda f: f.timestamp)
    for ref in files:
        try:
            debug = read_opdebug(ref.path)
        except PrecisionError as exc:
            errors.append(str(exc))
            continue
        op = None
        siblings = [
            f
            for f in ws.overflow_dumps.files
            if f.op_type != "Opdebug"
            and f.task_id == ref.task_id
            and f.stream_id == ref.stream_id
            and f.path.rsplit("/", 1)[0] == ref.path.rsplit("/", 1)[0]
        ]
        if siblings:
            linked = min(siblings, key=lambda f: f.timestamp)
            try:
                op = ws.header(linked).op_name
            except PrecisionError as exc:
                # the file name still names the op (sanitized); say why the header is not used
                op = linked.op_name
                errors.append(str(exc))
        found.append(OverflowFinding(ref.file_name, op, ref.timestamp, debug.texts))
    return found[:limit] if limit else found, errors


@command("ac")
@argument(
    "-c", "--compare", action="store_true", help="also run the whole-network compare (vc + vcs)"
)
@argument(
    "-l", "--limit", type=int, default=3, help="overflow ops / failing ops to show (default 3)"
)
def ac_command(ctx: ShellContext, args: argparse.Namespace) -> AutoCheck:
    """ac [-c] [-l N]

    Auto check: fusion passes, overflows (first first); with -c the compare and the failing ops.
    """
    if args.limit < 0:
        raise UsageError("ac: -l must not be negative")
    ws = ctx.workspace
    check = AutoCheck()
    check.fusion = [(p.kind, p.name, p.match_times, p.effect_times) for p in ws.fusion]
    check.overflows, check.overflow_errors = overflow_findings(ctx, args.limit)
    check.not_yet = ["dangerous casts", "advisor", "root-cause localisation"]
    if args.compare:
        # through vc's own parser, so every vc default applies
        vc_args = REGISTRY.lookup("vc").parse(["--overflow"])
        check.compare = vc_command(ctx, vc_args)
        table = read_result_csv(check.compare.primary.csv_path)
        check.summary = summary_of(ctx, table, None, [], args.limit or 0)
    return check
