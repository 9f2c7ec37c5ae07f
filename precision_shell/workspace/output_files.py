"""Creating the tool's outputs: never through a link, atomically, and never left half-written.

Every file or dir the tool writes under `precision_data/temp/` (or a dir the user gave) is made
here:
- dirs below the base are made one component at a time and each is checked with `lstat`:
  a symlink (or a file) anywhere between the base and the output is refused, so a planted
  `temp -> /elsewhere` link never sends outputs out of the workspace;
- files are opened with `O_CREAT | O_EXCL | O_NOFOLLOW`, so an existing name or a link
  (dangling or not) is never written through;
- `replace_output` writes a new temp file beside the final name and `os.replace`s it there:
  a reader never sees half a file, two concurrent writers of one name each leave a whole file
  (the last one wins), and a repeated command replaces its own earlier output;
- `create_unique_dir` makes `name`, `name_1`, ... with `mkdir` (atomic): two runs in the
  same second get two dirs;
- a write that fails removes what it wrote; a full disk says `no space left on <path>`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from precision_shell.errors import PrecisionError
from precision_shell.file_name_text import TEXT_ERRORS

_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_MAX_SUFFIX = 10_000


class OutputError(PrecisionError):
    """An output that cannot be created or written; the message names the path."""


class NoSpaceError(OutputError):
    """An output that did not fit: the disk (or the user's quota) is full."""


def output_error(path: Path, exc: OSError) -> OutputError:
    """The one-line error for a failed create or write (ENOSPC: "no space left on <path>")."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return NoSpaceError(f"no space left on {path}")
    if exc.errno == errno.EEXIST:
        return OutputError(f"{path}: already exists; not overwritten")
    if exc.errno == errno.ELOOP:
        return OutputError(f"{path}: is a symbolic link; outputs are never written through links")
    return OutputError(f"{path}: cannot write: {exc.strerror or exc}")


def _check_dir(path: Path) -> None:
    """Refuse a link or a non-dir where an output dir belongs."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        raise output_error(path, exc) from None
    if stat.S_ISLNK(mode):
        raise OutputError(
            f"{path}: is a symbolic link; outputs are never written through links "
            "(remove it, or give another output dir)"
        )
    if not stat.S_ISDIR(mode):
        raise OutputError(f"{path}: exists and is not a directory")


def make_user_dir(path: Path, shown: Path | None = None) -> Path:
    """A dir the user named for outputs (`-o DIR`), made when missing; `shown` is how to name
    it in the one-line error (default `path`). Links in it are the user's to have made."""
    name = shown if shown is not None else path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise PrecisionError(f"{name}: exists and is not a directory") from None
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise output_error(name, exc) from None
        raise PrecisionError(f"{name}: cannot create: {exc.strerror or exc}") from None
    return path


def ensure_dir(base: Path, *parts: str) -> Path:
    """`base/parts...`, each missing dir made; any link or file among `parts` is refused.

    `base` itself is trusted (the workspace root, or a dir the user named); only what lies
    below it is checked, component by component.
    """
    path = Path(base)
    for part in parts:
        for piece in Path(part).parts:
            if piece in ("", ".", "..") or os.sep in piece:
                raise OutputError(f"{path / piece}: not a plain dir name")
            path = path / piece
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                pass
            except OSError as exc:
                raise output_error(path, exc) from None
            _check_dir(path)
    return path


def create_unique_dir(parent: Path, name: str) -> Path:
    """A new dir `parent/name`, or `name_1`, `name_2`... when taken: the first `mkdir` wins,
    so concurrent callers never share one. `parent` must exist (see `ensure_dir`)."""
    for n in range(_MAX_SUFFIX):
        candidate = parent / (name if n == 0 else f"{name}_{n}")
        try:
            os.mkdir(candidate, 0o755)
        except FileExistsError:
            continue
        except OSError as exc:
            raise output_error(candidate, exc) from None
        return candidate
    raise OutputError(f"{parent / name}: too many dirs of this name")


def _open_new(path: Path) -> int:
    try:
        return os.open(path, _FILE_FLAGS, 0o644)
    except OSError as exc:
        raise output_error(path, exc) from None


def _temp_beside(path: Path) -> tuple[Path, int]:
    """A fresh hidden temp file in the final name's dir (so `os.replace` stays in one fs)."""
    for n in range(_MAX_SUFFIX):
        temp = path.with_name(f".{path.name}.{os.getpid()}.{n}.tmp")
        try:
            return temp, os.open(temp, _FILE_FLAGS, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            raise output_error(path, exc) from None
    raise OutputError(f"{path}: cannot make a temp file beside it")


def _check_replaceable(path: Path) -> None:
    """The final name may be missing or a regular file (ours, from an earlier run)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise output_error(path, exc) from None
    if stat.S_ISLNK(mode):
        raise OutputError(
            f"{path}: is a symbolic link; outputs are never written through links (remove it)"
        )
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: exists and is not a regular file; not replaced")


def _fdopen(fd: int, text: bool) -> IO[Any]:
    if text:
        return os.fdopen(fd, "w", encoding="utf-8", errors=TEXT_ERRORS, newline="")
    return os.fdopen(fd, "wb")


def replace_output(path: Path, write: Callable[[IO[Any]], None], text: bool = False) -> Path:
    """Write `path` whole: `write(fh)` fills a new temp file beside it, which then replaces it.

    The final name must be missing or a regular file; a link there is refused (and `os.replace`
    would replace the link itself, never its target). On any failure the temp file is removed
    and nothing at `path` changes; an OSError becomes an OutputError naming `path`.
    """
    path = Path(path)
    _check_replaceable(path)
    temp, fd = _temp_beside(path)
    try:
        with _fdopen(fd, text) as fh:
            write(fh)
        _check_replaceable(path)
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise output_error(path, exc) from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return path


def write_bytes_output(path: Path, data: bytes) -> Path:
    """`replace_output` for bytes already in memory."""

    def write(fh: IO[Any]) -> None:
        fh.write(data)

    return replace_output(path, write)


@contextlib.contextmanager
def create_output_file(
    path: Path, text: bool = True, keep_on_interrupt: bool = True
) -> Iterator[IO[Any]]:
    """`with create_output_file(path) as fh:` a new file, for outputs streamed as they are made
    (a compare's CSV). The name must be free (`O_EXCL`) and is never a link (`O_NOFOLLOW`).

    An OSError while writing or closing removes the file and raises an OutputError naming it
    ("no space left on <path>" for a full disk). Any other exception (Ctrl-C) keeps what was
    written when `keep_on_interrupt`: rows written so far are worth keeping.
    """
    path = Path(path)
    fh = _fdopen(_open_new(path), text)
    try:
        yield fh
        fh.close()
    except OSError as exc:
        _close_quietly(fh)
        path.unlink(missing_ok=True)
        raise output_error(path, exc) from None
    except BaseException:
        _close_quietly(fh)
        if not keep_on_interrupt:
            path.unlink(missing_ok=True)
        raise


def _close_quietly(fh: IO[Any]) -> None:
    with contextlib.suppress(OSError):
        fh.close()
