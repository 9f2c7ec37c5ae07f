"""`vc --resume`: which run to continue, and the request it was made with.

The request is saved in the run's journal header (see `pipeline.journal`); only what decides
the plans and the rows is saved (how the tasks run: workers, backend, cluster, comes from the
resuming command). "The last partial run" is the newest result dir under
`temp/vector_compare/` that still has a journal and no summary saying it is complete (the
journal goes once a run completes), or the `-o DIR` given.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from precision_shell.compare.pipeline.journal import JOURNAL_NAME, JournalError, RunJournal
from precision_shell.compare.pipeline.plan import ComparePlan
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.compare.results.run_state import run_complete
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.workspace.output_files import NoSpaceError
from precision_shell.workspace.workspace import Workspace

_DIR_NAME = re.compile(r"(\d{14})(?:_(\d+))?")
_STAMP = re.compile(r"\d{14}")
# the request's fields that decide the plans and the rows, saved as given
_TEXT_FIELDS = ("left", "right", "graph", "run", "rank", "step", "across")


def request_json(request: Any, stamp: str, workspace: Path) -> dict[str, Any]:
    """The journal header's part that lets `vc --resume` re-plan the run."""
    options: CompareOptions = request.options
    return {
        "stamp": stamp,
        "workspace": str(workspace),
        "cwd": os.getcwd(),
        "request": {
            **{name: getattr(request, name) for name in _TEXT_FIELDS},
            "max_files": request.max_files,
            "rule": request.rule.to_json(),
            "algorithms": list(options.algorithms) if options.algorithms is not None else None,
            "overflow": options.overflow,
            "fp16_limit": options.fp16_limit,
        },
    }


def saved_request(journal: RunJournal, ws: Workspace) -> dict[str, Any]:
    """The CompareRequest fields the journal saved (keyword arguments), checked: a damaged
    header is a JournalError naming the journal."""
    header = journal.header
    saved = header.get("request")
    where = f"{journal.path}:1"
    stamp = header.get("stamp")
    if not isinstance(saved, dict) or not isinstance(stamp, str) or not _STAMP.fullmatch(stamp):
        raise JournalError(f"{where}: damaged header (no request or stamp)")
    fields: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        value = saved.get(name)
        if value is not None and not isinstance(value, str):
            raise JournalError(f"{where}: damaged header ({name} is not text)")
        fields[name] = value
    max_files = saved.get("max_files")
    algorithms = saved.get("algorithms")
    fp16 = saved.get("fp16_limit")
    rule = ThresholdRule.from_json(saved.get("rule"))
    if (
        rule is None
        or (max_files is not None and (not isinstance(max_files, int) or max_files < 1))
        or not (
            algorithms is None
            or (isinstance(algorithms, list) and all(isinstance(a, str) for a in algorithms))
        )
        or not isinstance(saved.get("overflow"), bool)
        or not isinstance(fp16, int | float)
        or isinstance(fp16, bool)
    ):
        raise JournalError(f"{where}: damaged header (its thresholds or compare options)")
    saved_root = header.get("workspace")
    if saved_root != str(ws.root):
        raise PrecisionError(
            f"vc --resume: {journal.path.parent} is a compare of the workspace {saved_root}, "
            f"not of {ws.root}"
        )
    cwd = header.get("cwd")
    run_names = {r.name for r in ws.runs}
    relative = [
        v
        for v in (fields["left"], fields["right"])
        if v and not Path(v).is_absolute() and v not in run_names
    ]
    if relative and cwd != os.getcwd():
        raise PrecisionError(
            f"vc --resume: the compare's -lt/-rt ({', '.join(relative)}) are relative to {cwd}; "
            "resume it from there"
        )
    fields.update(
        rule=rule,
        options=CompareOptions(
            tuple(algorithms) if algorithms is not None else None,
            saved["overflow"],
            float(fp16),
        ),
        max_files=max_files,
        output=journal.path.parent,
    )
    return fields


def partial_run_dir(ws: Workspace, output: Path | None) -> Path:
    """The run `vc --resume` continues: `-o DIR`'s, else the newest partial one of the
    workspace. Nothing to resume is a one-line PrecisionError."""
    if output is not None:
        out = output if output.is_absolute() else Path.cwd() / output
        if run_complete(out):
            raise PrecisionError(
                f"vc --resume: {output}: its compare is complete; nothing to resume"
            )
        if not _has_journal(out):
            raise PrecisionError(
                f"vc --resume: {output}: no {JOURNAL_NAME} here; nothing to resume"
            )
        return out
    base = ws.output_dir("vector_compare")
    dirs = []
    for entry in base.iterdir():
        match = _DIR_NAME.fullmatch(entry.name)
        if match and entry.is_dir() and not entry.is_symlink():
            dirs.append(((match.group(1), int(match.group(2) or 0)), entry))
    for _, directory in sorted(dirs, reverse=True):
        if _has_journal(directory) and not run_complete(directory):
            return directory
    raise PrecisionError(f"vc --resume: nothing to resume: no partial compare in {base}")


def _has_journal(directory: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(directory / JOURNAL_NAME).st_mode)
    except OSError:
        return False


class CompareStopped(PrecisionError):
    """A compare that ran partway and stopped (a full disk): its rows so far are kept, and
    `vc --resume` completes it."""


class JournalSlot:
    """The journal of one `vc` run: made for a new run once its plans are known, or the one
    `vc --resume` opened (then checked against the plans made again); closed by its owner."""

    def __init__(self, resume: RunJournal | None = None) -> None:
        self.journal = resume
        # before the run looked at any input: a reader of a run killed before its summary
        # tells files changed since by it (input_changes.journal_stale_line)
        self.started_ns = time.time_ns()

    def place(self) -> tuple[Path, str] | None:
        """(result dir, stamp) of the run being resumed; None for a new run."""
        if self.journal is None:
            return None
        return self.journal.path.parent, str(self.journal.header["stamp"])

    def open(
        self,
        ws: Workspace,
        request: Any,
        out_dir: Path,
        stamp: str,
        plans: list[ComparePlan],
        csvs: list[Path],
        places: list[dict[str, str]] | None = None,
    ) -> RunJournal:
        """`places`: each plan's (rank, step), as `RunJournal.create` keeps them."""
        if self.journal is not None:
            self.journal.check(plans, csvs)
            self.journal.going_on()
        else:
            header = {**request_json(request, stamp, ws.root), "started_ns": self.started_ns}
            self.journal = RunJournal.create(out_dir, header, plans, csvs, places)
        return self.journal

    def finish(self, complete: bool) -> None:
        """After the summary is written: a complete run needs its journal no more."""
        if complete and self.journal is not None:
            self.journal.finish()

    def stopped(self, exc: NoSpaceError) -> PrecisionError:
        """The error of a run a full disk stopped: once its journal is open, the run is kept
        for `vc --resume` (and marked so for its readers: `vcs` says what stopped it); before,
        nothing was compared and `exc` says what did not fit."""
        if self.journal is None:
            return exc
        self.journal.stopped_no_space()
        out_dir = self.journal.path.parent
        return CompareStopped(
            f"compare stopped: {exc}; the rows so far are kept: free space, then "
            f"vc --resume -o {out_dir} completes it"
        )

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> JournalSlot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
