"""Whole-network compare commands: `vc` (compare), `vcs` (what fell below the thresholds), `ac`."""

from __future__ import annotations

import argparse
from pathlib import Path

from precision_shell.compare.metrics.compute import METRIC_COLUMNS
from precision_shell.compare.pipeline.execute import (
    VectorCompareResult,
    execute_plan,
    result_dir,
    summary_payload,
)
from precision_shell.compare.pipeline.plan import ComparePlan, benchmark_plan, device_plan
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.results.csv_writer import write_summary
from precision_shell.errors import PrecisionError
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.dump_index import DumpIndex, scan_dump_dir
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.layout import leaf_dirs
from precision_shell.workspace.workspace import Workspace

_ALG_ALIASES = {
    "cos": "CosineSimilarity",
    "mae": "MaxAbsoluteError",
    "are": "AccumulatedRelativeError",
    "red": "RelativeEuclideanDistance",
    "kl": "KullbackLeiblerDivergence",
    "std": "StandardDeviation",
    "meanae": "MeanAbsoluteError",
    "rmse": "RootMeanSquareError",
    "mre": "MaxRelativeError",
    "meanre": "MeanRelativeError",
}


def parse_algorithms(text: str | None) -> tuple[str, ...] | None:
    """`--alg cos,mae` or CSV column names or 0-based column numbers -> column names."""
    if not text:
        return None
    chosen = []
    for item in (p.strip() for p in text.split(",") if p.strip()):
        if item.isdigit() and int(item) < len(METRIC_COLUMNS):
            chosen.append(METRIC_COLUMNS[int(item)])
        elif item in METRIC_COLUMNS:
            chosen.append(item)
        elif item.lower() in _ALG_ALIASES:
            chosen.append(_ALG_ALIASES[item.lower()])
        else:
            names = ", ".join(METRIC_COLUMNS)
            raise UsageError(
                f"vc: unknown metric {item!r} in --alg; use {names} or {', '.join(_ALG_ALIASES)}"
            )
    return tuple(dict.fromkeys(chosen))


def _dump_index_of(directory: Path) -> DumpIndex:
    if not directory.is_dir():
        raise PrecisionError(f"{directory}: no such directory")
    index = DumpIndex([scan_dump_dir(d) for d in leaf_dirs(directory)])
    if not len(index):
        raise PrecisionError(f"{directory}: no dump files found (searched its sub-dirs too)")
    return index


def _holds_npy(directory: Path) -> bool:
    return any(directory.glob("*.npy"))


def _plans(ctx: ShellContext, args: argparse.Namespace) -> tuple[ComparePlan, ComparePlan | None]:
    if bool(args.left) != bool(args.right):
        raise UsageError("vc: give both -lt LEFT_DIR and -rt RIGHT_DIR, or neither")
    ws = ctx.workspace
    if args.left:
        left, right = Path(args.left), Path(args.right)
        if _holds_npy(right):
            graph = _pick_graph(ws, args.graph)
            plan = benchmark_plan(
                ws, ws.run(), graph, benchmark_dir=right, dumps=_dump_index_of(left), left=str(left)
            )
            return _nonempty(plan, graph), None
        return device_plan(_dump_index_of(left), _dump_index_of(right), str(left), str(right)), None
    run = ws.run(args.run)
    graph = _pick_graph(ws, args.graph, run.name)
    if ws.benchmark is None:
        raise PrecisionError(
            f"{ws.root}: no benchmark dir tf/dump/ to compare against (use -lt/-rt)"
        )
    primary = _nonempty(benchmark_plan(ws, run, graph), graph)
    secondary = None
    others = [r for r in ws.runs if r is not run]
    if others and args.run is None:
        secondary = device_plan(run.dumps, others[0].dumps, run.name, others[0].name, graph)
    return primary, secondary


def _nonempty(plan: ComparePlan, graph: GraphIndex) -> ComparePlan:
    """A plan with nothing to compare means the dump and the graph do not belong together."""
    if not plan.tasks:
        example = f", e.g. {plan.skipped[0]}" if plan.skipped else ""
        raise PrecisionError(
            f"{plan.left}: no dump file belongs to an op of graph {graph.root_graph} "
            f"({graph.source}){example}; pick the graph with -g"
        )
    return plan


