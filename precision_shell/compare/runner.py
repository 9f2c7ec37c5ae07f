"""The compare entry point: `run(workspace, request) -> VectorCompareResult`.

It picks what to compare (the workspace's dump against its benchmark, or two dirs given
by the user; a second device run against the first), runs each compare, and writes the
result dir: one CSV per compare and one `summary.json`. Commands parse, call this, and
return its result.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from precision_shell.compare.metrics.cells import METRIC_COLUMNS
from precision_shell.compare.pipeline.dask_backend import DaskPool, DaskTarget, open_pool
from precision_shell.compare.pipeline.execute import (
    CompareRun,
    VectorCompareResult,
    execute_plans,
    given_result_dir,
    result_dir,
)
from precision_shell.compare.pipeline.journal import RunJournal
from precision_shell.compare.pipeline.plan import ComparePlan
from precision_shell.compare.pipeline.plan_memos import PlanMemos
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.plan_selection import (
    EmptySlice,
    not_selected,
    optional_graph,
    plans_for,
    selected_slices,
    slice_graph,
    slice_plans,
    statistics_pair_plan,
    undumped_records,
)
from precision_shell.compare.rank_divergence import (
    RankDivergenceResult,
    RankPair,
    divergence_of,
    own_benchmark_notes,
    rank_pair_plans,
)
from precision_shell.compare.results.columns_cache import CACHE_DIR as COLUMNS_CACHE_DIR
from precision_shell.compare.results.input_changes import record_listings
from precision_shell.compare.results.schema import mark_latest
from precision_shell.compare.results.slice_results import run_slices
from precision_shell.compare.results.summary import SUMMARY_NAME, RunSummary
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.compare.resume import JournalSlot, partial_run_dir, saved_request
from precision_shell.compare.statistics.run import (
    STATISTICS_MODE,
    StatisticsCompare,
    StatisticsCompareResult,
    execute_statistics_plan,
    statistics_plans,
)
from precision_shell.compare.statistics.run import summary_of as statistics_summary
from precision_shell.compare.statistics_left_out import statistics_left_out
from precision_shell.errors import PrecisionError
from precision_shell.heap import settled
from precision_shell.progress import ProgressSink
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.output_files import NoSpaceError, OutputError
from precision_shell.workspace.workspace import DumpSlice, Workspace

# a statistics compare to run: the (rank, step) it compares (None: dirs given by -lt/-rt),
# its plan and the graph its ops belong to (None: two dumps paired by op name alone)
StatisticsPlan = tuple[DumpSlice | None, ComparePlan, GraphIndex | None]


@dataclass
class StatisticsCompares:
    """The statistics compares of a `vc` request, and the selected (rank, step)s with
    nothing to compare."""

    plans: list[StatisticsPlan]
    empty: list[EmptySlice] = field(default_factory=list)

    def selected(self) -> list[DumpSlice | None]:
        """Every (rank, step) selected, compared or empty (as `SlicePlans.selected`)."""
        return [w for w, _, _ in self.plans] + [e.where for e in self.empty]


@dataclass(frozen=True)
class CompareRequest:
    """What `vc` (and `ac -c`) asks for."""

    rule: ThresholdRule
    options: CompareOptions = CompareOptions()
    left: str | None = None  # a dir, or a device run's name (debug_N)
    right: str | None = None
    graph: str | None = None
    run: str | None = None
    max_files: int | None = None
    output: Path | None = None  # write into this dir instead of temp/vector_compare/<ts>/
    workers: int = 0
    backend: str = "auto"
    rank: str | None = None  # a rank (`<device_id>` dir), or None / "all": every rank
    step: str | None = None  # a step dir, "all", or None: each rank's first step
    across: str | None = None  # "ranks": every rank against the lowest rank (run_across_ranks)
    dask: DaskTarget | None = None  # run the tasks on a Dask cluster (backend, workers unused)


ProgressFor = Callable[[str], ProgressSink]


def run(
    ws: Workspace,
    request: CompareRequest,
    progress: ProgressFor | None = None,
    resume: RunJournal | None = None,
) -> VectorCompareResult:
    """Compare, write the CSVs and the summary, and return what was found.

    A run with several (rank, step) dump dirs gets one compare per selected slice, each its
    own CSV (the first, `result_<ts>.csv`, is the primary that vcs/report/ni read; the others
    `result_<ts>_rank<R>_step<S>.csv`), all listed in the summary's `results`.
    Each task is journaled as it completes (`vc --resume` continues from there, `resume`).
    """
    with settled(), JournalSlot(resume) as slot:
        try:
            return _run(ws, request, progress, slot)
        except NoSpaceError as exc:
            raise slot.stopped(exc) from None


def statistics_slices(ws: Workspace, request: CompareRequest) -> list[DumpSlice] | None:
    """The selected (rank, step) dumps when they are statistics-only dumps (a statistics
    compare), else None. A selection mixing both kinds is an error saying which is which."""
    if request.left or request.right or request.across or ws.benchmark is None:
        return None
    run = ws.run(request.run)
    if not run.slices:
        return None
    chosen = selected_slices(run, request.rank, request.step)
    statistics = [where.dumps.holds_statistics_only() for where in chosen]
    if not any(statistics):
        return None
    # an empty dump dir (an interrupted dump) is of neither kind
    kinds = [s or not len(w.dumps) for s, w in zip(statistics, chosen, strict=True)]
    if not all(kinds):
        stats = ", ".join(w.label for w, k in zip(chosen, kinds, strict=True) if k)
        raise PrecisionError(
            f"vc: {stats} holds statistics dumps and the others tensor dumps; compare them "
            "apart with --rank/--step"
        )
    return chosen


def statistics_compares(ws: Workspace, request: CompareRequest) -> StatisticsCompares | None:
    """The statistics compares `request` means, None when it means a tensor compare: the
    workspace's statistics-only dumps against its benchmark (one per selected rank and step),
    or `-lt`/`-rt` with a statistics-only dump on either side."""
    if request.across:
        return None
    if request.left or request.right:
        pair = statistics_pair_plan(ws, request)
        if pair is None:
            return None
        if request.rank is not None or request.step is not None:  # "all" is no less a choice
            raise PrecisionError(
                "vc: --rank/--step are not taken with a statistics dump pair given by -lt/-rt "
                "(vc --rank/--step compares the workspace's own statistics dumps)"
            )
        plan, graph = pair
        return StatisticsCompares([(None, plan, graph)])
    slices = statistics_slices(ws, request)
    if slices is None:
        return None
    run = ws.run(request.run)
    plans, empty = statistics_plans(
        ws, run, slices, lambda where: slice_graph(ws, run, where, request.graph)
    )
    return StatisticsCompares([(where, plan, graph) for where, plan, graph in plans], empty)


def run_statistics(
    ws: Workspace,
    request: CompareRequest,
    compares_to_run: StatisticsCompares,
    progress: ProgressFor | None = None,
) -> StatisticsCompareResult:
    """`vc` on statistics dumps (`statistics_compares`): one
    `statistics_<ts>[_rank<R>_step<S>].csv` per compare and a summary with
    `"mode": "statistics"`."""
    started = time.time_ns()  # before any file is read (summary.json started_ns)
    plans = compares_to_run.plans
    if request.max_files is not None:
        for _, plan, _ in plans:
            plan.tasks = plan.tasks[: request.max_files]
    out_dir, stamp = _output_dir(ws, request.output)
    sink = progress or (lambda title: ProgressSink())
    compares: list[StatisticsCompare] = []
    for n, (where, plan, graph) in enumerate(plans):
        name = (
            f"statistics_{stamp}.csv"
            if not n or where is None
            else f"statistics_{stamp}_rank{where.rank}_step{where.step}.csv"
        )
        title = (
            "vc: statistics"
            if len(plans) == 1 or where is None
            else f"vc: statistics, {where.label}"
        )
        compare = execute_statistics_plan(plan, out_dir / name, request.workers, sink(title), graph)
        compare.where = where
        compares.append(compare)
        if compare.interrupted:
            break
    summary = statistics_summary(ws, request.rule, compares)
    summary.started_ns = started  # vcs/ni tell a compare older than its inputs
    if plans[0][0] is not None:
        summary.not_selected = not_selected(ws.run(request.run), compares_to_run.selected())
        summary.nothing_to_compare = [e.record() for e in compares_to_run.empty]
        summary.nothing_to_compare += undumped_records(
            ws.run(request.run), request.rank, request.step
        )
    _write_summary(ws, summary, out_dir, request)
    warnings = [w for _, plan, _ in plans for w in plan.index_warnings]
    return StatisticsCompareResult(out_dir, summary, compares, index_warnings=warnings)


def _write_summary(
    ws: Workspace, summary: RunSummary, out_dir: Path, request: CompareRequest
) -> None:
    """summary.json, with what each (rank, step) read recorded for its readers' stale line
    and the metrics computed (`--alg`) for the rule its readers judge by."""
    algorithms = request.options.algorithms
    if summary.primary.mode != STATISTICS_MODE:  # its columns are not metrics of ours
        # every one when not --alg: a summary without `metrics` is one from before them
        summary.metrics = list(algorithms if algorithms is not None else METRIC_COLUMNS)
    record_listings(ws, summary)
    summary.write(out_dir / SUMMARY_NAME)
    mark_latest(out_dir)


def _run(
    ws: Workspace, request: CompareRequest, progress: ProgressFor | None, slot: JournalSlot
) -> VectorCompareResult:
    started = time.time_ns()  # before any input is looked at (summary.json started_ns)
    memos = PlanMemos(ws)
    primary, secondary = plans_for(ws, request, memos)
    selection = slice_plans(ws, request, primary, memos)
    slices = selection.plans
    if selection.run is not None:  # the workspace's dump dirs: what holds statistics too
        for where, _ in slices:
            dumps = where.dumps if where is not None else selection.run.dumps
            label = f"{selection.run.name} {where.label}" if where is not None else primary.left
            left_out = statistics_left_out(label, dumps)
            if left_out is not None:
                ws.warnings.append(left_out)
    memos.save()
    if request.max_files is not None:
        for _, plan in slices:
            plan.tasks = plan.tasks[: request.max_files]
        if secondary is not None:
            secondary.tasks = secondary.tasks[: request.max_files]
    with open_pool(request.dask) as pool:  # first: a cluster it cannot reach leaves no dir
        out_dir, stamp = slot.place() or _output_dir(ws, request.output)
        sink = progress or (lambda title: ProgressSink())
        names = [f"result_{stamp}.csv"]
        names += [f"result_{stamp}_rank{w.rank}_step{w.step}.csv" for w, _ in slices[1:] if w]
        title = "vc" if len(slices) == 1 else f"vc: {len(slices)} ranks and steps"
        plans, paths = [plan for _, plan in slices], [out_dir / n for n in names]
        if secondary is not None:
            left, right = _csv_part(secondary.left), _csv_part(secondary.right)
            second_csv = out_dir / f"result_{stamp}_{left}_vs_{right}.csv"
        places = [{"rank": w.rank, "step": w.step} if w else {} for w, _ in slices]
        fresh = slot.place() is None and request.output is None  # a dir made just now
        try:
            journal = slot.open(
                ws,
                request,
                out_dir,
                stamp,
                [*plans, *([secondary] if secondary else [])],
                [*paths, *([second_csv] if secondary else [])],
                [*places, *([{}] if secondary else [])],
            )
        except OutputError:  # a full disk: nothing was compared, no empty dir stays
            if fresh:
                with contextlib.suppress(OSError):
                    out_dir.rmdir()
            raise
        runs = _execute_all(ws, plans, paths, request, sink(title), pool, journal)
        done = list(zip([where for where, _ in slices], runs, strict=False))
        first = done[0][1]
        second = None
        if secondary is not None and not any(r.interrupted for _, r in done):
            progress_2 = sink("vc: device vs device")
            (second,) = _execute_all(
                ws, [secondary], [second_csv], request, progress_2, pool, journal, len(plans)
            )
    summary = RunSummary(
        workspace=str(ws.root),
        rule=request.rule,
        primary=first.record(),
        device_compare=second.record() if second is not None else None,
        results=[_slice_result(where, run) for where, run in done],
        not_selected=not_selected(selection.run, selection.selected())
        if selection.run is not None and slices[0][0] is not None
        else [],
        nothing_to_compare=[e.record() for e in selection.empty]
        + (
            undumped_records(selection.run, request.rank, request.step)
            if selection.run is not None
            else []
        ),
        not_begun=[not_begun_record(where, plan) for where, plan in slices[len(done) :] if where],
        started_ns=started,
    )
    _write_summary(ws, summary, out_dir, request)
    slot.finish(
        len(done) == len(slices)
        and not any(r.interrupted for _, r in done)
        and (secondary is None or (second is not None and not second.interrupted))
    )
    _raise_if_lost([run for _, run in done] + ([second] if second else []), summary, out_dir)
    # only a -lt/-rt pair's plan (then the only one) indexes dirs given by path
    return VectorCompareResult(
        out_dir, summary, first, second, slices=done[1:], index_warnings=primary.index_warnings
    )


def run_across_ranks(
    ws: Workspace,
    request: CompareRequest,
    progress: ProgressFor | None = None,
    resume: RunJournal | None = None,
) -> RankDivergenceResult:
    """`vc --across ranks`: each rank of the run against its lowest rank at one step (device
    vs device, ops matched by name), one CSV per rank pair
    (`result_<ts>_rank<R>_vs_rank<L>_step<S>.csv`), listed in the summary's `results` with
    `against`; `rank_divergence` lists the ranks that leave the reference and where."""
    with settled(), JournalSlot(resume) as slot:
        try:
            return _run_across_ranks(ws, request, progress, slot)
        except NoSpaceError as exc:
            raise slot.stopped(exc) from None


def _run_across_ranks(
    ws: Workspace, request: CompareRequest, progress: ProgressFor | None, slot: JournalSlot
) -> RankDivergenceResult:
    if request.left or request.right:
        raise PrecisionError("vc: --across ranks compares the ranks of a run; drop -lt/-rt")
    started = time.time_ns()  # before any input is looked at (summary.json started_ns)
    run = ws.run(request.run)
    graph = optional_graph(run, request.graph)
    warnings: list[str] = []
    pairs = rank_pair_plans(run, request.step, graph, warnings, request.rank)
    ws.warnings.extend(warnings)
    warnings += own_benchmark_notes(ws, pairs)
    if request.max_files is not None:
        for pair in pairs:
            pair.plan.tasks = pair.plan.tasks[: request.max_files]
    with open_pool(request.dask) as pool:  # first: a cluster it cannot reach leaves no dir
        out_dir, stamp = slot.place() or _output_dir(ws, request.output)
        sink = progress or (lambda title: ProgressSink())
        paths = [
            out_dir / f"result_{stamp}_rank{p.rank}_vs_rank{p.against}_step{p.step}.csv"
            for p in pairs
        ]
        title = f"vc: {len(pairs)} ranks vs rank {pairs[0].against}"
        plans = [pair.plan for pair in pairs]
        places = [{"rank": p.rank, "step": p.step, "against": p.against} for p in pairs]
        journal = slot.open(ws, request, out_dir, stamp, plans, paths, places)
        runs = _execute_all(ws, plans, paths, request, sink(title), pool, journal)
    done: list[tuple[RankPair, CompareRun]] = list(zip(pairs, runs, strict=False))
    divergence = [d for pair, compare in done if (d := divergence_of(pair, compare)) is not None]
    results = []
    for pair, compare in done:
        entry = _slice_result(None, compare)
        entry.update(rank=pair.rank, step=pair.step, against=pair.against, graph=pair.plan.graph)
        results.append(entry)
    summary = RunSummary(
        workspace=str(ws.root),
        rule=request.rule,
        primary=done[0][1].record(),
        results=results,
        rank_divergence=[d.to_json() for d in divergence],
        not_begun=[
            {"rank": p.rank, "step": p.step, "against": p.against, "files_total": len(p.plan.tasks)}
            for p in pairs[len(done) :]
        ],
        started_ns=started,
    )
    _write_summary(ws, summary, out_dir, request)
    slot.finish(len(done) == len(pairs) and not any(r.interrupted for _, r in done))
    _raise_if_lost(runs, summary, out_dir)
    first = pairs[0]
    return RankDivergenceResult(
        out_dir, summary, run.name, first.against, first.step, done, divergence, warnings
    )


def _slice_result(where: DumpSlice | None, run: CompareRun) -> dict[str, Any]:
    """One entry of the summary's `results`: a (rank, step) compare."""
    first = run.tally.failing[0].op_name if run.tally.failing else None
    return {
        "rank": where.rank if where is not None else None,
        "step": where.step if where is not None else None,
        "graph": ",".join(where.graph_names) if where is not None else None,
        "csv": str(run.csv_path),
        "right": run.right,  # what it was compared with: its benchmark dir
        "rows": run.tally.rows,
        "failed": len(run.tally.failing),
        "first_failed_op": first,
        "not_compared": run.tally.failed,  # rows that could not be compared (unreadable...)
        "partial": run.interrupted,
        "files_done": run.files_done,
        "files_total": run.tasks,
        **({} if run.resumed_from is None else {"resumed_from_files": run.resumed_from}),
        # dump files not placed in the graph: their ops are in no row (vcs says so)
        **(
            {"unmatched": len(run.skipped), "unmatched_first": run.skipped[0]}
            if run.skipped
            else {}
        ),
    }


