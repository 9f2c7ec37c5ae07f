"""Fuzz the Opdebug (overflow debug file) reader with mutated files of both layouts, bare and
in their dump-file container. Any input gives an OpdebugFile or a one-line PrecisionError."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import pytest
from fuzz_inputs import assert_picklable, budget, mutated_bytes, returns_or_names_error
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats.opdebug_writer import write_opdebug_new, write_opdebug_old
from precision_shell.formats.overflow import OverflowRecord, read_opdebug

NAME = "Opdebug.Node_OpDebug.12.3.1673383728094391"


def _record(acc_type: str, status: int) -> OverflowRecord:
    return OverflowRecord(acc_type, 1, 3, 12, 0, 2, 4, 0x1200, 0x1240, 5, 6, status, ())


@cache
def seed_files() -> list[bytes]:
    """Both layouts, bare and in the dump-file container."""
    with tempfile.TemporaryDirectory() as name:
        return _write_seeds(Path(name))


def _write_seeds(directory: Path) -> list[bytes]:
    records = [_record("AIC", 0x20), _record("AIV", 0x400)]
    for container in (True, False):
        write_opdebug_old(
            directory / f"old{container}", model_id=1, stream_id=3, task_id=12, status=0x120,
            dha_status=0x900, l2_status=0x10000, container=container,
        )  # fmt: skip
        write_opdebug_new(directory / f"new{container}", records, container=container)
    return [path.read_bytes() for path in sorted(directory.iterdir())]


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("opdebug_fuzz") / NAME


def test_the_seeds_read(fuzz_file: Path) -> None:
    layouts = []
    for seed in seed_files():
        fuzz_file.write_bytes(seed)
        layouts.append(read_opdebug(fuzz_file).layout)
    assert sorted(layouts) == ["new", "new", "old", "old"]


@budget(400)
@given(data=st.data())
def test_mutated_opdebug_files(fuzz_file: Path, data: st.DataObject) -> None:
    fuzz_file.write_bytes(data.draw(mutated_bytes(seed_files())))
    debug = returns_or_names_error(lambda: read_opdebug(fuzz_file))
    if debug is not None:
        assert debug.layout in ("old", "new")
        assert_picklable(debug)
