"""A result dir's journal as a reader sees it (`vcs`, `report`, `ni`): whether a vc is
comparing that run right now (it holds the journal's lock: see `pipeline.journal`), how far
each of its CSVs got, and whether `vc --resume` could continue it. Nothing is changed and no
lock is kept.
"""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from precision_shell.compare.pipeline.journal import (
    JOURNAL_NAME,
    NO_SPACE_NAME,
    JournalError,
    PlanProgress,
    journaled_bytes,
    open_journaled_csv,
    parse_journal,
    read_all,
)


class PlanState(NamedTuple):
    """One plan (one CSV) of a journal, as far as it got."""

    csv: str
    done: int  # files compared
    tasks: int  # files in its plan
    rows: int = 0  # rows of its done files
    place: tuple[str, str] | None = None  # its (rank, step), when the journal names one
    against: str | None = None  # a rank pair's reference rank (`vc --across ranks`)


@dataclass(frozen=True)
class JournalState:
    """What a result dir's journal says, read without changing it or keeping its lock."""

    running: bool  # a vc holds its lock: that run is being compared or resumed right now
    plans: list[PlanState]  # per CSV
    damage: str | None = None  # why `vc --resume` would refuse it; None when it would not
    # per CSV: how many of its bytes hold the rows of its journaled files (none when damaged)
    lengths: dict[str, int] = field(default_factory=dict)
    no_space: bool = False  # the run stopped on a full disk (not killed, not crashed)
    started_ns: int | None = None  # when the run began (journals before session 19: None)
    compared: list[str] = field(default_factory=list)  # the device files of its done tasks


def journal_state(out_dir: Path) -> JournalState | None:
    """The state of `out_dir`'s journal; None when it has none (a regular file), as when its
    run completed. A stopped run's CSVs are checked as `vc --resume` checks them (a running
    one's are still being written)."""
    path = out_dir / JOURNAL_NAME
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return JournalState(False, [], f"{path}: cannot open: {exc.strerror or exc}")
    try:
        running = _locked(fd)
        try:
            header, plans, _ = parse_journal(path, read_all(fd))
            for entry, progress in zip(header["plans"], plans, strict=True):
                if progress.done and not running:
                    _check_csv(out_dir / entry["csv"], progress)
        except JournalError as exc:
            return JournalState(running, [], str(exc))
        except OSError as exc:
            return JournalState(running, [], f"{path}: cannot read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    pairs = list(zip(header["plans"], plans, strict=True))
    counts = [_plan_state(entry, progress) for entry, progress in pairs]
    lengths = {str(entry["csv"]): progress.offset for entry, progress in pairs}
    no_space = not running and os.path.lexists(out_dir / NO_SPACE_NAME)
    started = header.get("started_ns")
    return JournalState(
        running,
        counts,
        lengths=lengths,
        no_space=no_space,
        started_ns=started if isinstance(started, int) and not isinstance(started, bool) else None,
        compared=[f for progress in plans for _, f in progress.tasks[: progress.done]],
    )


def _plan_state(entry: dict, progress: PlanProgress) -> PlanState:
    rank, step, against = entry.get("rank"), entry.get("step"), entry.get("against")
    place = (rank, step) if isinstance(rank, str) and isinstance(step, str) else None
    return PlanState(
        str(entry["csv"]),
        progress.done,
        int(entry["tasks"]),
        progress.rows,
        place,
        against if isinstance(against, str) else None,
    )


def _locked(fd: int) -> bool:
    """Another process holds the journal's lock. Probed with a shared lock dropped at once (a
    `vc --resume` starting in that very instant would find the run busy)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _check_csv(path: Path, progress: PlanProgress) -> None:
    """The CSV holds the bytes the journal says were written (read only; see `_cut_back`)."""
    fd = open_journaled_csv(path, progress, os.O_RDONLY)
    try:
        journaled_bytes(fd, path, progress)
    finally:
        os.close(fd)
