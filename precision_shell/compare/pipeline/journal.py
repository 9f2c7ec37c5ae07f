"""The journal of a compare's progress, so `vc --resume` continues a run interrupted or killed
halfway without recomputing the dump files it finished.

`<result dir>/vc.journal` holds one JSON object per line:
- the header (line 1): the request to re-plan from, and per compare (plan) its CSV's name, a
  fingerprint of its task list (the tasks, each device and benchmark file's size and mtime)
  and the (rank, step) it compares (`rank`, `step`, `against`; none for a compare of no
  rank and step);
- one line per finished task, appended only after the task's rows were written and flushed:
  the plan `k`, the task's position `n` in it, its `seq` and device `file`, the CSV's byte
  length after its rows (`offset`), the sha256 of those bytes, its row count, and the rows'
  `extras` (numbers the summary keeps that the CSV has no column for; NaN and inf as
  `json_numbers` writes them).

A task is done only when its line is whole: a torn last line (no newline: killed mid-write) is
dropped. Resuming trusts journaled tasks only: each CSV's first `offset` bytes must hash as
journaled (else it was edited: an error), the CSV is cut back there (a half-written row goes),
its rows are read back for the tally, and the remaining tasks append to it. A flushed write is
in the kernel's page cache, so this holds whatever instant the process is killed at (a power
cut is another matter: nothing is fsynced).

The running compare holds an exclusive `flock` on the journal; the kernel drops it when the
process ends, SIGKILL included. A second shell resuming the same run gets a one-line error.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from precision_shell.compare.metrics.cells import METRIC_COLUMNS
from precision_shell.compare.pipeline.plan import ComparePlan, FileTask
from precision_shell.compare.results.schema import ResultCsvWriter, ResultRow, csv_header
from precision_shell.errors import PrecisionError
from precision_shell.file_name_text import TEXT_ERRORS, json_text
from precision_shell.json_numbers import json_number, number_from_json
from precision_shell.workspace.output_files import OutputError, output_error

JOURNAL_NAME = "vc.journal"
# beside the journal of a run stopped by a full disk: an empty file, which a full disk still
# takes (a name, no data), where a summary saying so would not fit
NO_SPACE_NAME = "vc.no_space"
VERSION = 1
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 20


class JournalError(PrecisionError):
    """A journal or a CSV that cannot be resumed; the message names the file."""


class JournalBusy(JournalError):
    """Another process holds the journal: that run is being compared or resumed."""


@dataclass
class PlanProgress:
    """What the journal says of one plan: its first `done` tasks are in the CSV's first
    `offset` bytes (header included), `rows` rows whose extras are `extras`."""

    done: int = 0
    offset: int = 0
    rows: int = 0
    digest: str = ""
    extras: list[dict[str, float]] = field(default_factory=list)
    tasks: list[tuple[int, str]] = field(default_factory=list)  # (seq, device file) per task


class CsvOut:
    """The text stream a journaled CSV is written through: it counts the bytes and hashes
    them, so each journal line can say how long the CSV is and what its bytes are."""

    def __init__(self, fh: IO[str], offset: int = 0, sha: Any = None) -> None:
        self._fh = fh
        self.offset = offset
        self.sha = sha if sha is not None else hashlib.sha256()

    def write(self, text: str) -> int:
        data = text.encode("utf-8", TEXT_ERRORS)
        written = self._fh.write(text)
        self.sha.update(data)
        self.offset += len(data)
        return written

    def flush(self) -> None:
        self._fh.flush()


def _stat(path: str | None, memo: dict[str, Any]) -> Any:
    if path is None:
        return None
    if path not in memo:
        try:
            st = os.stat(path)
            memo[path] = (st.st_size, st.st_mtime_ns)
        except OSError:
            memo[path] = None
    return memo[path]


def plan_fingerprint(plan: ComparePlan) -> str:
    """A hash of what the plan compares: every task (device file, mapping rows, benchmark
    paths) with each file's size and mtime, and what the summary says of the plan."""
    sha = hashlib.sha256()
    sha.update(repr((plan.mode, plan.left, plan.right, plan.graph)).encode())
    sha.update(repr((plan.skipped, plan.repeated)).encode())
    memo: dict[str, Any] = {}
    for task in plan.tasks:
        files = [
            _stat(task.device_file, memo),
            *(_stat(m.benchmark_path, memo) for m in task.rows()),
        ]
        sha.update(repr((task, files)).encode("utf-8", TEXT_ERRORS))
    return sha.hexdigest()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _extras(value: Any) -> dict[str, float] | None:
    if not isinstance(value, dict):
        return None
    out: dict[str, float] = {}
    for key, written in value.items():
        number = number_from_json(written)
        if number is None:
            return None
        out[str(key)] = number
    return out


