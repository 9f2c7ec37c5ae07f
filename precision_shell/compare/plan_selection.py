"""Which compares a `vc` request means: the plans of the workspace's dump against its
benchmark (one per selected rank and step), of two dirs or device runs the user named, or of
the device runs against each other when there is no benchmark."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_shell.compare.pipeline.plan import (
    ComparePlan,
    GraphPlanMemo,
    benchmark_plan,
    device_plan,
)
from precision_shell.compare.pipeline.plan_memos import PlanMemos
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import scan_benchmark_dir
from precision_shell.workspace.dump_index import DumpIndex, index_dump_tree
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import DumpSlice, RunIndex, Workspace, number_order

if TYPE_CHECKING:
    from precision_shell.compare.runner import CompareRequest


@dataclass(frozen=True)
class EmptySlice:
    """A selected (rank, step) dump dir with nothing to compare (an interrupted dump leaves
    an empty step dir): selected all the same, so never one of `not_selected`."""

    where: DumpSlice
    reason: str  # "no dump file", "no dump file belongs to an op of graph G"

    def record(self) -> dict[str, Any]:
        """Its entry in summary.json `nothing_to_compare`."""
        return {"rank": self.where.rank, "step": self.where.step, "reason": self.reason}


def empty_slice(where: DumpSlice, graph: GraphIndex, what: str = "dump file") -> EmptySlice:
    """`where` holds no `what` of an op of `graph`: none at all, or only other graphs'."""
    if not len(where.dumps):
        return EmptySlice(where, f"no {what}")
    return EmptySlice(where, f"no {what} belongs to an op of graph {graph.root_graph}")


@dataclass
class SlicePlans:
    """The compares of a `vc` request, one per selected (rank, step) with something to
    compare, and the selected ones without."""

    plans: list[tuple[DumpSlice | None, ComparePlan]]
    empty: list[EmptySlice]
    run: RunIndex | None = None  # the run whose (rank, step) dump dirs were selected

    def selected(self) -> list[DumpSlice | None]:
        return [w for w, _ in self.plans] + [e.where for e in self.empty]


def slice_plans(
    ws: Workspace, request: CompareRequest, primary: ComparePlan, memos: PlanMemos
) -> SlicePlans:
    """The plan of every selected (rank, step) of a device-vs-benchmark compare of the
    workspace, or of a run given as -lt against a benchmark dir given as -rt
    (`_pair_slice_plans`); just the primary plan for the other kinds of compare."""
    if request.left and (request.rank is not None or request.step is not None):
        return _pair_slice_plans(ws, request, primary)
    if request.left or primary.mode != "benchmark":
        if request.rank not in (None, "all") or request.step not in (None, "all"):
            raise PrecisionError("vc: --rank/--step select dump dirs of the workspace's runs")
        return SlicePlans([(None, primary)], [])
    run = ws.run(request.run)
    whole = request.rank in (None, "all") and request.step in (None, "all")
    if len(run.slices) <= 1 and whole and not ws.benchmarks_by_slice():
        return SlicePlans([(run.slices[0] if run.slices else None, primary)], [], run)
    chosen = selected_slices(run, request.rank, request.step)
    scoped = ws.benchmarks_by_slice()  # each slice against its own benchmark dir
    plans: list[tuple[DumpSlice | None, ComparePlan]] = []
    empty: list[EmptySlice] = []
    for where in chosen:
        graph = slice_graph(ws, run, where, request.graph)
        label = f"{run.name} {where.label}"
        if where.dumps is run.dumps and graph.root_graph == primary.graph and not scoped:
            # the default slice against the same graph: the primary plan, already made
            plan = replace(primary, left=label)
        else:
            found = slice_plan(ws, run, graph, where, memos)
            if isinstance(found, EmptySlice):
                empty.append(found)
                continue
            plan = found
        if plan.tasks:
            plans.append((where, plan))
        else:
            empty.append(empty_slice(where, graph))
    return _found(run, plans, empty)


def _found(
    run: RunIndex, plans: list[tuple[DumpSlice | None, ComparePlan]], empty: list[EmptySlice]
) -> SlicePlans:
    """The plans made of `run`'s selected dump dirs; an error when none has any."""
    if not plans:
        if len(empty) == 1:
            raise PrecisionError(f"{run.name} {empty[0].where.label}: {empty[0].reason}")
        raise PrecisionError(
            f"{run.name}: no selected rank and step has a dump of its graph and a benchmark"
        )
    return SlicePlans(plans, empty, run)