def not_begun_record(where: DumpSlice, plan: ComparePlan) -> dict[str, Any]:
    """An entry of summary.json `not_begun`: a selected (rank, step) the run was cut short
    (Ctrl-C, a lost worker) before it compared any of its files; `vc --resume` compares it."""
    return {"rank": where.rank, "step": where.step, "files_total": len(plan.tasks)}


def _csv_part(label: str) -> str:
    """A device-vs-device side in its CSV's name: the run or dir name (`debug_0`), without the
    ` rank R step S` its label carries when the run has several dump dirs."""
    return re.sub(r" rank \S+ step \S+$", "", Path(label).name)


def _raise_if_lost(runs: list[CompareRun], summary: RunSummary, out_dir: Path) -> None:
    """A worker that died or a cluster that went away mid-compare (not Ctrl-C: the result
    says that itself): one line, once the partial summary is written. A run of several
    (rank, step)s is counted whole, as `vcs` counts it: the (rank, step)s not begun too."""
    reason = next((run.lost for run in runs if run.lost), None)
    if reason is None:
        return
    cut = run_slices(summary).run_text()
    if cut is None:
        done, total = sum(r.files_done for r in runs), sum(r.tasks for r in runs)
        cut = f"partial: {done} of {total} files"
    raise PrecisionError(
        f"vc: {reason} ({cut}); the rows written so far and summary.json are in {out_dir}; "
        "vc --resume continues"
    )


