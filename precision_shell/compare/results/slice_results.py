"""The (rank, step) compares of one `vc` run, as its summary's `results` lists them: the
rank x step table `vcs`, `report` and `ac` show, each entry's CSV, and whether a compare was
cut short (`slice_choice`: which CSV `--rank/--step` picks; `diagnosed_slice`: which compare
the recorded diagnosis is about).

`results[].failed` counts failing outputs (compared outputs the rule fails), not the rows
that could not be compared (`not_compared.failed`): the key stays for its readers, every
view calls it "failing outputs".

The table's counts are the compare's, under the rule it recorded; a look under other
thresholds (`vcs -c/--metric`) counts them again (`recount`), or, past `RECOUNT_MAX_ROWS`
rows, says they are the compare's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from precision_shell.compare.results.columns import KIND_OUTPUT, ResultColumns
from precision_shell.compare.results.summary import CompareRecord, RunSummary, run_files_text
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.listing_text import in_workspace, some_of
from precision_shell.workspace.run_index import RunIndex
from precision_shell.workspace.workspace import Workspace, number_order

# Rows of the other compares a look under its own thresholds reads again at most (~22 s per
# 1M rows without their columns cache, docs/SCALING.md); past it the table stays the compare's.
RECOUNT_MAX_ROWS = 500_000
NOT_DUMPED = "not dumped"
NOT_COMPARED = "not compared"
NOT_COMPARED_MEANS = "dumped, but outside this vc's --rank/--step"
DUMPED_AFTER = "dumped after this compare"
DUMPED_AFTER_MEANS = "no such dump dir when it ran; vc --rank R --step S (or all) compares it"
NOTHING_TO_COMPARE = "nothing to compare"
NOT_BEGUN = "not begun"


def first_wrong_order(step: str, position: int, rank: str) -> tuple:
    """The order in which (rank, step) compares go wrong, for `ac -c` to show the first: the
    step, then the execution position of that compare's best (top-ranked) root cause or
    suspect, then the rank. One rule for tensor and statistics compares."""
    return (number_order(step), position, number_order(rank))


@dataclass(frozen=True)
class SliceResult:
    """One entry of `results`: the compare of one (rank, step) dump dir."""

    rank: str
    step: str
    csv: str
    graph: str
    rows: int
    failed: int  # failing outputs
    first_failed_op: str | None
    partial: bool = False
    against: str | None = None  # `vc --across ranks`: the reference rank, not the benchmark
    not_compared: int = 0  # rows that could not be compared (an unreadable file...)
    files_done: int | None = None  # dump files compared, of `files_total` (None: not known)
    files_total: int | None = None
    right: str | None = None  # its benchmark dir (tf/dump/, or a rank's or step's)
    # `listing_digest` of each dir it read, by its path in the workspace, as it ended (None:
    # not recorded, an older vc): input_changes compares the dirs with them
    listings: tuple[tuple[str, str], ...] | None = None
    unmatched: int = 0  # dump files it could not place in the graph
    unmatched_first: str = ""  # the first of them, and why

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> SliceResult:
        first = entry.get("first_failed_op")
        failed = entry.get("failed")
        rows = entry.get("rows")
        not_compared = entry.get("not_compared")
        done, total = entry.get("files_done"), entry.get("files_total")
        return cls(
            rank=str(entry.get("rank")),
            step=str(entry.get("step")),
            csv=str(entry.get("csv") or ""),
            graph=str(entry.get("graph") or ""),
            rows=rows if isinstance(rows, int) else 0,
            failed=failed if isinstance(failed, int) else 0,
            first_failed_op=first if isinstance(first, str) else None,
            partial=bool(entry.get("partial", False)),
            against=str(entry["against"]) if entry.get("against") is not None else None,
            not_compared=not_compared if isinstance(not_compared, int) else 0,
            files_done=done if isinstance(done, int) else None,
            files_total=total if isinstance(total, int) else None,
            right=entry["right"] if isinstance(entry.get("right"), str) else None,
            listings=_listings(entry.get("listings")),
            unmatched=unmatched if isinstance(unmatched := entry.get("unmatched"), int) else 0,
            unmatched_first=str(entry.get("unmatched_first") or ""),
        )

    @property
    def label(self) -> str:
        versus = f" vs rank {self.against}" if self.against is not None else ""
        return f"rank {self.rank}{versus} step {self.step}"


@dataclass
class RankStepTable:
    """Failing outputs and the first failing op of every (rank, step) compared, under `rule`
    (the compare's, or a look's own when `recounted`)."""

    results: list[SliceResult]
    shown: tuple[str, str] | None = None  # the (rank, step) whose op table is shown
    dumped: frozenset[tuple[str, str]] | None = None  # every (rank, step) dumped, when known
    rule: ThresholdRule | None = None  # the rule the counts are under
    recounted: bool = False  # counted again under the thresholds of this look
    # selected (rank, step)s with nothing to compare (summary.json `nothing_to_compare`)
    empty: frozenset[tuple[str, str]] = frozenset()
    # selected (rank, step)s the run was cut short before (summary.json `not_begun`)
    not_begun: frozenset[tuple[str, str]] = frozenset()
    counted: bool = True  # False: read from a killed run's journal, failing outputs not counted
    # every (rank, step) dump dir there was when the compare ran (compared, selected or left
    # out: `RunSlices.known`); None: not known (a killed run's journal, `vc --across ranks`)
    known: frozenset[tuple[str, str]] | None = None
    # of `empty`, those selected (a step given with every rank) that the rank never dumped
    undumped: frozenset[tuple[str, str]] = frozenset()

    def missing(self, rank: str, step: str) -> str | None:
        """Why (rank, step) has no entry: `NOTHING_TO_COMPARE` (selected, no dump of its
        graph), `NOT_BEGUN` (selected, the run cut short before it), `NOT_DUMPED`,
        `DUMPED_AFTER` (no such dump dir when the compare ran), `NOT_COMPARED` (dumped, outside
        the vc's --rank/--step), or None when the dumps are not known."""
        if (rank, step) in self.undumped:
            return NOT_DUMPED
        if (rank, step) in self.empty:
            return NOTHING_TO_COMPARE
        if (rank, step) in self.not_begun:
            return NOT_BEGUN
        if self.dumped is None:
            return None
        if (rank, step) not in self.dumped:
            return NOT_DUMPED
        return DUMPED_AFTER if (rank, step) in self.dumped_after else NOT_COMPARED

    @property
    def dumped_after(self) -> frozenset[tuple[str, str]]:
        """The (rank, step)s dumped now that were not there when the compare ran."""
        if self.dumped is None or self.known is None:
            return frozenset()
        return self.dumped - self.known

    def _steps_without_column(self) -> list[str]:
        """Steps dumped (by some rank shown) that have no column: no rank was compared there."""
        if self.dumped is None:
            return []
        shown, ranks = set(self.steps), set(self.ranks)
        left = {s for r, s in self.dumped if r in ranks and s not in shown}
        return sorted(left, key=number_order)

    @property
    def omitted_steps(self) -> list[str]:
        """Steps without a column that were dumped when the compare ran: outside its --step."""
        new = set(self.new_steps)
        return [s for s in self._steps_without_column() if s not in new]

    @property
    def new_steps(self) -> list[str]:
        """Steps without a column that no rank shown had dumped when the compare ran."""
        ranks = set(self.ranks)
        return [
            step
            for step in self._steps_without_column()
            if all(
                (r, s) in self.dumped_after
                for r, s in self.dumped or ()
                if s == step and r in ranks
            )
        ]

    def omitted_lines(self) -> list[str]:
        """The notes under the table on the steps dumped that have no column, and why."""
        lines = [omitted_steps_text(self.omitted_steps)] if self.omitted_steps else []
        if self.new_steps:
            lines.append(omitted_steps_text(self.new_steps, DUMPED_AFTER))
        return lines

    def benchmark_dir_lines(self) -> list[str]:
        """`against tf/dump/step1/: rank 0 step 1, rank 1 step 1`, one line per benchmark dir,
        when the compares of this table were against more than one; else []."""
        return [
            f"against {dir_in_workspace(directory)}: {some_of(labels)}"
            for directory, labels in self.benchmark_dirs()
        ]

    def benchmark_dirs(self) -> list[tuple[str, list[str]]]:
        """(benchmark dir, the labels of the compares against it), when the compares of
        this table were against more than one (tf/dump/ and rank or step dirs); else []."""
        by_dir: dict[str, list[str]] = {}
        for entry in self.results:
            if entry.right is not None and entry.against is None:
                by_dir.setdefault(entry.right, []).append(entry.label)
        return list(by_dir.items()) if len(by_dir) > 1 else []

    @property
    def dumped_not_compared(self) -> bool:
        """Some cell of the table is `NOT_COMPARED` (its legend is needed)."""
        return any(
            self.cell(r, s) is None and self.missing(r, s) == NOT_COMPARED
            for r in self.ranks
            for s in self.steps
        )

    @property
    def ranks(self) -> list[str]:
        """The ranks compared (or selected), and those dumped only after the compare ran."""
        others = self.empty | self.not_begun | self.dumped_after
        return sorted({r.rank for r in self.results} | {r for r, _ in others}, key=number_order)

    @property
    def steps(self) -> list[str]:
        others = self.empty | self.not_begun
        return sorted({r.step for r in self.results} | {s for _, s in others}, key=number_order)

    @property
    def against(self) -> str | None:
        """The reference rank of a `vc --across ranks` result (None: against the benchmark)."""
        return next((r.against for r in self.results if r.against is not None), None)

    def cell(self, rank: str, step: str) -> SliceResult | None:
        return next((r for r in self.results if r.rank == rank and r.step == step), None)


def omitted_steps_text(steps: list[str], why: str = NOT_COMPARED_MEANS) -> str:
    """The note under a rank x step table whose columns leave out dumped steps."""
    which = f"step {steps[0]}" if len(steps) == 1 else f"steps {', '.join(steps)}"
    return f"{which} not in the table: {why}"


@dataclass(frozen=True)
class RunSlices:
    """The (rank, step)s of one `vc` run: those (partly) compared, those selected with nothing
    to compare and those the run was cut short before; from its summary, or from the journal
    of a run killed before it wrote one (`counted` False: its failing outputs are not known
    until its CSVs are read)."""

    results: list[SliceResult]
    empty: frozenset[tuple[str, str]] = frozenset()
    not_begun: dict[tuple[str, str], int] = field(default_factory=dict)  # -> its files
    rule: ThresholdRule | None = None
    counted: bool = True
    known: frozenset[tuple[str, str]] | None = None  # see RankStepTable.known
    undumped: frozenset[tuple[str, str]] = frozenset()  # see RankStepTable.undumped

    def run_text(self) -> str | None:
        """`partial: 2,410 of 4,320 files in 32 ranks and steps`: how far a cut-short run of
        several (rank, step)s got, every selected one counted (those not begun too); None when
        the run is complete or compared one (rank, step) only, or a count is not known."""
        if len(self.results) + len(self.not_begun) <= 1:
            return None
        if any(r.files_done is None or r.files_total is None for r in self.results):
            return None
        if not self.not_begun and not any(r.partial for r in self.results):
            return None
        done = sum(r.files_done or 0 for r in self.results)
        total = sum(r.files_total or 0 for r in self.results) + sum(self.not_begun.values())
        return run_files_text(done, total, len(self.results) + len(self.not_begun))

    def partial_text(self, csv_path: Path) -> str | None:
        """`run_text`, then the compare of `csv_path` in it: `...; rank 9 step 1 partial: 43 of
        135 files` (or `...; rank 3 step 0 complete`)."""
        text = self.run_text()
        if text is None:
            return None
        shown = entry_for_csv(self.results, csv_path)
        if shown is None:
            return text
        if not shown.partial:
            return f"{text}; {shown.label} complete"
        return f"{text}; {shown.label} partial: {shown.files_done:,} of {shown.files_total:,} files"


def run_slices(summary: RunSummary | None) -> RunSlices:
    """The (rank, step)s of the run `summary` records."""
    if summary is None:
        return RunSlices([])
    not_begun = {
        (str(e.get("rank")), str(e.get("step"))): e["files_total"]
        if isinstance(e.get("files_total"), int)
        else 0
        for e in summary.not_begun
    }
    results = slice_results(summary)
    empty, undumped = empty_slices(summary), undumped_slices(summary)
    known = None
    if not any(r.against is not None for r in results):  # across ranks lists no other step
        left_out = {(str(e.get("rank")), str(e.get("step"))) for e in summary.not_selected}
        compared = {(r.rank, r.step) for r in results}
        known = frozenset(compared | left_out | (empty - undumped) | set(not_begun))
    return RunSlices(results, empty, not_begun, summary.rule, known=known, undumped=undumped)


def slice_results(summary: RunSummary | None) -> list[SliceResult]:
    """The (rank, step) entries with a rank (a compare of two dirs has none)."""
    if summary is None:
        return []
    entries = [SliceResult.from_json(e) for e in summary.results if e.get("rank") is not None]
    return sorted(entries, key=lambda r: (number_order(r.step), number_order(r.rank)))


def rank_step_table(
    slices: RunSlices,
    csv_path: Path,
    dumped: frozenset[tuple[str, str]] | None = None,
) -> RankStepTable | None:
    """The table when the run selected more than one (rank, step) it compared or was cut
    short before; else None."""
    results = slices.results
    if not results or len(results) + len(slices.not_begun) <= 1:
        return None
    shown = entry_for_csv(results, csv_path)
    return RankStepTable(
        results,
        (shown.rank, shown.step) if shown else None,
        dumped,
        rule=slices.rule,
        empty=slices.empty,
        not_begun=frozenset(slices.not_begun),
        counted=slices.counted,
        known=slices.known,
        undumped=slices.undumped,
    )


def empty_slices(summary: RunSummary) -> frozenset[tuple[str, str]]:
    """The (rank, step)s a compare selected that had nothing to compare."""
    return frozenset((str(e.get("rank")), str(e.get("step"))) for e in summary.nothing_to_compare)


def undumped_slices(summary: RunSummary) -> frozenset[tuple[str, str]]:
    """Of `empty_slices`, those with no dump dir at all (a step given with every rank that a
    rank did not dump: `dumped` false in `nothing_to_compare`)."""
    return frozenset(
        (str(e.get("rank")), str(e.get("step")))
        for e in summary.nothing_to_compare
        if is_undumped(e)
    )


def is_undumped(record: dict[str, Any]) -> bool:
    """A `nothing_to_compare` entry of a (rank, step) never dumped (`dumped: false`)."""
    return record.get("dumped") is False


def nothing_to_compare_lines(empty: list[dict[str, Any]]) -> list[str]:
    """The dump dirs a compare selected that held nothing to compare, each with why: the
    (rank, step)s never dumped, then the others with their reasons. Said under `vc`, and by
    `vcs` when no rank x step table shows them (QA Q24 #13: a one-card result of `vc --step`
    lost the ranks that never dumped the step)."""
    lines = []
    undumped = [f"rank {e.get('rank')} step {e.get('step')}" for e in empty if is_undumped(e)]
    if undumped:  # a step given with every rank that some rank never dumped
        lines.append(f"not dumped: {some_of(undumped, shown=6)} (selected by --step, not compared)")
    others = [e for e in empty if not is_undumped(e)]
    if others:
        names = "; ".join(
            f"rank {e.get('rank')} step {e.get('step')}: {e.get('reason')}" for e in others[:6]
        )
        more = f"; and {len(others) - 6} more" if len(others) > 6 else ""
        dirs = "dump dir" if len(others) == 1 else "dump dirs"
        lines.append(f"nothing to compare in {len(others)} selected {dirs} ({names}{more})")
    return lines


def _listings(recorded: Any) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(recorded, dict):
        return None
    return tuple((k, v) for k, v in recorded.items() if isinstance(k, str) and isinstance(v, str))


def path_in(root: str | Path, path: str | Path) -> str | None:
    """`path` relative to `root`, None when it is not under it."""
    relative = os.path.relpath(path, root)
    return None if relative == ".." or relative.startswith(".." + os.sep) else relative


def rebased(ws: Workspace, summary: RunSummary, path: str) -> str:
    """`path`, recorded under the workspace the compare of `summary` ran in, under `ws`'s
    root (the workspace was moved since); `path` itself when not under it."""
    relative = path_in(summary.workspace, path)
    return path if relative is None else os.path.join(ws.root, relative)


def compared_run(ws: Workspace, summary: RunSummary | None) -> RunIndex | None:
    """The device run a summary's compare read ("debug_0 rank 0 step 0" names it; a compare
    of its only (rank, step) names the run's dump dir)."""
    if summary is None:
        return None
    left = summary.primary.left
    named = next((r for r in ws.runs if left.startswith(f"{r.name} rank ")), None)
    if named is not None or not summary.results or summary.results[0].get("rank") is None:
        return named
    found = next((r for r in ws.runs if Path(left).is_relative_to(r.run.root)), None)
    if found is None:  # the workspace moved since
        moved = Path(rebased(ws, summary, left))
        found = next((r for r in ws.runs if moved.is_relative_to(r.run.root)), None)
    return found


def dumped_slices(run: RunIndex | None) -> frozenset[tuple[str, str]] | None:
    """Every (rank, step) the run dumped (None: the run is not known)."""
    return frozenset((s.rank, s.step) for s in run.slices) if run is not None else None


def failing_outputs(table: ResultColumns, rule: ThresholdRule) -> tuple[int, str | None]:
    """A compare's failing outputs under `rule` and the op of the first (file order), as the
    compare's tally counts them for `results`."""
    failing = table.crossing(rule) & (table.kind == KIND_OUTPUT) & table.compared
    rows = np.flatnonzero(failing)
    first = table.op_names.value(int(table.op[rows[0]])) if len(rows) else None
    return len(rows), first


def recount(
    ranks: RankStepTable,
    rule: ThresholdRule,
    csv_path: Path,
    load: Callable[[Path], ResultColumns],
) -> RankStepTable:
    """The table under `rule` (a look's own thresholds): each compare's CSV counted again
    (`load` reads it, through its columns cache), unless the other compares hold more than
    `RECOUNT_MAX_ROWS` rows: then the table as it was (its `rule` says whose counts). A table
    not `counted` (a killed run's) is always counted: nothing else knows its counts."""
    if ranks.counted and ranks.rule is not None and ranks.rule.judges_like(rule):
        return ranks
    others = sum(r.rows for r in ranks.results if (r.rank, r.step) != ranks.shown)
    if ranks.counted and others > RECOUNT_MAX_ROWS:
        return ranks
    results = []
    for entry in ranks.results:
        failed, first = failing_outputs(load(entry_csv(entry, csv_path)), rule)
        results.append(replace(entry, failed=failed, first_failed_op=first))
    return replace(ranks, results=results, rule=rule, recounted=True, counted=True)


def entry_csv(entry: SliceResult, csv_path: Path) -> Path:
    """The CSV of an entry: where the summary says, else beside `csv_path` (the result dir
    moved)."""
    path = Path(entry.csv)
    return path if path.is_file() else csv_path.parent / path.name


def entry_for_csv(results: list[SliceResult], csv_path: Path) -> SliceResult | None:
    """The entry a result CSV belongs to (by file name: a moved result dir still matches)."""
    return next((r for r in results if Path(r.csv).name == csv_path.name), None)


def device_compare_of(summary: RunSummary | None, csv_path: Path) -> CompareRecord | None:
    """The device-vs-device compare's record when `csv_path` is its CSV (by file name, as
    `entry_for_csv`), else None."""
    device = summary.device_compare if summary is not None else None
    return device if device is not None and Path(device.csv).name == csv_path.name else None


def partial_text(summary: RunSummary | None, csv_path: Path) -> str | None:
    """ "partial: ..." when the compare of `csv_path` was interrupted (the primary's, the
    device compare's, or a (rank, step)'s), or the run of several (rank, step)s it is one of
    was (`RunSlices.partial_text`: every one counted), else None."""
    if summary is None:
        return None
    device = device_compare_of(summary, csv_path)
    if device is not None:
        return device.partial_text
    several = run_slices(summary).partial_text(csv_path)
    if several is not None:
        return several
    if Path(summary.primary.csv).name == csv_path.name:
        return summary.primary.partial_text
    shown = entry_for_csv(slice_results(summary), csv_path)
    if shown is None:
        return summary.primary.partial_text
    return "partial" if shown.partial else None


def dir_in_workspace(directory: str) -> str:
    """A dir as `tf/dump/step1/` when it is in a workspace, else as given."""
    inside = in_workspace(directory)
    return f"{inside}/" if inside != directory else directory


def benchmark_of(summary: RunSummary | None, csv_path: Path) -> str | None:
    """The benchmark dir the compare of `csv_path` read (`tf/dump/step1/`), its (rank,
    step)'s when the run has several; None when summary.json does not say."""
    if summary is None:
        return None
    device = device_compare_of(summary, csv_path)  # QA Q29 #4: its page named tf/dump/
    if device is not None:
        return dir_in_workspace(device.right) if device.right else None
    entry = entry_for_csv(slice_results(summary), csv_path)
    right = entry.right if entry is not None else summary.primary.right
    return dir_in_workspace(right) if right else None


def unmatched_text(summary: RunSummary | None, csv_path: Path) -> str | None:
    """What the compare of `csv_path` left out as not placed in the graph (vc's "dump files not
    matched"): their ops have no row, so a reader of the CSV must be told; None when none."""
    if summary is None:
        return None
    count, first = 0, ""
    device = device_compare_of(summary, csv_path)
    entry = entry_for_csv(slice_results(summary), csv_path)
    if device is not None:
        count, first = len(device.skipped), device.skipped[0] if device.skipped else ""
    elif entry is not None and entry.unmatched:
        count, first = entry.unmatched, entry.unmatched_first
    elif Path(summary.primary.csv).name == csv_path.name and summary.primary.skipped:
        count, first = len(summary.primary.skipped), summary.primary.skipped[0]
    if not count:
        return None
    files = "1 dump file was" if count == 1 else f"{count} dump files were"
    return f"{files} not matched to the graph: their ops have no rows here (e.g. {first})"


def shown_slice_label(slices: RunSlices, summary: RunSummary | None, csv_path: Path) -> str | None:
    """`rank 2 step 10`: the (rank, step) whose rows `csv_path` holds, when its run has
    others: compared beside it, or left out by `--rank/--step` (QA: after `vc --rank 2 --step
    10`, `vcs`, `report` and `ni` showed its rows unlabelled); None when it is the only one."""
    shown = entry_for_csv(slices.results, csv_path)
    if shown is None:
        return None
    several = len(slices.results) + len(slices.not_begun) > 1
    left_out = summary is not None and bool(summary.not_selected)
    return shown.label if several or left_out else None
