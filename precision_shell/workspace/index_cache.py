"""The on-disk cache of index pieces, under `precision_data/temp/index_cache/`.

Each piece (one graph file, one dump dir, the benchmark dir) is cached separately and keyed by
the sizes and mtimes of what it was built from, so a changed or added file rebuilds only
its own piece. Entries are pickles, and a workspace may come from someone else, so every
entry carries an HMAC made with a per-user key kept outside the workspace: an entry we did
not write is never unpickled, only rebuilt.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_FORMAT = 2
_MAC_LEN = 32


def _user_key() -> bytes | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key_path = Path(base) / "precision_shell" / "index_cache.key"
    try:
        return key_path.read_bytes()
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        key_path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return key
    except FileExistsError:
        return key_path.read_bytes()
    except OSError:
        return None


def file_fingerprint(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def dir_fingerprint(path: Path, *members: str) -> tuple:
    """A dir's mtime changes when entries are added, removed or renamed; members add their own."""
    return (file_fingerprint(path), *(file_fingerprint(path / m) for m in members))


class IndexCache:
    """Load-or-build of cache entries; silently uncached when the dir or key is unavailable."""

    def __init__(self, cache_dir: Path, enabled: bool = True):
        self.cache_dir = cache_dir
        self._key = _user_key() if enabled else None
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self._key is not None

    def _entry_path(self, kind: str, source: Path) -> Path:
        digest = hashlib.sha1(str(source).encode("utf-8", "surrogateescape")).hexdigest()[:20]
        return self.cache_dir / f"{kind}-{digest}.pkl"

    def _read(self, path: Path, fingerprint: Any) -> Any | None:
        assert self._key is not None
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        mac, payload = raw[:_MAC_LEN], raw[_MAC_LEN:]
        if not hmac.compare_digest(mac, hmac.new(self._key, payload, hashlib.sha256).digest()):
            return None
        try:
            entry = pickle.loads(payload)
        except Exception:
            return None
        if entry.get("format") != CACHE_FORMAT or entry.get("fingerprint") != fingerprint:
            return None
        return entry["state"]

    def _write(self, path: Path, fingerprint: Any, state: Any) -> None:
        assert self._key is not None
        payload = pickle.dumps(
            {"format": CACHE_FORMAT, "fingerprint": fingerprint, "state": state},
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(mac + payload)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only workspace works, just without a cache

    def load_or_build(
        self, kind: str, source: Path, fingerprint: Any, build: Callable[[], Any]
    ) -> Any:
        if not self.enabled:
            self.misses += 1
            return build()
        path = self._entry_path(kind, source)
        state = self._read(path, fingerprint)
        if state is not None:
            self.hits += 1
            return state
        self.misses += 1
        state = build()
        self._write(path, fingerprint, state)
        return state
