"""Whole-network compare commands: `vc` (compare), `vcs` (what fell below the thresholds), `ac`."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from precision_shell.commands.dump_slice_args import foreign_dumps, no_rank_step
from precision_shell.commands.foreign_rule_args import (
    foreign_rule,
    foreign_rule_arguments,
    no_foreign_rule,
)
from precision_shell.compare import runner as compare_runner
from precision_shell.compare.metrics.cells import (
    ALIAS_TEXT,
    MAX_ABS,
    METRIC_ALIASES,
    METRIC_COLUMNS,
    metric_column,
)
from precision_shell.compare.pipeline.dask_backend import DaskTarget
from precision_shell.compare.pipeline.execute import VectorCompareResult
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.rank_divergence import ACROSS_CHOICES, RankDivergenceResult
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.compare.runner import CompareRequest
from precision_shell.compare.statistics.run import StatisticsCompareResult
from precision_shell.foreign.explore import compare_paths
from precision_shell.foreign.run import ForeignCompareResult, is_foreign_pair, run_foreign_compare
from precision_shell.progress import ProgressSink
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command


def parse_algorithms(text: str | None) -> tuple[str, ...] | None:
    """`--alg cos,mae` or CSV column names or 0-based column numbers -> column names."""
    if not text:
        return None
    chosen = []
    for item in (p.strip() for p in text.split(",") if p.strip()):
        if item.isdigit() and int(item) < len(METRIC_COLUMNS):
            chosen.append(METRIC_COLUMNS[int(item)])
        elif (column := metric_column(item)) is not None:
            chosen.append(column)
        else:
            names = ", ".join(METRIC_COLUMNS)
            raise UsageError(
                f"vc: unknown metric {item!r} in --alg; use {names} or {', '.join(METRIC_ALIASES)}"
            )
    return tuple(dict.fromkeys(chosen))


@command("vc")
@argument(
    "-lt",
    "--left",
    complete="path",
    help="left (device) dump dir or device run name (debug_N); default: the workspace's",
)
@argument(
    "-rt",
    "--right",
    complete="path",
    help="right: a benchmark .npy dir, another device dump dir, or a run name (debug_N)",
)
@argument("-g", "--graph", help="graph name (substring) to match the dump with")
@argument("-r", "--run", help="device run to compare (debug_N); default debug_0")
@argument("--max", type=int, metavar="N", help="compare only the first N dump files")
@argument(
    "--alg",
    metavar="LIST",
    help=f"metrics to compute, e.g. cos,mae (default: all; only their limits are checked); "
    f"short names: {ALIAS_TEXT}",
)
@argument(
    "--overflow",
    action="store_true",
    help="add the OverFlow column (float16 max |x| >= thresholds.fp16_overflow, 65504)",
)
@argument(
    "-o",
    "--output",
    type=Path,
    complete="path",
    help="write the CSVs and summary.json into this dir (default temp/vector_compare/<ts>/)",
)
@argument(
    "--backend",
    choices=("auto", "threads", "processes"),
    help="worker kind (default from settings: auto)",
)
@argument("-j", "--jobs", type=int, metavar="N", help="worker threads (default: one per core)")
@argument("--rank", metavar="R|all", help="ranks (<device_id> dump dirs) to compare (default: all)")
@argument("--step", metavar="S|all", help="steps to compare (default: each rank's first step)")
@argument(
    "--across",
    choices=ACROSS_CHOICES,
    help="ranks: every rank's dump against the lowest rank's at one step (--step S, default "
    "its first); the summary's rank_divergence says where each differing rank leaves it",
)
@argument(
    "--scheduler",
    metavar="tcp://HOST:PORT",
    help="run the compare on this Dask scheduler's workers, which must see the dump paths "
    "(default from settings: parallelism.scheduler)",
)
@argument(
    "--cluster",
    metavar="local[:N]",
    help="run the compare on a local Dask cluster of N worker processes (default one per core)",
)
@argument(
    "--resume",
    action="store_true",
    help="continue the last interrupted or killed vc (or -o DIR's) as it was asked, without "
    "comparing again the files it finished; takes only -o, -j, --backend, --scheduler, --cluster",
)
@foreign_rule_arguments
def vc_command(
    ctx: ShellContext, args: argparse.Namespace
) -> VectorCompareResult | RankDivergenceResult | StatisticsCompareResult | ForeignCompareResult:
    """vc [-lt LEFT -rt RIGHT] [-g GRAPH] [-r RUN] [--rank R|all] [--step S|all] [--across ranks] [--max N] [--alg LIST] [--overflow] [-o OUTDIR] [--backend B] [-j N] [--scheduler ADDR | --cluster local[:N]] [--resume] [--max-err E | --cos-min C --rmse-max R]

    Whole-network compare of every dumped tensor; writes result_<ts>.csv and summary.json.
    `vc --resume` continues the last partial compare (Ctrl-C, killed) where it stopped.

    A statistics-only dump (dump_data: stats) gets a statistics compare instead:
    statistics_<ts>.csv, summary.json with "mode": "statistics". Rule per tensor: pads of a
    padded layout (NC1HWC0, FRACTAL_NZ...) are taken out first (mean rescaled to the real
    elements; a max/min of 0 the benchmark lacks is the padding's); NaN/inf the benchmark has
    not: "nonfinite"; else each statistic may differ by what the device dtype allows, with u
    its unit roundoff (float16 2^-11, bfloat16 2^-8, float32 2^-24; integers exact):
    L2 norm 8*u*|norm| (the main signal), mean 8*u*rms, max/min 64*u*max(|max|,|min|).
    Deviation = the worst |diff|/allowed; above 1 an output deviates when it is at least 8x
    its inputs' deviation, else it is "drift" (error it received). A constant or the network's input data beyond the limits fails
    the op reading it ("constant input deviates" / "input data deviates"); one holding NaN/inf
    the benchmark's has not, likewise ("constant input nonfinite" / "input data nonfinite":
    born there, not in the op reading it). Statistics cannot
    see a permutation (a wrong layout keeps them all): dump tensors to rule one out.
    -lt/-rt with a statistics-only dump on either side is a statistics compare too: against a
    .npy dir, or another dump (statistics, or tensors whose statistics are computed), ops
    paired by name; u is the coarser of the two dtypes, and rows of another Format/Shape are
    taken to their real elements first (same Format and Shape: compared as recorded).

    -lt/-rt on two MegEngine io dumps (--bin-io-dump dirs, --io-dump text) or two SigmaStar
    DumpDebug dumps: every tensor paired (MegEngine by var id, else op name + slot;
    SigmaStar by tensor name, slot as tie-breaker) and compared in float64: CosineSimilarity,
    MaxAbsoluteError, MegEngineRelativeError, MeanSquaredError, SigmaStarRMSE; "mode":
    "megengine" / "sigmastar". Fails: MegEngine relative error > 1e-3 (--max-err E moves it,
    as compare_binary_iodump -e); SigmaStar cosine < 0.99 (--cos-min C) or RMSE > 0.1
    (--rmse-max R). The rule used is recorded in summary.json; vcs and report judge by it.
    SigmaStar's float run (isFloat: 1) is the benchmark: given as -lt against an isFloat: 0
    -rt, the two are swapped, and a line says so.
    A var an --io-dump text printed in part is judged on what both sides printed: it fails
    when that proves the error over the limit (MegEngineRelativeErrorAtLeast), else it is
    not judged, never passed.
    A flag of the other family, or on an Ascend compare, is an error. `ac -c -lt A -rt B`
    (same flags) adds the root cause.
    Opened on such dumps (precision-shell DIR_OR_FILE), vc alone compares the opened pair;
    -lt/-rt take paths or its run names.
    """
    foreign = foreign_dumps(ctx, "vc", args)
    if foreign is not None and not args.resume:
        _alg_of_tensor_compares(
            args, "MegEngine or SigmaStar dumps, compared by their own tool's metrics"
        )
        left, right = compare_paths(foreign, "vc", args.left, args.right)
        rule = foreign_rule("vc", args, left, right)
        return run_foreign_compare(ctx.workspace_path, left, right, args.output, rule)
    if not args.resume and is_foreign_pair(args.left, args.right):
        no_rank_step("vc", args)
        _alg_of_tensor_compares(
            args, "MegEngine or SigmaStar dumps, compared by their own tool's metrics"
        )
        rule = foreign_rule("vc", args, args.left, args.right)
        return run_foreign_compare(ctx.workspace_path, args.left, args.right, args.output, rule)
    no_foreign_rule("vc", args)
    request = compare_request(ctx, args)

    def progress(title: str) -> ProgressSink:
        return ctx.progress(title, "files", "tensors")

    if args.resume:
        _check_resume_args(args)
        return compare_runner.resume(ctx.workspace, request, progress)
    statistics = compare_runner.statistics_compares(ctx.workspace, request)
    if statistics is not None:
        _alg_of_tensor_compares(args, "statistics dumps, compared by the statistics they hold")
        return compare_runner.run_statistics(ctx.workspace, request, statistics, progress)
    if args.across == "ranks":
        chosen = request.options.algorithms
        if chosen is not None and MAX_ABS not in chosen:  # QA: "ranks 1, 2 match rank 0"
            raise UsageError(
                "vc: --across ranks tells where a rank parts from the reference by "
                "MaxAbsoluteError: add mae to --alg"
            )
        return compare_runner.run_across_ranks(ctx.workspace, request, progress)
    return compare_runner.run(ctx.workspace, request, progress)


def _alg_of_tensor_compares(args: argparse.Namespace, what: str) -> None:
    """--alg picks the metrics of a tensor compare; other compares would ignore it."""
    if args.alg:
        raise UsageError(
            f"vc: --alg picks the metrics of a tensor compare; these are {what} (drop --alg)"
        )


def compare_request(ctx: ShellContext, args: argparse.Namespace) -> CompareRequest:
    """The compare vc's parsed `args` ask for (settings fill what they leave out)."""
    if args.max is not None and args.max < 1:
        raise UsageError("vc: --max must be at least 1")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("vc: -j must be at least 1")
    algorithms = parse_algorithms(args.alg)
    return CompareRequest(
        rule=ThresholdRule.from_settings(ctx.settings).of_metrics(algorithms),
        options=CompareOptions(
            algorithms,
            args.overflow,
            float(ctx.settings.get("thresholds.fp16_overflow")),
        ),
        left=args.left,
        right=args.right,
        graph=args.graph,
        run=args.run,
        max_files=args.max,
        output=args.output,
        workers=args.jobs or int(ctx.settings.get("parallelism.workers")),
        backend=args.backend or str(ctx.settings.get("parallelism.backend")),
        rank=args.rank,
        step=args.step,
        across=args.across,
        dask=_dask_target(ctx, args),
    )


