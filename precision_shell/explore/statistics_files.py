"""Statistics dump files (`dump_data: stats`) as `ni` and `pt` show them: the rows the device
recorded for each input and output, on the tensor as stored (a padded layout's zeros
included). There are no values to preview or decode; `vc` compares them."""

from __future__ import annotations

import os
from dataclasses import dataclass

from precision_shell.errors import PrecisionError
from precision_shell.explore.user_paths import find_user_file
from precision_shell.formats.dump_names import is_statistics_dump_name
from precision_shell.formats.stats_dump import StatsRow, read_stats_dump
from precision_shell.workspace.workspace import Workspace

NOTE = "statistics dump: values the device recorded on the stored layout (pads included)"


@dataclass(frozen=True)
class StatisticsFile:
    """`pt` on a statistics dump file (or an op that has only one)."""

    path: str
    rows: list[StatsRow]
    note: str = NOTE


def _workspace_file(ws: Workspace, name: str, rank: str | None, step: str | None) -> str | None:
    """A statistics dump by its file name, in the (rank, step) dump dir given."""
    for run in ws.runs:
        ref = run.file_by_name(name)
        if ref is None or not ref.stats_csv:
            continue
        ref = run.file_in_slice(name, rank, step)  # names repeat across ranks
        if ref is not None:
            return ref.path
    return None


def find_statistics_file(
    ws: Workspace | None, target: str, rank: str | None = None, step: str | None = None
) -> str | None:
    """The statistics dump `target` names: a path, a file name in the workspace, or an op
    whose only dumps are statistics; None when it names something else."""
    path = find_user_file(target, ws.root if ws is not None else None)
    if path is not None:
        return str(path) if is_statistics_dump_name(path.name) else None
    if ws is None:
        return None
    found = _workspace_file(ws, os.path.basename(target), rank, step)
    if found is not None:
        return found
    for run in ws.runs:
        if run.find(target) is None:
            continue
        if ws.dump_files(run, target, rank, step):
            return None  # a tensor dump exists: pt shows the tensors
        refs = ws.dump_files(run, target, rank, step, statistics=True)
        if refs:
            return refs[-1].path
    return None


def read_statistics_file(path: str) -> StatisticsFile:
    """Raises PrecisionError (FormatError) naming the file when it is not a statistics dump."""
    dump = read_stats_dump(path)
    if not dump.rows:
        raise PrecisionError(f"{path}: a statistics dump without rows")
    return StatisticsFile(path, [*dump.inputs, *dump.outputs])
