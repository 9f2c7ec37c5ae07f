"""The overflow part of `ac`: Opdebug files decoded, linked to their op's dump, first first.

One finding per op: repeats of the same op with the same status collapse into one finding
with a count and the (rank, step) dirs they were found in; each carries the stats of the op's
inputs and outputs from its (first) overflow dump.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from precision_shell.errors import PrecisionError
from precision_shell.explore.node_info import TensorRow, dump_tensor_rows
from precision_shell.formats.overflow import read_opdebug
from precision_shell.workspace.dump_index import DumpFileRef
from precision_shell.workspace.layout import graph_dump_dir_at
from precision_shell.workspace.pieces import failure_text
from precision_shell.workspace.workspace import Workspace


@dataclass
class OverflowFinding:
    op: str | None  # the op dumped beside the Opdebug file with the same task and stream id
    op_type: str | None
    first_file: str
    timestamp: int  # of the first occurrence
    texts: tuple[str, ...]
    count: int = 1
    tensors: list[TensorRow] = field(default_factory=list)
    dump_file: str | None = None
    # the (rank, step) of each occurrence's `<device_id>/.../<step>/` dir, first seen first,
    # each once; empty when the workspace has one (rank, step) (the overflow dump and each
    # device run one such dir at most)
    places: list[tuple[str, str]] = field(default_factory=list)

    @property
    def file(self) -> str:
        return self.first_file


def _linked_dump(ws: Workspace, ref: DumpFileRef) -> DumpFileRef | None:
    assert ws.overflow_dumps is not None
    folder = os.path.dirname(ref.path)
    siblings = [
        f
        for f in ws.overflow_dumps.files
        if f.op_type != "Opdebug"
        and f.task_id == ref.task_id
        and f.stream_id == ref.stream_id
        and os.path.dirname(f.path) == folder
    ]
    return min(siblings, key=lambda f: f.timestamp) if siblings else None


def _tensor_rows(ws: Workspace, dump: DumpFileRef, errors: list[str]) -> list[TensorRow]:
    try:
        return dump_tensor_rows(ws, dump)
    except PrecisionError as exc:
        errors.append(str(exc))
        return []


def overflow_findings(ws: Workspace) -> tuple[list[OverflowFinding], list[str]]:
    """Every overflowing op of the newest overflow dump, first overflow first.

    A file that cannot be read becomes one line of the errors naming it; the others are
    still reported."""
    if ws.overflow_dumps is None:
        return [], []
    found: dict[tuple[str, tuple[str, ...]], OverflowFinding] = {}
    errors: list[str] = []
    places = {_place(ws, d) for d in ws.overflow_dumps.dirs} - {None}
    several = len(places) > 1 or any(len(run.slices) > 1 for run in ws.runs)
    for ref in sorted(ws.overflow_files(), key=lambda f: (f.timestamp, f.path)):
        place = _place(ws, os.path.dirname(ref.path)) if several else None
        try:
            _add_finding(ws, ref, found, errors, place)
        except PrecisionError as exc:
            errors.append(str(exc))
        except Exception as exc:  # one odd Opdebug file must not stop the whole of `ac`
            errors.append(failure_text(ref.path, exc))
    return list(found.values()), errors


def _place(ws: Workspace, folder: str) -> tuple[str, str] | None:
    """The (rank, step) of a dir of the overflow dump: its `<device_id>` and `<step>` dirs,
    as in the device runs' dumps; None when laid out otherwise."""
    assert ws.layout.overflow_dir is not None
    where = graph_dump_dir_at(ws.layout.overflow_dir, folder)
    return None if where is None else (where.device_id, where.step)


def _add_finding(
    ws: Workspace,
    ref: DumpFileRef,
    found: dict[tuple[str, tuple[str, ...]], OverflowFinding],
    errors: list[str],
    place: tuple[str, str] | None,
) -> None:
    debug = read_opdebug(ref.path)
    dump = _linked_dump(ws, ref)
    op = op_type = None
    readable = False
    if dump is not None:
        op_type = dump.op_type
        try:
            op = ws.header(dump).op_name
            readable = True
        except PrecisionError as exc:
            op = dump.op_name  # the file name still names it (sanitized)
            errors.append(str(exc))
    key = (op or f"task {ref.task_id} stream {ref.stream_id}", debug.texts)
    if key in found:
        found[key].count += 1
        if place is not None and place not in found[key].places:
            found[key].places.append(place)
        return
    finding = OverflowFinding(
        op,
        op_type,
        ref.file_name,
        ref.timestamp,
        debug.texts,
        dump_file=dump.path if dump else None,
        places=[place] if place is not None else [],
    )
    if dump is not None and readable:
        finding.tensors = _tensor_rows(ws, dump, errors)
    found[key] = finding
