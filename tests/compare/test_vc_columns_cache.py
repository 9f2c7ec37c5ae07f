"""vc writes the columns cache of the CSVs it writes, from the rows it holds (no reparse): the
first `vcs` reads arrays. A whole or a partial CSV is cached as it stays; a CSV whose last rows
Ctrl-C cut in the middle of their writing is left to its first reader; a resumed CSV changes,
so its old cache is never used for it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_shell.compare import runner as compare_runner
from precision_shell.compare.metrics.cells import METRIC_COLUMNS
from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.results import columns as columns_module
from precision_shell.compare.results import columns_cache as cc
from precision_shell.compare.results.columns import (
    ColumnsBuilder,
    build_arrays,
    load_result_columns,
)
from precision_shell.compare.results.schema import (
    ResultCsvWriter,
    ResultRow,
    RowLayout,
    csv_header,
    read_result_csv,
)
from precision_shell.compare.results.thresholds import ThresholdRule
from tests.commands.shell_fixture import open_shell, run_ok


@pytest.fixture
def cache_all(monkeypatch):
    """Every CSV cached whatever its size; rows gathered a few at a time (several chunks)."""
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    monkeypatch.setattr(execute, "_CACHE_CHUNK", 0)  # the builder's floor: 1,000 rows
    monkeypatch.setattr(columns_module, "_SAMPLE", 4)
    monkeypatch.delenv(cc.ENV_DISABLE, raising=False)


def _vc(shell: Any) -> Any:
    """vc through the runner (the command turns a partial run into an error line)."""
    request = compare_runner.CompareRequest(rule=ThresholdRule.default())
    return compare_runner.run(shell.context.workspace, request)


def _cache_dir(shell: Any) -> Path:
    return shell.context.workspace.output_dir(cc.CACHE_DIR)


def _assert_cache_is_the_csvs(csv_path: Path, cache_dir: Path) -> None:
    """The cache file vc wrote holds the arrays a parse of the CSV gives, byte for byte, and
    is read (not rebuilt) as the CSV's columns."""
    where = cc.cache_path(cache_dir, csv_path)
    assert where.is_file()
    layout, warnings, want = build_arrays(csv_path)
    columns = load_result_columns(csv_path, lambda: cache_dir)
    assert columns.source == "cache" and columns.notes == []
    assert columns.warnings == warnings == []
    assert sorted(columns.arrays) == sorted(want)
    for name, array in want.items():
        got = columns.arrays[name]
        assert got.dtype == array.dtype and np.array_equal(got, array, equal_nan=True), name
    assert columns.rows == read_result_csv(csv_path).rows


