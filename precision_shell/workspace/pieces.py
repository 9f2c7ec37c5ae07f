"""The pieces an index is made of (one graph file, one dump dir, the benchmark dir...), each
with the fingerprint of what it was built from.

A piece comes from the previous index of the session when its fingerprint is unchanged
(nothing read at all), else from the on-disk cache, else it is built. A piece that cannot
be built becomes a warning naming its file, never a failed workspace. The same fingerprints
tell, by a few `stat` calls, whether the index is still current.

An mtime only moves once per clock tick, so a file changed in the very tick its fingerprint
was taken keeps the same fingerprint. Like git's "racily clean" entries, a fingerprint whose
mtime is that close to when the index was built is not trusted: its piece is read again
once, later.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_shell.errors import PrecisionError
from precision_shell.workspace.index_cache import FileStamp, IndexCache, file_fingerprint
from precision_shell.workspace.layout import DirStamp

# File times come from a clock that ticks every 1-10 ms and lags the wall clock by up to a
# tick; two ticks of margin cost at most one extra read of a piece changed just before.
RACY_NS = 20_000_000


def _mtimes(fingerprint: Any) -> list[int]:
    """Every mtime in a fingerprint: that of each (size, mtime_ns, ctime_ns) of
    `file_fingerprint` in it. (A ctime just set by a copy that kept an old mtime is not racy:
    a later such copy sets it again, later.)"""
    if not isinstance(fingerprint, tuple):
        return []
    if len(fingerprint) == 3 and all(isinstance(v, int) for v in fingerprint):
        return [fingerprint[1]]
    return [m for part in fingerprint for m in _mtimes(part)]


def is_racy(fingerprint: Any, taken_ns: int) -> bool:
    """True when something in `fingerprint` was modified too close to `taken_ns` to trust."""
    return any(m >= taken_ns - RACY_NS for m in _mtimes(fingerprint))


@dataclass(frozen=True)
class Piece:
    """One built piece: its value and how to recompute the fingerprint it was built at."""

    fingerprint: Any
    value: Any
    fingerprint_of: Callable[[], Any]
    taken_ns: int  # wall clock just before the fingerprint was taken

    @property
    def racy(self) -> bool:
        return is_racy(self.fingerprint, self.taken_ns)


def failure_text(source: Path | str, exc: BaseException) -> str:
    """One line naming the file and what is wrong (a user error says both already)."""
    if isinstance(exc, PrecisionError):
        return str(exc)
    lines = str(exc).strip().splitlines()
    detail = f": {lines[0]}" if lines else ""
    return f"{source}: cannot read it ({type(exc).__name__}{detail}); skipped"


class PieceStore:
    """Builds the pieces of one index, reusing those of `previous` that did not change."""

    def __init__(self, cache: IndexCache, previous: dict[tuple[str, str], Piece] | None = None):
        self.cache = cache
        self._previous = previous or {}
        self.pieces: dict[tuple[str, str], Piece] = {}
        self.reused = 0

    def get(
        self,
        kind: str,
        source: Path,
        fingerprint_of: Callable[[], Any],
        build: Callable[[], Any],
        warnings: list[str],
        *,
        from_state: Callable[[Any], Any] | None = None,
        cached: bool = True,
    ) -> Any | None:
        """The piece's value, or None (and a warning) when it cannot be built.

        `build` returns a picklable state (what the disk cache keeps); `from_state` turns it
        into the value kept in memory.
        """
        key = (kind, str(source))
        taken_ns = time.time_ns()
        fingerprint = fingerprint_of()
        old = self._previous.get(key)
        if old is not None and old.fingerprint == fingerprint and not old.racy:
            self.reused += 1
            piece = old
        else:
            # A racy fingerprint may not describe what gets read: never stored under it.
            use_cache = cached and not is_racy(fingerprint, taken_ns)
            try:
                if use_cache:
                    state = self.cache.load_or_build(kind, source, fingerprint, build)
                else:
                    state = build()
                value = from_state(state) if from_state is not None else state
            except Exception as exc:  # one unreadable file must not disable the whole workspace
                value = _Failed(failure_text(source, exc))
            finally:  # a bad cache entry was a miss: said once, naming the entry
                warnings.extend(self.cache.problems)
                self.cache.problems.clear()
            piece = Piece(fingerprint, value, fingerprint_of, taken_ns)
        # A failed piece is kept too: its file is watched like any other, and fixing it shows.
        self.pieces[key] = piece
        if isinstance(piece.value, _Failed):
            warnings.append(piece.value.message)
            return None
        return piece.value


@dataclass(frozen=True)
class _Failed:
    message: str


@dataclass(frozen=True)
class Freshness:
    """What an index was built from: the layout's dirs and every piece's fingerprint."""

    dirs: tuple[DirStamp, ...]
    pieces: tuple[Piece, ...]
    started_ns: int  # wall clock when the index build began, before anything was stat'ed

    @classmethod
    def of(
        cls,
        watched_dirs: list[DirStamp],
        pieces: dict[tuple[str, str], Piece],
        started_ns: int,
    ) -> Freshness:
        first: dict[Path, FileStamp | None] = {}
        for path, fingerprint in watched_dirs:
            first.setdefault(path, fingerprint)  # the earliest stamp is the safe one
        return cls(tuple(first.items()), tuple(pieces.values()), started_ns)

    def changed(self) -> bool:
        """True when a dir or a piece's source changed since: a few stats, no listing."""
        for path, fingerprint in self.dirs:
            if file_fingerprint(path) != fingerprint or is_racy(fingerprint, self.started_ns):
                return True
        return any(p.racy or p.fingerprint_of() != p.fingerprint for p in self.pieces)