def _pick_graph(ws: Workspace, name: str | None, run_name: str | None = None) -> GraphIndex:
    run = ws.run(run_name)
    if name:
        for candidate in run.graphs:
            if any(name in g for g in candidate.graph_names):
                return candidate
        raise PrecisionError(f"vc: no graph whose name contains {name!r} in {run.name}")
    graph = run.dump_graph()
    if graph is None:
        raise PrecisionError(f"{run.run.root}: no parsed Build graph to match the dump with")
    return graph


@command("vc")
@argument(
    "-lt", "--left", complete="path", help="left (device) dump dir; default: the workspace's newest"
)
@argument(
    "-rt", "--right", complete="path", help="right dir: benchmark .npy dir or another device dump"
)
@argument("-g", "--graph", help="graph name (substring) to match the dump with")
@argument("-r", "--run", help="device run to compare (debug_N); default debug_0")
@argument("--max", type=int, metavar="N", help="compare only the first N dump files")
@argument("--alg", metavar="LIST", help="metrics to compute, e.g. cos,mae (default: all)")
@argument("--overflow", action="store_true", help="add the OverFlow column (fp16 max |x| >= 65504)")
@argument(
    "-o",
    "--output",
    type=Path,
    complete="path",
    help="output dir (default temp/vector_compare/<ts>/)",
)
@argument(
    "--backend",
    choices=("auto", "threads", "processes"),
    help="worker kind (default from settings: auto)",
)
@argument("-j", "--jobs", type=int, metavar="N", help="worker threads (default: one per core)")
def vc_command(ctx: ShellContext, args: argparse.Namespace) -> VectorCompareResult:
    """vc [-lt LEFT_DIR -rt RIGHT_DIR] [-g GRAPH] [--max N] [--alg LIST] [-o OUTDIR]

    Whole-network compare of every dumped tensor; writes result_<ts>.csv and summary.json.
    """
    if args.max is not None and args.max < 1:
        raise UsageError("vc: --max must be at least 1")
    options = CompareOptions(parse_algorithms(args.alg), args.overflow)
    primary, secondary = _plans(ctx, args)
    if args.max is not None:
        primary.tasks = primary.tasks[: args.max]
        if secondary is not None:
            secondary.tasks = secondary.tasks[: args.max]
    ws = ctx.workspace
    base = args.output if args.output else ws.output_dir("vector_compare")
    try:
        out_dir, stamp = result_dir(base)
    except OSError as exc:
        raise PrecisionError(f"{base}: cannot create the result dir: {exc.strerror}") from None
    cosine = float(ctx.settings.get("thresholds.cosine"))
    workers = args.jobs or int(ctx.settings.get("parallelism.workers"))
    backend = args.backend or str(ctx.settings.get("parallelism.backend"))
    run = execute_plan(
        primary,
        out_dir / f"result_{stamp}.csv",
        options,
        cosine,
        workers,
        ctx.progress("vc", "files", "tensors"),
        backend=backend,
    )
    second = None
    if secondary is not None and not run.interrupted:
        name = f"result_{stamp}_{Path(secondary.left).name}_vs_{Path(secondary.right).name}.csv"
        second = execute_plan(
            secondary,
            out_dir / name,
            options,
            cosine,
            workers,
            ctx.progress("vc", "files", "tensors"),
            backend=backend,
        )
    thresholds = {"cosine": cosine}
    extra = {}
    if second is not None:
        extra["device_compare"] = {
            "left": second.left,
            "right": second.right,
            "csv": str(second.csv_path),
            "rows": second.tally.rows,
            "compared": second.tally.compared,
            "below_threshold": len(second.tally.below),
        }
    summary_path = out_dir / "summary.json"
    write_summary(summary_path, summary_payload(str(ws.root), run, thresholds, extra))
    return VectorCompareResult(out_dir, summary_path, run, second, cosine)
