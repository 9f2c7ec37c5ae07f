"""The columns of a result CSV and their cache file: the rows, counts, verdicts and plot points
they give are the CSV reader's, whether parsed now or read from the cache; a stale cache is
rebuilt; a corrupt or crafted one is never trusted (the CSV is read instead, one note)."""

from __future__ import annotations

import math
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from precision_shell.commands.compare_summary import summarize, summarize_columns
from precision_shell.compare.results import columns_cache as cc
from precision_shell.compare.results.columns import ResultColumns, load_result_columns
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.point_arrays import op_cosines_of_columns, point_arrays
from precision_shell.report.points import op_cosines, output_points
from tests.compare.result_columns_files import (
    join_cache,
    resign,
    split_cache,
    write_odd_csv,
)
from tests.hostile_files import make_fifo, within

RULES = [
    ThresholdRule.default(),
    ThresholdRule({"CosineSimilarity": 0.98}),
    ThresholdRule({"CosineSimilarity": 0.98, "MaxAbsoluteError": 0.0005}),
    ThresholdRule({"RelativeEuclideanDistance": 0.05, "CosineSimilarity": -1.0}),
    ThresholdRule({"NotAColumn": 1.0}),
]


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """(csv, cache dir): the odd CSV, cached whatever its size."""
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    monkeypatch.delenv(cc.ENV_DISABLE, raising=False)
    cache = tmp_path / "temp" / "result_columns"
    cache.mkdir(parents=True)
    return write_odd_csv(tmp_path / "result_20261123120000.csv"), cache


def _load(csv_path: Path, cache: Path) -> ResultColumns:
    return load_result_columns(csv_path, lambda: cache)


def _assert_same_as_csv(columns: ResultColumns, csv_path: Path) -> None:
    table = read_result_csv(csv_path)
    assert columns.header == table.header
    assert columns.metric_columns == table.metric_columns
    assert columns.warnings == table.warnings
    assert columns.rows == table.rows  # every field, every row
    for a, b in zip(columns.rows, table.rows, strict=True):
        assert (a.kind, a.slot, a.op_name, a.compared, a.constant_input) == (
            b.kind,
            b.slot,
            b.op_name,
            b.compared,
            b.constant_input,
        )
        assert a.metrics.keys() == b.metrics.keys()
        assert all(
            (math.isnan(x) and math.isnan(b.metrics[k])) or x == b.metrics[k]
            for k, x in a.metrics.items()
        )
    assert int(columns.compared.sum()) == sum(r.compared for r in table.rows)
    assert int(columns.constant.sum()) == sum(r.constant_input for r in table.rows)
    for rule in RULES:
        assert columns.crossing(rule).tolist() == [rule.fails(r) for r in table.rows]


def test_the_odd_csv_reads_the_same_parsed_and_from_the_cache(cached) -> None:
    csv_path, cache = cached
    first = _load(csv_path, cache)
    assert first.source == "csv" and first.notes == []
    assert len(list(cache.iterdir())) == 1
    second = _load(csv_path, cache)
    assert second.source == "cache" and second.notes == []
    for columns in (first, second):
        _assert_same_as_csv(columns, csv_path)
    assert first.arrays.keys() == second.arrays.keys()
    for name, array in first.arrays.items():
        assert np.array_equal(array, second.arrays[name], equal_nan=array.dtype.kind == "f")
    # the odd cells survive byte for byte
    cells = [c for r in second.rows for c in (r.npu_dump, r.tensor_index, r.op_type)]
    assert {"conv,with comma", 'say "hi"', "relu/激活", "Ünïcode", "multi\nline"} <= set(cells)
    assert second.rows[-2].texts["CosineSimilarity"] == ""  # the short record, padded


