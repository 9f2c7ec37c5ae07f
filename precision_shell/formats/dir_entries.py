"""Listing a dir of dump or benchmark files: its files, and what is wrong with every other entry.

An entry that is no readable file (a dir, a dangling or looping symlink, a FIFO) is not
indexed; the indexers make the ones named like their files a warning naming it, so nothing
that looks like a dump or a benchmark tensor disappears silently.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from precision_shell.formats.bounded_read import file_kind


def list_dir(
    directory: Path | str,
    named_like_a_file: Callable[[str], bool] | None = None,
    kind: str = "file",
) -> tuple[list[str], list[tuple[str, str]]]:
    """(names of the files directly in `directory`, symlinks to files included; (name, what
    is wrong with it) of every other entry, sub-dirs included: the caller keeps those named
    like its files). With `named_like_a_file`, a symlink to a file whose own name it rejects
    (`x.dump -> /etc/passwd`) is one of the others ("not named like a `kind`"): a name alone
    does not make a file one of ours. A link into a content-addressed store (DVC's cache, the
    Hugging Face hub's blobs, git-annex: `store_object_name`) is a file like any other: those
    stores name their objects by hash and link them in under the file's own name. Raises OSError when the dir cannot be listed."""
    files: list[str] = []
    others: list[tuple[str, str]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                if entry.is_file():  # the file type from the listing: no stat for most entries
                    problem = _link_problem(entry, named_like_a_file, kind)
                    if problem is None:
                        files.append(entry.name)
                    else:
                        others.append((entry.name, problem))
                    continue
            except OSError:
                pass  # a symlink whose target cannot be reached: said below
            others.append((entry.name, _not_a_file(entry)))
    return files, others


# The name of an object in a content-addressed store, which data version control keeps
# tensors in and links them from under their own names: DVC's cache (`.dvc/cache/files/md5/
# ab/<30 hex>`), the Hugging Face hub's `blobs/<40 or 64 hex>`, a git-annex key
# (`SHA256E-s1048576--<hex>[.ext]`).
_STORE_OBJECT = re.compile(
    r"[0-9a-f]{30,128}|[A-Z0-9]{2,16}-s[0-9]+(?:-[A-Za-z0-9]+)*--[0-9a-f]{8,128}(?:\.\w{1,16})*"
)


def store_object_name(name: str) -> bool:
    """Whether `name` is a content-addressed store's object name (a hash, or a git-annex key)."""
    return _STORE_OBJECT.fullmatch(name) is not None


def _link_problem(
    entry: os.DirEntry, named_like_a_file: Callable[[str], bool] | None, kind: str
) -> str | None:
    """Why a symlink to a file is none of ours (its target is named otherwise), or None."""
    if named_like_a_file is None or not entry.is_symlink():  # is_symlink: from the listing
        return None
    target = os.path.realpath(entry.path)
    name = os.path.basename(target)
    if named_like_a_file(name) or store_object_name(name):
        return None
    return f"a symlink to {target}, not named like a {kind}"


def cannot_list(directory: Path | str, exc: OSError) -> str:
    """The warning for a dir that is there but cannot be listed, and why."""
    return f"{directory}: cannot list: {exc.strerror or exc}"


def odd_entry_warnings(
    directory: Path, others: list[tuple[str, str]], named_like_a_file: Callable[[str], bool]
) -> list[str]:
    """One warning per entry of `others` (from `list_dir`) whose name `named_like_a_file`
    accepts: what is wrong with it, and that it is skipped."""
    return [
        f"{directory / name}: {problem}; skipped"
        for name, problem in sorted(others)
        if named_like_a_file(name)
    ]


def _not_a_file(entry: os.DirEntry) -> str:
    """Why `entry` is no file to read, as a phrase: "a directory, not a file"..."""
    try:
        mode = os.stat(entry.path).st_mode
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if not entry.is_symlink():
            return f"cannot read: {reason}"
        try:
            target = os.readlink(entry.path)
        except OSError:
            return f"a symlink that cannot be followed: {reason}"
        if isinstance(exc, FileNotFoundError):
            return f"a dangling symlink (to {target}: no such file)"
        return f"a symlink to {target} that cannot be followed: {reason}"
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    return f"not a regular file ({file_kind(mode)})"


def listing(path: Path | str, warnings: list[str]) -> list[os.DirEntry] | None:
    """The entries of `path`: empty when there is no such dir; None, and a warning naming it
    and why ("Permission denied"), when it is there and cannot be listed."""
    try:
        with os.scandir(path) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        warnings.append(cannot_list(path, exc))
        return None
