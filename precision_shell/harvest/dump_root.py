"""The tensor files of a tfdbg dump root, read from their names alone (no TensorFlow needed).

tfdbg's layout (`debug_data.DebugTensorDatum`): `<root>/_tfdbg_device_<device>/<node
scopes as dirs>/<node base name>_<slot>_<debug op>_<timestamp>[-<n>]`, plus `_tfdbg_graph_*`
files beside the tensors. The listing gives the harvest its total, the real dump
timestamps, and `t0`, the first timestamp, which tfdbg's `lt` times are relative to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_DEVICE_DIR_PREFIX = "_tfdbg_device_"
_GRAPH_FILE_PREFIX = "_tfdbg_graph_"
TENSOR_DEBUG_OP = "DebugIdentity"


@dataclass(frozen=True)
class DumpFile:
    """One dump file, as its name describes it."""

    node_name: str
    output_slot: int
    debug_op: str
    timestamp: int
    extended_timestamp: str  # the timestamp field as written; tfdbg sorts by this string
    path: str

    @property
    def tensor_name(self) -> str:
        return f"{self.node_name}:{self.output_slot}"


@dataclass(frozen=True)
class IndexedDump:
    """A DebugIdentity dump with its index among the dumps of the same tensor (`pt -n`)."""

    tensor_name: str
    dump_index: int
    timestamp: int


def _parse(device_dir: str, dir_path: str, file_name: str) -> DumpFile | None:
    fields = file_name.split("_")
    if len(fields) < 4 or not fields[-3].isdigit():
        return None
    extended = fields[-1]
    timestamp = extended.split("-", 1)[0]
    if not timestamp.isdigit():
        return None
    scopes = os.path.relpath(dir_path, device_dir)
    base = "_".join(fields[:-3])
    node = base if scopes == "." else f"{scopes.replace(os.sep, '/')}/{base}"
    return DumpFile(
        node,
        int(fields[-3]),
        fields[-2],
        int(timestamp),
        extended,
        os.path.join(dir_path, file_name),
    )


def scan_dump_root(root: Path) -> list[DumpFile]:
    """Every tensor dump file under `root`, sorted as tfdbg sorts them (by timestamp field)."""
    found: list[DumpFile] = []
    try:
        devices = [
            e.path for e in os.scandir(root) if e.is_dir() and e.name.startswith(_DEVICE_DIR_PREFIX)
        ]
    except OSError:
        return found
    for device_dir in devices:
        for dir_path, _dirs, files in os.walk(device_dir):
            for file_name in files:
                if file_name.startswith(_GRAPH_FILE_PREFIX):
                    continue
                parsed = _parse(device_dir, dir_path, file_name)
                if parsed is not None:
                    found.append(parsed)
    found.sort(key=lambda dump: dump.extended_timestamp)
    return found


def first_timestamp(dumps: list[DumpFile]) -> int | None:
    """tfdbg's `t0`: the earliest dump timestamp, or None for an empty root."""
    return min((dump.timestamp for dump in dumps), default=None)


def indexed_tensor_dumps(dumps: list[DumpFile]) -> list[IndexedDump]:
    """The DebugIdentity dumps, each numbered among the dumps of its tensor, in dump order."""
    seen: dict[str, int] = {}
    indexed = []
    for dump in dumps:
        if dump.debug_op != TENSOR_DEBUG_OP:
            continue
        name = dump.tensor_name
        index = seen.get(name, 0)
        seen[name] = index + 1
        indexed.append(IndexedDump(name, index, dump.timestamp))
    return indexed


def find_live_dump_root(temp_dir: Path) -> Path | None:
    """The dump root a live tfdbg session made under `temp_dir` (its `tempfile` dir).

    `LocalCLIDebugWrapperSession` without a `dump_root` dumps into `mkdtemp(prefix="tfdbg_")`;
    the child runs with TMPDIR pointing at our private `temp_dir`, so the newest such dir
    holding dumps is this run's.
    """
    try:
        candidates = [e for e in os.scandir(temp_dir) if e.is_dir() and e.name.startswith("tfdbg_")]
    except OSError:
        return None
    candidates.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    for entry in candidates:
        if scan_dump_root(Path(entry.path)):
            return Path(entry.path)
    return None