def test_vcs_summary_and_plot_points_are_the_rows_own(cached) -> None:
    csv_path, cache = cached
    _load(csv_path, cache)
    table = read_result_csv(csv_path)
    columns = _load(csv_path, cache)
    assert columns.source == "cache"
    for rule in RULES:
        for limit in (None, 1, 2):
            want, got = summarize(table, rule, limit), summarize_columns(columns, rule, limit)
            assert got.notes == []
            got.notes = want.notes
            assert got == want
        points = output_points(table.rows, rule, "zero")
        arrays = point_arrays(columns, rule, "zero")
        assert len(arrays) == len(points)
        assert [int(columns.line[i]) for i in arrays.rows] == [p.line for p in points]
        assert arrays.x.tolist() == [p.x for p in points]
        assert arrays.fails.tolist() == [p.fails for p in points]
        assert arrays.root.tolist() == [p.root_cause for p in points]
        assert arrays.cosine_nonfinite.tolist() == [p.cosine_nonfinite for p in points]
        assert arrays.has_cosine.tolist() == [p.cosine is not None for p in points]
        assert arrays.has_sqnr.tolist() == [p.sqnr_db is not None for p in points]
        for value, p in zip(arrays.sqnr, points, strict=True):
            if p.sqnr_db is not None and not math.isnan(p.sqnr_db):
                assert value == pytest.approx(p.sqnr_db)
        want_ops = op_cosines(table.rows, rule)
        got_ops = op_cosines_of_columns(columns, rule)
        assert [(o.x, o.op, o.fails) for o in got_ops] == [(o.x, o.op, o.fails) for o in want_ops]
        assert all(
            (math.isnan(a.cosine) and math.isnan(b.cosine)) or a.cosine == b.cosine
            for a, b in zip(got_ops, want_ops, strict=True)
        )


