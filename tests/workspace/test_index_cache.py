import errno
import hashlib
import hmac
import os
import pickle
import stat
import sys
from pathlib import Path

import pytest

from precision_shell.workspace import index_cache
from precision_shell.workspace.index_cache import (
    KEY_LEN,
    IndexCache,
    dir_fingerprint,
    entry_format,
    file_fingerprint,
    user_key_path,
)
from tests.hostile_files import link_to_dev_zero, make_fifo, make_sparse, within


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


# -- the HMAC key ----------------------------------------------------------------------------


def _forged_entry(cache_dir, src, marker, key: bytes) -> None:
    """A cache entry whose pickle would create `marker` when loaded, signed with `key`."""

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + str(marker),))

    fp = file_fingerprint(src)
    payload = pickle.dumps({"format": entry_format(), "fingerprint": fp, "state": Payload()})
    mac = hmac.new(key, payload, hashlib.sha256).digest()
    probe = IndexCache(cache_dir, enabled=False)
    path = probe._entry_path("graph", src)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(mac + payload)


@pytest.mark.parametrize(
    "bad_key", [b"", b"\x01" * 16, b"\x02" * (KEY_LEN + 1)], ids=["empty", "short", "long"]
)
def test_a_key_of_the_wrong_length_is_no_key_and_nothing_is_unpickled(tmp_path, bad_key):
    key_path = user_key_path()
    key_path.parent.mkdir(parents=True)
    key_path.write_bytes(bad_key)  # e.g. left empty by a disk-full error
    src = tmp_path / "graph.txt"
    src.write_text("a")
    marker = tmp_path / "pwned"
    # Signed with the bad key (as read: HMAC pads a short key and hashes a long one alike).
    _forged_entry(tmp_path / "cache", src, marker, bad_key)
    cache = IndexCache(tmp_path / "cache")
    assert cache.load_or_build("graph", src, file_fingerprint(src), lambda: "rebuilt") == "rebuilt"
    assert not marker.exists()
    assert cache.misses == 1 and cache.hits == 0
    # The bad key was replaced by a good one, in place.
    new_key = key_path.read_bytes()
    assert len(new_key) == KEY_LEN and new_key != bad_key[:KEY_LEN]
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600


def test_the_key_is_created_whole_with_mode_0600_and_no_temp_file_left(tmp_path):
    cache = IndexCache(tmp_path / "cache")
    assert cache.enabled
    key_path = user_key_path()
    assert len(key_path.read_bytes()) == KEY_LEN
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert sorted(p.name for p in key_path.parent.iterdir()) == [key_path.name]
    # A second start reads the same key: its entries are ours.
    src = tmp_path / "graph.txt"
    src.write_text("a")
    fp = file_fingerprint(src)
    cache.load_or_build("graph", src, fp, lambda: "first")
    assert IndexCache(tmp_path / "cache").load_or_build("graph", src, fp, lambda: "x") == "first"


def test_a_start_racing_another_uses_the_key_the_other_installed(tmp_path, monkeypatch):
    key_path = user_key_path()
    winner = bytes(range(KEY_LEN))
    real_link = os.link

    def racing_link(src, dst):
        # The other start links its key in between our read and our link.
        Path(dst).write_bytes(winner)
        real_link(src, str(dst) + ".unused")  # the link itself works
        raise FileExistsError(dst)

    monkeypatch.setattr(os, "link", racing_link)
    cache = IndexCache(tmp_path / "cache")
    assert cache._key == winner
    assert key_path.read_bytes() == winner
    leftovers = {p.name for p in key_path.parent.iterdir()} - {
        key_path.name,
        key_path.name + ".unused",
    }
    assert leftovers == set()


def test_a_key_that_cannot_be_written_means_no_cache_not_an_error(tmp_path, monkeypatch):
    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    cache = IndexCache(tmp_path / "cache")
    assert not cache.enabled
    key_path = user_key_path()
    assert not key_path.exists()  # never an empty key file
    assert list(key_path.parent.iterdir()) == []
    assert cache.load_or_build("graph", tmp_path, None, lambda: 7) == 7


