"""The workspace: layout + in-memory index of ops, dump files, benchmark tensors and overflows.

`Workspace.open(path)` discovers the layout, then builds (or loads from the on-disk cache)
one piece per graph file, per dump dir and for the benchmark dir. Bad files never stop the
build: each becomes a one-line entry of `warnings`. Tensor data is read lazily.
`is_stale()` tells by a few stats whether files changed since; `open(path, previous=ws)` then
re-reads only the pieces that changed.
"""

from __future__ import annotations

import gc
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from precision_shell.compare.pipeline.matcher import input_origin, record_output_origin
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import (
    BENCHMARK_INDEX_VERSION,
    BenchmarkFile,
    BenchmarkIndex,
    load_benchmark,
    scan_benchmark_dir,
)
from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.formats.fusion_result import FusionPass, read_fusion_result
from precision_shell.formats.ge.graph import load_ge_graph
from precision_shell.formats.npu_dump import DumpHeader, read_dump_header, read_tensor
from precision_shell.workspace.benchmark_dirs import Scope
from precision_shell.workspace.dump_checks import dump_dir_warnings, number_order
from precision_shell.workspace.dump_index import (
    DIR_RECORD_VERSION,
    DumpFileRef,
    DumpIndex,
    scan_dump_dir,
)
from precision_shell.workspace.graph_index import RECORD_VERSION, GraphIndex, OpRecord
from precision_shell.workspace.index_cache import (
    FileStamp,
    IndexCache,
    dir_fingerprint,
    file_fingerprint,
)
from precision_shell.workspace.layout import (
    DeviceRun,
    DirStamp,
    GraphDumpDir,
    WorkspaceLayout,
    discover,
    leaf_dirs,
)
from precision_shell.workspace.output_files import ensure_dir
from precision_shell.workspace.pieces import Freshness, Piece, PieceStore, failure_text
from precision_shell.workspace.run_index import DumpSlice, RunIndex
from precision_shell.workspace.tensor_stats import StatsCache, TensorStats

_HEADER_CACHE_SIZE = 4096


@dataclass
class WorkspaceSummary:
    """Counts shown in the banner and by `scripts/demo`."""

    root: str
    runs: list[tuple[str, int, int, int]]  # (run, graphs, ops, dump files)
    benchmark_tensors: int
    overflow_files: int
    fusion_passes: int
    warnings: int
    # run -> rank -> its steps, numeric order (runs with no dump dir left out)
    rank_steps: dict[str, dict[str, list[str]]] = field(default_factory=dict)


