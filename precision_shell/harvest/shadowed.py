"""Harvested tensors the shell would not read: a newer file of the same tensor was already in
the benchmark dir (another run's, harvested before), and lookups take the newest."""

from __future__ import annotations

import filecmp
import os
from collections.abc import Iterable
from pathlib import Path

from precision_shell.errors import FormatError
from precision_shell.formats.benchmark import scan_benchmark_dir
from precision_shell.harvest.outcome import SavedTensor


def shadowed_tensors(out_dir: Path, saved: Iterable[SavedTensor]) -> list[tuple[str, str]]:
    """(tensor name, the file a lookup reads instead) for each tensor this harvest saved whose
    lookup does not find its last dump saved here (QA: `tf_dump --run 0 --overwrite` after a
    harvest of run 2 said "saved 160 of 160", and every lookup still read run 2's files)."""
    last: dict[str, SavedTensor] = {}
    for tensor in saved:
        kept = last.get(tensor.tensor_name)
        if kept is None or (tensor.timestamp, tensor.dump_index) >= (
            kept.timestamp,
            kept.dump_index,
        ):
            last[tensor.tensor_name] = tensor
    if not last:
        return []
    try:
        index = scan_benchmark_dir(out_dir)
    except FormatError:
        return []  # the dir went away: nothing is read from it anyway
    found = []
    for name, tensor in sorted(last.items()):
        op, slot = name.rsplit(":", 1)
        read = index.lookup(op, int(slot))
        if read is None or os.path.basename(read.path) == os.path.basename(tensor.path):
            continue
        if not _same_bytes(read.path, tensor.path):  # a copy of the same run's is harmless
            found.append((name, os.path.basename(read.path)))
    return found


def _same_bytes(a: str, b: str) -> bool:
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False