def _pair_slice_plans(ws: Workspace, request: CompareRequest, primary: ComparePlan) -> SlicePlans:
    """`-lt RUN -rt DIR --rank/--step`: the selected (rank, step) dump dirs of the device run
    RUN, each against the benchmark `.npy` dir DIR (one CSV each, as for the workspace's own
    benchmark). A -lt dir given by path, or a -rt device dump, has no (rank, step) to select:
    an error, never a silent compare of the default dump dir."""
    run = _run_named(ws, request.left) if request.left else None
    if run is None:
        names = ", ".join(r.name for r in ws.runs) or "none"
        raise PrecisionError(
            f"vc: --rank/--step select dump dirs of a device run: -lt {request.left} is a dir "
            f"given by path (give a run of the workspace: {names}; or drop --rank/--step)"
        )
    if primary.mode != "benchmark" or not request.right:
        raise PrecisionError(
            f"vc: --rank/--step with -lt {run.name} select its dump dirs to compare with a "
            f"benchmark .npy dir; -rt {request.right} is a device dump (drop --rank/--step)"
        )
    benchmarks = scan_benchmark_dir(Path(request.right))
    memos: dict[int, GraphPlanMemo] = {}  # per graph: their part of the plan once
    plans: list[tuple[DumpSlice | None, ComparePlan]] = []
    empty: list[EmptySlice] = []
    for where in selected_slices(run, request.rank, request.step):
        graph = slice_graph(ws, run, where, request.graph)
        plan = benchmark_plan(
            ws,
            run,
            graph,
            dumps=where.dumps,
            left=f"{run.name} {where.label}",
            memo=memos.setdefault(id(graph), GraphPlanMemo()),
            benchmarks=benchmarks,
        )
        if plan.tasks:
            plans.append((where, plan))
        else:
            empty.append(empty_slice(where, graph))
    return _found(run, plans, empty)


def slice_plan(
    ws: Workspace,
    run: RunIndex,
    graph: GraphIndex,
    where: DumpSlice,
    memos: PlanMemos,
    statistics: bool = False,
) -> ComparePlan | EmptySlice:
    """The plan of one (rank, step) dump dir against its benchmark dir (tf/dump/, or its
    rank's or step's: `Workspace.benchmark_for`); an EmptySlice when that dir holds no
    benchmark tensor while other rank or step dirs do (so the slice has none of its own)."""
    benchmarks = ws.benchmark_for(where.rank, where.step)
    if ws.benchmarks_by_slice() and not benchmarks:
        return EmptySlice(where, no_benchmark_reason(ws, where))
    # ranks and steps of one graph and benchmark dir: their part of the plan once
    memo = memos.memo_for(graph, benchmarks)
    return benchmark_plan(
        ws,
        run,
        graph,
        dumps=where.dumps,
        left=f"{run.name} {where.label}",
        statistics=statistics,
        memo=memo,
        benchmarks=benchmarks,
    )


def no_benchmark_reason(ws: Workspace, where: DumpSlice) -> str:
    """Why a (rank, step) has no benchmark when rank or step dirs of tf/dump/ have some."""
    blocked = ws.no_benchmark_why(where.rank, where.step)
    if blocked is not None:
        return f"its benchmark dir tf/dump/{blocked}"
    return (
        f"no benchmark tensor in tf/dump/rank{where.rank}/step{where.step}/, "
        f"step{where.step}/, rank{where.rank}/ or tf/dump/ itself"
    )


def selected_slices(run: RunIndex, rank: str | None, step: str | None) -> list[DumpSlice]:
    """The (rank, step) dump dirs `--rank`/`--step` select. A step given with every rank:
    the ranks that dumped it (the others are `not dumped` in the rank x step table); one no
    rank dumped, or a rank named that did not, is an error listing the steps there are."""
    ranks = run.ranks() if rank in (None, "all") else [run.slice(rank).rank]
    if rank in (None, "all") and step not in (None, "all"):
        ranks = [r for r in ranks if step in run.steps(r)] or ranks
    chosen: list[DumpSlice] = []
    for r in ranks:
        if step == "all":
            chosen.extend(run.slice(r, s) for s in run.steps(r))
        else:
            chosen.append(run.slice(r, step))
    return chosen


def undumped_records(run: RunIndex, rank: str | None, step: str | None) -> list[dict[str, Any]]:
    """A step given with every rank: the ranks that did not dump it, as summary.json
    `nothing_to_compare` entries (QA: `vc --step 2` left out a card that crashed after step
    1 without a word); [] otherwise."""
    if rank not in (None, "all") or step in (None, "all"):
        return []
    ranks = run.ranks()
    having = [r for r in ranks if step in run.steps(r)]
    if not having:
        return []  # no rank dumped it: selected_slices' error says so
    return [
        {"rank": r, "step": step, "reason": f"rank {r} dumped no step {step}", "dumped": False}
        for r in ranks
        if r not in having
    ]


