"""The device dump files of one run, indexed by the (sanitized) op name in their file names.

Only names are read here (one `scandir` per dump dir); headers and payloads are read lazily
when a tensor is asked for. Long names stored under numeric file names are resolved through
`mapping.csv` without touching the files.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from precision_shell.formats.dump_names import parse_dump_name, read_mapping_csv

DIR_RECORD_VERSION = 1
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
    """Parse every file name of one `<step>/` dump dir into columns (cacheable state)."""
    mapping, warnings = read_mapping_csv(directory)
    rows: list[tuple] = []
    try:
        entries = [e.name for e in os.scandir(directory) if e.is_file()]
    except OSError as exc:
        return {
            "version": DIR_RECORD_VERSION,
            "dir": str(directory),
            "rows": [],
            "warnings": [f"{directory}: cannot list: {exc.strerror}"],
        }
    entries.sort()
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
    return {
        "version": DIR_RECORD_VERSION,
        "dir": str(directory),
        "rows": rows,
        "warnings": warnings,
    }


class DumpIndex:
    """Dump files of several dump dirs, grouped by the sanitized op name."""

    def __init__(self, states: list[dict]):
        self.files: list[DumpFileRef] = []
        self.warnings: list[str] = []
        by_op: dict[str, list[int]] = defaultdict(list)
        for state in states:
            base = state["dir"]
            self.warnings.extend(state["warnings"])
            for name, op_type, op_name, task, stream, ts, ffts, stats in state["rows"]:
                by_op[op_name].append(len(self.files))
                self.files.append(
                    DumpFileRef(
                        os.path.join(base, name), op_type, op_name, task, stream, ts, ffts, stats
                    )
                )
        files = self.files
        self._by_op = {
            k: sorted(v, key=lambda i: (files[i].timestamp, files[i].path))
            for k, v in by_op.items()
        }
        self._by_file_name: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.files)

    def for_op(self, sanitized_name: str, include_stats: bool = False) -> list[DumpFileRef]:
        """Dump files of an op, oldest first (every timestamp, every step)."""
        refs = [self.files[i] for i in self._by_op.get(sanitized_name, ())]
        return refs if include_stats else [r for r in refs if not r.stats_csv]

    def op_names(self) -> list[str]:
        return list(self._by_op)

    def by_file_name(self, file_name: str) -> DumpFileRef | None:
        if self._by_file_name is None:
            self._by_file_name = {f.file_name: i for i, f in enumerate(self.files)}
        i = self._by_file_name.get(file_name)
        return None if i is None else self.files[i]

    def file_names(self) -> list[str]:
        return [f.file_name for f in self.files]