def _execute_all(
    ws: Workspace,
    plans: list[ComparePlan],
    csv_paths: list[Path],
    request: CompareRequest,
    progress: ProgressSink,
    pool: DaskPool | None = None,
    journal: RunJournal | None = None,
    journal_first: int = 0,
) -> list[CompareRun]:
    """Every plan in one engine run (ranks are just more tasks); the compares Ctrl-C never
    reached are dropped with their empty CSVs, so what is listed was (partly) compared (the
    first always is). `journal_first`: the journal's number of the first plan. The CSVs'
    columns caches are written from the rows as they are written (`execute_plans`)."""
    runs = execute_plans(
        plans,
        csv_paths,
        request.options,
        request.rule,
        request.workers,
        progress,
        backend=request.backend,
        pool=pool,
        journal=journal,
        journal_first=journal_first,
        columns_cache=lambda: ws.output_dir(COLUMNS_CACHE_DIR),
    )
    cut = next((n for n, r in enumerate(runs) if n and r.tasks and not r.files_done), len(runs))
    for run in runs[cut:]:
        run.csv_path.unlink(missing_ok=True)
    return runs[:cut]


def resume(
    ws: Workspace, execution: CompareRequest, progress: ProgressFor | None = None
) -> VectorCompareResult | RankDivergenceResult:
    """`vc --resume`: continue the last partial run (or that of `execution.output`) as it was
    requested; its journaled files are not compared again. Of `execution` only how the tasks
    run is used (workers, backend, cluster), never what they compute."""
    journal = RunJournal.open_existing(partial_run_dir(ws, execution.output))
    with journal:
        request = replace(execution, **saved_request(journal, ws))
        if request.across == "ranks":
            return run_across_ranks(ws, request, progress, journal)
        return run(ws, request, progress, journal)


def _output_dir(ws: Workspace, output: Path | None) -> tuple[Path, str]:
    """`-o DIR` is the result dir itself (created if missing); else a new timestamped dir."""
    if output is None:
        return result_dir(ws.output_dir("vector_compare"))  # an OutputError names the dir
    return given_result_dir(output)
