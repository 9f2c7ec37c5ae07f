"""The on-disk cache of index pieces, under `precision_data/temp/index_cache/`.

Each piece (one graph file, one dump dir, the benchmark dir) is cached separately and keyed by
the sizes and mtimes of what it was built from, so a changed or added file rebuilds only
its own piece. Entries are pickles, and a workspace may come from someone else, so every
entry carries an HMAC made with a per-user key kept outside the workspace: an entry we did
not write is never unpickled, only rebuilt. A key of the wrong length (an empty file left by
a full disk, say) would let anyone forge that HMAC, so it counts as no key at all.

Nor is an entry's file trusted to be one: only a regular file of at most MAX_ENTRY_BYTES is
read (a FIFO, a link to `/dev/zero` or a 20 GB sparse file would hang or exhaust memory). Any
problem with an entry is a miss: its piece is built from the real files, and an entry that is
no file of ours at all (not a regular file, too large) is named once in `problems`, then
replaced by the rebuilt one.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import pickle
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precision_shell.errors import FormatError
from precision_shell.formats.bounded_read import read_bounded
from precision_shell.workspace.output_files import OutputError, ensure_dir

CACHE_FORMAT = 3  # with `code_digest()`: an entry's objects are of the code that reads them


@functools.cache
def code_digest() -> str:
    """A digest of this package's source: cached entries are pickled objects of its classes,
    and an entry another version wrote unpickles into objects that lack what the code now
    reads (QA: after an upgrade, `ni` failed with "'BenchmarkIndex' object has no attribute
    '_files'"), so any change of the code makes every entry a miss. ~5 ms, once."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()[:24]


def entry_format() -> str:
    """The `format` every entry of this code is written with and read back by."""
    return f"{CACHE_FORMAT}-{code_digest()}"


KEY_LEN = 32
_MAC_LEN = 32
# The graph entry of a 300-op model is ~1 MB: this leaves room for models 500 times as large,
# and a larger entry is neither written nor read.
MAX_ENTRY_BYTES = 1 << 30


def user_key_path() -> Path:
    """The per-user HMAC key: in the user's cache dir, never in a workspace."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "precision_shell" / "index_cache.key"


def _read_key(path: Path) -> bytes | None:
    """The key if the file holds exactly one; None when it is missing, unreadable or bad."""
    try:
        with open(path, "rb") as fh:
            key = fh.read(KEY_LEN + 1)
    except OSError:
        return None
    return key if len(key) == KEY_LEN else None


def _install_key(path: Path, replace: bool) -> None:
    """Write a fresh key beside `path`, then move it in whole: a reader never sees a short key.

    `replace` False links the new key in only if no key exists yet (a racing first start that
    got there first wins); True swaps out a bad key.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(KEY_LEN))
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _user_key() -> bytes | None:
    path = user_key_path()
    key = _read_key(path)
    if key is not None:
        return key
    try:
        exists = path.exists()
        if exists and not os.access(path, os.R_OK):
            return None  # someone else's file: do not touch it, run uncached
        _install_key(path, replace=exists)
    except OSError:
        return None
    return _read_key(path)  # ours, or the key of the start that won the race


# (size, mtime_ns, ctime_ns) of a file
FileStamp = tuple[int, int, int]


def file_fingerprint(path: Path) -> FileStamp | None:
    """(size, mtime, ctime) of a file, None when it cannot be stat'ed. The ctime tells a file
    rewritten or replaced by a copy that kept its size and old mtime (`cp -p`, `rsync -a`,
    a tar extraction): no user can set it back."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def dir_fingerprint(path: Path, *members: str) -> tuple:
    """A dir's mtime changes when entries are added, removed or renamed; members add their own."""
    return (file_fingerprint(path), *(file_fingerprint(path / m) for m in members))


