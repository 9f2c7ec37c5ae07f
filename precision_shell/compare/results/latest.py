"""The newest compare result of a workspace, as `ni` and its subgraph colours use it: rows by
op, the rule it was judged by, and the root cause when a diagnosis ran; of its primary CSV or
of the CSV of one (rank, step) it compared.

Read once per result file (kept while its mtime and size are unchanged)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.columns import ResultColumns, load_result_columns
from precision_shell.compare.results.columns_cache import CACHE_DIR
from precision_shell.compare.results.computed import computed_metrics
from precision_shell.compare.results.diagnosed_slice import diagnosed_slice
from precision_shell.compare.results.run_state import pick_result_csv
from precision_shell.compare.results.schema import ResultRow, ResultTable, is_statistics_csv
from precision_shell.compare.results.slice_choice import default_csv
from precision_shell.compare.results.slice_results import (
    RunSlices,
    SliceResult,
    entry_csv,
    entry_for_csv,
    shown_slice_label,
)
from precision_shell.compare.results.summary import RunSummary, judging_rule, summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.listing_text import some_of
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
    entry: SliceResult | None = None  # the (rank, step) compare of this CSV, when listed
    # whose rows these are (`rank 2 step 0`) when its run has other (rank, step)s, compared
    # or left out (`slice_results.shown_slice_label`); else empty
    slice_label: str = ""
    # its rows are partial (a vc interrupted, still running, killed or crashed), newer such
    # runs skipped
    notes: list[str] = field(default_factory=list)
    # the compare of these rows stopped before its end: `rank 0 step 1's compare is partial
    # (6 of 14 files)`, and why (what continues it); None when it is complete
    partial: tuple[str, str] | None = None
    computed: list[str] | None = None  # the metrics it computed (`computed_metrics`)

    @classmethod
    def of(
        cls, csv_path: Path, rows: Iterable[ResultRow], summary: RunSummary | None
    ) -> LatestCompare:
        """A compare's rows grouped by their device op."""
        by_op: dict[str, list[ResultRow]] = {}
        every: list[ResultRow] = []
        for row in rows:
            by_op.setdefault(row.op_name, []).append(row)
            every.append(row)
        columns = list(every[0].texts) if every else []
        table = ResultTable(csv_path, [], every, columns)
        return cls(csv_path, by_op, summary, computed=computed_metrics(summary, table))

    @property
    def root_cause(self) -> str | None:
        """The diagnosis' first root cause; None when none was found or none ran."""
        if self.summary is None or self.summary.diagnosis is None:
            return None
        return self.summary.diagnosis.root_cause

    @property
    def root_cause_slice(self) -> str:
        """Where the root cause was found (`rank 2 step 0`) when that is another (rank, step)
        than these rows' (their colours and the op's rows do not show it); else empty."""
        if self.root_cause is None:
            return ""
        where = diagnosed_slice(self.summary)
        if where is None or self.entry is None or where == (self.entry.rank, self.entry.step):
            return ""
        return f"rank {where[0]} step {where[1]}"

    @property
    def root_cause_here(self) -> str | None:
        """The root cause when it was found in these rows' (rank, step) (or in the only one)."""
        return None if self.root_cause_slice else self.root_cause

    def not_reached_text(self, op: str) -> str | None:
        """Why `op` has no rows when the compare stopped before its end: it did not reach
        the op yet; None when it has rows or the compare is complete."""
        if self.partial is None or self.rows_by_op.get(op):
            return None
        what, cause = self.partial
        return f"{what} and did not reach this op yet: {cause}"

    def rule_or(self, fallback: ThresholdRule) -> ThresholdRule:
        """The rule this compare is judged by (`judging_rule`, `fallback` the settings');
        limits on metrics it did not compute left out."""
        return judging_rule(self.summary, fallback).of_metrics(self.computed)

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


_CACHE: dict[str, tuple[tuple[int, int, int | None], ColumnRowsByOp]] = {}


