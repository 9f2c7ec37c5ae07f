"""The columns cache dir is pruned on every write: files whose CSV is gone or changed go, the
rest is capped (newest first), and nothing but regular `*.cols` files directly in the dir is
ever removed (links, temp files of a writer, other files and dirs stay; nothing is followed).
Two shells pruning at once both finish."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from precision_shell.compare.results import columns_cache as cc
from precision_shell.compare.results.columns import load_result_columns
from tests.compare.result_columns_files import write_odd_csv


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """(results dir, cache dir), every CSV cached whatever its size."""
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    monkeypatch.delenv(cc.ENV_DISABLE, raising=False)
    results, cache = tmp_path / "results", tmp_path / "temp" / "result_columns"
    results.mkdir()
    cache.mkdir(parents=True)
    return results, cache


def _cached(results: Path, cache: Path, name: str, mtime: int | None = None) -> Path:
    """A CSV and its cache file (made by a read), the cache's mtime set to `mtime` seconds."""
    csv_path = write_odd_csv(results / f"result_{name}.csv")
    assert load_result_columns(csv_path, lambda: cache).source == "csv"
    where = cc.cache_path(cache, csv_path)
    assert where.is_file()
    if mtime is not None:
        os.utime(where, (mtime, mtime))
    return where


def _names(cache: Path) -> set[str]:
    return set(os.listdir(cache))


def test_caches_of_gone_or_changed_csvs_go_the_rest_stay(dirs):
    results, cache = dirs
    kept = _cached(results, cache, "kept", 1_000)
    gone = _cached(results, cache, "gone", 2_000)
    changed = _cached(results, cache, "changed", 3_000)
    (results / "result_gone.csv").unlink()
    with open(results / "result_changed.csv", "a", encoding="utf-8") as fh:
        fh.write("10,Late,late,float16\n")
    renamed = cache / "renamed.cols"  # a valid file, but not under its CSV's name
    renamed.write_bytes(kept.read_bytes())
    junk = cache / "junk.cols"
    junk.write_bytes(b"not a cache")
    removed = cc.prune_cache(cache)
    assert set(removed) == {gone, changed, renamed, junk}
    assert _names(cache) == {kept.name}


def test_a_read_that_writes_a_cache_prunes_the_dir(dirs):
    results, cache = dirs
    old = _cached(results, cache, "old")
    (results / "result_old.csv").unlink()
    new = _cached(results, cache, "new")
    assert _names(cache) == {new.name} and not old.exists()


def test_only_regular_cols_files_in_the_dir_are_ever_removed(dirs, tmp_path):
    results, cache = dirs
    outside = tmp_path / "outside.cols"
    outside.write_bytes(b"someone else's file")
    (cache / "link.cols").symlink_to(outside)  # never followed, never removed
    stale = _cached(results, cache, "stale")
    (cache / "dangling.cols").symlink_to(tmp_path / "nowhere")
    (results / "result_stale.csv").unlink()
    (cache / "sub.cols").mkdir()
    (cache / "sub.cols" / "inner.cols").write_bytes(stale.read_bytes())
    (cache / f".{stale.name}.123.0.tmp").write_bytes(b"a writer's temp file")
    (cache / "notes.txt").write_text("not a cache file")
    cc.prune_cache(cache, max_files=0, max_bytes=0)
    assert _names(cache) == {
        "link.cols",
        "dangling.cols",
        "sub.cols",
        f".{stale.name}.123.0.tmp",
        "notes.txt",
    }
    assert outside.read_bytes() == b"someone else's file"
    assert (cache / "sub.cols" / "inner.cols").is_file()