class IndexCache:
    """Load-or-build of cache entries; silently uncached when the dir or key is unavailable.

    `read=False` rebuilds every piece and writes it (what `reload` wants); `enabled=False`
    neither reads nor writes.
    """

    def __init__(self, cache_dir: Path, enabled: bool = True, read: bool = True):
        self.cache_dir = cache_dir
        self._key = _user_key() if enabled else None
        self._read_entries = read
        self.hits = 0
        self.misses = 0
        self.problems: list[str] = []  # entries that are no file of ours, one line each

    @property
    def enabled(self) -> bool:
        return self._key is not None

    def _entry_path(self, kind: str, source: Path) -> Path:
        digest = hashlib.sha1(str(source).encode("utf-8", "surrogateescape")).hexdigest()[:20]
        return self.cache_dir / f"{kind}-{digest}.pkl"

    def _read(self, path: Path, fingerprint: Any) -> Any | None:
        assert self._key is not None
        try:
            raw = read_bounded(path, MAX_ENTRY_BYTES, follow_links=False)
        except FormatError as exc:  # a FIFO, a device, a dir, a huge file: not ours
            self.problems.append(f"{exc}; ignored, the index is rebuilt from the files")
            return None
        except OSError:  # missing (the usual miss), a link (ELOOP), unreadable
            return None
        mac, payload = raw[:_MAC_LEN], raw[_MAC_LEN:]
        if not payload or not hmac.compare_digest(
            mac, hmac.new(self._key, payload, hashlib.sha256).digest()
        ):
            return None
        try:
            entry = pickle.loads(payload)
        except Exception:  # an entry of ours an older version wrote, or a deep one: rebuild
            return None
        if (
            not isinstance(entry, dict)
            or entry.get("format") != entry_format()
            or entry.get("fingerprint") != fingerprint
        ):
            return None
        return entry["state"]

    def _write(self, path: Path, fingerprint: Any, state: Any) -> None:
        """Best effort: a piece that cannot be pickled or stored is just not cached."""
        assert self._key is not None
        try:
            payload = pickle.dumps(
                {"format": entry_format(), "fingerprint": fingerprint, "state": state},
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        except Exception:  # RecursionError on a very deep attr tree, PicklingError...
            return  # the piece is still indexed, just not cached
        if len(payload) + _MAC_LEN > MAX_ENTRY_BYTES:
            return  # it would not be read back
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        try:
            # temp/ and temp/index_cache/ made here and checked to be real dirs: a planted
            # link must not carry cache files out of the workspace
            ensure_dir(
                self.cache_dir.parent.parent, self.cache_dir.parent.name, self.cache_dir.name
            )
            # A unique temp name in the same dir: two shells on one workspace never share it,
            # and os.replace swaps whole files only.
            fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=f".{path.name}.", suffix=".tmp")
        except (OSError, OutputError):
            return  # a read-only workspace (or a linked temp/) works, just without a cache
        stored = False
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(mac)
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            stored = True
        except OSError:
            pass  # ENOSPC, EIO...: the command goes on without this entry
        finally:
            if not stored:  # also on Ctrl-C: never leave a partial temp file behind
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def load(self, kind: str, source: Path, fingerprint: Any) -> Any | None:
        """The state stored for (kind, source) at `fingerprint`; None when there is none
        (or the cache is off, or set to rebuild)."""
        if not self.enabled or not self._read_entries:
            return None
        path = self._entry_path(kind, source)
        try:
            return self._read(path, fingerprint)
        except Exception as exc:  # MemoryError...: a cache failure is a miss, never a lost piece
            self.problems.append(
                f"{path}: cannot read it ({type(exc).__name__}); ignored, the index is rebuilt"
                " from the files"
            )
            return None

    def store(self, kind: str, source: Path, fingerprint: Any, state: Any) -> None:
        """Keep `state` for (kind, source) at `fingerprint` (best effort, as every entry)."""
        if self.enabled:
            self._write(self._entry_path(kind, source), fingerprint, state)

    def load_or_build(
        self, kind: str, source: Path, fingerprint: Any, build: Callable[[], Any]
    ) -> Any:
        state = self.load(kind, source, fingerprint)
        if state is not None:
            self.hits += 1
            return state
        self.misses += 1
        state = build()
        self.store(kind, source, fingerprint, state)
        return state
