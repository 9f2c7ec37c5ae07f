"""File times for tests of change detection: an mtime within a clock tick of an index build
is not trusted (re-read once), so tests that need a quiet workspace age it first."""

from __future__ import annotations

import os
import time
from pathlib import Path

AGE_NS = 60 * 10**9


def settle(root: Path) -> None:
    """Every file and dir under `root` (itself included) a minute old."""
    old = time.time_ns() - AGE_NS
    # Files first: setting a file's times never touches its dir's mtime, and dirs last.
    paths = sorted(root.rglob("*"), key=lambda p: (p.is_dir(), -len(p.parts)))
    for path in [*paths, root]:
        os.utime(path, ns=(old, old), follow_symlinks=False)


def bump_mtime(path: Path) -> None:
    """A later mtime, still in the past: a change seen by its mtime only."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
