"""Everything the report shows, gathered from a result CSV and the `summary.json` beside it.

Counts come from the CSV itself (the store's row rules); the summary, optional (an msaccucmp
CSV has none), gives the threshold rule, whether the run is partial, and the diagnosis when
one ran: without it the page says the compare was not diagnosed.
"""

from __future__ import annotations

import csv
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.results.schema import ResultRow, read_result_csv
from precision_shell.compare.results.slice_results import (
    RankStepTable,
    diagnosed_slice,
    entry_for_csv,
    rank_step_table,
    slice_results,
)
from precision_shell.compare.results.summary import RunSummary, summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import FormatError
from precision_shell.report.points import PlotPoint, output_points


@dataclass
class ReportData:
    csv_path: Path
    header: list[str]
    rows: list[ResultRow]
    cells: dict[int, list[str]]  # ResultRow.line -> the row's raw cells, every column
    metric_columns: list[str]
    rule: ThresholdRule
    points: list[PlotPoint]
    summary: RunSummary | None
    workspace: str
    created: str  # when the compare ran (summary), else the CSV's modification time
    total_rows: int
    compared: int
    constant_inputs: int
    failed: int
    root_causes: list[dict[str, Any]] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ranks: RankStepTable | None = None  # several (rank, step) compared: each one's verdict
    slice_label: str | None = None  # "rank 1 step 0": the compare this page is of
    root_cause_slice: str | None = None  # the root cause was found in another (rank, step)

    @property
    def root_cause(self) -> str | None:
        op = self.root_causes[0].get("op") if self.root_causes else None
        return op if isinstance(op, str) else None

    @property
    def diagnosed(self) -> bool:
        """A diagnosis ran on this compare (`ac -c`); `vc` alone writes none."""
        return self.summary is not None and self.summary.diagnosis is not None

    @property
    def partial(self) -> str | None:
        return self.summary.primary.partial_text if self.summary is not None else None

    @property
    def cosine_threshold(self) -> float:
        cos = self.rule.cosine
        return cos if cos is not None else 1.0

    def fails(self, row: ResultRow) -> bool:
        """A compared output the threshold rule fails."""
        return row.kind == "output" and self.rule.fails(row)

    def rows_of(self, op: str) -> list[ResultRow]:
        return [r for r in self.rows if r.op_name == op]


def raw_cells(csv_path: Path) -> dict[int, list[str]]:
    """Every record's cells by the record number `read_result_csv` gives it (header = 1), so
    the table can show the columns ResultRow does not keep (both DataTypes, Address)."""
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as fh:
            return {n: cells for n, cells in enumerate(csv.reader(fh), start=1) if n > 1}
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise FormatError(csv_path, f"unreadable CSV: {exc}") from None


def gather_report(csv_path: Path, fallback: ThresholdRule) -> ReportData:
    """Read the CSV and its summary; the summary's rule wins over `fallback` (the settings')."""
    table = read_result_csv(csv_path)
    summary = summary_beside(csv_path)
    rule = summary.rule if summary is not None else fallback
    diagnosis = summary.diagnosis if summary is not None else None
    causes = diagnosis.root_causes if diagnosis is not None else []
    shown = entry_for_csv(slice_results(summary), csv_path)
    ranks = rank_step_table(summary, csv_path)
    where = diagnosed_slice(causes[0] if causes else None)
    elsewhere = None
    if where is not None and shown is not None and where != (shown.rank, shown.step):
        # the diagnosis belongs to another (rank, step) compare, not to these rows
        elsewhere, causes = f"rank {where[0]} step {where[1]}", []
    root = causes[0].get("op") if causes else None
    root = root if isinstance(root, str) else None
    compared = sum(1 for r in table.rows if r.compared)
    constants = sum(1 for r in table.rows if r.constant_input)
    created = summary.created if summary is not None else ""
    if not created:
        mtime = csv_path.stat().st_mtime
        created = _dt.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
    return ReportData(
        csv_path=csv_path,
        header=table.header,
        rows=table.rows,
        cells=raw_cells(csv_path),
        metric_columns=table.metric_columns,
        rule=rule,
        points=output_points(table.rows, rule, root),
        summary=summary,
        workspace=summary.workspace if summary is not None else "",
        created=created,
        total_rows=len(table.rows),
        compared=compared,
        constant_inputs=constants,
        failed=len(table.rows) - compared - constants,
        root_causes=causes,
        advice=diagnosis.advice if diagnosis is not None else [],
        warnings=list(table.warnings),
        ranks=ranks,
        slice_label=shown.label if ranks is not None and shown is not None else None,
        root_cause_slice=elsewhere,
    )
