"""A result CSV read only as far as a byte offset: how the readers of an unfinished run (see
run_state) read the rows its journal vouches for and never the tail a killed or still running
vc left past it (rows of a file not journaled yet, maybe a half-written last one).

The offset is where a journaled file's rows end (pipeline/journal.py), or 0 when no file is
journaled yet: the header line is read whatever the offset. A journal too damaged to say
(`vc --resume` refuses it) vouches for nothing: the CSV is read through its last whole line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

from precision_shell.file_name_text import TEXT_ERRORS

_CHUNK = 1 << 16  # bytes read at a time from the end, looking for the last newline

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class _Prefix(io.RawIOBase):
    """The first `length` bytes of a binary file, as a file of its own (it owns `raw`)."""

    def __init__(self, raw: io.BufferedReader, length: int) -> None:
        super().__init__()
        self._raw = raw
        self._left = length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")[: self._left]
        if not view:
            return 0
        n = self._raw.readinto(view)
        self._left -= n
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _end_of_header(raw: io.BufferedReader) -> int:
    """The byte length of the header line (the file's first line: ours has no quoted newline)."""
    length = len(raw.readline())
    raw.seek(0)
    return length


def open_prefix(path: Path, upto: int) -> io.TextIOWrapper:
    """The CSV's text as far as byte `upto` (its header line at least), as `open` gives a
    CSV's text (`newline=""`, a BOM dropped). OSError when it cannot be opened."""
    raw = open(path, "rb")  # noqa: SIM115 (owned by the returned stream)
    try:
        length = max(upto, _end_of_header(raw))
        return io.TextIOWrapper(
            io.BufferedReader(_Prefix(raw, length)),
            encoding="utf-8-sig",
            errors=TEXT_ERRORS,
            newline="",
        )
    except BaseException:
        raw.close()
        raise


def whole_lines_length(path: Path) -> int | None:
    """The byte length of the CSV through its last newline: what a reader can trust of a CSV
    whose journal cannot say how far it got (our writer ends every row with a newline, so
    text after the last one is a half-written row). None when it cannot be read."""
    try:
        with open(path, "rb") as raw:
            end = raw.seek(0, io.SEEK_END)
            while end > 0:
                start = max(0, end - _CHUNK)
                raw.seek(start)
                newline = raw.read(end - start).rfind(b"\n")
                if newline >= 0:
                    return start + newline + 1
                end = start
    except OSError:
        return None
    return 0


def records_past(path: Path, upto: int) -> int:
    """How many records the CSV holds past byte `upto` (past its header line at least), a
    half-written last one included; 0 when it cannot be read."""
    try:
        with open(path, "rb") as raw:
            raw.seek(max(upto, _end_of_header(raw)))
            tail = raw.read()
    except OSError:
        return 0
    reader = csv.reader(io.StringIO(tail.decode("utf-8", TEXT_ERRORS), newline=""))
    count = 0
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                count += 1
    except csv.Error:  # a damaged tail: what came before it, and the record it broke
        count += 1
    return count
