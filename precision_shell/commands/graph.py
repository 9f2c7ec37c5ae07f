"""Graph inspection commands: `ls` (find ops) and `ni` (node info, subgraph)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from precision_shell.commands.dump_slice_args import (
    foreign_dumps,
    rank_step_arguments,
    slice_of_path,
)
from precision_shell.errors import PrecisionError
from precision_shell.explore.node_info import NodeInfo, collect_node_info
from precision_shell.explore.op_lookup import lookup_ops
from precision_shell.foreign.explore import ForeignListing, ForeignNode, list_tensors, node_info
from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import RunIndex, Workspace


@dataclass(frozen=True)
class OpListing:
    """`ls` with filters: matching ops per run, in execution order."""

    filters: dict[str, str]
    rows: list[tuple[str, OpRecord]]  # (run name, op)


@dataclass(frozen=True)
class TypeCounts:
    """`ls` without filters: op-type counts per device run (of the ops dumped in one rank
    and step when `dump_slice` says which)."""

    runs: dict[str, dict[str, int]]
    dump_slice: dict[str, str] = field(default_factory=dict)
    # per run: (tensor dump files, statistics dump files) of the rank and step shown
    dump_files: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class NodeInfoResult:
    """`ni`: one panel per match, or the possible ops when no op has that name.

    `notes` say how the name was resolved (a TF name fused into a device op, the run picked
    when several hold the op)."""

    query: str
    nodes: list[NodeInfo] = field(default_factory=list)
    candidates: list[tuple[str, OpRecord]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def error_message(self) -> str | None:
        """Several possible ops and none named so: the command failed (script exit status 1)."""
        if self.nodes or not self.candidates:
            return None
        names = list(dict.fromkeys(rec.name for _, rec in self.candidates))
        shown = ", ".join(names[:_NAMES_IN_ERROR])
        more = len(names) - _NAMES_IN_ERROR
        tail = f", ... (+{more} more; ls -n {self.query} lists them)" if more > 0 else ""
        return f"ni: no op named {self.query!r}; {len(names)} op(s) contain it: {shown}{tail}"


_NAMES_IN_ERROR = 8


def check_graph_filter(ws: Workspace, text: str | None) -> None:
    """`-g TEXT` must name (part of) a graph of the workspace: a typo is an error, not an empty
    listing that reads like "no such op"."""
    if not text:
        return
    names = list(dict.fromkeys(n for run in ws.runs for g in run.graphs for n in g.graph_names))
    if not any(text.lower() in name.lower() for name in names):
        raise PrecisionError(
            f"no graph named {text!r}; graphs: {', '.join(names) if names else '(none)'}"
        )


@command("ls")
@rank_step_arguments
@argument("-n", "--name", complete="op", help="op name substring (original TF names too)")
@argument("-t", "--type", dest="op_type", metavar="TYPE", help="op type substring (e.g. Conv2D)")
@argument(
    "-f", "--fusion-pass", dest="pass_name", metavar="PASS", help="fusion pass name substring"
)
@argument("-k", "--kernel", help="kernel name substring")
@argument("-g", "--graph", help="graph name substring")
def ls_command(
    ctx: ShellContext, args: argparse.Namespace
) -> OpListing | TypeCounts | ForeignListing:
    """ls [-n NAME] [-t TYPE] [-f PASS] [-k KERNEL] [-g GRAPH] [--rank R] [--step S]

    List device ops matching every filter; with no filter, op-type counts per device run.
    With --rank or --step, only the ops with a dump file in that rank and step.
    On MegEngine / SigmaStar dumps: every var / tensor in execution order (-n, -t filter).
    """
    foreign = foreign_dumps(ctx, "ls", args)
    if foreign is not None:
        _foreign_only("ls", args, ("pass_name", "-f"), ("kernel", "-k"), ("graph", "-g"))
        return list_tensors(foreign, args.name, args.op_type)
    ws = ctx.workspace
    check_graph_filter(ws, args.graph)
    dumped = _dumped_ops(ws.runs, args.rank, args.step)
    runs = [run for run in ws.runs if dumped is None or run.name in dumped]
    filters = {
        k: v
        for k, v in (
            ("name", args.name),
            ("type", args.op_type),
            ("pass", args.pass_name),
            ("kernel", args.kernel),
            ("graph", args.graph),
        )
        if v
    }
    rank = args.rank
    if rank is None and args.step is not None and runs:  # a step alone: the rank it read
        rank = runs[0].slice(None, args.step).rank
    slice_filters = {k: v for k, v in (("rank", rank), ("step", args.step)) if v}
    if not filters:
        counts: dict[str, dict[str, int]] = {}
        for run in runs:
            merged: dict[str, int] = {}
            for graph in run.graphs:
                if dumped is None:
                    type_counts = graph.type_counts()
                else:
                    type_counts = _type_counts(graph, dumped[run.name])
                for op_type, n in type_counts.items():
                    merged[op_type] = merged.get(op_type, 0) + n
            counts[run.name] = dict(sorted(merged.items()))
        files = {}
        for run in runs:
            dumps = run.slice(args.rank, args.step).dumps if dumped is not None else run.dumps
            stats = dumps.statistics_count()
            files[run.name] = (len(dumps) - stats, stats)
        return TypeCounts(counts, slice_filters, files)
    rows: list[tuple[str, OpRecord]] = []
    for run in runs:
        for graph in run.graphs:
            found = graph.search(
                name=args.name,
                op_type=args.op_type,
                pass_name=args.pass_name,
                kernel=args.kernel,
                graph=args.graph,
            )
            if dumped is not None:
                found = [rec for rec in found if sanitize_dump_name(rec.name) in dumped[run.name]]
            rows.extend((run.name, rec) for rec in found)
    return OpListing({**filters, **slice_filters}, rows)


def _foreign_only(command: str, args: argparse.Namespace, *flags: tuple[str, str]) -> None:
    """Options of Ascend workspaces given on MegEngine / SigmaStar dumps: a usage error."""
    given = [flag for name, flag in flags if getattr(args, name, None)]
    if given:
        raise UsageError(f"{command}: {', '.join(given)}: not for MegEngine / SigmaStar dumps")


def _dumped_ops(
    runs: list[RunIndex], rank: str | None, step: str | None
) -> dict[str, set[str]] | None:
    """Per run, the (sanitized) names of the ops dumped in that rank and step; None when
    neither is given. A run without that rank or step is left out; when no run has it,
    the first run's error says which ranks and steps there are."""
    if rank is None and step is None:
        return None
    dumped: dict[str, set[str]] = {}
    first_error: PrecisionError | None = None
    for run in runs:
        try:
            dumped[run.name] = set(run.slice(rank, step).dumps.op_names())
        except PrecisionError as exc:
            first_error = first_error or exc
    if not dumped and first_error is not None:
        raise first_error
    return dumped


