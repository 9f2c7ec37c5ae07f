"""The newest compare result of a workspace, as `ni` and its subgraph colours use it: rows by
op, the rule it was judged by, and the root cause when a diagnosis ran.

Read once per result file (kept while its mtime and size are unchanged)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.columns import ResultColumns, load_result_columns
from precision_shell.compare.results.columns_cache import CACHE_DIR
from precision_shell.compare.results.schema import ResultRow, find_result_csv, is_statistics_csv
from precision_shell.compare.results.summary import RunSummary, summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.workspace.workspace import Workspace

GREEN, YELLOW, RED, GREY = "#c8e6c9", "#fff59d", "#ef9a9a", "#eeeeee"
NEAR_MARGIN = 0.01  # cosine within this above the threshold is "near" it (yellow)


class ColumnRowsByOp(Mapping[str, list[ResultRow]]):
    """Op -> its rows (file order), built from the columns only for the ops asked for."""

    def __init__(self, columns: ResultColumns) -> None:
        self._columns = columns
        self._codes: dict[str, int] | None = None
        self._rows: dict[str, list[ResultRow]] = {}

    def _code_of(self) -> dict[str, int]:
        if self._codes is None:
            codes: dict[str, int] = {}
            for k, name in enumerate(self._columns.op_names.values()):
                codes.setdefault(name, k)  # names are distinct; the first would win
            self._codes = codes
        return self._codes

    def __getitem__(self, op: str) -> list[ResultRow]:
        hit = self._rows.get(op)
        if hit is None:
            code = self._code_of()[op]  # KeyError: not an op of this compare
            rows = self._columns.rows_by_op([code])[code]
            hit = self._rows[op] = self._columns.rows_at(rows)
        return hit

    def __iter__(self) -> Iterator[str]:
        return iter(self._code_of())

    def __len__(self) -> int:
        return len(self._code_of())


@dataclass
class LatestCompare:
    csv_path: Path
    rows_by_op: Mapping[str, list[ResultRow]]
    summary: RunSummary | None

    @classmethod
    def of(
        cls, csv_path: Path, rows: Iterable[ResultRow], summary: RunSummary | None
    ) -> LatestCompare:
        """A compare's rows grouped by their device op."""
        by_op: dict[str, list[ResultRow]] = {}
        for row in rows:
            by_op.setdefault(row.op_name, []).append(row)
        return cls(csv_path, by_op, summary)

    @property
    def root_cause(self) -> str | None:
        """The diagnosis' first root cause; None when none was found or none ran."""
        if self.summary is None or self.summary.diagnosis is None:
            return None
        return self.summary.diagnosis.root_cause

    def rule_or(self, fallback: ThresholdRule) -> ThresholdRule:
        """The rule this compare was judged by (its summary's), else `fallback`."""
        return self.summary.rule if self.summary is not None else fallback

    def output_cosine(self, op: str) -> float | None:
        """Worst output cosine of an op; -inf when its output holds NaN/inf; None if not compared."""
        worst = None
        for row in self.rows_by_op.get(op, ()):
            if row.kind != "output":
                continue
            value = -math.inf if row.nonfinite(COSINE) else row.metrics.get(COSINE, math.nan)
            if math.isnan(value):
                continue
            worst = value if worst is None else min(worst, value)
        return worst

    def color(self, op: str, rule: ThresholdRule) -> str:
        """Red when an output fails the rule, yellow when its cosine is near the limit."""
        outputs = [r for r in self.rows_by_op.get(op, ()) if r.kind == "output" and r.compared]
        if not outputs:
            return GREY
        if any(rule.fails(r) for r in outputs):
            return RED
        cos = self.output_cosine(op)
        limit = rule.cosine
        near = cos is not None and limit is not None and cos < limit + NEAR_MARGIN
        return YELLOW if near else GREEN


_CACHE: dict[str, tuple[tuple[int, int], LatestCompare]] = {}


def latest_compare(ws: Workspace) -> LatestCompare | None:
    """The newest `vc` result under temp/vector_compare/, or None when there is none."""
    base = ws.layout.temp_dir / "vector_compare"
    if not base.is_dir():
        return None
    try:
        path = find_result_csv(base, statistics=True)
        st = path.stat()
    except (PrecisionError, OSError):
        return None
    if is_statistics_csv(path):
        return None  # the newest compare is a statistics one: it has no tensor metrics
    key = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(str(path))
    if hit is not None and hit[0] == key:
        return hit[1]
    columns = load_result_columns(path, lambda: ws.output_dir(CACHE_DIR))
    try:
        summary = summary_beside(path)
    except PrecisionError:
        summary = None
    latest = LatestCompare(path, ColumnRowsByOp(columns), summary)
    _CACHE[str(path)] = (key, latest)
    return latest