def not_selected(run: RunIndex, chosen: Iterable[DumpSlice | None]) -> list[dict[str, Any]]:
    """The (rank, step) dump dirs of `run` a compare left out (`{rank, step}`, by rank then
    step): the steps after each rank's first, by default."""
    taken = {(w.rank, w.step) for w in chosen if w is not None}
    return [
        {"rank": w.rank, "step": w.step}
        for w in sorted(run.slices, key=lambda w: (number_order(w.rank), number_order(w.step)))
        if (w.rank, w.step) not in taken
    ]


def slice_graph(ws: Workspace, run: RunIndex, where: DumpSlice, name: str | None) -> GraphIndex:
    """The graph a slice's dump belongs to (by its graph dir names), else the run's; `-g`
    names one."""
    graph = run.graph_of_dump(where.graph_names) if name is None else None
    return graph if graph is not None else pick_graph(ws, name, run.name)


def _holds_npy(directory: Path) -> bool:
    return any(directory.glob("*.npy"))


def _run_named(ws: Workspace, name: str) -> RunIndex | None:
    """A device run given by name (`debug_1`), when `-lt`/`-rt` name one rather than a dir."""
    if Path(name).is_dir() and not any(r.name == name for r in ws.runs):
        return None
    return next((r for r in ws.runs if r.name == name), None)


def _side(ws: Workspace | None, text: str) -> tuple[Path, RunIndex | None]:
    run = _run_named(ws, text) if ws is not None else None
    if run is not None:
        return run.run.root, run
    return Path(text), None


def _side_dumps(path: Path, run: RunIndex | None) -> tuple[DumpIndex, list[str]]:
    """A side's dump files, and what indexing them warned of when it is a dir given by path
    (a run's warnings are the workspace's, shown with it)."""
    if run is not None:
        return run.dumps, []
    dumps = index_dump_tree(path)
    return dumps, list(dumps.warnings)


def plans_for(
    ws: Workspace, request: CompareRequest, memos: PlanMemos
) -> tuple[ComparePlan, ComparePlan | None]:
    if bool(request.left) != bool(request.right):
        raise PrecisionError("vc: give both -lt LEFT and -rt RIGHT, or neither")
    if request.left and request.right:
        (left, left_run), (right, right_run) = _side(ws, request.left), _side(ws, request.right)
        if right_run is None and right.is_dir() and _holds_npy(right):
            graph = pick_graph(ws, request.graph, left_run.name if left_run else None)
            dumps, warned = _side_dumps(left, left_run)
            plan = benchmark_plan(
                ws,
                left_run or ws.run(),
                graph,
                benchmark_dir=right,
                dumps=dumps,
                left=str(left),
            )
            plan.index_warnings[:0] = warned
            return _nonempty(plan, graph), None
        left_dumps, left_warned = _side_dumps(left, left_run)
        right_dumps, right_warned = _side_dumps(right, right_run)
        device_graph = optional_graph(left_run, request.graph)
        plan = device_plan(
            left_dumps,
            right_dumps,
            left_run.name if left_run else str(left),
            right_run.name if right_run else str(right),
            device_graph,
        )
        plan.index_warnings = left_warned + right_warned
        return plan, None
    run = ws.run(request.run)
    if ws.benchmark is None and not ws.benchmarks_by_slice():
        others = [r for r in ws.runs if r is not run]
        if others:  # no benchmark: the device runs against each other is what can be done
            device_graph = optional_graph(run, request.graph)
            return (
                device_plan(
                    run.dumps,
                    others[0].dumps,
                    default_slice_name(run),
                    default_slice_name(others[0]),
                    device_graph,
                ),
                None,
            )
        raise PrecisionError(
            f"{ws.root}: no benchmark dir tf/dump/ to compare against, and one device run only "
            "(use -lt/-rt)"
        )
    graph = pick_graph(ws, request.graph, run.name)
    primary = _default_plan(ws, run, graph, memos)
    if len(run.slices) <= 1:
        # a run of several (rank, step)s: `slice_plans` says which selected one is empty (the
        # default one may be a statistics dump beside the tensor dump of the one selected)
        primary = _nonempty(primary, graph)
    secondary = None
    others = [r for r in ws.runs if r is not run]
    if others and request.run is None:
        secondary = device_plan(
            run.dumps,
            others[0].dumps,
            default_slice_name(run),
            default_slice_name(others[0]),
            graph,
        )
    return primary, secondary


