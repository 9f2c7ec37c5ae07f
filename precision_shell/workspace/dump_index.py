"""The device dump files of one run, indexed by the (sanitized) op name in their file names.

Only names are read here (one `scandir` per dump dir); headers and payloads are read lazily
when a tensor is asked for. Long names stored under numeric file names are resolved through
`mapping.csv` without touching the files.
"""

from __future__ import annotations

import bisect
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.formats.dir_entries import cannot_list, list_dir, odd_entry_warnings
from precision_shell.formats.dump_names import parse_dump_name, read_mapping_csv
from precision_shell.workspace.layout import leaf_dirs

# 3: warnings for entries named like a dump file that are none; 4: so is a symlink to a file
# not named like one; 5: but a link into a content-addressed store (DVC) is one
DIR_RECORD_VERSION = 5
_SKIP = {"mapping.csv"}


@dataclass(frozen=True, slots=True)
class DumpFileRef:
    """One device dump file, as its name describes it."""

    path: str
    op_type: str
    op_name: str  # sanitized, as in the file name
    task_id: int
    stream_id: int | None
    timestamp: int
    ffts: tuple[int, int, int, int] | None
    stats_csv: bool

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)


def scan_dump_dir(directory: Path) -> dict:
    """Parse every file name of one `<step>/` dump dir into columns (cacheable state).

    The state also holds, per op, its rows sorted oldest first, so loading it from the
    cache builds no per-file objects at all.
    """
    mapping, warnings = read_mapping_csv(directory)
    rows: list[tuple] = []

    def named_like_a_dump(name: str) -> bool:
        return _named_like_a_dump(mapping.get(name, name))

    try:
        entries, others = list_dir(directory, named_like_a_dump, "dump file")
    except OSError as exc:
        entries, others = [], []
        warnings.append(cannot_list(directory, exc))
    entries.sort()
    # a dir, a dangling symlink or a link to another file named like a dump file is not
    # skipped silently
    warnings += odd_entry_warnings(directory, others, named_like_a_dump)
    for name in entries:
        if name in _SKIP:
            continue
        real = mapping.get(name, name)
        try:
            dn = parse_dump_name(real)
        except ValueError as exc:
            warnings.append(f"{directory / name}: not a dump file name ({exc})")
            continue
        rows.append(
            (
                name,
                dn.op_type,
                dn.op_name,
                dn.task_id,
                dn.stream_id,
                dn.timestamp,
                dn.ffts,
                dn.stats_csv,
            )
        )
    by_op: dict[str, list[int]] = defaultdict(list)
    for j, row in enumerate(rows):
        by_op[row[2]].append(j)
    for ids in by_op.values():
        if len(ids) > 1:
            ids.sort(key=lambda j: (rows[j][5], rows[j][0]))
    return {
        "version": DIR_RECORD_VERSION,
        "dir": str(directory),
        "rows": rows,
        "by_op": dict(by_op),
        "warnings": warnings,
    }


def _named_like_a_dump(name: str) -> bool:
    try:
        parse_dump_name(name)
    except ValueError:
        return False
    return True


