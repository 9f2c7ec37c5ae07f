"""A small map of what a compare worker met lately, keyed by (file path, ...), bounded in bytes.

The metric memo and the benchmark cache both keep arrays tied to a benchmark file for the
tasks that come soon after. Both drop the least recently used entries beyond their byte bound,
and both drop every entry of a file at once when the plan says no later task uses it
(`FileTask.last_uses`): what is kept past its last use only holds pages the next tensor cannot
reuse (`page_reuse`). Safe to share between threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")
Key = tuple  # its first item is the file path the entry belongs to


class RecentByPath(Generic[V]):
    def __init__(self, max_bytes: int) -> None:
        self._entries: OrderedDict[Key, tuple[V, int]] = OrderedDict()
        self._keys_of: dict[str, set[Key]] = {}
        self._lock = threading.Lock()
        self.max_bytes = max_bytes
        self.bytes = 0

    def get(self, key: Key) -> V | None:
        with self._lock:
            item = self._entries.get(key)
            if item is None:
                return None
            self._entries.move_to_end(key)
            return item[0]

    def put(self, key: Key, value: V, nbytes: int) -> None:
        """Keep `value` (which holds `nbytes`) under `key`, in place of what was there."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (value, nbytes)
            self._keys_of.setdefault(key[0], set()).add(key)
            self.bytes += nbytes
            while self.bytes > self.max_bytes and self._entries:
                dropped, (_, size) = self._entries.popitem(last=False)
                self._unindex(dropped)
                self.bytes -= size

    def forget(self, path: str) -> None:
        """Drop every entry of `path`."""
        with self._lock:
            for key in self._keys_of.pop(path, ()):
                self.bytes -= self._entries.pop(key)[1]

    def __len__(self) -> int:
        return len(self._entries)

    def paths(self) -> set[str]:
        with self._lock:
            return set(self._keys_of)

    def _unindex(self, key: Key) -> None:
        keys = self._keys_of[key[0]]
        keys.discard(key)
        if not keys:
            del self._keys_of[key[0]]
