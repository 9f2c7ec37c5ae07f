"""`vcs` on a statistics compare: its deviating outputs and the suspects its summary holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.results.diagnosed_slice import diagnosed_slice
from precision_shell.compare.results.slice_results import (
    RankStepTable,
    entry_for_csv,
    partial_text,
    slice_results,
)
from precision_shell.compare.results.summary import summary_beside
from precision_shell.compare.statistics.table import StatisticsRow, read_statistics_csv
from precision_shell.errors import PrecisionError


@dataclass
class StatisticsView:
    csv_path: Path
    deviating: list[StatisticsRow]  # outputs, execution order, up to the limit
    deviating_total: int
    outputs_compared: int
    suspects: list[dict[str, Any]] = field(default_factory=list)  # from the summary's diagnosis
    diagnosed: bool = False
    partial: str | None = None
    # the (rank, step) shown, and the one `ac -c` diagnosed when that is another
    slice_label: str = ""
    diagnosed_elsewhere: str = ""
    ranks: RankStepTable | None = None  # several (rank, step) compared: each one's count
    notes: list[str] = field(default_factory=list)  # e.g. the compare predates its inputs


def statistics_view(csv_path: Path, limit: int | None) -> StatisticsView:
    rows = read_statistics_csv(csv_path)
    outputs = [r for r in rows if r.kind == "output" and r.compared]
    deviating = [r for r in outputs if r.deviates]
    try:
        summary = summary_beside(csv_path)
    except PrecisionError:
        summary = None
    view = StatisticsView(
        csv_path, deviating[:limit] if limit else deviating, len(deviating), len(outputs)
    )
    if summary is None:
        return view
    view.partial = partial_text(summary, csv_path)
    results = slice_results(summary)
    shown = entry_for_csv(results, csv_path)
    if shown is not None and len(results) > 1:
        view.slice_label = shown.label
    if summary.diagnosis is not None:
        here = diagnosed_slice(summary)
        if here is None or shown is None or here == (shown.rank, shown.step):
            view.diagnosed = True
            view.suspects = summary.diagnosis.root_causes
        else:
            view.diagnosed_elsewhere = f"rank {here[0]} step {here[1]}"
    return view
