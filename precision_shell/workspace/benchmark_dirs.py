"""Benchmark dirs of one rank or step: `tf/dump/step<S>/`, `tf/dump/rank<R>/` and
`tf/dump/rank<R>/step<S>/` (or `step<S>/rank<R>/`), for dumps whose cards were fed different
data or whose later steps ran on updated weights.

A (rank, step) dump dir is compared with the most specific of them that exists: its rank's
step dir, else its step's dir, else its rank's dir, else `tf/dump/` itself. Only names are
looked at here (no file is read); the dirs' tensors are indexed with the workspace.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from precision_shell.formats.dir_entries import listing
from precision_shell.workspace.index_cache import file_fingerprint

# (rank, step); None where the dir is not particular to one: ("0", None) is `rank0/`.
Scope = tuple[str | None, str | None]

_RANK = re.compile(r"^rank(\d+)$")
_STEP = re.compile(r"^step(\d+)$")


@dataclass(frozen=True)
class ScopedDirs:
    """The rank and step benchmark dirs found under a benchmark dir, by scope."""

    dirs: dict[Scope, Path]
    # each rank<R>/ and step<S>/ dir with its (size, mtime) from before it was listed: a
    # nested dir added later changes its stamp
    listed: tuple[tuple[Path, tuple[int, int] | None], ...]

    def order(self, rank: str | None, step: str | None) -> list[Scope]:
        """The scopes a (rank, step) dump dir looks for, most specific first."""
        return [(rank, step), (None, step), (rank, None)]


def scope_label(scope: Scope) -> str:
    """`rank 0 step 1`, `step 1`, `rank 0`."""
    rank, step = scope
    parts = ([f"rank {rank}"] if rank is not None else []) + (
        [f"step {step}"] if step is not None else []
    )
    return " ".join(parts)


def scope_of(relative: str) -> Scope | None:
    """The scope a dir under tf/dump/ stands for (`step1`, `rank0`, `rank0/step1`,
    `step1/rank0`); None when it stands for none."""
    parts = [p for p in relative.strip("/").split("/") if p]
    if not 1 <= len(parts) <= 2:
        return None
    rank = step = None
    for part in parts:
        if rank is None and (m := _RANK.match(part)):
            rank = m.group(1)
        elif step is None and (m := _STEP.match(part)):
            step = m.group(1)
        else:
            return None  # not a rank or step dir, or the same kind twice
    return (rank, step)


def find_scoped_dirs(benchmark_dir: Path, warnings: list[str]) -> ScopedDirs:
    """The `rank<R>/`, `step<S>/` and nested dirs directly under `benchmark_dir`. One
    (rank, step) in both nestings is a warning; `rank<R>/step<S>/` is used."""
    dirs: dict[Scope, Path] = {}
    nested_in_step: dict[Scope, Path] = {}
    listed: list[tuple[Path, tuple[int, int] | None]] = []
    for name, path in _child_dirs(benchmark_dir, warnings):
        rank, step = _RANK.match(name), _STEP.match(name)
        if rank is not None or step is not None:
            listed.append((path, file_fingerprint(path)))
        if rank is not None:
            dirs[(rank.group(1), None)] = path
            for inner_step, inner in _matching(path, _STEP, warnings):
                dirs[(rank.group(1), inner_step)] = inner
        elif step is not None:
            dirs[(None, step.group(1))] = path
            for inner_rank, inner in _matching(path, _RANK, warnings):
                nested_in_step[(inner_rank, step.group(1))] = inner
    for scope, path in nested_in_step.items():
        kept = dirs.setdefault(scope, path)
        if kept != path:
            warnings.append(
                f"{path}: the benchmark of {scope_label(scope)} is in {kept} too; using {kept}"
            )
    return ScopedDirs(dirs, tuple(listed))


def _matching(
    directory: Path, pattern: re.Pattern[str], warnings: list[str]
) -> list[tuple[str, Path]]:
    """(number, path) of the child dirs of `directory` named like `pattern`."""
    found = []
    for name, path in _child_dirs(directory, warnings):
        match = pattern.match(name)
        if match is not None:
            found.append((match.group(1), path))
    return found


def _child_dirs(directory: Path, warnings: list[str]) -> list[tuple[str, Path]]:
    entries = listing(directory, warnings) or []
    return sorted((e.name, Path(e.path)) for e in entries if _is_dir(e))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
