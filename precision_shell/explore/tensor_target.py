"""Resolving what `pt`, `cp` and `dc` were given: a path, a file name in the workspace, or an op.

An optional `:input:K` / `:output:K` suffix picks one tensor of a device dump file. Also owns
finding the original layout of a dump tensor whose dump does not record it (inputs never do).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.explore.user_paths import find_user_file
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.layout_guess import guess_origin_format
from precision_shell.formats.layouts import format_name, is_plain_format
from precision_shell.formats.npu_dump import (
    DumpHeader,
    TensorMeta,
    read_dump_header,
    read_tensor,
    read_tensor_converted,
)
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

    @property
    def is_dump(self) -> bool:
        return self.header is not None

    def load(self) -> np.ndarray:
        """Values as stored (device layout for dump tensors)."""
        if self.header is None:
            return load_benchmark(self.path)
        assert self.meta is not None
        return read_tensor(self.header, self.meta.kind, self.meta.index)

    def load_converted(self) -> np.ndarray:
        """Values in the original (benchmark) layout when the dump says what it was."""
        if self.header is None:
            return load_benchmark(self.path)
        assert self.meta is not None
        if not self.meta.original_shape:
            return self.load()
        # Only when the dump is silent about it: its own record is read_tensor_converted's default.
        inferred = self.origin_format() if self.meta.original_format is None else None
        return read_tensor_converted(
            self.header, self.meta.kind, self.meta.index, origin_format=inferred
        )

    def origin_format(self) -> str | None:
        """The original layout: the dump's, else the graph's, else inferred from the shapes."""
        meta = self.meta
        if meta is None:
            return None
        if meta.original_format is not None:
            return format_name(meta.original_format)
        if is_plain_format(meta.format):
            return None
        if self.graph_origin_format:
            return self.graph_origin_format
        return guess_origin_format(meta.format_name, meta.shape, meta.original_shape)


def _graph_origin_formats(ws: Workspace | None, path: str) -> dict[tuple[str, int], str]:
    """(kind, index) -> origin format from the GE graph desc of the op that dumped `path`."""
    if ws is None:
        return {}
    name = os.path.basename(path)
    real = os.path.realpath(path)
    for run in ws.runs:
        ref = run.dumps.by_file_name(name)
        if ref is None or os.path.realpath(ref.path) != real:
            continue
        for graph in run.graphs:
            rec = graph.by_dump_name(ref.op_name)
            op = graph.op(rec.name) if rec is not None else None
            if op is None:
                continue
            found = {}
            for kind, descs in (("input", op.input_descs), ("output", op.output_descs)):
                for k, desc in enumerate(descs):
                    if desc.origin_format:
                        found[(kind, k)] = desc.origin_format
            return found
    return {}


def _dump_handles(
    path: str, kind: str | None, index: int | None, ws: Workspace | None = None
) -> list[TensorHandle]:
    header = read_dump_header(path)
    metas = [*header.inputs, *header.outputs]
    if kind is not None:
        metas = [m for m in metas if m.kind == kind and m.index == index]
        if not metas:
            raise PrecisionError(f"{path}: has no {kind} {index}")
    name = os.path.basename(path)
    origins = _graph_origin_formats(ws, path)
    return [
        TensorHandle(f"{name} {m.kind} {m.index}", path, header, m, origins.get((m.kind, m.index)))
        for m in metas
    ]


def _file_handles(
    path: str, kind: str | None, index: int | None, ws: Workspace | None = None
) -> list[TensorHandle]:
    if path.endswith(".npy"):
        if kind is not None:
            raise PrecisionError(f"{path}: a .npy file holds one tensor; drop :{kind}:{index}")
        return [TensorHandle(os.path.basename(path), path)]
    try:
        return _dump_handles(path, kind, index, ws)
    except FormatError:
        raise
    except OSError as exc:
        raise PrecisionError(f"{path}: cannot read: {exc.strerror}") from None


def resolve_tensors(
    ws: Workspace | None, text: str, default_output: bool = False
) -> list[TensorHandle]:
    """Every tensor `text` names; an op name gives its newest dump file's output 0."""
    kind: str | None = None
    index: int | None = None
    base = text
    m = _SELECTOR.match(text)
    root = ws.root if ws is not None else None
    if m and find_user_file(text, root) is None:
        base, kind, index = m.group("base"), m.group("kind"), int(m.group("index"))
    path = find_user_file(base, root)  # the cwd, then precision_data/ and the dir holding it
    if path is not None:
        handles = _file_handles(str(path), kind, index, ws)
    elif ws is None:
        raise PrecisionError(f"{base}: no such file")
    else:
        handles = _workspace_handles(ws, base, kind, index)
    if default_output and kind is None and len(handles) > 1:
        outputs = [h for h in handles if h.meta is not None and h.meta.kind == "output"]
        handles = outputs[:1] or handles[:1]
    return handles


def _workspace_handles(
    ws: Workspace, name: str, kind: str | None, index: int | None
) -> list[TensorHandle]:
    for run in ws.runs:
        ref = run.dumps.by_file_name(name)
        if ref is not None:
            return _file_handles(ref.path, kind, index, ws)
    if ws.overflow_dumps is not None:
        ref = ws.overflow_dumps.by_file_name(name)
        if ref is not None:
            return _file_handles(ref.path, kind, index)
    if ws.benchmark is not None:
        for files in ws.benchmark.all.values():
            for benchmark in files:
                if os.path.basename(benchmark.path) == name:
                    return _file_handles(benchmark.path, kind, index)
    for run in ws.runs:
        found = run.find(name)
        if found is None:
            continue
        refs = ws.dump_files(run, name)
        if not refs:
            raise PrecisionError(f"op {name!r} ({run.name}) has no dump file")
        handles = _file_handles(refs[-1].path, kind or "output", 0 if index is None else index, ws)
        return handles
    raise PrecisionError(
        f"{name}: not a file, not a dump or .npy file name in the workspace, and not an op name"
    )