class Engine:
    """execute.run_tasks, Ctrl-C after `stop_at` results."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, stop_at: int) -> None:
        self.real = engine_module.run_tasks
        self.stop_at = stop_at
        monkeypatch.setattr(execute, "run_tasks", self.run_tasks)

    def run_tasks(self, tasks: Any, *args: Any, **kwargs: Any) -> Any:
        for n, result in enumerate(self.real(tasks, *args, **kwargs)):
            if n == self.stop_at:
                raise KeyboardInterrupt
            yield result


def test_vc_writes_the_columns_cache_of_every_csv_it_writes(tiny_demo, cache_all):
    root, _ = tiny_demo
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    assert result.secondary is not None  # and the device-vs-device CSV
    csvs = sorted(result.out_dir.glob("*.csv"))
    assert len(csvs) == 2 and result.primary.csv_path in csvs
    for csv_path in csvs:
        _assert_cache_is_the_csvs(csv_path, _cache_dir(shell))
    assert len(list(_cache_dir(shell).glob("*.cols"))) == 2


def test_small_csvs_are_not_cached_by_vc(tiny_demo, monkeypatch):
    monkeypatch.delenv(cc.ENV_DISABLE, raising=False)
    root, _ = tiny_demo
    shell = open_shell(root)
    run_ok(shell, "vc")  # the tiny demo's CSVs are far below MIN_CACHED_BYTES
    assert list(_cache_dir(shell).glob("*.cols")) == []


def test_a_partial_csv_is_cached_as_it_stays_and_marked_partial(tiny_demo, cache_all, monkeypatch):
    root, _ = tiny_demo
    shell = open_shell(root)
    Engine(monkeypatch, stop_at=5)
    result = _vc(shell)
    assert result.summary.primary.interrupted  # summary.json says partial, not the cache
    assert result.primary.files_done == 5 < result.primary.tasks
    _assert_cache_is_the_csvs(result.primary.csv_path, _cache_dir(shell))
    assert len(load_result_columns(result.primary.csv_path, lambda: _cache_dir(shell))) == (
        result.primary.tally.rows
    )


def test_ctrl_c_while_rows_are_written_leaves_the_csv_to_its_reader(
    tiny_demo, cache_all, monkeypatch
):
    root, _ = tiny_demo
    shell = open_shell(root)
    real = columns_module.ColumnsBuilder.add_written
    calls = {"n": 0}

    def cut(self: Any, records: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 4:  # the rows are in the CSV; their columns are not
            raise KeyboardInterrupt
        real(self, records)

    monkeypatch.setattr(columns_module.ColumnsBuilder, "add_written", cut)
    result = _vc(shell)
    assert result.summary.primary.interrupted
    csv_path = result.primary.csv_path
    assert not cc.cache_path(_cache_dir(shell), csv_path).exists()
    monkeypatch.setattr(columns_module.ColumnsBuilder, "add_written", real)
    columns = load_result_columns(csv_path, lambda: _cache_dir(shell))  # parsed, then cached
    assert columns.source == "csv" and columns.rows == read_result_csv(csv_path).rows


def test_a_resumed_csv_is_not_read_from_its_partial_cache(tiny_demo, cache_all, monkeypatch):
    root, _ = tiny_demo
    shell = open_shell(root)
    engine = Engine(monkeypatch, stop_at=3)
    partial = _vc(shell)
    csv_path = partial.primary.csv_path
    _assert_cache_is_the_csvs(csv_path, _cache_dir(shell))
    partial_rows = partial.primary.tally.rows
    engine.stop_at = -1
    resumed = compare_runner.resume(
        shell.context.workspace, compare_runner.CompareRequest(rule=ThresholdRule.default())
    )
    assert resumed.primary.csv_path == csv_path and not resumed.summary.primary.interrupted
    columns = load_result_columns(csv_path, lambda: _cache_dir(shell))
    assert columns.source == "csv"  # the partial cache is stale: the CSV grew
    assert len(columns) == resumed.primary.tally.rows > partial_rows
    assert columns.rows == read_result_csv(csv_path).rows
    assert load_result_columns(csv_path, lambda: _cache_dir(shell)).source == "cache"


def test_with_caching_off_vc_gathers_no_columns(tiny_demo, cache_all, monkeypatch):
    monkeypatch.setenv(cc.ENV_DISABLE, "1")
    built: list[Any] = []
    monkeypatch.setattr(execute, "ColumnsBuilder", lambda *a, **k: built.append(a))
    root, _ = tiny_demo
    shell = open_shell(root)
    run_ok(shell, "vc")
    assert built == [] and list(_cache_dir(shell).glob("*.cols")) == []


_ODD_TEXTS = ["", " ", "x", " padded ", "a,b", 'say "hi"', "multi\nline", "cr\r\nlf", "激活", "²"]
_ODD_METRICS = ["NaN", "nan", "inf", "-inf", "", " 0.5 ", "0.999000", "1e-300", "x", "-0.0"]


def _odd_row(rng: random.Random) -> ResultRow:
    def text() -> str:
        return rng.choice(_ODD_TEXTS)

    name = rng.choice(["op", " op ", "a,b", "激活", ""])
    tensor = rng.choice([f"{name}:output:0", f"{name}:input:{rng.randint(0, 2)}", text()])
    return ResultRow(
        index=rng.choice([None, 0, 7]),
        op_type=text(),
        npu_dump=name,
        ground_truth=text(),
        tensor_index=tensor,
        shape=text(),
        texts={c: rng.choice(_ODD_METRICS) for c in METRIC_COLUMNS},
        reason=rng.choice(["", "w: constant input", text()]),
        overflow=rng.choice(["NaN", "YES", ""]),
        device_dtype=text(),
        benchmark_dtype=text(),
        address=text(),
    )


def _blank_row() -> ResultRow:
    """A row whose every cell is blank: the reader skips its record (but counts it)."""
    return ResultRow(None, "", "", "", "", "", dict.fromkeys(METRIC_COLUMNS, " "), "", "", "", "")


@pytest.mark.parametrize("overflow", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_the_columns_of_written_rows_are_those_the_csv_reads_back(
    tmp_path, monkeypatch, overflow, seed
):
    """Odd cells (blank, padded, quoted, multi-line, non-ASCII, non-numeric metrics) and blank
    records: the columns gathered from the rows written equal those parsed from the CSV."""
    monkeypatch.setattr(columns_module, "_SAMPLE", 4)
    rng = random.Random(seed)
    csv_path = tmp_path / "result.csv"
    builder = ColumnsBuilder(RowLayout.of(csv_path, csv_header(overflow)), chunk=0)
    with open(csv_path, "w", newline="", encoding="utf-8") as fh:
        writer = ResultCsvWriter(fh, csv_path, overflow)
        writer.on_written = builder.add_written
        for _ in range(rng.randint(0, 40)):
            writer.write([_blank_row() if rng.random() < 0.1 else _odd_row(rng) for _ in range(3)])
    _, warnings, want = build_arrays(csv_path)
    got = builder.arrays()
    assert warnings == [] and sorted(got) == sorted(want)
    for name, array in want.items():
        assert got[name].dtype == array.dtype, name
        assert np.array_equal(got[name], array, equal_nan=True), name