@dataclass
class Workspace:
    layout: WorkspaceLayout
    runs: list[RunIndex]
    benchmark: BenchmarkIndex | None
    overflow_dumps: DumpIndex | None
    fusion: list[FusionPass]
    warnings: list[str] = field(default_factory=list)
    cache: IndexCache | None = None
    pieces: dict[tuple[str, str], Piece] = field(default_factory=dict, repr=False)
    freshness: Freshness | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.stats = StatsCache()
        # the benchmarks of one rank or step (tf/dump/rank<R>/, step<S>/, rank<R>/step<S>/)
        self.scoped_benchmarks: dict[Scope, BenchmarkIndex] = {}
        # path -> (fingerprint, header): a file rewritten in place is read again
        self._headers: OrderedDict[str, tuple[object, DumpHeader]] = OrderedDict()

    # -- building -----------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        use_cache: bool = True,
        previous: Workspace | None = None,
        reread: bool = False,
    ) -> Workspace:
        """Index the workspace at `path`.

        `previous`: an index of the same workspace whose unchanged pieces are taken as they
        are. `reread`: build every piece from the files (the cache is written, not read).
        """
        # Building or unpickling an index makes millions of objects and no garbage cycles;
        # the collector would only rescan them again and again.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            ws = cls._open(path, use_cache, None if reread else previous, reread)
        finally:
            if was_enabled:
                gc.enable()
        if previous is not None:
            ws.stats = previous.stats  # keyed by file fingerprints: still valid
        return ws

    @classmethod
    def _open(
        cls, path: str | Path, use_cache: bool, previous: Workspace | None, reread: bool
    ) -> Workspace:
        started_ns = time.time_ns()
        layout = discover(path)
        warnings = list(layout.warnings)
        cache = IndexCache(layout.temp_dir / "index_cache", enabled=use_cache, read=not reread)
        reuse = previous.pieces if previous is not None and previous.root == layout.root else None
        pieces = PieceStore(cache, reuse)
        runs = [_index_run(run, pieces, warnings) for run in layout.runs]
        benchmark = None
        if layout.benchmark_dir is not None:
            benchmark = _benchmark_piece(pieces, layout.benchmark_dir, warnings)
        scoped = {}
        for scope, directory in layout.benchmark_scopes.dirs.items():
            found = _benchmark_piece(pieces, directory, warnings)
            if found is not None:
                scoped[scope] = found
        watched: list[DirStamp] = list(layout.watched_dirs)
        overflow = None
        if layout.overflow_dir is not None:
            states = [
                _dump_dir_piece(pieces, d, warnings)
                for d in leaf_dirs(layout.overflow_dir, warnings, watched)
            ]
            overflow = DumpIndex([s for s in states if s is not None])
            warnings.extend(overflow.warnings)
        fusion: list[FusionPass] = []
        if layout.fusion_json is not None:
            fjson = layout.fusion_json
            fusion = (
                pieces.get(
                    "fusion",
                    fjson,
                    lambda: file_fingerprint(fjson),
                    lambda: read_fusion_result(fjson),
                    warnings,
                    cached=False,  # small, read in milliseconds
                )
                or []
            )
        freshness = Freshness.of(watched, pieces.pieces, started_ns)
        ws = cls(
            layout, runs, benchmark, overflow, fusion, warnings, cache, pieces.pieces, freshness
        )
        ws.scoped_benchmarks = scoped
        return ws

    def is_stale(self) -> bool:
        """True when a file or dir this index was built from changed (a few stats, no reads)."""
        return self.freshness is not None and self.freshness.changed()

    # -- queries ------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.layout.root

    def output_dir(self, *parts: str) -> Path:
        """A dir under precision_data/temp/ (created): the only place the tool writes.

        A link anywhere from temp/ down is refused (see output_files)."""
        return ensure_dir(self.layout.root, self.layout.temp_dir.name, *parts)

    def run(self, name: str | None = None) -> RunIndex:
        """A run by name; the first run (debug_0) by default."""
        if not self.runs:
            raise PrecisionError(f"{self.root}: no device run (npu/debug_N/) in this workspace")
        if name is None:
            return self.runs[0]
        for run in self.runs:
            if run.name == name:
                return run
        names = ", ".join(r.name for r in self.runs)
        raise PrecisionError(f"no device run named {name!r}; runs: {names}")

    def summary(self) -> WorkspaceSummary:
        runs = [
            (r.name, len(r.graphs), r.op_count(), len(r.all_dumps or r.dumps)) for r in self.runs
        ]
        return WorkspaceSummary(
            root=str(self.root),
            runs=runs,
            benchmark_tensors=sum(len(b.newest) for b in self.benchmark_indexes()),
            overflow_files=len(self.overflow_files()),
            fusion_passes=len(self.fusion),
            warnings=len(self.warnings),
            rank_steps={
                r.name: {rank: r.steps(rank) for rank in r.ranks()} for r in self.runs if r.slices
            },
        )

    def overflow_files(self) -> list[DumpFileRef]:
        if self.overflow_dumps is None:
            return []
        return [f for f in self.overflow_dumps.files if f.op_type == "Opdebug"]

    def dump_files(
        self,
        run: RunIndex,
        op_name: str,
        rank: str | None = None,
        step: str | None = None,
        statistics: bool = False,
    ) -> list[DumpFileRef]:
        """An op's dump files in one (rank, step) slice (the default one when not given):
        tensor dumps, or with `statistics` its statistics dumps (`....csv`)."""
        dumps = run.dumps if rank is None and step is None else run.slice(rank, step).dumps
        name = sanitize_dump_name(op_name)
        return dumps.stats_for_op(name) if statistics else dumps.for_op(name)

    def dump_files_everywhere(
        self, run: RunIndex, op_name: str
    ) -> list[tuple[DumpSlice, list[DumpFileRef]]]:
        """An op's dump files in every (rank, step) slice that has one."""
        name = sanitize_dump_name(op_name)
        found = [(s, s.dumps.for_op(name)) for s in run.slices]
        return [(s, refs) for s, refs in found if refs]

    def benchmarks_by_slice(self) -> bool:
        """True when tf/dump/ has rank or step dirs (holding benchmark tensors, or blocked):
        each (rank, step) dump dir is then compared with its own (`benchmark_for`)."""
        return any(self.scoped_benchmarks.values()) or bool(self.blocked_scopes())

    def blocked_scopes(self) -> dict[Scope, str]:
        """The rank and step dirs that are there but cannot serve as a benchmark, with why
        (`step1/ holds no benchmark tensor`, relative to tf/dump/): not a dir, a link above
        tf/dump/, or no benchmark tensor (and no rank or step dir) inside. Their (rank, step)s have no benchmark: tf/dump/'s tensors are another step's
        or rank's."""
        scopes = self.layout.benchmark_scopes
        blocked = dict(scopes.blocked)
        top = self.layout.benchmark_dir
        for scope, directory in scopes.dirs.items():
            if not self.scoped_benchmarks.get(scope) and not scopes.holds_scopes(scope):
                name = directory.relative_to(top) if top is not None else directory.name
                blocked[scope] = f"{name}/ holds no benchmark tensor"
        return blocked

    def benchmark_scope(self, rank: str | None, step: str | None) -> Scope | None:
        """The scope of the benchmark dir a (rank, step) dump dir is compared with: the most
        specific rank/step dir there is (`rank0/` holding only step dirs is none); None:
        tf/dump/ itself. A blocked one (`blocked_scopes`) is its scope too: it has none."""
        blocked = self.blocked_scopes()
        for scope in self.layout.benchmark_scopes.order(rank, step):
            if self.scoped_benchmarks.get(scope) or scope in blocked:
                return scope
        return None

    def no_benchmark_why(self, rank: str | None, step: str | None) -> str | None:
        """Why a (rank, step) has no benchmark when its rank or step dir is blocked; None
        when it is not."""
        scope = self.benchmark_scope(rank, step)
        return self.blocked_scopes().get(scope) if scope is not None else None

    def benchmark_for(
        self, rank: str | None = None, step: str | None = None
    ) -> BenchmarkIndex | None:
        """The benchmark tensors a (rank, step) dump dir is compared with (see
        `benchmark_scope`). A rank or step not given is the dump dir's the commands read then
        (`RunIndex.slice`: the lowest rank, a rank's first step): `--rank 1` alone is rank 1's
        first step, whose benchmark may be `step1/`, not tf/dump/."""
        partial = rank is None or step is None
        if partial and self.runs and self.runs[0].slices and self.benchmarks_by_slice():
            try:
                here = self.runs[0].slice(rank, step)
            except PrecisionError:
                pass  # no such rank or step here: looked up as given
            else:
                rank, step = here.rank, here.step
        scope = self.benchmark_scope(rank, step)
        if scope is None:
            return self.benchmark
        return self.scoped_benchmarks.get(scope) or None  # blocked: none

    def benchmark_indexes(
        self, rank: str | None = None, step: str | None = None
    ) -> list[BenchmarkIndex]:
        """Every benchmark dir's index, the (rank, step)'s own first (to find a file by
        name), then tf/dump/'s, then the other rank and step dirs'."""
        found = [self.benchmark_for(rank, step), self.benchmark, *self.scoped_benchmarks.values()]
        unique: list[BenchmarkIndex] = []
        for index in found:
            if index and all(index is not seen for seen in unique):
                unique.append(index)
        return unique

    def benchmark_name(self, benchmark: BenchmarkFile | str) -> str:
        """A benchmark file (or its path) as commands show it: its name, after its rank or
        step dir's (`step1/x.0.1.npy`) when it is in one."""
        path = benchmark if isinstance(benchmark, str) else benchmark.path
        name = os.path.basename(path)
        parent = Path(path).parent
        top = self.layout.benchmark_dir
        if top is None or parent == top:
            return name
        try:
            return str(parent.relative_to(top) / name)
        except ValueError:
            return name

    def benchmark_file(
        self, origin_name: str, index: int, rank: str | None = None, step: str | None = None
    ) -> BenchmarkFile | None:
        benchmarks = self.benchmark_for(rank, step)
        if benchmarks is None:
            return None
        return benchmarks.lookup(origin_name, index)

    def output_benchmark(
        self, record: OpRecord, k: int, rank: str | None = None, step: str | None = None
    ) -> BenchmarkFile | None:
        origin = record_output_origin(record, k)
        return self.benchmark_file(*origin, rank, step) if origin else None

    def input_benchmark(
        self,
        graph: GraphIndex,
        record: OpRecord,
        k: int,
        rank: str | None = None,
        step: str | None = None,
    ) -> BenchmarkFile | None:
        origin = input_origin(graph, record.name, k)
        return self.benchmark_file(*origin, rank, step) if origin else None

    # -- tensors ------------------------------------------------------------------------
    def header(self, ref: DumpFileRef | str) -> DumpHeader:
        path = ref if isinstance(ref, str) else ref.path
        fingerprint = file_fingerprint(Path(path))
        hit = self._headers.get(path)
        if hit is not None and hit[0] == fingerprint:
            self._headers.move_to_end(path)
            return hit[1]
        header = read_dump_header(path)
        self._headers[path] = (fingerprint, header)
        self._headers.move_to_end(path)
        if len(self._headers) > _HEADER_CACHE_SIZE:
            self._headers.popitem(last=False)
        return header

    def tensor(self, ref: DumpFileRef | str, kind: str, index: int) -> np.ndarray:
        return read_tensor(self.header(ref), kind, index)

    def tensor_stats(self, ref: DumpFileRef | str, kind: str, index: int) -> TensorStats:
        path = ref if isinstance(ref, str) else ref.path
        key = (path, kind, index, file_fingerprint(Path(path)))
        return self.stats.get(key, lambda: self.tensor(path, kind, index))

    def benchmark_stats(self, benchmark: BenchmarkFile) -> TensorStats:
        key = (benchmark.path, "benchmark", 0, file_fingerprint(Path(benchmark.path)))
        return self.stats.get(key, lambda: load_benchmark(benchmark.path))