def test_a_changed_csv_rebuilds_its_cache(cached) -> None:
    csv_path, cache = cached
    assert _load(csv_path, cache).source == "csv"
    assert _load(csv_path, cache).source == "cache"
    with open(csv_path, "a", encoding="utf-8") as fh:
        fh.write("10,Late,late,float16,NaN,late,float32,late:output:0,[2],NO,0.1\n")
    rebuilt = _load(csv_path, cache)
    assert rebuilt.source == "csv" and rebuilt.notes == []  # stale: rebuilt without a word
    assert rebuilt.rows[-1].npu_dump == "late"
    again = _load(csv_path, cache)
    assert again.source == "cache"
    _assert_same_as_csv(again, csv_path)
    # same size and mtime, another inode: still rebuilt
    st = csv_path.stat()
    data = csv_path.read_bytes()
    csv_path.rename(csv_path.with_suffix(".old"))  # kept: the new file gets another inode
    csv_path.write_bytes(data)
    os.utime(csv_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _load(csv_path, cache).source == "csv"


def test_a_journaled_prefix_and_the_whole_csv_never_share_a_cache(cached) -> None:
    csv_path, cache = cached
    whole = _load(csv_path, cache)
    assert _load(csv_path, cache).source == "cache"
    data = csv_path.read_bytes()
    upto = data.index(b"\n", data.index(b"\n") + 1) + 1  # the header and the first row
    cut = load_result_columns(csv_path, lambda: cache, upto)
    assert cut.source == "csv" and cut.rows == whole.rows[:1] and cut.warnings == []
    again = load_result_columns(csv_path, lambda: cache, upto)
    assert again.source == "cache" and again.rows == whole.rows[:1]
    assert cc.prune_cache(cache) == []  # the cut read's cache is valid for its CSV
    # the whole file is read again, not the cut read's cache
    full = _load(csv_path, cache)
    assert full.source == "csv" and full.rows == whole.rows
    # nothing journaled yet: the header only
    assert len(load_result_columns(csv_path, lambda: cache, 0)) == 0


def _cache_file(cache: Path) -> Path:
    (path,) = list(cache.iterdir())
    return path


def _crafted(meta: dict, region: bytes) -> list[tuple[str, bytes]]:
    """Signed files that lie about their arrays."""
    out = []
    arrays = meta["arrays"]

    def variant(why: str, change) -> None:  # noqa: ANN001
        m = {**meta, "arrays": {k: dict(v) for k, v in arrays.items()}}
        r = bytearray(region)
        change(m, r)
        out.append((why, join_cache(m, bytes(r))))

    variant("line too long", lambda m, r: m["arrays"]["line"].update(count=meta["rows"] + 1))
    variant("line too short", lambda m, r: m["arrays"]["line"].update(count=1))
    variant("object dtype", lambda m, r: m["arrays"]["kind"].update(dtype="|O"))
    variant("float as int", lambda m, r: m["arrays"]["m0.value"].update(dtype="<i8"))
    variant("past the end", lambda m, r: m["arrays"]["c2.blob"].update(offset=2**40))
    variant("negative", lambda m, r: m["arrays"]["line"].update(offset=-64))
    variant("unaligned", lambda m, r: m["arrays"]["line"].update(offset=8))
    variant("missing array", lambda m, r: m["arrays"].pop("compared"))
    variant("rows", lambda m, r: m.update(rows=meta["rows"] + 5))
    variant("rows type", lambda m, r: m.update(rows="12"))
    variant("warnings", lambda m, r: m.update(warnings=[1, 2]))
    variant("schema", lambda m, r: m.update(schema=0))
    variant("header", lambda m, r: m.update(header=["Index"]))

    def poke(name: str, position: int, value: int, fmt: str):  # noqa: ANN202
        def change(m, r) -> None:  # noqa: ANN001
            entry = m["arrays"][name]
            size = struct.calcsize(fmt)
            at = entry["offset"] + (position % entry["count"]) * size
            r[at : at + size] = struct.pack(fmt, value)

        return change

    variant("offset out of range", poke("c2.offsets", -1, 2**40, "<q"))
    variant("offset backwards", poke("c7.offsets", 3, 0, "<q"))
    variant("offset negative start", poke("c2.offsets", 0, -5, "<q"))
    variant("op code out of range", poke("op", 2, 10**6, "<i"))
    variant("op code negative", poke("op", 1, -1, "<i"))
    variant("kind out of range", poke("kind", 0, 7, "<b"))
    variant("bool not 0/1", poke("compared", 0, 9, "<B"))
    coded = next(k[: -len(".codes")] for k in arrays if k.endswith(".codes") and k != "op.codes")
    variant("column code out of range", poke(f"{coded}.codes", 0, 99_999, "<i"))
    return out


def test_a_corrupt_or_crafted_cache_is_never_trusted(cached) -> None:
    csv_path, cache = cached
    _load(csv_path, cache)
    path = _cache_file(cache)
    good = path.read_bytes()
    meta, region = split_cache(good)
    cases = [
        ("truncated", good[: len(good) // 2]),
        ("truncated, re-signed", resign(good[: len(good) - len(region) // 2])),
        ("empty", b""),
        ("flipped byte", good[:-9] + bytes([good[-9] ^ 0xFF]) + good[-8:]),
        ("not ours", good[:8] + b"\x00" * 32 + good[40:]),
        ("garbage, signed", resign(cc.MAGIC + b"\x00" * 32 + b"\xff" * 200)),
        ("header not JSON", resign(good[:48] + b"{" * 20 + good[68:])),
        ("pickle in an npz", _npz_with_pickle(cache.parent / "evil.npz")),
        ("raw pickle", pickle.dumps({"rows": 1})),
        *_crafted(meta, region),
    ]
    for why, data in cases:
        path.write_bytes(data)
        columns = _load(csv_path, cache)
        assert columns.source == "csv", why
        if why in ("header", "schema"):  # stale, as after an upgrade: rebuilt without a word
            assert columns.notes == [], why
        else:
            assert len(columns.notes) == 1 and "\n" not in columns.notes[0], why
            assert "columns cache ignored" in columns.notes[0], why
        _assert_same_as_csv(columns, csv_path)
        assert _load(csv_path, cache).source == "cache", why  # rebuilt and written again
    # the same file bytes, moved: the key (path, inode) no longer matches: rebuilt, no note
    good_again = path.read_bytes()
    moved = csv_path.with_name("result_20261123120001.csv")
    moved.write_bytes(csv_path.read_bytes())
    cc.cache_path(cache, moved).write_bytes(good_again)
    columns = _load(moved, cache)
    assert columns.source == "csv" and columns.notes == []


def _npz_with_pickle(path: Path) -> bytes:
    np.savez(path, line=np.array([{"x": 1}], dtype=object))
    return path.read_bytes()


def test_a_cache_path_that_is_a_link_or_dir_is_not_followed(cached, tmp_path) -> None:
    csv_path, cache = cached
    target = cc.cache_path(cache, csv_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"keep")
    target.symlink_to(outside)
    columns = _load(csv_path, cache)
    assert columns.source == "csv"
    assert outside.read_bytes() == b"keep"  # never written through the link
    assert len(columns.notes) == 1 and "columns cache" in columns.notes[0]  # one line
    _assert_same_as_csv(columns, csv_path)


def test_a_cache_path_that_is_a_fifo_is_parsed_around_without_blocking(cached) -> None:
    csv_path, cache = cached
    target = cc.cache_path(cache, csv_path)
    make_fifo(target)
    columns = within(10, lambda: _load(csv_path, cache), [target])
    assert columns.source == "csv"
    assert len(columns.notes) == 1 and "a FIFO, not a regular file" in columns.notes[0]
    _assert_same_as_csv(columns, csv_path)


def test_small_csvs_and_disabled_caches_are_parsed_without_writing(tmp_path, monkeypatch) -> None:
    csv_path = write_odd_csv(tmp_path / "r.csv")
    cache = tmp_path / "cache"
    cache.mkdir()
    assert _load(csv_path, cache).source == "csv"
    assert list(cache.iterdir()) == []  # below MIN_CACHED_BYTES
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv(cc.ENV_DISABLE, "1")
    assert _load(csv_path, cache).source == "csv"
    assert list(cache.iterdir()) == []
    assert load_result_columns(csv_path, None).source == "csv"


def test_a_header_only_csv_caches_zero_rows(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    csv_path = tmp_path / "r.csv"
    csv_path.write_text(write_odd_csv(tmp_path / "x.csv").read_text().splitlines()[0] + "\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    assert len(_load(csv_path, cache)) == 0
    columns = _load(csv_path, cache)
    assert columns.source == "cache" and columns.rows == []
    assert summarize_columns(columns, ThresholdRule.default(), None).failing_total == 0


def test_vcs_answers_the_same_from_the_cache_as_from_the_csv(tiny_demo, monkeypatch) -> None:
    from rich.console import Console

    import precision_shell.render.views  # noqa: F401  (registers the views)
    from precision_shell.render.output import Renderer
    from tests.commands.shell_fixture import open_shell, run_ok

    root, _ = tiny_demo
    csv_path = write_odd_csv(root / "result_20261123120000.csv")
    shell = open_shell(root)

    def vcs(line: str) -> tuple[object, str]:
        result = run_ok(shell, line)
        console = Console(record=True, width=200, color_system=None)
        Renderer(console, console).result(result)
        return result, console.export_text()

    lines = [f"vcs -f {csv_path} -l 0", f"vcs -f {csv_path} -c 0.95 --metric mae:0.0005 --plot"]
    parsed = [vcs(line) for line in lines]  # below MIN_CACHED_BYTES: parsed, nothing written
    cache = shell.context.workspace.layout.temp_dir / cc.CACHE_DIR
    assert not cache.exists() or list(cache.iterdir()) == []
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    first = [vcs(line) for line in lines]  # parsed, cache written
    assert len(list(cache.iterdir())) == 1
    assert load_result_columns(csv_path, lambda: cache).source == "cache"
    cached = [vcs(line) for line in lines]
    assert parsed == first == cached
    assert "0.900000" in cached[0][1] and "relu/激活" in cached[0][1]


def test_latest_compare_rows_by_op_from_the_columns(cached) -> None:
    from precision_shell.compare.results.latest import ColumnRowsByOp, LatestCompare

    csv_path, cache = cached
    _load(csv_path, cache)
    lazy = ColumnRowsByOp(_load(csv_path, cache))
    eager = LatestCompare.of(csv_path, read_result_csv(csv_path).rows, None).rows_by_op
    assert lazy.get("relu/激活") == eager["relu/激活"]
    assert lazy.get("no such op") is None
    assert dict(lazy) == eager and list(lazy) == list(eager)


def test_vcs_says_in_one_line_that_it_ignored_a_bad_cache(tiny_demo, monkeypatch) -> None:
    from rich.console import Console

    import precision_shell.render.views  # noqa: F401  (registers the views)
    from precision_shell.render.output import Renderer
    from tests.commands.shell_fixture import open_shell, run_ok

    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    root, _ = tiny_demo
    csv_path = write_odd_csv(root / "result_20261123120000.csv")
    shell = open_shell(root)
    good = run_ok(shell, f"vcs -f {csv_path}")
    (path,) = list((shell.context.workspace.layout.temp_dir / cc.CACHE_DIR).iterdir())
    path.write_bytes(path.read_bytes()[:100])
    bad = run_ok(shell, f"vcs -f {csv_path}")
    assert (
        len(bad.notes) == 1 and "columns cache ignored (not written by this user)" in bad.notes[0]
    )
    console = Console(record=True, width=300, color_system=None)
    Renderer(console, console).result(bad)
    assert bad.notes[0] in console.export_text()
    bad.notes = []
    assert bad == good
    assert run_ok(shell, f"vcs -f {csv_path}").notes == []  # rebuilt