def _type_counts(graph: GraphIndex, dumped: set[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rec in graph.records():
        if sanitize_dump_name(rec.name) in dumped:
            counts[rec.type] = counts.get(rec.type, 0) + 1
    return counts


@command("ni")
@rank_step_arguments
@argument(
    "name",
    nargs="?",
    complete="op",
    help="op name (exact), an original TF name fused into an op, or a dump file (path or name);"
    " else the possible ops are listed",
)
@argument(
    "-n",
    "--name",
    dest="name_flag",
    metavar="NAME",
    complete="op",
    help="op name (same as the positional)",
)
@argument("-g", "--graph", help="only ops of graphs whose name contains this")
@argument(
    "-r", "--run", help="device run (debug_N), or 'all'; default: the first run holding the op"
)
@argument(
    "-a",
    "--attrs",
    nargs="?",
    const=True,
    default=False,
    metavar="ATTR",
    help="also show every attribute (-a ATTR: those whose name contains ATTR)",
)
@argument("-s", "--subgraph", type=int, metavar="DEPTH", help="write a subgraph of this depth")
def ni_command(ctx: ShellContext, args: argparse.Namespace) -> NodeInfoResult | ForeignNode:
    """ni [-n] NAME [-g GRAPH] [-r RUN] [-a [ATTR]] [-s DEPTH] [--rank R] [--step S]

    Node info: type, fusion pass, original ops, inputs/outputs with peers, dump and benchmark tensors.
    On MegEngine / SigmaStar dumps: a var (name or id) or op: owner op, inputs with their
    producers, consumers, dtype, shape, the runs holding it.
    """
    if args.name_flag and args.name and args.name_flag != args.name:
        raise UsageError(
            f"ni: two op names, {args.name!r} and -n {args.name_flag!r}: give one "
            "(-a ATTR names an attribute)"
        )
    name = args.name_flag or args.name
    if isinstance(args.attrs, str) and not name:  # `ni -a conv1/Conv2D`: -a, then the name
        name, args.attrs = args.attrs, True
    if not name:
        raise UsageError("ni: give an op name, e.g. ni -n conv1/Conv2D")
    foreign = foreign_dumps(ctx, "ni", args)
    if foreign is not None:
        _foreign_only("ni", args, ("graph", "-g"), ("attrs", "-a"), ("subgraph", "-s"))
        return node_info(foreign, name, None if args.run in (None, "all") else args.run)
    if args.subgraph is not None and not 0 <= args.subgraph <= 20:
        raise UsageError("ni: -s DEPTH must be between 0 and 20")
    ws = ctx.workspace
    check_graph_filter(ws, args.graph)
    slice_of_path(ctx, "ni", name, args)
    result = NodeInfoResult(query=name)
    runs = ws.runs if args.run in (None, "all") else [ws.run(args.run)]
    lookup = lookup_ops(runs, name, ws.root, args.graph)
    found = lookup.matches
    if lookup.note is not None:
        result.notes.append(lookup.note)
    if found:
        chosen = list(found)
        if args.run is None and len(chosen) > 1:
            # Every run holds the same model: one panel, and the way to the others.
            others = ", ".join(chosen[1:])
            result.notes.append(f"{name} (in {chosen[0]}; also in {others}: use -r {chosen[1]})")
            chosen = chosen[:1]
        for run in runs:
            for graph, rec in found.get(run.name, []) if run.name in chosen else []:
                result.nodes.append(
                    collect_node_info(
                        ctx, run, graph, rec, args.attrs, args.subgraph, args.rank, args.step
                    )
                )
        return result
    for run in runs:
        for graph in run.graphs:
            result.candidates.extend(
                (run.name, r) for r in graph.search(name=name, graph=args.graph)
            )
    if not result.candidates:
        raise PrecisionError(f"ni: no op named or containing {name!r}; try ls -n PART")
    return result
