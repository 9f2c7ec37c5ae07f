"""Finding an op by what a user types: its exact name, an original (TF) name GE fused into
it, or the name or path of one of its device dump files. `ni` and `replay` both look up this
way, in this order, across the runs given."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from precision_shell.explore.user_paths import find_user_file
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import RunIndex

Matches = dict[str, list[tuple[GraphIndex, OpRecord]]]  # run name -> hits, runs in order


def in_graph(rec: OpRecord, graph_filter: str | None) -> bool:
    # The op's own (sub)graph, case-insensitive, as `ls -g` filters.
    return not graph_filter or graph_filter.lower() in rec.graph.lower()


def exact_matches(runs: list[RunIndex], name: str, graph_filter: str | None) -> Matches:
    found: Matches = {}
    for run in runs:
        for graph in run.graphs:
            rec = graph.get(name)
            if rec is not None and in_graph(rec, graph_filter):
                found.setdefault(run.name, []).append((graph, rec))
    return found


def dump_file_matches(
    runs: list[RunIndex], text: str, root: Path, graph_filter: str | None
) -> Matches:
    """The op that wrote a device dump file: `text` is its path (from the cwd or the
    workspace) or its bare file name."""
    found: Matches = {}
    path = find_user_file(text, root)
    for run in runs:
        if path is not None:
            found_at = run.file_at(str(path))  # the same name is in every rank's dir
            ref = found_at[1] if found_at is not None else None
        else:
            ref = run.file_by_name(text)
        if ref is None:
            continue
        for graph in run.graphs:
            rec = graph.by_dump_name(ref.op_name)
            if rec is not None and in_graph(rec, graph_filter):
                found[run.name] = [(graph, rec)]
                break
    return found


def fused_matches(runs: list[RunIndex], name: str, graph_filter: str | None) -> Matches:
    """The device ops holding `name` among their original (TF) names."""
    found: Matches = {}
    for run in runs:
        for graph in run.graphs:
            for rec in graph.by_original_name(name):
                if in_graph(rec, graph_filter):
                    found.setdefault(run.name, []).append((graph, rec))
    return found


@dataclass(frozen=True)
class OpLookup:
    """The ops found per run (runs in order), and how the name led to them when it is not
    an op name ("X is fused into A", "X is a dump file of A")."""

    matches: Matches
    note: str | None = None


def lookup_ops(
    runs: list[RunIndex], name: str, root: Path, graph_filter: str | None = None
) -> OpLookup:
    """The ops `name` means: exact op names first, then fused original names, then dump files."""
    found = exact_matches(runs, name, graph_filter)
    if found:
        return OpLookup(found)
    found = fused_matches(runs, name, graph_filter)
    holders = list(dict.fromkeys(rec.name for hits in found.values() for _, rec in hits))
    if holders:
        return OpLookup(found, f"{name} is fused into {', '.join(holders)}")
    found = dump_file_matches(runs, name, root, graph_filter)
    for hits in found.values():
        return OpLookup(found, f"{name} is a dump file of {hits[0][1].name}")
    return OpLookup({})
