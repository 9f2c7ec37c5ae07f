"""A device run's index: its parsed graphs and its dump files, one slice per (rank, step)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from precision_shell.errors import PrecisionError
from precision_shell.listing_text import some_of
from precision_shell.workspace.dump_checks import number_order
from precision_shell.workspace.dump_index import DumpFileRef, DumpIndex
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.layout import DeviceRun


@dataclass(frozen=True)
class DumpSlice:
    """The dump files of one (rank, step) of a run: `<device_id>/<graph>/<model>/<step>/`,
    every graph of that rank and step together."""

    rank: str
    step: str
    graph_names: tuple[str, ...]
    dumps: DumpIndex

    @property
    def label(self) -> str:
        return f"rank {self.rank} step {self.step}"


@dataclass
class RunIndex:
    """One device run: its parsed graphs and the dump files of its newest dump dir, one
    slice per (rank, step). `dumps` is the default slice (lowest rank, first step);
    `all_dumps` every file of the run (to find a file by its name)."""

    run: DeviceRun
    graphs: list[GraphIndex]
    dumps: DumpIndex
    slices: list[DumpSlice] = field(default_factory=list)
    all_dumps: DumpIndex | None = None
    _slice_of_dir: dict[str, DumpSlice] | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.run.name

    def ranks(self) -> list[str]:
        return sorted({s.rank for s in self.slices}, key=number_order)

    def steps(self, rank: str | None = None) -> list[str]:
        """The steps of one rank (of every rank when None), in numeric order."""
        found = {s.step for s in self.slices if rank is None or s.rank == rank}
        return sorted(found, key=number_order)

    def slice(self, rank: str | None = None, step: str | None = None) -> DumpSlice:
        """The (rank, step) slice; the lowest rank and its first step by default, the lowest
        rank that dumped `step` when only it is given. A rank or step the run does not have is
        a PrecisionError listing the ones it has."""
        if not self.slices:
            raise PrecisionError(f"{self.run.root}: no dump dir in this run")
        ranks = self.ranks()
        if rank is None and step is not None:
            # a step given alone: the lowest rank that dumped it
            having = [r for r in ranks if str(step) in self.steps(r)]
            if not having:
                raise PrecisionError(
                    f"{self.name}: no rank dumped step {step}; steps: {', '.join(self.steps())}"
                )
            rank = having[0]
        rank = ranks[0] if rank is None else str(rank)
        if rank not in ranks:
            raise PrecisionError(f"{self.name}: no rank {rank}; ranks: {', '.join(ranks)}")
        steps = self.steps(rank)
        step = steps[0] if step is None else str(step)
        if step not in steps:
            raise PrecisionError(
                f"{self.name}: rank {rank} has no step {step}; steps: {', '.join(steps)}"
            )
        return next(s for s in self.slices if s.rank == rank and s.step == step)

    def file_by_name(self, file_name: str) -> DumpFileRef | None:
        """A dump file of any rank and step, by its file name."""
        return (self.all_dumps or self.dumps).by_file_name(file_name)

    def file_in_slice(
        self, file_name: str, rank: str | None = None, step: str | None = None
    ) -> DumpFileRef | None:
        """A dump file by its name in one (rank, step) slice (the default one when not given);
        None when no slice of the run has that name. Every card dumps the same ops under the
        same file names, so a name only in other slices is a PrecisionError naming them."""
        if self.file_by_name(file_name) is None:
            return None
        wanted = self.slice(rank, step)
        ref = wanted.dumps.by_file_name(file_name)
        if ref is not None:
            return ref
        holders = [s for s in self.slices if s.dumps.has_file_name(file_name)]
        if not holders:
            return None
        listed = some_of([s.label for s in holders], 4)
        default = (
            " (the default: the lowest rank's first step)" if rank is None and step is None else ""
        )
        raise PrecisionError(
            f"{file_name}: not in {self.name} {wanted.label}{default}; it is in {listed}: "
            f"use --rank {holders[0].rank} --step {holders[0].step}"
        )

    def file_at(self, path: str) -> tuple[DumpSlice, DumpFileRef] | None:
        """The slice and file of a dump file's path; None when it is no file of this run."""
        name = os.path.basename(path)
        if self.file_by_name(name) is None:
            return None
        if self._slice_of_dir is None:  # built once: `dc DIR` asks for every file in a dir
            self._slice_of_dir = {os.path.realpath(d): s for s in self.slices for d in s.dumps.dirs}
        found = self._slice_of_dir.get(os.path.realpath(os.path.dirname(os.path.abspath(path))))
        ref = found.dumps.by_file_name(name) if found is not None else None
        return (found, ref) if found is not None and ref is not None else None

    def dump_graph(self) -> GraphIndex | None:
        """The graph the dump dir belongs to (by graph name), else the newest Build graph."""
        dumped = {d.graph_name for d in self.run.graph_dump_dirs}
        for graph in reversed(self.graphs):
            if dumped.intersection(graph.graph_names):
                return graph
        return self.graphs[-1] if self.graphs else None

    def graph_of_dump(self, graph_names: Iterable[str]) -> GraphIndex | None:
        """The graph a (rank, step) dump belongs to, by its graph dir names; else the
        run's `dump_graph()`."""
        for name in graph_names:
            graph = self.graph_named(name) if name else None
            if graph is not None:
                return graph
        return self.dump_graph()

    def graph_named(self, name: str) -> GraphIndex | None:
        for graph in self.graphs:
            if name in graph.graph_names:
                return graph
        return None

    def find(self, op_name: str) -> tuple[GraphIndex, OpRecord] | None:
        preferred = self.dump_graph()
        ordered = [preferred] + [g for g in self.graphs if g is not preferred] if preferred else []
        for graph in ordered:
            rec = graph.get(op_name)
            if rec is not None:
                return graph, rec
        return None

    def op_count(self) -> int:
        return sum(len(g) for g in self.graphs)
