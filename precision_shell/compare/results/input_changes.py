"""Whether the files a recorded compare read changed after it ran, so its readers (`vcs`,
`ni`'s compare rows, `report`) can say its numbers may no longer be those of the files.

summary.json `started_ns` is the wall clock just before the compare looked at its inputs. A
dump, benchmark or graph file changed since (its mtime or its ctime is later: a copy that keeps
the old mtime, `cp -p` or `rsync -a`, still sets the ctime, which no user can set back; kernel
times lag the clock, never lead it) or gone predates nothing the compare read. Each (rank, step)
entry of `results` records `listings`: a digest of the file names (sub-dirs left out) of each
dir it read, taken as the compare ended; a dir whose names differ now had files added or
removed (a summary without them: the dir's own mtime, which a new sub-dir moves too). The check
stays cheap on big results: the dirs of the (rank, step) shown (the dump dirs and the benchmark
dir it was compared with), whose files are stat'ed one by one only when a dir holds at most
`STAT_MAX` entries, the graph it read, and the files of the op shown (`ni`), always. A file
rewritten in place in a bigger dir is only seen when it is shown. A compare of one (rank, step)
(no rank x step table) also says which dump dirs of its run came in since; under a rank x step
table, the dump dirs of the other (rank, step)s are checked too, up to OTHER_DIRS_MAX of them
(`stale_slices_line`: their cells may be stale).

`vc --resume` checks more (pipeline/journal.py `plan_fingerprint`: every task's files, size and
mtime) but must plan the compare again to do so; a reader only looks.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from precision_shell.compare.results.run_state import UnfinishedRun, unfinished_run
from precision_shell.compare.results.slice_results import (
    SliceResult,
    compared_run,
    dumped_slices,
    entry_for_csv,
    path_in,
    rebased,
    run_slices,
    slice_results,
)
from precision_shell.compare.results.summary import RunSummary
from precision_shell.errors import PrecisionError
from precision_shell.listing_text import in_workspace, some_of
from precision_shell.workspace.workspace import Workspace, number_order

STAT_MAX = 4096  # files of one dir stat'ed one by one at most (~5 ms)


@dataclass(frozen=True)
class InputChanges:
    """What changed since a compare ran, of the files and dirs looked at."""

    result_dir: Path
    files: list[str]  # modified since, or gone
    dirs: list[str]  # entries added, removed or renamed since (no changed file seen in them)
    # (the benchmark dir compared with, what its (rank, step) has now and who): another dir
    # came in between (a `step1/` harvested), or the dir can no longer serve
    moved: tuple[str, str, str] | None = None
    graphs: list[str] = field(default_factory=list)  # the graph files it read, changed since
    # (rank, step) dump dirs of the run that came in since (a compare of one: no table says so)
    new_slices: list[tuple[str, str]] = field(default_factory=list)
    # files (a graph among them) whose inode changed since but not their mtime: a copy that
    # kept the old mtime (`cp -p`), or only chmod or a new hard link: their bytes may be the same
    touched: list[str] = field(default_factory=list)

    def text(self) -> str:
        """One line: what changed, and what gives numbers of the files as they are now."""
        parts = self._parts()
        if not parts:  # only inodes changed: said as what it may be
            n, first = len(self.touched), in_workspace(self.touched[0])
            which = f"a file it read ({first})" if n == 1 else f"{n} files it read (e.g. {first})"
            return (
                f"the compare {self.result_dir} may predate a change to {which}: "
                f"{'its' if n == 1 else 'their'} mtime is as it was, but a copy that keeps it "
                "(cp -p, rsync -a) rewrote or replaced it, or only chmod or a new hard link "
                "touched it; run vc again to be sure"
            )
        text = self._line(parts)
        if self.touched:
            text += f" ({len(self.touched)} more file(s) touched since: chmod, a link, or cp -p)"
        return text

    def _parts(self) -> list[str]:
        parts = []
        if self.moved is not None:
            was, now, who = self.moved
            parts.append(f"the benchmark of {who} becoming {now} (it compared {was})")
        if self.files:
            first = in_workspace(self.files[0])
            if len(self.files) == 1:
                parts.append(f"a change to a file it compared ({first})")
            else:
                parts.append(f"changes to {len(self.files)} files it compared (e.g. {first})")
        if self.dirs:
            where = some_of([in_workspace(d) for d in self.dirs], shown=2)
            parts.append(f"files added to or removed from {where}")
        if self.graphs:
            parts.append(f"a change to the graph it read ({in_workspace(self.graphs[0])})")
        new = self.new_slices
        if new:
            labels = some_of([f"rank {r} step {s}" for r, s in new], shown=3)
            parts.append(f"{labels} (dumped since)")
        return parts

    def _line(self, parts: list[str]) -> str:
        new = self.new_slices
        again = "run vc again"
        if new:
            one = len(new) == 1
            flags = f"--rank {new[0][0]} --step {new[0][1]}" if one else "--rank all --step all"
            compares = f"vc {flags} compares {'it' if one else 'them'}"
            again = compares if len(parts) == 1 else f"{again} ({compares})"
        return f"the compare {self.result_dir} predates {' and '.join(parts)}: {again}"


MODIFIED, TOUCHED = "modified", "touched"


def _change(path: str, since: int) -> str | None:
    """How a file changed since `since`: MODIFIED (its mtime is later, or it is gone),
    TOUCHED (only its ctime is: chmod, a new hard link, or a copy that kept the old mtime),
    or None."""
    try:
        st = os.stat(path)
    except OSError:
        return MODIFIED
    return _stat_change(st, since)


def _stat_change(st: os.stat_result, since: int) -> str | None:
    if st.st_mtime_ns > since:
        return MODIFIED
    return TOUCHED if st.st_ctime_ns > since else None


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def listing_digest(directory: str) -> str | None:
    """`N:digest` of the names of the entries of `directory` that are no dirs (its files and
    links), in name order; None when it cannot be listed."""
    try:
        with os.scandir(directory) as it:
            names = sorted(e.name for e in it if not _is_dir(e))
    except OSError:
        return None
    digest = hashlib.sha1("\0".join(names).encode("utf-8", "surrogateescape"))
    return f"{len(names)}:{digest.hexdigest()[:20]}"


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _changed_in(
    directory: str, since: int, seen: set[str], listing: str | None = None
) -> tuple[bool, list[str], list[str]]:
    """(files were added to or removed from the dir since, its files modified since, those
    only touched since) for a dir of at most STAT_MAX entries; a bigger dir: only the first. `listing`: its
    `listing_digest` as the compare ended; without it the dir's own mtime tells, with only
    sub-dirs come in read as no change (a file removed as well would go unseen)."""
    if listing is not None:
        entries_changed = listing_digest(directory) != listing
    else:
        mtime = _mtime(directory)
        entries_changed = mtime is None or mtime > since
    changed: list[str] = []
    touched: list[str] = []
    try:
        with os.scandir(directory) as it:
            listed = []
            for entry in it:
                listed.append(entry)
                if len(listed) > STAT_MAX:
                    return entries_changed, [], []
    except OSError:
        return entries_changed, [], []
    new_dirs = new_files = 0  # entries whose inode changed since: added or renamed in
    for entry in sorted(listed, key=lambda e: e.name):
        if entry.path in seen:
            continue
        try:
            st = entry.stat()
        except OSError:
            continue
        if entry.is_file():
            how = _stat_change(st, since)
            if how == MODIFIED:
                changed.append(entry.path)
            elif how == TOUCHED:
                touched.append(entry.path)
        if st.st_ctime_ns > since:
            new_dirs += entry.is_dir()
            new_files += not entry.is_dir()
    if listing is None and entries_changed and new_dirs and not new_files:
        entries_changed = False
    return entries_changed, changed, touched


def input_changes(
    summary: RunSummary | None,
    dirs: Iterable[str],
    files: Iterable[str] = (),
    listings: dict[str, str] | None = None,
    graphs: Iterable[str] = (),
) -> InputChanges | None:
    """What changed in `dirs`, `files` and the graph files `graphs` since the compare of
    `summary` ran (`listings`: the dirs' names as it ended, when recorded); None when nothing
    did, or the summary does not say when it ran (written by an older vc)."""
    if summary is None or summary.started_ns is None or summary.path is None:
        return None
    since = summary.started_ns
    changed: list[str] = []
    graphs_changed: list[str] = []
    touched_files: list[str] = []
    seen: set[str] = set()
    for paths, modified_into in ((files, changed), (graphs, graphs_changed)):
        for path in paths:
            if path in seen:
                continue
            seen.add(path)
            how = _change(path, since)
            if how == MODIFIED:
                modified_into.append(path)
            elif how == TOUCHED:
                touched_files.append(path)
    dirs_changed = []
    for directory in dict.fromkeys(dirs):
        if listings is not None and directory not in listings:
            dirs_changed.append(directory)  # a dir it did not read (a new dump session dir)
            continue
        listing = (listings or {}).get(directory)
        entries_changed, modified, touched = _changed_in(directory, since, seen, listing)
        seen.update(modified + touched)
        changed += modified
        touched_files += touched
        if entries_changed and not modified:
            dirs_changed.append(directory)
    if not changed and not dirs_changed and not graphs_changed and not touched_files:
        return None
    return InputChanges(
        summary.path.parent, changed, dirs_changed, graphs=graphs_changed, touched=touched_files
    )


def record_listings(ws: Workspace, summary: RunSummary) -> None:
    """Put into each (rank, step) entry of `summary.results` the `listing_digest` of every dir
    it read (`slice_dirs`), as the compare ends: what its readers compare the dirs with."""
    for raw in summary.results:
        if raw.get("rank") is None:
            continue
        dirs = slice_dirs(ws, summary, SliceResult.from_json(raw))
        # keyed by the dir's path in the workspace: a workspace moved still matches
        raw["listings"] = {
            _listing_key(ws, d): digest for d in dirs if (digest := listing_digest(d)) is not None
        }


def _given_dirs(summary: RunSummary, csv_path: Path) -> list[str]:
    """The two dirs a compare given by path read (`vc -lt DIR -rt DIR`, MegEngine or
    SigmaStar dumps), for its CSV: no (rank, step) entry names them."""
    for record in (summary.primary, summary.device_compare):
        if record is not None and Path(record.csv).name == csv_path.name:
            return [d for d in (record.left, record.right) if os.path.isdir(d)]
    return []


def _listing_key(ws: Workspace, directory: str) -> str:
    """A dir's key in `listings`: its path relative to the workspace root when under it."""
    return path_in(ws.root, directory) or directory


def _graph_files(ws: Workspace, summary: RunSummary, entry: SliceResult) -> list[str]:
    """The graph file(s) the (rank, step) compare `entry` matched its dumps with."""
    run = compared_run(ws, summary)
    if run is None:
        return []
    graph = run.graph_of_dump(entry.graph.split(",") if entry.graph else ())
    return [graph.source] if graph is not None and graph.source else []


def _new_slices(ws: Workspace, summary: RunSummary) -> list[tuple[str, str]]:
    """The (rank, step) dump dirs of the compared run that came in after a compare of one
    (rank, step): with no rank x step table to show them, the stale line names them."""
    slices = run_slices(summary)
    if len(slices.results) + len(slices.not_begun) != 1 or slices.known is None:
        return []
    dumped = dumped_slices(compared_run(ws, summary)) or frozenset()
    return sorted(dumped - slices.known, key=lambda rs: (number_order(rs[1]), number_order(rs[0])))


def slice_dirs(ws: Workspace, summary: RunSummary, entry: SliceResult) -> list[str]:
    """The dirs the (rank, step) compare `entry` read: its dump dirs (and its reference
    rank's, across ranks), and the benchmark dir it was compared with."""
    run = compared_run(ws, summary)
    if run is None:
        return []
    dirs: list[str] = []
    right = None
    if entry.against is None:
        right = entry.right or (str(ws.layout.benchmark_dir) if ws.layout.benchmark_dir else None)
    for rank in (entry.rank, entry.against):
        if rank is None:
            continue
        try:
            dirs += run.slice(rank, entry.step).dumps.dirs
        except PrecisionError:
            # that dump dir is gone (removed before a re-dump): the dirs the compare read,
            # as it recorded them, are what changed (QA Q24 #2: its old cell read as current)
            recorded = _listings_now(ws, entry) or {}
            dirs += [d for d in recorded if d != right and not os.path.isdir(d)]
    if right is not None:
        dirs.append(right)
    return dirs


def benchmark_moved(ws: Workspace, entry: SliceResult, since: int) -> tuple[str, str, str] | None:
    """(the benchmark dir `entry` was compared with, the one its (rank, step) has now, its
    label), as `tf/dump/...`, when they differ because of a change after the compare ran
    (`since`): a rank or step dir added, filled or removed since, or one that can no longer
    serve (`Workspace.blocked_scopes`). A dir given with -rt that differs from the one the
    workspace would use, with nothing changed since, is the user's choice: not this."""
    if entry.right is None or entry.against is not None or entry.rank is None:
        return None
    index = ws.benchmark_for(entry.rank, entry.step)
    was = os.path.normpath(entry.right)
    if index is not None and os.path.normpath(index.directory) == was:
        return None
    top = ws.layout.benchmark_dir
    looked = [was, *([index.directory] if index is not None else []), *([str(top)] if top else [])]
    if not any((_mtime(d) or 0) > since for d in looked):
        return None
    now = (
        f"{in_workspace(index.directory).rstrip('/')}/"
        if index is not None
        else f"none (tf/dump/{ws.no_benchmark_why(entry.rank, entry.step) or 'nothing'})"
    )
    return f"{in_workspace(was).rstrip('/')}/", now, f"rank {entry.rank} step {entry.step}"


JOURNAL_STAT_MAX = 50_000  # device files of a killed run's journal stat'ed at most (~0.1 s)


def journal_stale_line(run: UnfinishedRun) -> str | None:
    """The stale line of a run killed before its summary (its journal tells when it began and
    which device files it compared): those files changed since, or files added to or removed
    from their dirs (QA: a killed run's rows were shown as current after two of its dump files
    were replaced, where `vc --resume` refused them). None: nothing changed, a run still
    going, or a journal from before it recorded its start."""
    started = run.journal.started_ns
    if started is None or run.journal.running:
        return None
    compared = list(dict.fromkeys(run.journal.compared))[:JOURNAL_STAT_MAX]
    files: list[str] = []
    touched: list[str] = []
    for path in compared:
        change = _change(path, started)
        if change == MODIFIED:
            files.append(path)
        elif change == TOUCHED:
            touched.append(path)
    seen = {os.path.dirname(f) for f in files}
    dirs = [
        d
        for d in sorted({os.path.dirname(f) for f in compared} - seen)
        if (mtime := _mtime(d)) is None or mtime > started
    ]
    if not (files or dirs or touched):
        return None
    return InputChanges(run.directory, files, dirs, touched=touched).text()


def stale_compare_line(
    ws: Workspace, summary: RunSummary | None, csv_path: Path, files: Iterable[str] = ()
) -> str | None:
    """The line a reader of the compare of `csv_path` shows when files it compared changed
    since it ran, or its (rank, step) has another benchmark dir now (`files`: those of the op
    shown, checked whatever the dirs' size; one of a benchmark dir it did not read is not
    one it compared); None when none did, or that cannot be told (a compare of two dirs
    given by path, an older vc)."""
    if summary is None:  # a run killed before its summary: its journal tells
        killed = unfinished_run(csv_path.parent)
        return journal_stale_line(killed) if killed is not None else None
    if summary.started_ns is None or summary.path is None:
        return None
    entry = entry_for_csv(slice_results(summary), csv_path)
    if entry is not None and entry.right is not None:  # a workspace moved since: its dir now
        entry = replace(entry, right=rebased(ws, summary, entry.right))
    dirs = slice_dirs(ws, summary, entry) if entry is not None else _given_dirs(summary, csv_path)
    listings = _listings_now(ws, entry) if entry is not None else None
    moved = benchmark_moved(ws, entry, summary.started_ns) if entry is not None else None
    if moved is not None and entry is not None and entry.right is not None:
        compared = os.path.normpath(entry.right)
        bench = str(ws.layout.benchmark_dir) if ws.layout.benchmark_dir else None
        files = [
            f
            for f in files
            if bench is None
            or not f.startswith(bench + os.sep)
            or os.path.normpath(os.path.dirname(f)) == compared
        ]
    graphs = _graph_files(ws, summary, entry) if entry is not None else []
    found = input_changes(summary, dirs, files, listings, graphs)
    new = _new_slices(ws, summary)
    if moved is not None or new:
        base = found or InputChanges(summary.path.parent, [], [])
        found = replace(base, moved=moved, new_slices=new)
    return found.text() if found is not None else None


def _listings_now(ws: Workspace, entry: SliceResult) -> dict[str, str] | None:
    """`entry`'s recorded dir listings keyed by the dirs' paths now (recorded by path in the
    workspace, which may have moved since); None when it recorded none."""
    if entry.listings is None:
        return None
    return {os.path.join(ws.root, k): v for k, v in entry.listings}


OTHER_DIRS_MAX = 64  # dirs of the other (rank, step)s a reader checks, at most STAT_MAX each


def stale_slices_line(ws: Workspace, summary: RunSummary | None, csv_path: Path) -> str | None:
    """The line under a rank x step table when the files of (rank, step)s other than the one
    shown changed since the compare ran: their cells count rows of files as they were (QA: a
    card's dump rewritten after `vc --rank all --step all`, and plain `vcs` showed its old
    cell as current). Their dirs are checked, each once, up to OTHER_DIRS_MAX: a benchmark dir
    several cards share names every one of them (QA Q24 #4); the cards beyond are said not
    checked, changed or not (QA Q24 #1: silence read as "nothing changed"). A dir the shown
    one shares with them is theirs too: `stale_compare_line` says it of the shown one, this
    line names the others it serves (QA Q26 #10: `vcs --rank 1 --step 5` left out steps 0 and
    10 of a changed `tf/dump/rank1/`). None when none changed and every card was checked, or
    there is no table."""
    if summary is None or summary.started_ns is None or summary.path is None:
        return None
    results = slice_results(summary)
    if len(results) < 2:
        return None
    shown = entry_for_csv(results, csv_path)
    verdicts: dict[str, bool] = {}  # dir -> changed since the compare, each checked once
    changed: list[SliceResult] = []
    unchecked = 0
    for entry in results:
        if entry is shown:
            continue
        dirs = slice_dirs(ws, summary, entry)
        new = [d for d in dict.fromkeys(dirs) if d not in verdicts]
        if len(verdicts) + len(new) > OTHER_DIRS_MAX:
            unchecked += 1
            continue
        listings = _listings_now(ws, entry)
        for d in new:
            verdicts[d] = input_changes(summary, [d], (), listings) is not None
        if any(verdicts[d] for d in dirs):
            changed.append(entry)
    if not changed and not unchecked:
        return None
    others = f"{unchecked} other {'rank and step' if unchecked == 1 else 'ranks and steps'}"
    if not changed:
        return (
            f"{others} not checked for changes since the compare {summary.path.parent} ran "
            f"(more than {OTHER_DIRS_MAX} dirs): {'its cell' if unchecked == 1 else 'their cells'}"
            " may be stale (vcs --rank R --step S checks one)"
        )
    one = changed[0]
    # --rank/--step take one value or all: several cards are compared again by all of them
    again = (
        f"vc --rank {one.rank} --step {one.step}"
        if len(changed) == 1
        else "vc --rank all --step all"
    )
    which = some_of([e.label for e in changed], shown=4)
    line = (
        f"{which}: {'its' if len(changed) == 1 else 'their'} files changed since the compare "
        f"{summary.path.parent} ran: {'its cell' if len(changed) == 1 else 'their cells'} in "
        f"the table may be stale ({again} compares {'it' if len(changed) == 1 else 'them'} again)"
    )
    if unchecked:
        line += f"; {others} not checked"
    return line