def latest_compare(
    ws: Workspace, rank: str | None = None, step: str | None = None
) -> LatestCompare | SliceNotCompared | None:
    """The newest `vc` result under temp/vector_compare/ (the newest finished one: see
    run_state), or None when there is none: its primary CSV, or with `rank` and `step` the CSV
    of exactly that (rank, step) (its summary's `results`); SliceNotCompared when it did not
    compare that one."""
    base = ws.layout.temp_dir / "vector_compare"
    if not base.is_dir():
        return None
    try:
        pick = pick_result_csv(base, statistics=True)
    except PrecisionError:
        return None
    path = pick.csv_path
    if is_statistics_csv(path):
        return None  # the newest compare is a statistics one: it has no tensor metrics
    unreadable = None
    try:
        summary = summary_beside(path)
    except PrecisionError as exc:
        summary, unreadable = None, str(exc)
    slices = pick.slices(summary)  # a killed run's from its journal, as vcs reads them
    results = slices.results
    if rank is not None and step is not None:
        wanted = next((r for r in results if r.rank == rank and r.step == step), None)
        if wanted is None and unreadable is not None and not results:
            return SliceNotCompared(
                f"{unreadable}: which (rank, step)s the latest compare ({path.parent}) holds is "
                f"not known (vc --rank {rank} --step {step} compares it again)"
            )
        if wanted is None:
            return SliceNotCompared(_not_compared(path, rank, step, slices, summary))
        path = entry_csv(wanted, path)
        if not path.is_file():
            return SliceNotCompared(f"{path}: the CSV of {wanted.label} is missing")
    else:
        path = default_csv(slices, path)
    upto = pick.journaled_length(path)  # an unfinished run's: its journaled rows only
    entry = entry_for_csv(results, path)
    label = shown_slice_label(slices, summary, path) or ""
    found = _load(ws, path, upto, summary, entry, label)
    if found is not None and unreadable is not None:
        found.notes.append(f"{unreadable}: its rows are read alone, without the compare's record")
    if found is not None:
        text, cause = pick.partial_state(summary, path)
        if text is not None:
            found.notes.append(f"{text}: {cause}")
            if entry is None or entry.partial:  # not a complete one of a run cut short
                found.partial = (_partial_what(entry, text), cause)
        found.notes += pick.notes("vcs")
    return found


def _partial_what(entry: SliceResult | None, text: str) -> str:
    """`rank 0 step 1's compare is partial (6 of 14 files)`: the compare of the rows shown;
    the run's `partial: ...` text when the files of that one are not known."""
    if entry is None or entry.files_done is None or entry.files_total is None:
        return f"the compare is {text}"
    return (
        f"{entry.label}'s compare is partial ({entry.files_done:,} of {entry.files_total:,} files)"
    )


@dataclass(frozen=True)
class SliceNotCompared:
    """The newest compare has no rows of the (rank, step) asked for, and why (one line)."""

    message: str


def _not_compared(
    primary: Path, rank: str, step: str, slices: RunSlices, summary: RunSummary | None
) -> str:
    if (rank, step) in slices.empty and (rank, step) not in slices.undumped:
        why = _nothing_why(summary, rank, step)
        return (
            f"the latest compare ({primary.parent}) found nothing to compare in rank {rank} "
            f"step {step}" + (f": {why}" if why else "")
        )
    if (rank, step) in slices.not_begun:
        return (
            f"the latest compare ({primary.parent}) did not begin rank {rank} step {step}: it "
            f"was cut short before it; vc --resume -o {primary.parent} compares it"
        )
    results = slices.results
    if slices.known is not None and (rank, step) not in slices.known:
        return (
            f"the latest compare ({primary.parent}) predates rank {rank} step {step}: it was "
            f"dumped after that compare ran (vc --rank {rank} --step {step} compares it)"
        )
    there = some_of([r.label for r in results], 4)
    return (
        f"the latest compare ({primary.parent}) did not compare rank {rank} step {step}; it "
        f"compared {there or 'no (rank, step): two dump dirs'} (vc --rank {rank} --step {step} "
        "compares it)"
    )


def _nothing_why(summary: RunSummary | None, rank: str, step: str) -> str | None:
    """The reason the compare recorded for having nothing to compare in (rank, step)."""
    for entry in summary.nothing_to_compare if summary is not None else []:
        if (str(entry.get("rank")), str(entry.get("step"))) == (rank, step):
            why = entry.get("reason")
            return why if isinstance(why, str) and why else None
    return None


def _load(
    ws: Workspace,
    path: Path,
    upto: int | None,
    summary: RunSummary | None,
    entry: SliceResult | None,
    label: str,
) -> LatestCompare | None:
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size, upto)
    hit = _CACHE.get(str(path))
    if hit is not None and hit[0] == key:
        rows = hit[1]
    else:
        columns = load_result_columns(path, lambda: ws.output_dir(CACHE_DIR), upto)
        rows = ColumnRowsByOp(columns)
        _CACHE[str(path)] = (key, rows)
    # the summary is read each time: `ac -c` records its diagnosis after the compare
    return LatestCompare(path, rows, summary, entry, label)
