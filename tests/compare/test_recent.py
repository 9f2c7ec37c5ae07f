"""RecentByPath: least recently used entries go past the byte bound; a path's entries go
together; a replaced entry counts once."""

from __future__ import annotations

from precision_shell.compare.pipeline.recent import RecentByPath


def test_the_least_recently_used_go_past_the_bound() -> None:
    recent: RecentByPath[str] = RecentByPath(max_bytes=30)
    recent.put(("a", 1), "a1", 10)
    recent.put(("b", 1), "b1", 10)
    recent.put(("c", 1), "c1", 10)
    assert recent.get(("a", 1)) == "a1"  # now the most recent
    recent.put(("d", 1), "d1", 10)
    assert recent.get(("b", 1)) is None  # the least recent went
    assert [recent.get((p, 1)) for p in "acd"] == ["a1", "c1", "d1"]
    assert recent.bytes == 30 and len(recent) == 3
    assert recent.paths() == {"a", "c", "d"}


def test_forget_drops_every_entry_of_a_path_and_its_bytes() -> None:
    recent: RecentByPath[str] = RecentByPath(max_bytes=100)
    recent.put(("a", 1), "a1", 10)
    recent.put(("a", 2), "a2", 20)
    recent.put(("b", 1), "b1", 5)
    recent.forget("a")
    assert recent.get(("a", 1)) is None and recent.get(("a", 2)) is None
    assert recent.get(("b", 1)) == "b1"
    assert recent.bytes == 5 and recent.paths() == {"b"}
    recent.forget("a")  # nothing left of it: no error
    recent.forget("never")
    assert recent.bytes == 5


def test_a_replaced_entry_counts_once_and_eviction_unindexes_its_path() -> None:
    recent: RecentByPath[str] = RecentByPath(max_bytes=25)
    recent.put(("a", 1), "small", 5)
    recent.put(("a", 1), "bigger", 15)
    assert recent.bytes == 15 and recent.get(("a", 1)) == "bigger"
    recent.put(("b", 1), "b1", 20)  # 35 > 25: a goes
    assert recent.paths() == {"b"} and recent.bytes == 20
    recent.forget("a")
    assert recent.bytes == 20
