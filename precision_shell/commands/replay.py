"""`replay`: recompute one device op in float64 from its own dumped inputs (replay/session)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from precision_shell.commands.dump_slice_args import rank_step_arguments, slice_of_path
from precision_shell.replay.session import ReplayReport, replay_op_in_workspace
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import argument, command


@dataclass(frozen=True)
class JsonText:
    """One JSON document, printed as is (one object, nothing around it) for programs."""

    text: str


@command("replay")
@rank_step_arguments
@argument("op", complete="op", help="device op name (or an original TF name fused into one op)")
@argument("--json", action="store_true", help="print one JSON object instead of the panel")
def replay_command(ctx: ShellContext, args: argparse.Namespace) -> ReplayReport | JsonText:
    """replay OP [--rank R] [--step S] [--json]

    Recompute one device op in float64 from its dumped inputs: the kernel's own error, inherited vs total.
    The op's newest dump file in the (rank, step) is read; inputs and outputs are converted to
    their original layout as vc does (TransData keeps its device layouts). A fused op is
    replayed member by member from _datadump_original_op_types (a batch norm or bias folded
    into the constants is skipped). Per output:
      own        device vs replay: what this kernel added
      inherited  replay vs benchmark: what its inputs brought (needs the output's benchmark)
      total      device vs benchmark
      isolated   replay from the benchmark's data inputs with the device's constants vs
                 benchmark: what the op's constants (weights, bias, scale) or attributes add
    each as cosine, max abs error, relative Euclidean distance and max ULP of the output dtype.
    Verdict: own max ULP <= 1: the op is exact for its dtype; > 4 ULP with a relative distance
    above twice the dtype's unit roundoff (or a NaN/inf the replay lacks): the kernel itself is
    wrong; in between: rounding of a kernel accumulating in a wider type. An isolated distance
    beyond 4 unit roundoffs of the dtype (or 4x what rounding its constants moves it by,
    measured by a replay with them moved half a ULP) says its constants or attributes differ
    from the benchmark's.
    An op without a replay kernel, or missing an attribute its kernel needs, is an error that
    says which: replay never guesses.
    --json prints {"op", "type", "run", "rank", "step" (null for a run of one dump dir),
    "outputs": [{"slot", "own", "inherited", "total", "isolated",
    "isolated_allowed", "isolated_note", "constants_differ", "verdict"}]};
    NaN and inf are the strings "nan", "inf", "-inf".
    """
    slice_of_path(ctx, "replay", args.op, args)
    report = replay_op_in_workspace(ctx.workspace, None, args.op, args.rank, args.step)
    if args.json:
        return JsonText(json.dumps(report.to_json(), allow_nan=False))
    return report
