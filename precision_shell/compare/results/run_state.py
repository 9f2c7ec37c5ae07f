"""Whether a `vc` result dir holds a finished compare, for its readers (`vcs`, `report`, `ni`).

`vc` writes the rows into its CSVs as it goes and `summary.json` last; its journal
(pipeline/journal.py) goes once the run is complete. A dir that still has a journal and no
summary saying the run is complete is unfinished: a vc is comparing it right now (it holds the
journal's lock), or it was killed or crashed. Its rows are shown as the partial rows they are,
never as a finished compare, and "the newest result" is the newest finished one (the unfinished
ones newer than it are named, with how to look at them). Its CSVs are read only as far as
its journal vouches for (`journaled_length`): the rows a killed vc wrote past its last
journaled file, maybe half a row, are left out and counted in its label. A journal too damaged
to vouch for anything (`vc --resume` refuses it) leaves the extent unknown: the CSV is read
through its last whole line and labelled so, a half-written last row left out.

A summary marked partial and newer than the journal is an interrupted run's (Ctrl-C): it says
so itself. One older than the journal is stale: a `vc --resume` went on and was then killed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from precision_shell.compare.pipeline.journal_state import JournalState, journal_state
from precision_shell.compare.results.journaled_prefix import records_past, whole_lines_length
from precision_shell.compare.results.schema import (
    dated_result_dirs,
    find_result_csv,
    result_csv_in,
)
from precision_shell.compare.results.slice_results import (
    RunSlices,
    SliceResult,
    partial_text,
    run_slices,
)
from precision_shell.compare.results.summary import SUMMARY_NAME, RunSummary, read_summary
from precision_shell.errors import PrecisionError
from precision_shell.listing_text import some_of

INTERRUPTED = "the compare was interrupted"
# why `dated_result_dirs` passes a result dir over
FUTURE_WHY = "dated after now (a clock or time zone ahead) or not named as vc names them"


@dataclass(frozen=True)
class UnfinishedRun:
    """A result dir whose vc is still running, or was killed or crashed."""

    directory: Path
    journal: JournalState

    def files(self, csv_name: str | None = None) -> str | None:
        """`6 of 14 files`: of the CSV named (the whole run's when not given or not in the
        journal); None when the journal cannot tell."""
        plans = self.journal.plans
        mine = [p for p in plans if p.csv == csv_name] or plans
        if not mine:
            return None
        return f"{sum(p.done for p in mine)} of {sum(p.tasks for p in mine)} files"

    def slices(self) -> RunSlices | None:
        """The run's (rank, step) compares as its journal knows them (each one's files done of
        its total; the failing outputs are not known until its CSV is read): those with a
        file compared, and those not begun; None when it names none (a compare of two dump
        dirs)."""
        placed = [p for p in self.journal.plans if p.place is not None]
        if not placed:
            return None
        results = [
            SliceResult(
                rank=p.place[0],
                step=p.place[1],
                csv=str(self.directory / p.csv),
                graph="",
                rows=p.rows,
                failed=0,
                first_failed_op=None,
                partial=p.done < p.tasks,
                against=p.against,
                files_done=p.done,
                files_total=p.tasks,
            )
            for p in placed
            if p.place is not None and (p.done or not p.tasks)
        ]
        not_begun = {
            p.place: p.tasks for p in placed if p.place is not None and p.tasks and not p.done
        }
        return RunSlices(results, not_begun=not_begun, counted=False)

    def journaled_length(self, csv_path: Path) -> int | None:
        """How many bytes of `csv_path` (a CSV of this run) its readers read: those holding
        its journaled files' rows; with a damaged journal, which cannot tell, the CSV through
        its last whole line (a half-written last row is left out); None (the whole file) when
        the journal does not name it."""
        if self.journal.damage is not None:
            return whole_lines_length(csv_path)
        return self.journal.lengths.get(csv_path.name)

    def partial_text(self, csv_path: Path) -> str:
        """`partial: 6 of 14 files (so far)`: how far the compare of `csv_path` got (unknown
        with a damaged journal), and how many rows past those read (not shown) its CSV holds
        when any."""
        files = self.files(csv_path.name)
        damaged = self.journal.damage is not None
        slices = self.slices()
        several = slices.partial_text(csv_path) if slices is not None else None
        text = several or (f"partial: {files}" if files else "partial")
        plans = self.journal.plans
        if plans and all(p.done >= p.tasks for p in plans):  # QA: "2012 of 2012 files" alone
            text = f"partial: all {sum(p.tasks for p in plans)} files compared, no summary written"
        text = "partial: how far unknown (damaged journal)" if damaged else text
        text = f"{text} so far" if self.journal.running else text
        length = self.journaled_length(csv_path)
        past = records_past(csv_path, length) if length is not None else 0
        if past and damaged:
            text += ", its half-written last row not shown"
        elif past:
            text += f", {past} row{'s' if past != 1 else ''} past the last journaled file not shown"
        return text

    @property
    def cause(self) -> str:
        """Why the rows are partial, and what continues them."""
        if self.journal.running:
            return "a vc is still comparing it (its journal is locked); run this again for more"
        if self.journal.damage:
            return (
                f"its vc was {self.stopped_how}, and vc --resume cannot continue it: "
                f"{self.journal.damage}"
            )
        return f"its vc was {self.stopped_how}; {self.resume_text}"

    @property
    def stopped_how(self) -> str:
        """What stopped its vc, as far as the dir tells."""
        return "stopped by a full disk" if self.journal.no_space else "killed or crashed"

    @property
    def resume_text(self) -> str:
        free = "free space, then " if self.journal.no_space else ""
        return f"{free}vc --resume -o {self.directory} continues it"

    def skipped_line(self, command: str) -> str:
        """The line saying the newest result was passed over for an older, finished one."""
        files = self.files()
        counts = f" ({files}{' so far' if self.journal.running else ''})" if files else ""
        look = f"{command} -f {self.directory} shows its rows so far"
        if self.journal.running:
            return f"skipped {self.directory}: a vc is still comparing it{counts}; {look}"
        if self.journal.damage:
            return (
                f"skipped {self.directory}: its vc was {self.stopped_how}{counts} and cannot be "
                f"resumed; {look}"
            )
        return (
            f"skipped {self.directory}: its vc was {self.stopped_how}{counts}; {look}, "
            f"{self.resume_text}"
        )


def unfinished_run(directory: Path) -> UnfinishedRun | None:
    """The unfinished run of `directory`; None when its compare is finished (or never kept a
    journal: msaccucmp's, a statistics compare, a foreign one)."""
    state = journal_state(directory)
    if state is None:
        return None
    if not state.running:
        summary = directory / SUMMARY_NAME
        if run_complete(directory):
            return None  # killed between writing its summary and removing the journal
        try:
            if summary.stat().st_mtime_ns >= (directory / JOURNAL_NAME).stat().st_mtime_ns:
                return None  # interrupted: its summary says partial itself
        except OSError:
            pass  # no summary: killed or crashed
    return UnfinishedRun(directory, state)


def run_complete(directory: Path) -> bool:
    """Its summary says every compare of the run is complete."""
    path = directory / SUMMARY_NAME
    if not path.is_file():
        return False
    try:
        summary = read_summary(path)
    except PrecisionError:
        return False  # a damaged summary: resuming rewrites it
    records = [summary.primary, *([summary.device_compare] if summary.device_compare else [])]
    # QA: a stop between two (rank, step) compares left every begun one whole and the rest
    # `not_begun`: "complete; nothing to resume", where vc had said to resume it
    return (
        not any(r.interrupted for r in records)
        and not any(entry.get("partial") for entry in summary.results)
        and not summary.not_begun
    )


@dataclass(frozen=True)
class ResultPick:
    """The result CSV a reader shows, and the newer unfinished runs passed over for it. Its
    dir's journal is read once: the other CSVs of that dir (its other (rank, step) compares)
    are read through the same state."""

    csv_path: Path
    unfinished: UnfinishedRun | None = None  # the CSV's own run is unfinished
    skipped: list[UnfinishedRun] = field(default_factory=list)
    future: list[Path] = field(default_factory=list)  # result dirs dated in the future, passed over
    # result dirs dated a little after now, ordered by when their compares began and which one
    # vc made last, not by name
    ahead: list[Path] = field(default_factory=list)

    @classmethod
    def at(cls, csv_path: Path) -> ResultPick:
        """The state of `csv_path`'s own run, with nothing passed over."""
        return cls(csv_path, unfinished_run(csv_path.parent))

    def of(self, csv_path: Path) -> ResultPick:
        """This state for another CSV: the same when it is in this run's dir."""
        if csv_path.parent == self.csv_path.parent:
            return self
        return ResultPick.at(csv_path)

    def notes(self, command: str) -> list[str]:
        lines = [run.skipped_line(command) for run in self.skipped]
        if self.future:
            names = some_of([d.name for d in self.future], shown=3)
            lines.append(
                f"passed over {names} in {self.future[0].parent}: {FUTURE_WHY}; {command} -f "
                "DIR reads one"
            )
        if self.ahead:
            names = some_of([d.name for d in self.ahead], shown=3)
            lines.append(
                f"{names} in {self.ahead[0].parent} dated after now (a clock stepped back, or a "
                f"copy from a host ahead): took {self.csv_path.parent.name}, by when the compares "
                f"began and which one vc made last, not by name; {command} -f DIR reads another"
            )
        return lines

    def journaled_length(self, csv_path: Path) -> int | None:
        """How much of `csv_path` (a CSV of this run) its readers read: the bytes its journal
        vouches for when the run is unfinished; None (the whole file) when it is finished, or
        the journal cannot tell."""
        run = self.of(csv_path).unfinished
        return run.journaled_length(csv_path) if run is not None else None

    def partial_state(self, summary: RunSummary | None, csv_path: Path) -> tuple[str | None, str]:
        """(`partial: ...` or None when complete, why) of the compare of `csv_path`: the run's
        journal when it is unfinished, else its summary (an interrupted run)."""
        run = self.of(csv_path).unfinished
        if run is not None:
            return run.partial_text(csv_path), run.cause
        text = partial_text(summary, csv_path)
        if text is not None and (csv_path.parent / JOURNAL_NAME).is_file():
            return text, f"{INTERRUPTED}; vc --resume -o {csv_path.parent} continues it"
        return text, INTERRUPTED

    def slices(self, summary: RunSummary | None) -> RunSlices:
        """The (rank, step)s of the run of `csv_path`: as its journal knows them while the
        run is unfinished (killed: no summary, or a stale one), else as its summary says."""
        run = self.unfinished
        journal = run.slices() if run is not None else None
        return journal if journal is not None else run_slices(summary)


def _started_s(directory: Path) -> float | None:
    """When the compare of a result dir began (epoch seconds, its summary's `started_ns`);
    None when its summary is missing, unreadable or does not say."""
    path = directory / SUMMARY_NAME
    try:
        started = read_summary(path).started_ns if path.is_file() else None
    except PrecisionError:
        return None
    return started / 1e9 if started is not None else None


def pick_result_csv(target: Path, statistics: bool = False) -> ResultPick:
    """`find_result_csv`, where the newest result of a dir of result dirs is the newest
    finished one; with none finished, the newest unfinished one."""
    if target.is_dir() and result_csv_in(target, statistics) is None:
        dated = dated_result_dirs(target, _started_s)
        subdirs, future = dated.dirs, dated.future
        passed: list[tuple[Path, UnfinishedRun]] = []
        for sub in subdirs:
            found = result_csv_in(sub, statistics)
            if found is None:
                continue
            unfinished = unfinished_run(sub)
            if unfinished is None:
                return ResultPick(found, None, [run for _, run in passed], future, dated.ahead)
            passed.append((found, unfinished))
        if passed:
            return ResultPick(passed[0][0], passed[0][1], future=future, ahead=dated.ahead)
        if future:
            names = some_of([d.name for d in future], shown=3)
            raise PrecisionError(
                f"{target}: no result dir but {names}, {FUTURE_WHY}: run vc, or give one with -f"
            )
    return ResultPick.at(find_result_csv(target, statistics))