def _dask_target(ctx: ShellContext, args: argparse.Namespace) -> DaskTarget | None:
    """--scheduler / --cluster, else the parallelism.scheduler setting unless --backend or -j
    asks for a local pool; with parallelism.no_worker_wait_s."""
    if args.scheduler and args.cluster:
        raise UsageError("vc: give --scheduler or --cluster, not both")
    if (args.scheduler or args.cluster) and (args.backend or args.jobs):
        raise UsageError("vc: --backend and -j are for local pools; drop them with a Dask cluster")
    wait = float(ctx.settings.get("parallelism.no_worker_wait_s"))
    target = None
    if args.cluster:
        target = DaskTarget.from_cluster(args.cluster)
    else:
        scheduler = args.scheduler or str(ctx.settings.get("parallelism.scheduler"))
        if scheduler and not (args.backend or args.jobs):
            target = DaskTarget(scheduler=scheduler)
    if target is None:
        return None
    if not wait > 0:
        raise UsageError(f"vc: parallelism.no_worker_wait_s must be above 0 seconds, not {wait:g}")
    return replace(target, no_worker_wait_s=wait)


# what decides a compare's plans and rows: a resumed run keeps what it was asked with
_SELECTION_ARGS = {
    "left": "-lt",
    "right": "-rt",
    "graph": "-g",
    "run": "-r",
    "max": "--max",
    "alg": "--alg",
    "overflow": "--overflow",
    "rank": "--rank",
    "step": "--step",
    "across": "--across",
}


def _check_resume_args(args: argparse.Namespace) -> None:
    given = [flag for name, flag in _SELECTION_ARGS.items() if getattr(args, name, None)]
    if given:
        raise UsageError(
            f"vc: --resume continues a compare as it was asked; drop {', '.join(given)}"
        )
