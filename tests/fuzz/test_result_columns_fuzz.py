"""Fuzz the columns cache reader with mutated cache files of a result CSV.

Unsigned mutations (anyone's edits) must never be read: the columns are the CSV's. Mutations
signed with the user's key (what only the user could forge) reach the structural checks: the
reader returns columns, or reads the CSV instead, and every consumer of the columns (rows,
`vcs`'s summary, the plot points) answers without an exception.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from fuzz_inputs import EDGE_INTEGERS, budget, mutated_bytes
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.commands.compare_summary import summarize_columns
from precision_shell.compare.results import columns_cache as cc
from precision_shell.compare.results.columns import load_result_columns
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.point_arrays import op_cosines_of_columns, point_arrays
from tests.compare.result_columns_files import join_cache, resign, split_cache, write_odd_csv


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(csv, cache dir, cache file, its bytes, the CSV's rows)."""
    base = tmp_path_factory.mktemp("columns_fuzz")
    csv_path = write_odd_csv(base / "result_20261123120000.csv")
    cache_dir = base / "cache"
    cache_dir.mkdir()
    mp = pytest.MonkeyPatch()
    mp.setattr(cc, "MIN_CACHED_BYTES", 0)
    load_result_columns(csv_path, lambda: cache_dir)
    (path,) = list(cache_dir.iterdir())
    yield csv_path, cache_dir, path, path.read_bytes(), read_result_csv(csv_path).rows
    mp.undo()


@cache
def _seeds(good: bytes) -> list[bytes]:
    return [good]


def _consume(csv_path: Path, cache_dir: Path) -> object:
    columns = load_result_columns(csv_path, lambda: cache_dir)
    rows = columns.rows
    rule = ThresholdRule.default()
    summarize_columns(columns, rule, None)
    point_arrays(columns, rule, rows[0].op_name if rows else None)
    op_cosines_of_columns(columns, rule)
    return columns


@budget(150)
@given(data=st.data())
def test_unsigned_mutations_are_never_read(built, monkeypatch, data) -> None:
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    csv_path, cache_dir, path, good, rows = built
    mutated = data.draw(mutated_bytes(_seeds(good)))
    path.write_bytes(mutated)
    columns = _consume(csv_path, cache_dir)
    assert columns.rows == rows  # type: ignore[attr-defined]


@budget(200)
@given(data=st.data())
def test_signed_mutations_never_crash_a_consumer(built, monkeypatch, data) -> None:
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    csv_path, cache_dir, path, good, rows = built
    mutated = data.draw(mutated_bytes(_seeds(good)))
    path.write_bytes(resign(mutated) if len(mutated) >= cc._HEAD else mutated)
    _consume(csv_path, cache_dir)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from(EDGE_INTEGERS)
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@budget(200)
@given(data=st.data())
def test_signed_headers_that_lie_never_crash_a_consumer(built, monkeypatch, data) -> None:
    monkeypatch.setattr(cc, "MIN_CACHED_BYTES", 0)
    csv_path, cache_dir, path, good, rows = built
    meta, region = split_cache(good)
    meta = json.loads(json.dumps(meta))
    names = sorted(meta["arrays"])
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(names))
        field = data.draw(st.sampled_from(["dtype", "offset", "count", None]))
        value = data.draw(
            st.sampled_from(["<i8", "<i4", "|i1", "|u1", "|b1", "<f8", "|O", ">i8"])
            if field == "dtype"
            else _JSON
        )
        if field is None:
            meta["arrays"][name] = value
        elif isinstance(meta["arrays"][name], dict):
            meta["arrays"][name][field] = value
    if data.draw(st.booleans()):
        meta[data.draw(st.sampled_from(["rows", "warnings", "arrays", "source"]))] = data.draw(
            _JSON
        )
    path.write_bytes(join_cache(meta, region))
    columns = _consume(csv_path, cache_dir)
    assert columns.source in ("csv", "cache")  # type: ignore[attr-defined]
