"""Everything the report shows, gathered from a result CSV and the `summary.json` beside it.

The summary is optional (an msaccucmp CSV has none): the counts are then taken from the CSV
and the page says the compare was not diagnosed.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.results.csv_reader import CsvRow, read_result_csv
from precision_shell.errors import FormatError
from precision_shell.report.points import PlotPoint, cosine_of, is_output, output_points

SUMMARY_NAME = "summary.json"


@dataclass(frozen=True)
class SummaryFile:
    """The parts of `summary.json` the report uses."""

    path: Path
    payload: dict[str, Any]

    @property
    def diagnosed(self) -> bool:
        """`ac -c` ran on this compare (vc alone writes an empty `root_causes`, no `advice`)."""
        return "advice" in self.payload

    def root_causes(self) -> list[dict[str, Any]]:
        return self._dicts("root_causes")

    def advice(self) -> list[dict[str, Any]]:
        return self._dicts("advice")

    def cosine_threshold(self) -> float | None:
        value = (self.payload.get("thresholds") or {}).get("cosine")
        return float(value) if isinstance(value, int | float) else None

    def _dicts(self, key: str) -> list[dict[str, Any]]:
        value = self.payload.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise FormatError(self.path, f"{key!r} is not a list of objects")
        return value


def read_summary(path: Path) -> SummaryFile:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise FormatError(path, "not a compare summary (expected a JSON object)")
    return SummaryFile(path, payload)


def summary_beside(csv_path: Path) -> SummaryFile | None:
    path = csv_path.parent / SUMMARY_NAME
    return read_summary(path) if path.is_file() else None


@dataclass
class ReportData:
    csv_path: Path
    header: list[str]
    rows: list[CsvRow]
    cells: dict[int, list[str]]  # CsvRow.line -> the row's raw cells, every column
    metric_columns: list[str]
    cosine_threshold: float
    points: list[PlotPoint]
    summary: SummaryFile | None
    workspace: str
    created: str  # when the compare ran (summary), else the CSV's modification time
    total_rows: int
    compared: int
    failed: int
    root_causes: list[dict[str, Any]] = field(default_factory=list)
    advice: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def root_cause(self) -> str | None:
        return self.root_causes[0].get("op") if self.root_causes else None

    @property
    def diagnosed(self) -> bool:
        return self.summary is not None and self.summary.diagnosed

    def fails(self, row: CsvRow) -> bool:
        """A compared output below the cosine threshold or holding NaN/inf."""
        cos = cosine_of(row)
        return (
            is_output(row) and cos is not None and (math.isnan(cos) or cos < self.cosine_threshold)
        )

    def rows_of(self, op: str) -> list[CsvRow]:
        return [r for r in self.rows if r.op_name == op]


def raw_cells(csv_path: Path) -> dict[int, list[str]]:
    """Every record's cells by the record number `read_result_csv` gives it (header = 1), so
    the table can show the columns CsvRow does not keep (both DataTypes, Address)."""
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as fh:
            return {n: cells for n, cells in enumerate(csv.reader(fh), start=1) if n > 1}
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise FormatError(csv_path, f"unreadable CSV: {exc}") from None


def _count(payload: dict[str, Any], key: str, fallback: int) -> int:
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback


def gather_report(csv_path: Path, default_threshold: float) -> ReportData:
    """Read the CSV and its summary; the summary's threshold wins over the default."""
    table = read_result_csv(csv_path)
    summary = summary_beside(csv_path)
    payload = summary.payload if summary is not None else {}
    threshold = summary.cosine_threshold() if summary else None
    if threshold is None:
        threshold = default_threshold
    causes = summary.root_causes() if summary else []
    root = causes[0].get("op") if causes else None
    # a row is "not compared" exactly when it carries a fail reason (CompareTally's rule)
    failed_in_csv = sum(1 for r in table.rows if r.reason)
    created = payload.get("created")
    if not isinstance(created, str):
        mtime = csv_path.stat().st_mtime
        created = _dt.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
    return ReportData(
        csv_path=csv_path,
        header=table.header,
        rows=table.rows,
        cells=raw_cells(csv_path),
        metric_columns=table.metric_columns,
        cosine_threshold=threshold,
        points=output_points(table.rows, threshold, root),
        summary=summary,
        workspace=str(payload.get("workspace") or ""),
        created=created,
        total_rows=_count(payload, "rows", len(table.rows)),
        compared=_count(payload, "compared", len(table.rows) - failed_in_csv),
        failed=_count(payload, "failed", failed_in_csv),
        root_causes=causes,
        advice=summary.advice() if summary else [],
        warnings=list(table.warnings),
    )
