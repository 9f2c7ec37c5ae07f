"""Consistency checks across the dump dirs of one run: every (rank, graph, step) dir should
belong to a parsed graph and hold the ops its siblings hold.

Each finding is one warning naming the dir; nothing is dropped from the index, since a
partial dump is still worth comparing op by op.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.layout import GraphDumpDir

_NAMES_SHOWN = 3


def number_order(name: str) -> tuple[int, int, str]:
    """Rank and step dir names in numeric order (`2` before `10`), odd names last."""
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def _some(names: set[str]) -> str:
    shown = sorted(names)[:_NAMES_SHOWN]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", ... (+{more})" if more > 0 else "")


def _unknown_graph_dirs(dirs: Sequence[GraphDumpDir], graphs: Sequence[GraphIndex]) -> list[str]:
    """`<rank>/<graph_name>/` dirs that name no parsed graph (none parsed: warned already)."""
    if not graphs:
        return []
    known = {name for g in graphs for name in g.graph_names}
    warned: dict[Path, str] = {}
    for d in dirs:
        graph_dir = d.path.parent.parent
        if d.graph_name not in known and graph_dir not in warned:
            warned[graph_dir] = (
                f"{graph_dir}: no parsed graph is named {d.graph_name!r} "
                f"(graphs: {', '.join(sorted(known))}); its dumps are matched by op name only"
            )
    return list(warned.values())


def _partial_steps(ops_by_dir: dict[GraphDumpDir, set[str]]) -> list[str]:
    """A step dir missing ops that other steps of the same rank and graph hold."""
    groups: dict[tuple[str, str, str], list[GraphDumpDir]] = {}
    for d in ops_by_dir:
        groups.setdefault((d.device_id, d.graph_name, d.model_id), []).append(d)
    found: list[str] = []
    for dirs in groups.values():
        if len(dirs) < 2:
            continue
        union = set().union(*(ops_by_dir[d] for d in dirs))
        for d in sorted(dirs, key=lambda d: number_order(d.step)):
            missing = union - ops_by_dir[d]
            if missing:
                found.append(
                    f"{d.path}: step {d.step} has dump files of {len(union) - len(missing)} of "
                    f"the {len(union)} ops its other steps dump; missing {_some(missing)}"
                )
    return found


def _odd_ranks(ops_by_dir: dict[GraphDumpDir, set[str]]) -> list[str]:
    """A rank whose ops (over all its steps) differ from those of most ranks, per graph."""
    by_graph: dict[str, dict[str, set[str]]] = {}
    rank_dir: dict[str, Path] = {}
    for d, ops in ops_by_dir.items():
        by_graph.setdefault(d.graph_name, {}).setdefault(d.device_id, set()).update(ops)
        rank_dir[d.device_id] = d.path.parents[2]
    found: list[str] = []
    for graph_name, by_rank in by_graph.items():
        if len(by_rank) < 2:
            continue
        ranks = sorted(by_rank, key=number_order)
        # the op set most ranks share; on a tie, the lowest rank's
        counts = Counter(frozenset(by_rank[r]) for r in ranks)
        reference = max(ranks, key=lambda r: (counts[frozenset(by_rank[r])], -ranks.index(r)))
        expected = by_rank[reference]
        for rank in ranks:
            ops = by_rank[rank]
            if ops == expected:
                continue
            missing, extra = expected - ops, ops - expected
            parts = []
            if missing:
                parts.append(f"lacks {len(missing)} ({_some(missing)})")
            if extra:
                parts.append(f"has {len(extra)} more ({_some(extra)})")
            found.append(
                f"{rank_dir[rank]}: rank {rank} dumps other ops of graph {graph_name} than "
                f"rank {reference}: {'; '.join(parts)}"
            )
    return found


def dump_dir_warnings(
    dirs: Sequence[tuple[GraphDumpDir, dict]], graphs: Sequence[GraphIndex]
) -> list[str]:
    """Warnings about a run's dump dirs (each with its scanned state), each naming the dir."""
    ops_by_dir = {d: set(state["by_op"]) for d, state in dirs}
    return (
        _unknown_graph_dirs([d for d, _ in dirs], graphs)
        + _partial_steps(ops_by_dir)
        + _odd_ranks(ops_by_dir)
    )
