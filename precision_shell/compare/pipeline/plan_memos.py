"""The graph-and-benchmark part of a plan (`GraphPlanMemo`), kept in the index cache between
commands and shells.

Most of a plan's time goes to working out, op by op, which benchmark file stands for each
tensor; that depends on the graph and the benchmark dir only, not on the dump. `PlanMemos`
gives the plans of one command a memo per graph, loaded from the index cache, fingerprinted
by the graph's and the benchmark dir's index pieces: a changed graph file, or a benchmark file
added, removed or renamed, makes it start over. `save()` stores those that gained rows. On
the large demo's distinct twin a `vc` plans in ~11 ms instead of ~40 (the first `vc` ever
still takes the 40). The memos are let go with the command rather than kept with the index for
the session: in memory a mapping row costs ~560 bytes (~140 stored), ~250 MB for a graph of
100k ops (~440k rows, estimated from the twin's).

Only the workspace's own benchmark dirs are kept (tf/dump/ and its rank and step dirs; a dir
given with -rt is scanned anew by each plan). A piece whose fingerprint is too recent to trust (`Piece.racy`) is neither read nor
written: the memo then serves this command only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precision_shell.compare.pipeline.plan import GraphPlanMemo, MappingRow
from precision_shell.formats.benchmark import BenchmarkIndex
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import Workspace

KIND = "planmemo"
# Bump when what a plan derives from the graph and the benchmarks changes (a matching rule,
# MappingRow's fields), so memos stored before are not used.
MEMO_VERSION = 1

_Rows = dict[str, tuple[tuple[MappingRow, ...], tuple[MappingRow, ...]]]


class _Kept:
    """A memo, the fingerprint it is stored under (None: not stored) and its rows then."""

    def __init__(self, memo: GraphPlanMemo, fingerprint: Any | None, stored: int) -> None:
        self.memo = memo
        self.fingerprint = fingerprint
        self.stored = stored


class PlanMemos:
    """The memos of one command's plans (ranks and steps of one graph share its memo)."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        # by (id(graph), id(benchmarks)); each memo holds both
        self._kept: dict[tuple[int, int], _Kept] = {}

    def memo_for(self, graph: GraphIndex, benchmarks: BenchmarkIndex | None) -> GraphPlanMemo:
        """The memo of plans of `graph` against `benchmarks`: this command's, else the stored
        one, else a new one. Only the workspace's own benchmark dirs (tf/dump/ and its rank
        and step dirs) are kept; any other gets a new memo each time."""
        ws = self._ws
        if benchmarks is None or not _own(ws, benchmarks):
            return GraphPlanMemo().serving(graph, benchmarks)
        found = self._kept.get((id(graph), id(benchmarks)))
        if found is not None and found.memo.serves(graph, benchmarks):
            return found.memo
        memo = GraphPlanMemo().serving(graph, benchmarks)
        fingerprint = _fingerprint(ws, graph, benchmarks)
        stored = 0
        if fingerprint is not None and ws.cache is not None:
            source = _source(ws, graph, benchmarks)
            rows = _valid_rows(ws.cache.load(KIND, source, fingerprint), graph)
            if rows is not None:
                memo.rows = rows
                stored = len(rows)
        self._kept[(id(graph), id(benchmarks))] = _Kept(memo, fingerprint, stored)
        return memo

    def save(self) -> None:
        """Store the memos that gained rows since they were loaded or stored."""
        cache = self._ws.cache
        if cache is None:
            return
        for found in self._kept.values():
            graph, benchmarks = found.memo.graph, found.memo.benchmarks
            if found.fingerprint is None or graph is None or len(found.memo.rows) <= found.stored:
                continue
            state = dict(found.memo.rows)
            cache.store(KIND, _source(self._ws, graph, benchmarks), found.fingerprint, state)
            found.stored = len(found.memo.rows)


def _own(ws: Workspace, benchmarks: BenchmarkIndex) -> bool:
    """True for the index of tf/dump/ or of one of its rank and step dirs."""
    return benchmarks is ws.benchmark or any(
        benchmarks is scoped for scoped in ws.scoped_benchmarks.values()
    )


def _source(ws: Workspace, graph: GraphIndex, benchmarks: BenchmarkIndex | None) -> Path:
    """What the cache keys a memo by: the graph file, and the benchmark dir when it is a rank
    or step dir (tf/dump/'s memo keeps the key it always had)."""
    if benchmarks is None or benchmarks is ws.benchmark:
        return Path(graph.source)
    return Path(f"{graph.source}|{benchmarks.directory}")


def _fingerprint(ws: Workspace, graph: GraphIndex, benchmarks: BenchmarkIndex) -> Any | None:
    """What the memo depends on: the graph piece's and the benchmark piece's fingerprints;
    None when either is unknown or too recent to trust."""
    graph_piece = ws.pieces.get(("graph", graph.source))
    bench_piece = ws.pieces.get(("benchmark", benchmarks.directory))
    if graph_piece is None or bench_piece is None or graph_piece.racy or bench_piece.racy:
        return None
    return (MEMO_VERSION, graph_piece.fingerprint, bench_piece.fingerprint)


def _valid_rows(state: object, graph: GraphIndex) -> _Rows | None:
    """The stored rows when they have the shape we write, of ops this graph has."""
    if not isinstance(state, dict):
        return None
    for name, pair in state.items():
        if not (isinstance(name, str) and name in graph and isinstance(pair, tuple)):
            return None
        if len(pair) != 2 or not all(
            isinstance(side, tuple) and all(isinstance(row, MappingRow) for row in side)
            for side in pair
        ):
            return None
    return state