def _graph_state(path: Path) -> dict | str:
    """A graph file's index state, or the one line saying why it cannot be read."""
    try:
        model = load_ge_graph(path)
        return GraphIndex.from_model(model, str(path)).to_state()
    except MemoryError:
        raise  # not the file's fault: not cached, the piece store makes it a warning
    except Exception as exc:  # cached too: an unchanged bad file is not re-parsed
        return failure_text(path, exc)


def _graph_fingerprint(path: Path) -> tuple[int, FileStamp | None]:
    return (RECORD_VERSION, file_fingerprint(path))


def _graph_or_failure(state: dict | str) -> GraphIndex | str:
    return state if isinstance(state, str) else GraphIndex.from_state(state)


def _dump_dir_piece(pieces: PieceStore, directory: Path, warnings: list[str]) -> dict | None:
    return pieces.get(
        "dumpdir",
        directory,
        lambda: (DIR_RECORD_VERSION, dir_fingerprint(directory, "mapping.csv")),
        lambda: scan_dump_dir(directory),
        warnings,
    )


def _index_run(run: DeviceRun, pieces: PieceStore, warnings: list[str]) -> RunIndex:
    graphs: list[GraphIndex] = []
    for gf in run.build_graphs:
        graph = pieces.get(
            "graph",
            gf.path,
            partial(_graph_fingerprint, gf.path),
            partial(_graph_state, gf.path),
            warnings,
            from_state=_graph_or_failure,
        )
        if isinstance(graph, str):
            warnings.append(graph)
        elif graph is not None:
            graphs.append(graph)
    by_slice: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    scanned: list[tuple[GraphDumpDir, dict]] = []
    for d in run.graph_dump_dirs:
        state = _dump_dir_piece(pieces, d.path, warnings)
        if state is not None:
            by_slice.setdefault((d.device_id, d.step), []).append((d.graph_name, state))
            scanned.append((d, state))
    slices = [
        DumpSlice(rank, step, tuple(g for g, _ in found), DumpIndex([s for _, s in found]))
        for (rank, step), found in sorted(
            by_slice.items(), key=lambda kv: (number_order(kv[0][0]), number_order(kv[0][1]))
        )
    ]
    all_states = [s for found in by_slice.values() for _, s in found]
    all_dumps = DumpIndex(all_states)
    warnings.extend(all_dumps.warnings)
    warnings.extend(dump_dir_warnings(scanned, graphs))
    dumps = slices[0].dumps if slices else DumpIndex([])
    for graph in graphs:
        warnings.extend(f"{graph.source}: duplicate op name {n!r}" for n in graph.duplicates)
    return RunIndex(run, graphs, dumps, slices, all_dumps)


def _benchmark_piece(
    pieces: PieceStore, directory: Path, warnings: list[str]
) -> BenchmarkIndex | None:
    """The index of the benchmark tensors directly in `directory` (cached as a piece)."""
    found = pieces.get(
        "benchmark",
        directory,
        lambda: (BENCHMARK_INDEX_VERSION, dir_fingerprint(directory, "mapping.csv")),
        lambda: scan_benchmark_dir(directory),
        warnings,
    )
    if found is not None:
        warnings.extend(found.warnings)
    return found
