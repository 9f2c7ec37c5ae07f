"""Reading a small file of the user's whole (a `mapping.csv`, a graph dump, a settings or
summary file, an index-cache entry), never trusting what the name points at.

A workspace may come from anyone: a FIFO there would block `open()` and `read()` forever,
a link to `/dev/zero` or a sparse file of 50 GB would be read until memory runs out. So only
a regular file is read, opened without blocking, and only when its size is within the
caller's bound; anything else is a one-line error naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from precision_shell.errors import FormatError

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, as a phrase: "a FIFO", "a directory"..."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def _size_text(size: int) -> str:
    """A byte count as people read it: "64 MiB", "1.5 GiB", "812 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


def read_bounded(path: str | Path, limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file `path` when it holds at most `limit` of them.

    FormatError (naming the file) when it is not a regular file (a FIFO, a device, a dir) or
    is larger than `limit` (or is a symlink, with `follow_links` False); OSError when it cannot
    be opened or read (FileNotFoundError when it is not there). The file is
    stat'ed before it is opened, so no device is ever opened, and opened non-blocking, so a
    FIFO swapped in meanwhile does not block either; at most `limit` + 1 bytes are read even
    if the file grows meanwhile.
    """
    mode = (os.stat if follow_links else os.lstat)(path).st_mode
    if stat.S_ISLNK(mode):
        raise FormatError(path, "a symlink, not followed")
    if not stat.S_ISREG(mode):
        raise FormatError(path, f"not a regular file ({file_kind(mode)})")
    fd = os.open(path, _FLAGS | (0 if follow_links else os.O_NOFOLLOW))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(path, f"not a regular file ({file_kind(info.st_mode)})")
        if info.st_size > limit:
            raise FormatError(path, _too_large(info.st_size, limit))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FormatError(path, _too_large(len(data), limit))
    return data


def read_bounded_text(path: str | Path, limit: int, errors: str = "strict") -> str:
    """`read_bounded` decoded as UTF-8 (a leading BOM kept): UnicodeDecodeError when it is
    not UTF-8 and `errors` is "strict"."""
    return read_bounded(path, limit).decode("utf-8", errors=errors)


def _too_large(size: int, limit: int) -> str:
    return f"{_size_text(size)}, larger than such a file can be (at most {_size_text(limit)})"
