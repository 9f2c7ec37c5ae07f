"""One side of a statistics compare read as statistics rows: a statistics dump as recorded, or
a tensor dump whose tensors' statistics are computed here in float64, on the tensors as stored
(a padded layout's zeros included, as the device's statistics are), so either kind of dump
stands against the other with the same rule (`judge.judge_rows`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from precision_shell.compare.statistics.values import statistics_of
from precision_shell.errors import PrecisionError
from precision_shell.formats.dtypes import dtype_name
from precision_shell.formats.layouts import format_name
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.formats.stats_dump import StatsDump, StatsRow, read_stats_dump

STATS = "stats"  # a statistics dump file (`....csv`)
TENSORS = "dump"  # a tensor dump file


@dataclass(frozen=True)
class SideStatistics:
    """The statistics rows of one dump file; `problems`: slots whose tensor does not decode."""

    dump: StatsDump
    problems: dict[tuple[str, int], str] = field(default_factory=dict)

    def row(self, kind: str, index: int) -> StatsRow | str:
        """The row of a slot, or why there is none."""
        problem = self.problems.get((kind, index))
        if problem is not None:
            return problem
        row = self.dump.row(kind, index)
        return row if row is not None else f"{self.dump.path}: no {kind} {index}"


def tensor_statistics(path: str) -> SideStatistics:
    """The statistics a statistics dump of this tensor dump would hold (float64, as stored)."""
    header = read_dump_header(path)
    rows = []
    problems: dict[tuple[str, int], str] = {}
    for meta in (*header.inputs, *header.outputs):
        try:
            values = statistics_of(read_tensor(header, meta.kind, meta.index), path)
        except PrecisionError as exc:
            values = {}
            problems[(meta.kind, meta.index)] = str(exc)
        rows.append(
            StatsRow(
                kind=meta.kind,
                index=meta.index,
                dtype=dtype_name(meta.dtype),
                format=format_name(meta.format),
                shape=meta.shape,
                data_size=meta.size,
                values=values,
            )
        )
    return SideStatistics(StatsDump(path, tuple(rows), ()), problems)


def side_statistics(path: str, kind: str) -> SideStatistics:
    """A dump file of `kind` (`STATS` or `TENSORS`) as statistics rows; PrecisionError naming
    the file when it does not read."""
    if kind == STATS:
        return SideStatistics(read_stats_dump(path))
    return tensor_statistics(path)