def test_the_newest_files_up_to_the_caps_stay_and_the_one_just_written_always(dirs):
    results, cache = dirs
    files = [_cached(results, cache, f"n{k}", 1_000 * (k + 1)) for k in range(5)]  # n4 newest
    cc.prune_cache(cache, max_files=3)
    assert _names(cache) == {f.name for f in files[2:]}
    size = files[4].stat().st_size
    cc.prune_cache(cache, keep=files[2], max_bytes=2 * size)  # the kept file counts first
    assert _names(cache) == {files[2].name, files[4].name}
    cc.prune_cache(cache, keep=files[2], max_files=0, max_bytes=0)
    assert _names(cache) == {files[2].name}


def test_a_write_keeps_at_most_the_default_caps(dirs, monkeypatch):
    results, cache = dirs
    monkeypatch.setattr(cc, "MAX_CACHE_FILES", 2)
    for k in range(4):
        _cached(results, cache, f"w{k}")
        os.utime(cc.cache_path(cache, results / f"result_w{k}.csv"), (1_000 + k, 1_000 + k))
    # w3 was written last (kept), then the newest others: w2
    assert _names(cache) == {
        cc.cache_path(cache, results / f"result_w{k}.csv").name for k in (2, 3)
    }


def test_two_shells_pruning_at_once_both_finish(dirs):
    results, cache = dirs
    stale = [_cached(results, cache, f"s{k}") for k in range(12)]
    kept = _cached(results, cache, "kept")
    for k in range(12):
        (results / f"result_s{k}.csv").unlink()
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def prune() -> None:
        try:
            start.wait()
            cc.prune_cache(cache)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=prune) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _names(cache) == {kept.name} and not any(f.exists() for f in stale)


def test_a_file_gone_between_listing_and_reading_is_skipped(dirs, monkeypatch):
    results, cache = dirs
    first = _cached(results, cache, "first")
    second = _cached(results, cache, "second")
    (results / "result_second.csv").unlink()
    real_listdir = os.listdir

    def listed_then_removed(path):  # another shell removes both files right after our listing
        names = real_listdir(path)
        first.unlink()
        second.unlink()
        return names

    monkeypatch.setattr(cc.os, "listdir", listed_then_removed)
    assert cc.prune_cache(cache) == []
    monkeypatch.undo()
    assert _names(cache) == set()


def test_a_replaced_file_is_not_removed_for_the_one_it_replaced(dirs, monkeypatch):
    results, cache = dirs
    where = _cached(results, cache, "fresh")
    (results / "result_fresh.csv").unlink()  # stale ...
    real = cc._still_valid

    def judged_then_replaced(*args):  # ... but another shell writes a fresh one meanwhile
        verdict = real(*args)
        data, st = where.read_bytes(), where.stat()
        where.unlink()
        where.write_bytes(data)  # maybe on the same inode number, but written later
        later = st.st_mtime_ns + 10**9
        os.utime(where, ns=(later, later))
        return verdict

    monkeypatch.setattr(cc, "_still_valid", judged_then_replaced)
    cc.prune_cache(cache)
    assert where.is_file()


def test_a_writer_killed_midway_leaves_no_temp_file_for_good(dirs):
    """QA: a SIGKILLed first `vcs` of 200k rows left a 127 MB `.NAME.cols.PID.N.tmp`, kept by
    every prune since (outside the file and byte limits). One older than ORPHAN_TEMP_AGE_S
    whose writer is gone goes; a young one, or a live writer's, stays."""
    results, cache = dirs
    dead = 2**22 + 12345  # above any pid_max: no such process
    old = cache / f".result_x.csv.abc{cc.SUFFIX}.{dead}.0.tmp"
    young = cache / f".result_y.csv.abc{cc.SUFFIX}.{dead}.0.tmp"
    live = cache / f".result_z.csv.abc{cc.SUFFIX}.{os.getpid()}.0.tmp"
    for path in (old, young, live):
        path.write_bytes(b"x" * 100)
    an_hour_ago = os.stat(old).st_mtime - 3600
    for path in (old, live):
        os.utime(path, (an_hour_ago, an_hour_ago))
    assert cc.prune_cache(cache) == [old]
    assert not old.exists() and young.exists() and live.exists()