# -- writes that fail --------------------------------------------------------------------------


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_state_too_deep_to_pickle_is_returned_uncached(tmp_path):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(tmp_path / "cache")
    deep = _deep(sys.getrecursionlimit() * 20)
    state = cache.load_or_build("graph", src, file_fingerprint(src), lambda: deep)
    assert state is deep
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_full_disk_leaves_no_entry_and_no_temp_file(tmp_path, monkeypatch, failing):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(tmp_path / "cache")  # the key is made before the disk fills

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, failing, no_space)
    fp = file_fingerprint(src)
    assert cache.load_or_build("graph", src, fp, lambda: {"ops": [1]}) == {"ops": [1]}
    assert list((tmp_path / "cache").iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    again = IndexCache(tmp_path / "cache")
    assert again.load_or_build("graph", src, fp, lambda: "rebuilt") == "rebuilt"
    assert again.misses == 1


def test_reread_builds_every_piece_and_rewrites_the_cache(tmp_path):
    src = tmp_path / "graph.txt"
    src.write_text("a")
    fp = file_fingerprint(src)
    IndexCache(tmp_path / "cache").load_or_build("graph", src, fp, lambda: "old")
    fresh = IndexCache(tmp_path / "cache", read=False)
    assert fresh.load_or_build("graph", src, fp, lambda: "new") == "new"
    assert IndexCache(tmp_path / "cache").load_or_build("graph", src, fp, lambda: "x") == "new"


@pytest.mark.parametrize("linked", ["temp", "temp/index_cache"])
def test_a_linked_temp_dir_gets_no_cache_files_outside_the_workspace(tmp_path, linked):
    ws = tmp_path / "precision_data"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    if linked == "temp/index_cache":
        (ws / "temp").mkdir()
    (ws / linked).symlink_to(outside, target_is_directory=True)
    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(ws / "temp" / "index_cache")
    built = cache.load_or_build("graph", src, file_fingerprint(src), lambda: {"ops": [1]})
    assert built == {"ops": [1]}  # the command still works, without a cache
    assert list(outside.rglob("*")) == []


def _planted_entry(tmp_path, plant) -> tuple[Path, Path, tuple]:
    """A source, the path of its cache entry (written once, then replaced by `plant`), and
    the source's fingerprint."""
    src = tmp_path / "graph.txt"
    src.write_text("a")
    fp = file_fingerprint(src)
    IndexCache(tmp_path / "cache").load_or_build("graph", src, fp, lambda: "ours")
    (entry,) = (tmp_path / "cache").iterdir()
    entry.unlink()
    plant(entry)
    return src, entry, fp


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (
            lambda p: make_sparse(p, 20 << 30),
            "20 GiB, larger than such a file can be (at most 1 GiB)",
        ),
        (lambda p: p.mkdir(), "not a regular file (a directory)"),
        (link_to_dev_zero, "a symlink, not followed"),
    ],
    ids=["fifo", "sparse", "dir", "dev-zero-link"],
)
def test_an_entry_that_is_no_file_of_ours_is_a_miss_named_once_then_replaced(
    tmp_path, plant, problem
):
    src, entry, fp = _planted_entry(tmp_path, plant)
    cache = IndexCache(tmp_path / "cache")
    built = within(10, lambda: cache.load_or_build("graph", src, fp, lambda: "rebuilt"), [entry])
    assert built == "rebuilt" and cache.misses == 1
    assert cache.problems == [f"{entry}: {problem}; ignored, the index is rebuilt from the files"]
    if problem.endswith("(a directory)"):
        return  # a dir is not replaced by a file: it stays a miss
    assert stat.S_ISREG(os.lstat(entry).st_mode)  # the rebuilt entry took its place
    again = IndexCache(tmp_path / "cache")
    assert again.load_or_build("graph", src, fp, lambda: "x") == "rebuilt"
    assert again.hits == 1 and again.problems == []


def test_a_failure_reading_an_entry_is_a_miss_never_the_source_s_failure(tmp_path, monkeypatch):
    src, entry, fp = _planted_entry(tmp_path, lambda p: p.write_bytes(b"junk"))

    def out_of_memory(*_args, **_kwargs):
        raise MemoryError

    monkeypatch.setattr(index_cache, "read_bounded", out_of_memory)
    cache = IndexCache(tmp_path / "cache")
    assert cache.load_or_build("graph", src, fp, lambda: "rebuilt") == "rebuilt"
    assert cache.problems == [
        f"{entry}: cannot read it (MemoryError); ignored, the index is rebuilt from the files"
    ]


def test_an_entry_another_version_of_the_code_wrote_is_a_miss(tmp_path, monkeypatch):
    """QA: after an upgrade `ni` failed with "'BenchmarkIndex' object has no attribute
    '_files'": an older version's pickled index lacked what the new code reads."""
    import precision_shell.workspace.index_cache as index_cache

    src = tmp_path / "graph.txt"
    src.write_text("a")
    cache = IndexCache(tmp_path / "cache")
    with monkeypatch.context() as patched:
        patched.setattr(index_cache, "code_digest", lambda: "an-older-version")
        cache.store("graph", src, file_fingerprint(src), {"old": True})
        assert cache.load("graph", src, file_fingerprint(src)) == {"old": True}
    assert IndexCache(tmp_path / "cache").load("graph", src, file_fingerprint(src)) is None
    cache.store("graph", src, file_fingerprint(src), {"new": True})  # this code's: a hit
    assert IndexCache(tmp_path / "cache").load("graph", src, file_fingerprint(src)) == {"new": True}
    assert (
        len(index_cache.code_digest()) == 24
        and index_cache.code_digest() == index_cache.code_digest()
    )
