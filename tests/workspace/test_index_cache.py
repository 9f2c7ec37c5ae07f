import os
import pickle

import pytest

from precision_shell.workspace.index_cache import IndexCache, dir_fingerprint, file_fingerprint


@pytest.fixture(autouse=True)
def _private_key_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def test_builds_once_then_loads(tmp_path):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    calls = []
    cache = IndexCache(tmp_path / "cache")

    def build():
        calls.append(1)
        return {"ops": [1, 2, 3]}

    fp = file_fingerprint(src)
    assert cache.load_or_build("graph", src, fp, build) == {"ops": [1, 2, 3]}
    again = IndexCache(tmp_path / "cache")
    assert again.load_or_build("graph", src, fp, build) == {"ops": [1, 2, 3]}
    assert len(calls) == 1 and again.hits == 1 and again.misses == 0


def test_changed_fingerprint_rebuilds(tmp_path):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(tmp_path / "cache")
    cache.load_or_build("graph", src, file_fingerprint(src), lambda: "old")
    src.write_text("bb")  # size changes
    assert cache.load_or_build("graph", src, file_fingerprint(src), lambda: "new") == "new"
    assert cache.misses == 2


def test_entry_not_signed_with_our_key_is_never_unpickled(tmp_path):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(tmp_path / "cache")
    fp = file_fingerprint(src)
    cache.load_or_build("graph", src, fp, lambda: "ours")
    (entry,) = (tmp_path / "cache").iterdir()

    class Boom:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    payload = pickle.dumps({"format": 1, "fingerprint": fp, "state": Boom()})
    entry.write_bytes(b"\0" * 32 + payload)
    assert (
        IndexCache(tmp_path / "cache").load_or_build("graph", src, fp, lambda: "rebuilt")
        == "rebuilt"
    )
    assert not (tmp_path / "pwned").exists()


def test_read_only_cache_dir_still_builds(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache dir should be")
    cache = IndexCache(blocker / "sub")
    assert cache.load_or_build("graph", tmp_path, None, lambda: 42) == 42


def test_dir_fingerprint_changes_when_a_file_is_added(tmp_path):
    d = tmp_path / "dump"
    d.mkdir()
    before = dir_fingerprint(d, "mapping.csv")
    os.utime(d, ns=(1, 1))
    before = dir_fingerprint(d, "mapping.csv")
    (d / "new_file").write_text("x")
    assert dir_fingerprint(d, "mapping.csv") != before
    assert before[1] is None  # no mapping.csv