class RunJournal:
    """One compare run's journal, open and locked (see the module doc)."""

    def __init__(self, path: Path, fd: int, header: dict[str, Any], plans: list[PlanProgress]):
        self.path = path
        self._fd = fd
        self.header = header
        self.plans = plans
        self.resumed = False  # opened to resume a run (not made for a new one)
        self._outs: dict[int, CsvOut] = {}

    # -- making and reading ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        out_dir: Path,
        header: dict[str, Any],
        plans: Sequence[ComparePlan],
        csvs: Sequence[Path],
        places: Sequence[dict[str, str]] | None = None,
    ) -> RunJournal:
        """A new journal in `out_dir` for these plans (locked before its header is written);
        `places`: each plan's (rank, step) dump dir (`{rank, step}`, and `against` for a rank
        pair; `{}` for a compare of no (rank, step)), so a reader of a killed run knows its
        rank x step compares without re-planning it."""
        path = out_dir / JOURNAL_NAME
        try:
            fd = os.open(path, _NEW_FILE | os.O_APPEND, 0o644)
        except FileExistsError:  # QA: two `vc -o DIR` at once; the loser was told only that
            raise OutputError(
                f"{path}: already exists: another vc is writing into {out_dir}, or one stopped "
                f"there (vc --resume -o {out_dir} continues it); give -o another dir"
            ) from None
        except OSError as exc:
            raise output_error(path, exc) from None
        journal = cls(path, fd, {}, [PlanProgress() for _ in plans])
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            journal.header = {
                "journal": VERSION,
                **header,
                "plans": [
                    {
                        "csv": csv_path.name,
                        "tasks": len(plan.tasks),
                        "fingerprint": plan_fingerprint(plan),
                        **place,
                    }
                    for plan, csv_path, place in zip(
                        plans, csvs, places or [{} for _ in plans], strict=True
                    )
                ],
            }
            journal._append(journal.header)
        except BaseException:
            journal.close()
            path.unlink(missing_ok=True)
            raise
        return journal

    @classmethod
    def open_existing(cls, out_dir: Path) -> RunJournal:
        """The journal of `out_dir`, locked; a damaged one is a JournalError naming it, a
        locked one a JournalBusy."""
        path = out_dir / JOURNAL_NAME
        try:
            fd = os.open(
                path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise JournalError(f"{path}: is a symbolic link; not read") from None
            raise JournalError(f"{path}: cannot open: {exc.strerror or exc}") from None
        journal = cls(path, fd, {}, [])
        journal.resumed = True
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise JournalError(f"{path}: not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalBusy(
                    f"{out_dir}: another vc is comparing or resuming this run right now "
                    f"(its journal {JOURNAL_NAME} is locked)"
                ) from None
            journal._load()
        except BaseException:
            journal.close()
            raise
        return journal

    def _load(self) -> None:
        data = read_all(self._fd)
        self.header, self.plans, torn = parse_journal(self.path, data)
        if torn:  # cut it off, or the next line would be glued to it
            os.ftruncate(self._fd, len(data) - len(torn))

    # -- checking a re-made plan against it ----------------------------------------------------

    def check(self, plans: Sequence[ComparePlan], csvs: Sequence[Path]) -> None:
        """The plans re-made from the saved request must be those the journal was written for."""
        saved = self.header["plans"]
        names = [p.name for p in csvs]
        if names != [entry["csv"] for entry in saved]:
            raise JournalError(
                f"{self.path}: the workspace now gives other compares "
                f"({len(names)} CSVs, the run had {len(saved)}); run vc again"
            )
        for plan, entry, progress in zip(plans, saved, self.plans, strict=True):
            if plan_fingerprint(plan) != entry["fingerprint"] or len(plan.tasks) != entry["tasks"]:
                raise JournalError(
                    f"{self.path}: the dump or benchmark files of {entry['csv']} changed since "
                    "the compare ran (added, removed or rewritten); run vc again"
                )
            if progress.done > len(plan.tasks) or any(
                (task.seq, task.device_file) != done
                for task, done in zip(plan.tasks, progress.tasks, strict=False)
            ):
                raise JournalError(
                    f"{self.path}: its tasks of {entry['csv']} are not the plan's; run vc again"
                )

    def progress(self, k: int) -> PlanProgress:
        return self.plans[k]

    @property
    def done_files(self) -> int:
        return sum(p.done for p in self.plans)

    # -- the CSVs -----------------------------------------------------------------------------

    def open_csv(
        self, k: int, path: Path, overflow: bool, files: ExitStack
    ) -> tuple[ResultCsvWriter, list[ResultRow]]:
        """Plan k's CSV, ready for its next rows, and the rows it already holds (as journaled).

        With nothing journaled the CSV is made anew (a header-only or half-written one from
        the interrupted run is removed first); else it is checked and cut back to the
        journaled length."""
        progress = self.plans[k]
        if progress.done == 0:
            _remove_own_output(path)
            try:
                fd = os.open(path, _NEW_FILE, 0o644)
            except OSError as exc:
                raise output_error(path, exc) from None
            out = CsvOut(files.enter_context(_text_file(fd, path)))
            self._outs[k] = out
            return ResultCsvWriter(cast(IO[str], out), path, overflow), []
        fd, data = _cut_back(path, progress)
        fh = files.enter_context(_text_file(fd, path))
        sha = hashlib.sha256(data)
        rows = _journaled_rows(path, data, overflow, progress)
        out = CsvOut(fh, progress.offset, sha)
        self._outs[k] = out
        return ResultCsvWriter(cast(IO[str], out), path, overflow, header=False), rows

    def record(self, k: int, task: FileTask, rows: Sequence[ResultRow]) -> None:
        """Plan k's next task is in its CSV (written and flushed): say so."""
        out = self._outs[k]
        progress = self.plans[k]
        entry = {
            "k": k,
            "n": progress.done,
            "seq": task.seq,
            "file": task.device_file,
            "offset": out.offset,
            "sha": out.sha.hexdigest(),
            "rows": len(rows),
            "extras": [
                {key: json_number(float(v)) for key, v in row.extras.items()} for row in rows
            ],
        }
        self._append(entry)
        progress.done += 1
        progress.offset = out.offset
        progress.rows += len(rows)

    # -- the file -----------------------------------------------------------------------------

    def _append(self, entry: dict[str, Any]) -> None:
        data = (json_text(entry, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            raise output_error(self.path, exc) from None

    def stopped_no_space(self) -> None:
        """The run stopped on a full disk: say so beside the journal (`NO_SPACE_NAME`), for
        its readers; best effort."""
        with contextlib.suppress(OSError):
            os.close(os.open(self.path.with_name(NO_SPACE_NAME), _NEW_FILE, 0o644))

    def going_on(self) -> None:
        """The run is resumed: whatever stopped it before is past."""
        with contextlib.suppress(OSError):
            self.path.with_name(NO_SPACE_NAME).unlink()

    def finish(self) -> None:
        """The run is complete: the journal goes (still locked, so no one resumes it meanwhile)."""
        with contextlib.suppress(OSError):
            self.path.unlink()

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # drops the lock
            self._fd = -1

    def __enter__(self) -> RunJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_journal(path: Path, data: bytes) -> tuple[dict[str, Any], list[PlanProgress], bytes]:
    """A journal's bytes: its header, each plan's progress and its torn last line (b"" when
    it ends with a newline). A damaged journal is a JournalError naming it."""
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline; else a torn last line
    if not lines:
        raise JournalError(
            f"{path}: no header line (the compare was stopped as it began, before it compared "
            "anything); run vc again"
        )
    header = _json_object(lines[0])
    if (
        header is None
        or header.get("journal") != VERSION
        or not isinstance(header.get("plans"), list)
    ):
        raise JournalError(f"{path}:1: not a vc journal header (version {VERSION})")
    for entry in header["plans"]:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("csv"), str)
            and entry["csv"] == Path(entry["csv"]).name
            and not entry["csv"].startswith(".")
            and _is_int(entry.get("tasks"))
            and isinstance(entry.get("fingerprint"), str)
        ):
            raise JournalError(f"{path}:1: damaged header (its plans)")
    plans = [PlanProgress() for _ in header["plans"]]
    for number, line in enumerate(lines[1:], start=2):
        _replay(plans, f"{path}:{number}", line)
    return header, plans, torn


def _replay(plans: list[PlanProgress], where: str, line: bytes) -> None:
    entry = _json_object(line)
    if entry is None:
        raise JournalError(f"{where}: damaged line (not a JSON object)")
    k, n, seq, offset, rows = (entry.get(key) for key in ("k", "n", "seq", "offset", "rows"))
    file_name, digest, extras = entry.get("file"), entry.get("sha"), entry.get("extras")
    if not (
        all(_is_int(v) for v in (k, n, seq, offset, rows))
        and isinstance(file_name, str)
        and isinstance(digest, str)
        and isinstance(extras, list)
    ):
        raise JournalError(f"{where}: damaged line (a field is missing or of the wrong type)")
    assert isinstance(k, int) and isinstance(n, int) and isinstance(seq, int)
    assert isinstance(offset, int) and isinstance(rows, int)
    if not 0 <= k < len(plans):
        raise JournalError(f"{where}: plan {k} is not in the header")
    progress = plans[k]
    if n != progress.done or offset < progress.offset or rows < 0 or len(extras) != rows:
        raise JournalError(f"{where}: task {n} of plan {k} is out of order or inconsistent")
    parsed = [_extras(e) for e in extras]
    if any(e is None for e in parsed):
        raise JournalError(f"{where}: damaged extras")
    progress.done += 1
    progress.offset = offset
    progress.rows += rows
    progress.digest = digest
    progress.extras.extend(e for e in parsed if e is not None)
    progress.tasks.append((seq, file_name))


def _json_object(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line.decode("utf-8", TEXT_ERRORS))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_all(fd: int) -> bytes:
    chunks = []
    position = 0
    while chunk := os.pread(fd, _CHUNK, position):
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


def _remove_own_output(path: Path) -> None:
    """A CSV of the run that holds no journaled task: ours, and worthless; a link is refused."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise output_error(path, exc) from None
    if not stat.S_ISREG(mode):
        raise JournalError(f"{path}: not a regular file; not replaced")
    try:
        path.unlink()
    except OSError as exc:
        raise output_error(path, exc) from None


def open_journaled_csv(path: Path, progress: PlanProgress, mode: int) -> int:
    """A plan's CSV opened (`mode`: os.O_RDONLY or os.O_RDWR), never through a symlink; a
    missing or unopenable one is a JournalError saying what the journal expected."""
    try:
        return os.open(path, mode | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise JournalError(
            f"{path}: missing, but the journal says {progress.done} files were compared into "
            "it; run vc again"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise JournalError(f"{path}: is a symbolic link; not written through") from None
        raise JournalError(f"{path}: cannot open: {exc.strerror or exc}") from None


def _cut_back(path: Path, progress: PlanProgress) -> tuple[int, bytes]:
    """Open the CSV, check its journaled bytes, cut it there; (fd at the end, those bytes)."""
    fd = open_journaled_csv(path, progress, os.O_RDWR)
    try:
        data = journaled_bytes(fd, path, progress)
        os.ftruncate(fd, progress.offset)
        os.lseek(fd, progress.offset, os.SEEK_SET)
    except OSError as exc:
        os.close(fd)
        raise JournalError(
            f"{path}: cannot cut back to the journaled rows: {exc.strerror}"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd, data


def journaled_bytes(fd: int, path: Path, progress: PlanProgress) -> bytes:
    """The CSV's first `offset` bytes, checked against the journal (a JournalError when the
    file is shorter or those bytes changed)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise JournalError(f"{path}: not a regular file")
    if st.st_size < progress.offset:
        raise JournalError(
            f"{path}: {st.st_size} bytes, shorter than the {progress.offset} the journal "
            "says were written; run vc again"
        )
    data = _read_prefix(fd, progress.offset)
    if len(data) != progress.offset or hashlib.sha256(data).hexdigest() != progress.digest:
        raise JournalError(
            f"{path}: changed since the compare wrote it (its first {progress.offset} bytes "
            "are not the journaled ones); run vc again"
        )
    return data


