"""`vcs` on a statistics compare: its deviating outputs and the suspects its summary holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    if summary is not None:
        view.partial = summary.primary.partial_text
        if summary.diagnosis is not None:
            view.diagnosed = True
            view.suspects = summary.diagnosis.root_causes
    return view
