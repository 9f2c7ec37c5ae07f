"""The overflow part of `ac`: Opdebug files decoded, linked to their op's dump, first first.

One finding per op: repeats of the same op with the same status collapse into one finding
with a count; each carries the stats of the op's inputs and outputs from its overflow dump.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from precision_shell.errors import PrecisionError
from precision_shell.explore.node_info import TensorRow, dump_tensor_rows
from precision_shell.formats.overflow import read_opdebug
from precision_shell.workspace.dump_index import DumpFileRef
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
    for ref in sorted(ws.overflow_files(), key=lambda f: (f.timestamp, f.path)):
        try:
            _add_finding(ws, ref, found, errors)
        except PrecisionError as exc:
            errors.append(str(exc))
        except Exception as exc:  # one odd Opdebug file must not stop the whole of `ac`
            errors.append(failure_text(ref.path, exc))
    return list(found.values()), errors


def _add_finding(
    ws: Workspace,
    ref: DumpFileRef,
    found: dict[tuple[str, tuple[str, ...]], OverflowFinding],
    errors: list[str],
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
        return
    finding = OverflowFinding(
        op,
        op_type,
        ref.file_name,
        ref.timestamp,
        debug.texts,
        dump_file=dump.path if dump else None,
    )
    if dump is not None and readable:
        finding.tensors = _tensor_rows(ws, dump, errors)
    found[key] = finding