def _read_prefix(fd: int, length: int) -> bytes:
    chunks = []
    position = 0
    while position < length:
        chunk = os.pread(fd, min(_CHUNK, length - position), position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def _text_file(fd: int, path: Path) -> Iterator[IO[str]]:
    """A CSV's text stream; a failed write keeps the file (its journaled rows stay resumable)
    and says what went wrong, naming it."""
    fh = os.fdopen(fd, "w", encoding="utf-8", errors=TEXT_ERRORS, newline="")
    try:
        yield fh
        fh.close()
    except OSError as exc:
        with contextlib.suppress(OSError):
            fh.close()
        raise output_error(path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            fh.close()
        raise


def _journaled_rows(
    path: Path, data: bytes, overflow: bool, progress: PlanProgress
) -> list[ResultRow]:
    """The rows of the CSV's journaled bytes, as the worker made them (extras from the journal)."""
    lead = 9 + (1 if overflow else 0)
    width = lead + len(METRIC_COLUMNS) + 1
    try:
        records = list(csv.reader(io.StringIO(data.decode("utf-8", TEXT_ERRORS), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise JournalError(f"{path}: its journaled rows do not parse: {exc}") from None
    if not records or records[0] != csv_header(overflow):
        raise JournalError(f"{path}: not the header this compare writes (--overflow changed?)")
    body = records[1:]
    if len(body) != progress.rows or any(len(cells) != width for cells in body):
        raise JournalError(
            f"{path}: {len(body)} rows where the journal says {progress.rows}; run vc again"
        )
    rows = []
    for cells, extras in zip(body, progress.extras, strict=True):
        metrics = cells[lead : lead + len(METRIC_COLUMNS)]
        rows.append(
            ResultRow(
                index=int(cells[0]) if cells[0].isdigit() else None,
                op_type=cells[1],
                npu_dump=cells[2],
                device_dtype=cells[3],
                address=cells[4],
                ground_truth=cells[5],
                benchmark_dtype=cells[6],
                tensor_index=cells[7],
                shape=cells[8],
                overflow=cells[9] if overflow else "NaN",
                texts=dict(zip(METRIC_COLUMNS, metrics, strict=True)),
                reason=cells[-1],
                extras=extras,
            )
        )
    return rows
