"""Resolving what `pt`, `cp` and `dc` were given: a path, a file name in the workspace, or an op.

An optional `:input:K` / `:output:K` suffix picks one tensor of a device dump file. Also owns
finding the original layout of a dump tensor whose dump does not record it (inputs never do).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.explore.user_paths import find_user_file
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.benchmark_layout import (
    origin_layout,
    own_elements,
    to_benchmark_layout,
)
from precision_shell.formats.dump_names import is_statistics_dump_name
from precision_shell.formats.layouts import LayoutError, is_plain_format
from precision_shell.formats.npu_dump import DumpHeader, TensorMeta, read_dump_header, read_tensor
from precision_shell.listing_text import in_workspace
from precision_shell.workspace.index_cache import file_fingerprint
from precision_shell.workspace.path_slice import conflicting_flag, dump_slice_at
from precision_shell.workspace.tensor_stats import TensorStats
from precision_shell.workspace.workspace import Workspace

_SELECTOR = re.compile(r"^(?P<base>.+?):(?P<kind>input|output):(?P<index>\d+)$")


@dataclass(frozen=True)
class TensorHandle:
    """One tensor to read: from a `.npy` file or one slot of a device dump file."""

    label: str
    path: str
    header: DumpHeader | None = None
    meta: TensorMeta | None = None
    graph_origin_format: str | None = None  # the GE graph desc's origin format, when found
    graph_origin_shape: tuple[int, ...] | None = None  # and its origin shape
    # (rank, step) of the dump dir it was read from, when its run has several
    dump_slice: tuple[str, str] | None = None
    run: str = ""  # the workspace run (debug_0) it was read from; empty outside the workspace

    @property
    def is_dump(self) -> bool:
        return self.header is not None

    @property
    def where(self) -> str:
        """The dump dir read as `rank 2 step 0` (every rank's dir holds the same file names);
        empty when its run has one."""
        return f"rank {self.dump_slice[0]} step {self.dump_slice[1]}" if self.dump_slice else ""

    def load(self) -> np.ndarray:
        """Values as stored (device layout for dump tensors)."""
        if self.header is None:
            return load_benchmark(self.path)
        assert self.meta is not None
        return read_tensor(self.header, self.meta.kind, self.meta.index)

    def load_converted(self) -> np.ndarray:
        """Values in the benchmark's layout and shape, by the rule `vc` uses too
        (formats/benchmark_layout). Raises FormatError naming the file when they do not convert."""
        values = self.load()
        if self.meta is None:
            return values
        try:
            return to_benchmark_layout(
                values, self.meta, self.graph_origin_format, self.graph_origin_shape
            )
        except LayoutError as exc:
            raise FormatError(self.path, f"{self.meta.label}: {exc}") from None

    def load_for_summary(self) -> tuple[np.ndarray, str | None]:
        """Values in the benchmark layout when they convert, else as stored with the reason.

        Statistics of a padded layout (NC1HWC0 with C=24 in 32) would count the pad."""
        try:
            return self.load_converted(), None
        except FormatError as exc:
            if self.meta is None or is_plain_format(self.meta.format):
                raise
            return self.load(), exc.problem

    def own_elements(self, values: np.ndarray) -> np.ndarray | None:
        """`values` (this tensor as `load` gives them) without a padded layout's pad lanes
        (formats/benchmark_layout.own_elements); None when they do not convert back."""
        if self.meta is None:
            return values
        try:
            return own_elements(
                values, self.meta, self.graph_origin_format, self.graph_origin_shape
            )
        except (LayoutError, ValueError):
            return None

    def origin_format(self) -> str | None:
        """The original layout by the one rule: the dump's, else the graph's, else the shapes'."""
        meta = self.meta
        if meta is None:
            return None
        fmt, _ = origin_layout(meta, meta.shape, self.graph_origin_format, self.graph_origin_shape)
        return fmt


Origins = dict[tuple[str, int], tuple[str | None, tuple[int, ...] | None]]


def _dump_context(ws: Workspace | None, path: str) -> tuple[Origins, tuple[str, str] | None, str]:
    """For the dump file at `path`: (kind, index) -> (origin format, origin shape) from the GE
    graph desc of the op that dumped it, its (rank, step) when its run has several, and its
    run's name. Empty when it is no file of the workspace."""
    if ws is None:
        return {}, None, ""
    for run in ws.runs:
        found = run.file_at(path)
        if found is None:
            continue
        dump_slice, ref = found
        where = (dump_slice.rank, dump_slice.step) if len(run.slices) > 1 else None
        for graph in run.graphs:
            rec = graph.by_dump_name(ref.op_name)
            op = graph.op(rec.name) if rec is not None else None
            if op is None:
                continue
            origins: Origins = {}
            for kind, descs in (("input", op.input_descs), ("output", op.output_descs)):
                for k, desc in enumerate(descs):
                    shape = tuple(desc.origin_shape) if desc.origin_shape else None
                    origins[(kind, k)] = (desc.origin_format or None, shape)
            return origins, where, run.name
        return {}, where, run.name
    return {}, None, ""


def dump_file_tensors(ws: Workspace, path: str) -> list[TensorHandle]:
    """Every input and output of one dump file of the workspace, its header read once (a file
    of thousands of inputs is one header parse, not one per tensor)."""
    return _dump_handles(path, None, None, ws)


def tensor_stats_in_benchmark_layout(ws: Workspace, handle: TensorHandle) -> TensorStats:
    """Statistics of one dump tensor in its benchmark layout (pads cut off), as `pt` and `cp`
    show them; as stored when it does not convert. Cached in the workspace's stats cache."""
    assert handle.meta is not None, "a dump tensor"
    meta = handle.meta
    key = (
        handle.path,
        meta.kind,
        meta.index,
        file_fingerprint(Path(handle.path)),
        "benchmark-layout",
    )
    return ws.stats.get(key, lambda: handle.load_for_summary()[0])


def _dump_handles(
    path: str, kind: str | None, index: int | None, ws: Workspace | None = None
) -> list[TensorHandle]:
    # the workspace's header cache: `ni` then `pt` of the same file parse its header once
    header = ws.header(path) if ws is not None else read_dump_header(path)
    metas = [*header.inputs, *header.outputs]
    if kind is not None:
        metas = [m for m in metas if m.kind == kind and m.index == index]
        if not metas:
            raise PrecisionError(f"{path}: has no {kind} {index}")
    name = os.path.basename(path)
    origins, where, run = _dump_context(ws, path)
    return [
        TensorHandle(
            f"{name} {m.kind} {m.index}",
            path,
            header,
            m,
            *origins.get((m.kind, m.index), (None, None)),
            dump_slice=where,
            run=run,
        )
        for m in metas
    ]


def _file_handles(
    path: str, kind: str | None, index: int | None, ws: Workspace | None = None
) -> list[TensorHandle]:
    if path.endswith(".npy"):
        if kind is not None:
            raise PrecisionError(f"{path}: a .npy file holds one tensor; drop :{kind}:{index}")
        # a benchmark in a rank or step dir is named after it (`step1/x.0.1.npy`): the same
        # name is another tensor in tf/dump/ (and pt saves each under its own name)
        label = ws.benchmark_name(path) if ws is not None else os.path.basename(path)
        return [TensorHandle(label, path)]
    if is_statistics_dump_name(os.path.basename(path)):
        raise PrecisionError(
            f"{path}: a statistics dump (dump_data: stats) holds no tensor values; pt shows "
            "its statistics, vc compares them"
        )
    try:
        return _dump_handles(path, kind, index, ws)
    except FormatError:
        raise
    except OSError as exc:
        raise PrecisionError(f"{path}: cannot read: {exc.strerror}") from None


def resolve_tensors(
    ws: Workspace | None,
    text: str,
    default_output: bool = False,
    rank: str | None = None,
    step: str | None = None,
) -> list[TensorHandle]:
    """Every tensor `text` names; a dump file name is the file of that name, and an op name
    its newest dump file's output 0, in the (rank, step) dump dir given (the lowest rank's
    first step by default)."""
    kind: str | None = None
    index: int | None = None
    base = text
    m = _SELECTOR.match(text)
    root = ws.root if ws is not None else None
    if m and find_user_file(text, root) is None:
        base, kind, index = m.group("base"), m.group("kind"), int(m.group("index"))
    path = find_user_file(base, root)  # the cwd, then precision_data/ and the dir holding it
    if path is not None:
        _same_slice(ws, str(path), base, rank, step)
        handles = _file_handles(str(path), kind, index, ws)
    elif ws is None:
        raise PrecisionError(f"{base}: no such file")
    else:
        handles = _workspace_handles(ws, base, kind, index, rank, step)
    if default_output and kind is None and len(handles) > 1:
        outputs = [h for h in handles if h.meta is not None and h.meta.kind == "output"]
        handles = outputs[:1] or handles[:1]
    return handles


def _same_slice(
    ws: Workspace | None, path: str, given: str, rank: str | None, step: str | None
) -> None:
    """A path is read as given: a `--rank`/`--step` beside it naming another dump dir is
    an error rather than dropped without a word."""
    if ws is None or (rank is None and step is None):
        return
    where = dump_slice_at(ws, path)
    conflict = conflicting_flag(given, where, rank, step) if where is not None else None
    if conflict is not None:
        raise PrecisionError(conflict)


def _workspace_handles(
    ws: Workspace,
    name: str,
    kind: str | None,
    index: int | None,
    rank: str | None = None,
    step: str | None = None,
) -> list[TensorHandle]:
    for run in ws.runs:
        ref = run.file_in_slice(name, rank, step)  # names repeat across ranks
        if ref is not None:
            return _file_handles(ref.path, kind, index, ws)
    if ws.overflow_dumps is not None:
        ref = ws.overflow_dumps.by_file_name(name)
        if ref is not None:
            return _file_handles(ref.path, kind, index)
    named = _benchmark_named(ws, name, rank, step)
    if named is not None:
        return _file_handles(named, kind, index, ws)
    for run in ws.runs:
        found = run.find(name)
        if found is None:
            continue
        refs = ws.dump_files(run, name, rank, step)
        if not refs:
            where = f", rank {rank}" if rank is not None else ""
            where += f", step {step}" if step is not None else ""
            raise PrecisionError(f"op {name!r} ({run.name}{where}) has no dump file")
        handles = _file_handles(refs[-1].path, kind or "output", 0 if index is None else index, ws)
        return handles
    handle = _benchmark_of_op(ws, name, kind, index, rank, step)
    if handle is not None:
        return [handle]
    decoded = _decoded_named(ws, name)
    if decoded is not None:
        return _file_handles(decoded, kind, index, ws)
    raise PrecisionError(
        f"{name}: not a file, not a dump or .npy file name in the workspace, not an op name, "
        "and not a benchmark tensor name"
    )


def _benchmark_named(ws: Workspace, name: str, rank: str | None, step: str | None) -> str | None:
    """The path of the benchmark `.npy` named `name` (`x.0.1.npy`, or `step1/x.0.1.npy` as
    `benchmark_name` shows it). With --rank/--step, only in that (rank, step)'s benchmark dir:
    a file of that name in another rank's or step's dir is another tensor, and reading it
    silently would show step 0's values for step 1 (an error names where it is). Without
    them, the default (rank, step)'s dir first, then tf/dump/, then the other dirs."""
    scoped = rank is not None or step is not None
    own = ws.benchmark_for(rank, step) if scoped else None
    for benchmarks in ws.benchmark_indexes(rank, step):
        path = next(
            (
                b.path
                for files in benchmarks.all.values()
                for b in files
                if name in (os.path.basename(b.path), ws.benchmark_name(b))
            ),
            None,
        )
        if path is None:
            continue
        if not scoped or benchmarks is own:
            return path
        where = " ".join(f"{k} {v}" for k, v in (("rank", rank), ("step", step)) if v is not None)
        mine = (
            f"no benchmark of that name in {in_workspace(str(own.directory))}/, the benchmark "
            f"dir of {where}"
            if own
            else f"{where} has no benchmark dir"
        )
        raise PrecisionError(
            f"{name}: {mine}; {in_workspace(path)} is another rank's or step's tensor: give "
            "that path to read it"
        )
    return None


_TF_SLOT = re.compile(r"^(?P<op>.+):(?P<slot>\d+)$")


def _benchmark_of_op(
    ws: Workspace,
    name: str,
    kind: str | None,
    index: int | None,
    rank: str | None,
    step: str | None,
) -> TensorHandle | None:
    """`relu2/Relu` (output 0) or `relu2/Relu:1`: the newest benchmark `.npy` of that TF op's
    output, for names that are no device op. The label names the file used."""
    if kind == "input":
        return None
    op, slot = name, 0 if index is None else index
    m = _TF_SLOT.match(name)
    if m and index is None:
        op, slot = m.group("op"), int(m.group("slot"))
    benchmark = ws.benchmark_file(op, slot, rank, step)
    if benchmark is None:
        return None
    return TensorHandle(
        f"{ws.benchmark_name(benchmark)} (benchmark of {op}:{slot})", benchmark.path
    )


def _decoded_named(ws: Workspace, name: str) -> str | None:
    """A `.npy` `dc` wrote into temp/decode/ by the name it printed (QA: `pt` of a name `dc`
    had just printed was "not a file"); never a name with a dir part, never through a link."""
    if not name.endswith(".npy") or os.path.basename(name) != name:
        return None
    path = ws.layout.root / ws.layout.temp_dir.name / "decode" / name
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            return str(path)
    except OSError:
        pass
    return None
