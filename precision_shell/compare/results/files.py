"""Creating a result file: never through a link, never over an existing file, and never
left half-written after a write error (a full disk removes what was written and says so)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from precision_shell.errors import PrecisionError


def write_error(path: Path, exc: OSError) -> PrecisionError:
    """The one-line error for a failed write (ENOSPC says "no space left on <path>")."""
    if exc.errno == errno.ENOSPC:
        return PrecisionError(f"no space left on {path}")
    if exc.errno == errno.EEXIST:
        return PrecisionError(f"{path}: already exists; not overwritten")
    if exc.errno == errno.ELOOP:
        return PrecisionError(f"{path}: is a symbolic link; not written through")
    return PrecisionError(f"{path}: cannot write: {exc.strerror or exc}")


class OutputFile:
    """`with OutputFile(path) as fh:` a new text file; on an OSError inside, or when closing
    fails, the file is removed and a PrecisionError names it. Other exceptions (Ctrl-C) keep
    what was written: a compare's rows so far are worth keeping."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise write_error(self.path, exc) from None
        self._fh = os.fdopen(fd, "w", newline="", encoding="utf-8")
        return self._fh

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        failure = exc if isinstance(exc, OSError) else None
        assert self._fh is not None
        try:
            self._fh.close()
        except OSError as close_exc:
            failure = failure or close_exc
        if failure is not None:
            self.path.unlink(missing_ok=True)
            raise write_error(self.path, failure) from None
