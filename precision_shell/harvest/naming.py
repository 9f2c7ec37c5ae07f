"""Benchmark file names for harvested tensors: the canonical rule, safety, long names, collisions.

Canonical name (FORMATS.md section 4): `{name with '/'->'_' and ':'->'.'}.{timestamp}.npy`.
Two different tensors can share a lookup key (`a/b:0`, `a_b:0`, `a.b:0`); all are kept and
`mapping.csv` records which file holds which tensor, by the op name as TF wrote it. A name too long for the file system is
stored under a digest and mapped the same way. A tensor name never names a directory: the
file name is checked to be one plain path component.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from precision_shell.formats.benchmark import benchmark_key, tensor_file_stem

# NAME_MAX is 255 bytes on common file systems; keep a margin for re-harvest timestamps.
MAX_FILE_NAME_BYTES = 200
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


class UnsafeTensorName(ValueError):
    """A tensor name that cannot become a benchmark file name."""


@dataclass(frozen=True)
class TargetName:
    """Where one dump goes: the name on disk and, when they differ in meaning, the real name."""

    disk_name: str
    real_name: str  # the benchmark name `mapping.csv` gives for `disk_name`
    mapped: bool  # whether `mapping.csv` must list this file


def checked_stem(tensor_name: str) -> str:
    """The file-name stem of `tensor_name`, or UnsafeTensorName saying why it has none."""
    if _CONTROL_CHARS.search(tensor_name):
        raise UnsafeTensorName(f"tensor name {tensor_name!r} holds control characters")
    try:
        stem = tensor_file_stem(tensor_name)
    except ValueError as error:
        raise UnsafeTensorName(str(error)) from None
    if stem in (".", "..") or "/" in stem or "\\" in stem:
        raise UnsafeTensorName(f"tensor name {tensor_name!r} cannot be used as a file name")
    return stem


def colliding_groups(tensor_names: Iterable[str]) -> list[list[str]]:
    """Groups of distinct tensor names that share one lookup key (`a/b:0`, `a_b:0` and
    `a.b:0`: the key `a_b.0`; their file stems differ only in part), each sorted."""
    by_key: dict[str, set[str]] = {}
    for name in tensor_names:
        try:
            checked_stem(name)
        except UnsafeTensorName:
            continue
        op, slot = name.rsplit(":", 1)
        by_key.setdefault(benchmark_key(op, int(slot)), set()).add(name)
    return sorted(sorted(names) for names in by_key.values() if len(names) > 1)


def _real_name(tensor_name: str, timestamp: int, keep_op: bool) -> str:
    if keep_op:
        # The op name as TF wrote it (slashes kept) still parses as a benchmark name and
        # gives the same lookup key, but tells the colliding tensors apart.
        op, slot = tensor_name.rsplit(":", 1)
        return f"{op}.{slot}.{timestamp}.npy"
    return f"{checked_stem(tensor_name)}.{timestamp}.npy"


def target_name(tensor_name: str, timestamp: int, collides: bool = False) -> TargetName:
    """The file for dump `timestamp` of `tensor_name`; `collides`: its stem is shared."""
    canonical = f"{checked_stem(tensor_name)}.{timestamp}.npy"
    real = _real_name(tensor_name, timestamp, keep_op=collides)
    if len(canonical.encode("utf-8")) <= MAX_FILE_NAME_BYTES:
        return TargetName(canonical, real, mapped=collides)
    # A digest name does not parse as a benchmark name on its own, so a lost mapping.csv
    # shows up as a warning instead of a tensor filed under the wrong op.
    digest = hashlib.sha256(real.encode("utf-8")).hexdigest()[:32]
    return TargetName(f"{digest}.npy", real, mapped=True)