def _default_plan(ws: Workspace, run: RunIndex, graph: GraphIndex, memos: PlanMemos) -> ComparePlan:
    """The plan of the run's default dump dir (its lowest rank's first step) against its
    benchmark dir."""
    if not run.slices or not ws.benchmarks_by_slice():
        return benchmark_plan(ws, run, graph, memo=memos.memo_for(graph, ws.benchmark))
    found = slice_plan(ws, run, graph, run.slice(), memos)
    if isinstance(found, EmptySlice):  # `slice_plans` says so if it is selected
        return benchmark_plan(ws, run, graph, benchmarks=ws.benchmark)
    return replace(found, left=str(run.run.dump_dir or run.run.root))


def default_slice_name(run: RunIndex) -> str:
    """A run as its default dumps are named: `debug_0`, or `debug_0 rank 0 step 0` when it
    holds several (rank, step) dump dirs (those are its lowest rank's first step)."""
    here = next((w for w in run.slices if w.dumps is run.dumps), None)
    if len(run.slices) <= 1 or here is None:
        return run.name
    return f"{run.name} {here.label}"


def statistics_pair_plan(
    ws: Workspace, request: CompareRequest
) -> tuple[ComparePlan, GraphIndex | None] | None:
    """`-lt`/`-rt` where a side is a statistics-only dump: the statistics compare's plan (the
    left statistics dump against a `.npy` dir, by the graph as `benchmark_plan`; or two dumps,
    paired by op name as `device_plan`, either side a statistics or a tensor dump). None: the
    tensor compare of `plans_for`."""
    if not (request.left and request.right):
        return None
    (left, left_run), (right, right_run) = _side(ws, request.left), _side(ws, request.right)
    left_dumps, left_warned = _side_dumps(left, left_run)
    if right_run is None and right.is_dir() and _holds_npy(right):
        if not left_dumps.holds_statistics_only():
            return None
        graph = pick_graph(ws, request.graph, left_run.name if left_run else None)
        plan = benchmark_plan(
            ws,
            left_run or ws.run(),
            graph,
            benchmark_dir=right,
            dumps=left_dumps,
            left=str(left),
            statistics=True,
        )
        plan.index_warnings[:0] = left_warned
        return _nonempty(plan, graph), graph
    right_dumps, right_warned = _side_dumps(right, right_run)
    if not (left_dumps.holds_statistics_only() or right_dumps.holds_statistics_only()):
        return None
    left_name = left_run.name if left_run else str(left)
    right_name = right_run.name if right_run else str(right)
    device_graph = optional_graph(left_run, request.graph)
    plan = device_plan(
        left_dumps, right_dumps, left_name, right_name, device_graph, statistics=True
    )
    plan.index_warnings = left_warned + right_warned
    if not any(task.fallback and task.fallback.benchmark_path for task in plan.tasks):
        raise PrecisionError(
            f"vc: no op of {left_name} has a dump in {right_name} (ops are paired by the name "
            "in their dump file names: give two dumps of the same graph)"
        )
    return plan, device_graph


def optional_graph(run: RunIndex | None, name: str | None) -> GraphIndex | None:
    """Device vs device matches by file name; a graph, when there is one, adds op types."""
    if run is None:
        return None
    if name:
        return graph_named(run, name)
    return run.dump_graph()


def _nonempty(plan: ComparePlan, graph: GraphIndex) -> ComparePlan:
    """A plan with nothing to compare means the dump and the graph do not belong together."""
    if not plan.tasks:
        example = f", e.g. {plan.skipped[0]}" if plan.skipped else ""
        raise PrecisionError(
            f"{plan.left}: no dump file belongs to an op of graph {graph.root_graph} "
            f"({graph.source}){example}; pick the graph with -g"
        )
    return plan


def graph_named(run: RunIndex, name: str) -> GraphIndex:
    for candidate in run.graphs:
        if any(name in g for g in candidate.graph_names):
            return candidate
    names = sorted({g for c in run.graphs for g in c.graph_names})
    known = f"; graphs: {', '.join(names)}" if names else "; it has no parsed graph"
    raise PrecisionError(f"vc: no graph named {name!r} in {run.name}{known}")


def pick_graph(ws: Workspace, name: str | None, run_name: str | None = None) -> GraphIndex:
    run = ws.run(run_name)
    if name:
        return graph_named(run, name)
    graph = run.dump_graph()
    if graph is None:
        raise PrecisionError(f"{run.run.root}: no parsed Build graph to match the dump with")
    return graph
