"""The newest compare result of a workspace, as `ni` uses it: rows by op, and the root cause.

Read once per result file (kept while its mtime is unchanged)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from precision_shell.compare.results.csv_reader import CsvRow, find_result_csv, read_result_csv
from precision_shell.errors import PrecisionError
from precision_shell.workspace.workspace import Workspace

GREEN, YELLOW, RED, GREY = "#c8e6c9", "#fff59d", "#ef9a9a", "#eeeeee"
NEAR_MARGIN = 0.01  # cosine within this above the threshold is "near" it (yellow)


@dataclass
class LatestCompare:
    csv_path: Path
    rows_by_op: dict[str, list[CsvRow]]
    root_cause: str | None

    def output_cosine(self, op: str) -> float | None:
        """Worst output cosine of an op; -inf when its output holds NaN/inf; None if not compared."""
        worst = None
        for row in self.rows_by_op.get(op, ()):
            if row.kind != "output":
                continue
            value = (
                -math.inf
                if row.nonfinite("CosineSimilarity")
                else row.metrics.get("CosineSimilarity", math.nan)
            )
            if math.isnan(value):
                continue
            worst = value if worst is None else min(worst, value)
        return worst

    def color(self, op: str, threshold: float) -> str:
        cos = self.output_cosine(op)
        if cos is None:
            return GREY
        if cos < threshold:
            return RED
        return YELLOW if cos < threshold + NEAR_MARGIN else GREEN


_CACHE: dict[str, tuple[int, LatestCompare]] = {}


def latest_compare(ws: Workspace) -> LatestCompare | None:
    """The newest `vc` result under temp/vector_compare/, or None when there is none."""
    base = ws.layout.temp_dir / "vector_compare"
    if not base.is_dir():
        return None
    try:
        path = find_result_csv(base)
    except PrecisionError:
        return None
    mtime = path.stat().st_mtime_ns
    hit = _CACHE.get(str(path))
    if hit is not None and hit[0] == mtime:
        return hit[1]
    table = read_result_csv(path)
    rows: dict[str, list[CsvRow]] = {}
    for row in table.rows:
        rows.setdefault(row.op_name, []).append(row)
    root = None
    summary = path.parent / "summary.json"
    try:
        causes = json.loads(summary.read_text(encoding="utf-8")).get("root_causes") or []
        root = causes[0]["op"] if causes else None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        root = None
    latest = LatestCompare(path, rows, root)
    _CACHE[str(path)] = (mtime, latest)
    return latest
