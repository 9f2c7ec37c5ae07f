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
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.formats.dir_entries import listing
from precision_shell.workspace.index_cache import FileStamp, file_fingerprint

# (rank, step); None where the dir is not particular to one: ("0", None) is `rank0/`.
Scope = tuple[str | None, str | None]

# numbered as the dump dirs are (`step1`, never `step01`); fullmatch: no trailing newline
_RANK = re.compile(r"rank(0|[1-9][0-9]*)")
_STEP = re.compile(r"step(0|[1-9][0-9]*)")
_LOOKS_SCOPED = re.compile(r"(?i)(rank|step)")  # a name meant as one, if not written as one


@dataclass(frozen=True)
class ScopedDirs:
    """The rank and step benchmark dirs found under a benchmark dir, by scope."""

    dirs: dict[Scope, Path]
    # each rank<R>/ and step<S>/ dir with its (size, mtime) from before it was listed: a
    # nested dir added later changes its stamp
    listed: tuple[tuple[Path, FileStamp | None], ...]
    # scopes whose entry is there but cannot serve as their benchmark (not a dir, a link
    # above tf/dump/), with why (`step1/ is not a dir`): their (rank, step)s have no
    # benchmark, not tf/dump/'s
    blocked: dict[Scope, str] = field(default_factory=dict)

    def order(self, rank: str | None, step: str | None) -> list[Scope]:
        """The scopes a (rank, step) dump dir looks for, most specific first."""
        return [(rank, step), (None, step), (rank, None)]

    def holds_scopes(self, scope: Scope) -> bool:
        """Whether the dir of `scope` holds rank or step dirs (`rank0/step1/` in `rank0/`):
        it is then a dir of dirs, not an empty benchmark."""
        top = self.dirs.get(scope)
        return top is not None and any(p.parent == top for p in self.dirs.values())


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
        if rank is None and (m := _RANK.fullmatch(part)):
            rank = m.group(1)
        elif step is None and (m := _STEP.fullmatch(part)):
            step = m.group(1)
        else:
            return None  # not a rank or step dir, or the same kind twice
    return (rank, step)


def find_scoped_dirs(benchmark_dir: Path, warnings: list[str]) -> ScopedDirs:
    """The `rank<R>/`, `step<S>/` and nested dirs directly under `benchmark_dir`. One
    (rank, step) in both nestings is a warning; `rank<R>/step<S>/` is used. A name meant as
    one but not written as one (`step01`, `Step1`), an entry of such a name that is no dir,
    and a link to tf/dump/ itself or above are warnings; the last two block their scope."""
    found = _Found(benchmark_dir, warnings)
    nested_in_step: dict[Scope, Path] = {}
    for name, path in found.children(benchmark_dir, top=True):
        rank, step = _RANK.fullmatch(name), _STEP.fullmatch(name)
        found.listed.append((path, file_fingerprint(path)))
        if rank is not None:
            if found.usable((rank.group(1), None), path):
                for inner_step, inner in found.matching(path, _STEP):
                    if found.usable((rank.group(1), inner_step), inner):
                        found.dirs[(rank.group(1), inner_step)] = inner
        elif step is not None and found.usable((None, step.group(1)), path):
            for inner_rank, inner in found.matching(path, _RANK):
                if found.usable((inner_rank, step.group(1)), inner, record=False):
                    nested_in_step[(inner_rank, step.group(1))] = inner
    for scope, path in nested_in_step.items():
        kept = found.dirs.setdefault(scope, path)
        if kept != path:
            warnings.append(
                f"{path}: the benchmark of {scope_label(scope)} is in {kept} too; using {kept}"
            )
    return ScopedDirs(found.dirs, tuple(found.listed), found.blocked)


class _Found:
    """What `find_scoped_dirs` gathers, and its checks of each entry."""

    def __init__(self, top: Path, warnings: list[str]) -> None:
        self.top = top
        self.top_real = os.path.realpath(top)
        self.warnings = warnings
        self.dirs: dict[Scope, Path] = {}
        self.listed: list[tuple[Path, FileStamp | None]] = []
        self.blocked: dict[Scope, str] = {}

    def children(self, directory: Path, top: bool = False) -> list[tuple[str, Path]]:
        """(name, path) of the entries of `directory` named as a rank or step dir; the names
        meant as one but not written as one are warned of (at the top only: below a scope
        dir, a `rank`-something may be anything)."""
        entries = listing(directory, self.warnings) or []
        kept = []
        for entry in sorted(entries, key=lambda e: e.name):
            if _RANK.fullmatch(entry.name) or _STEP.fullmatch(entry.name):
                kept.append((entry.name, Path(entry.path)))
            elif top and _LOOKS_SCOPED.match(entry.name) and _is_dir(entry):
                self.warnings.append(
                    f"{entry.path}: not a rank or step benchmark dir name (rank<R>, step<S>, "
                    "numbered as the dump dirs are: step1, not step01); its tensors are not "
                    "used"
                )
        return kept

    def matching(self, directory: Path, pattern: re.Pattern[str]) -> list[tuple[str, Path]]:
        """(number, path) of the entries of `directory` named like `pattern`."""
        return [
            (m.group(1), path)
            for name, path in self.children(directory)
            if (m := pattern.fullmatch(name)) is not None
        ]

    def usable(self, scope: Scope, path: Path, record: bool = True) -> bool:
        """Whether `path` can be the benchmark dir of `scope`; if not, why is a warning and the
        scope is blocked. With `record`, a usable one is the scope's dir."""
        why = self._unusable(path)
        if why is None:
            if record:
                self.dirs[scope] = path
            return True
        if why:  # "": a link to tf/dump/ itself, which stands for no scope of its own
            self.blocked[scope] = f"{path.relative_to(self.top)}/ {why}"
        return False

    def _unusable(self, path: Path) -> str | None:
        try:
            is_dir = path.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            self.warnings.append(f"{path}: not a dir; no benchmark of {path.name}")
            return "is not a dir"
        if not path.is_symlink():
            return None
        real = os.path.realpath(path)
        if real == self.top_real:
            self.warnings.append(
                f"{path}: a symlink to {self.top} itself, not a benchmark dir of its own; skipped"
            )
            return ""
        if (self.top_real + os.sep).startswith(real.rstrip(os.sep) + os.sep):
            self.warnings.append(f"{path}: a symlink to {real}, above {self.top} (a loop); skipped")
            return f"is a symlink to {real}, above tf/dump/"
        return None


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
