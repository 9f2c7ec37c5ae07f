"""`dump_config`: the tensor dump config for the suspects of a statistics compare.

`ac -c` writes it already; this command writes it again from a result's summary, with another
depth, dump path or output dir."""

from __future__ import annotations

import argparse
from pathlib import Path

from precision_shell.compare.results.summary import SUMMARY_NAME, read_summary
from precision_shell.compare.statistics.diagnose import DUMP_CONFIG_DIR
from precision_shell.compare.statistics.dump_config import (
    DEFAULT_DEPTH,
    DEFAULT_DUMP_PATH,
    DumpConfigFiles,
    plan_dump_config,
    write_dump_config,
)
from precision_shell.compare.statistics.run import STATISTICS_MODE
from precision_shell.compare.statistics.table import read_statistics_csv
from precision_shell.errors import PrecisionError
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.graph_index import GraphIndex


@command("dump_config")
@argument(
    "--from-summary",
    dest="summary",
    type=Path,
    complete="path",
    metavar="PATH",
    help="summary.json of a statistics compare diagnosed by ac -c (or its result dir)",
)
@argument(
    "--depth",
    type=int,
    default=DEFAULT_DEPTH,
    help=f"also dump the suspects' producers this many edges back (default {DEFAULT_DEPTH})",
)
@argument(
    "--dump-path",
    default=DEFAULT_DUMP_PATH,
    metavar="DIR",
    help="dump_path for the next run (a dir on the training host)",
)
@argument(
    "-o",
    "--output",
    type=Path,
    complete="path",
    help="write the config files here (default: <result dir>/dump_config/)",
)
def dump_config_command(ctx: ShellContext, args: argparse.Namespace) -> DumpConfigFiles:
    """dump_config --from-summary PATH [--depth N] [--dump-path DIR] [-o DIR]

    Tensor dump config (acl.json, TF session options) for a statistics compare's suspects.

    It names exactly the suspects and their producers, with the size estimate.
    """
    if args.summary is None:
        raise UsageError("dump_config: give --from-summary PATH (a statistics compare's summary)")
    if not 0 <= args.depth <= 20:
        raise UsageError("dump_config: --depth must be between 0 and 20")
    path = args.summary / SUMMARY_NAME if args.summary.is_dir() else args.summary
    summary = read_summary(path)
    if summary.primary.mode != STATISTICS_MODE:
        raise PrecisionError(
            f"{path}: a {summary.primary.mode or 'tensor'} compare; the dump config is for the "
            "suspects of a statistics compare (its dump already holds the tensors)"
        )
    if summary.diagnosis is None:
        raise PrecisionError(f"{path}: not diagnosed yet; run ac -c to rank the suspects")
    causes = summary.diagnosis.root_causes
    suspects = [c["op"] for c in causes if isinstance(c.get("op"), str)]
    if not suspects:
        raise PrecisionError(f"{path}: the diagnosis names no suspect; nothing to dump")
    rank, step = causes[0].get("rank"), causes[0].get("step")
    csv_path = Path(summary.primary.csv)
    for entry in summary.results:
        if rank is not None and entry.get("rank") == rank and entry.get("step") == step:
            csv_path = Path(str(entry.get("csv")))
    if not step:
        step = summary.results[0].get("step") if summary.results else None
    rows = read_statistics_csv(csv_path)
    plan = plan_dump_config(
        rows,
        suspects,
        _graph(ctx, rank, step),
        args.depth,
        str(step or "0"),
        args.dump_path,
    )
    out = args.output if args.output is not None else path.parent / DUMP_CONFIG_DIR
    return write_dump_config(plan, out)


def _graph(ctx: ShellContext, rank: object, step: object) -> GraphIndex | None:
    """The graph of the compared dump, for the producers; None without a workspace."""
    ws = ctx.try_open()
    if ws is None or not ws.runs:
        return None
    run = ws.run()
    try:
        where = run.slice(str(rank) if rank else None, str(step) if step else None)
    except PrecisionError:
        return run.dump_graph()
    return run.graph_of_dump(where.graph_names) or run.dump_graph()