class DumpIndex:
    """Dump files of several dump dirs, grouped by the sanitized op name.

    Files are numbered across dirs (dir after dir); `DumpFileRef` objects are made only for
    the files asked for, so a 100k-file index loads from its cache in milliseconds.
    """

    def __init__(self, states: list[dict]):
        self._states = states
        self._offsets: list[int] = []
        total = 0
        for state in states:
            self._offsets.append(total)
            total += len(state["rows"])
        self._total = total
        self.warnings: list[str] = [w for state in states for w in state["warnings"]]
        self._refs: dict[int, DumpFileRef] = {}
        self._by_file_name: dict[str, int] | None = None
        # Merged on first use: a run's index of every rank and step is mostly only counted.
        self._merged: dict[str, list[int]] | None = states[0]["by_op"] if len(states) == 1 else None

    @property
    def _by_op(self) -> dict[str, list[int]]:
        if self._merged is None:
            self._merged = self._merge_by_op()
        return self._merged

    def _merge_by_op(self) -> dict[str, list[int]]:
        merged: dict[str, list[int]] = defaultdict(list)
        for offset, state in zip(self._offsets, self._states, strict=True):
            for op, ids in state["by_op"].items():
                merged[op].extend(offset + j for j in ids)
        for ids in merged.values():
            if len(ids) > 1:
                ids.sort(key=self._age_key)
        return dict(merged)

    def _age_key(self, i: int) -> tuple[int, str]:
        """Oldest first, then by path: no ref built just to sort."""
        state, j = self._locate(i)
        row = state["rows"][j]
        return (row[5], os.path.join(state["dir"], row[0]))

    def _locate(self, i: int) -> tuple[dict, int]:
        s = bisect.bisect_right(self._offsets, i) - 1
        return self._states[s], i - self._offsets[s]

    def _row(self, i: int) -> tuple:
        state, j = self._locate(i)
        return state["rows"][j]

    def file(self, i: int) -> DumpFileRef:
        ref = self._refs.get(i)
        if ref is None:
            state, j = self._locate(i)
            name, op_type, op_name, task, stream, ts, ffts, stats = state["rows"][j]
            ref = DumpFileRef(
                os.path.join(state["dir"], name), op_type, op_name, task, stream, ts, ffts, stats
            )
            self._refs[i] = ref
        return ref

    @property
    def files(self) -> list[DumpFileRef]:
        """Every file, dir after dir (builds a ref per file: meant for small indexes)."""
        return [self.file(i) for i in range(self._total)]

    def __len__(self) -> int:
        return self._total

    def for_op(self, sanitized_name: str, include_stats: bool = False) -> list[DumpFileRef]:
        """Dump files of an op, oldest first (every timestamp, every step)."""
        refs = [self.file(i) for i in self._by_op.get(sanitized_name, ())]
        return refs if include_stats else [r for r in refs if not r.stats_csv]

    def stats_for_op(self, sanitized_name: str) -> list[DumpFileRef]:
        """Statistics dump files (`....csv`) of an op, oldest first."""
        return [r for r in self.for_op(sanitized_name, include_stats=True) if r.stats_csv]

    def holds_statistics_only(self) -> bool:
        """True when every dump file here is a statistics dump (`dump_data: stats`): a
        compare of this dir is a statistics compare. Opdebug files do not count."""
        found = False
        for state in self._states:
            for row in state["rows"]:
                if row[1] == "Opdebug":
                    continue
                if not row[7]:
                    return False
                found = True
        return found

    def statistics_count(self) -> int:
        return sum(1 for state in self._states for row in state["rows"] if row[7])

    def op_names(self) -> list[str]:
        return list(self._by_op)

    def by_file_name(self, file_name: str) -> DumpFileRef | None:
        if self._by_file_name is None:
            self._by_file_name = {}
            for offset, state in zip(self._offsets, self._states, strict=True):
                for j, row in enumerate(state["rows"]):
                    self._by_file_name.setdefault(row[0], offset + j)
        i = self._by_file_name.get(file_name)
        return None if i is None else self.file(i)

    def has_file_name(self, file_name: str) -> bool:
        """Whether a file of that name is here: a scan, so asking every slice of a run where a
        name is builds no lookup table per slice."""
        if self._by_file_name is not None:
            return file_name in self._by_file_name
        return any(row[0] == file_name for state in self._states for row in state["rows"])

    @property
    def dirs(self) -> list[str]:
        """The dump dirs indexed, as their files' paths start."""
        return [state["dir"] for state in self._states]

    def file_names(self) -> list[str]:
        return [row[0] for state in self._states for row in state["rows"]]


def index_dump_tree(directory: Path) -> DumpIndex:
    """Every dump file under `directory`, its sub-dirs too (a dir given by the user, not the
    workspace's); a missing dir or one without dump files is a PrecisionError naming it, and
    the first warning, which may say why (a dir that cannot be listed)."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise PrecisionError(f"{directory}: {what}")
    unlisted: list[str] = []
    index = DumpIndex([scan_dump_dir(d) for d in leaf_dirs(directory, unlisted)])
    index.warnings[:0] = unlisted
    if not len(index):
        why = f"; {index.warnings[0]}" if index.warnings else ""
        if len(index.warnings) > 1:
            why += f" (+{len(index.warnings) - 1} more warnings)"
        raise PrecisionError(f"{directory}: no dump files found (searched its sub-dirs too){why}")
    return index
