"""`whole_lines_length`: how much of a CSV a reader trusts when its journal cannot say."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_shell.compare.results.journaled_prefix import whole_lines_length

HEAD = b"Index,OpType\r\n"


@pytest.mark.parametrize(
    ("data", "length"),
    [
        (HEAD + b"1,Conv2D\r\n", len(HEAD) + 10),  # every row whole
        (HEAD + b"1,Conv2D\r\n2,Ma", len(HEAD) + 10),  # a half-written last row
        (HEAD + b"1," + b"x" * 200_000, len(HEAD)),  # its last newline chunks before the end
        (b"Index,OpT", 0),  # not even a whole header line
    ],
)
def test_a_csv_is_trusted_through_its_last_newline(tmp_path: Path, data: bytes, length: int):
    path = tmp_path / "result.csv"
    path.write_bytes(data)
    assert whole_lines_length(path) == length


def test_an_unreadable_csv_has_no_length(tmp_path: Path):
    assert whole_lines_length(tmp_path / "gone.csv") is None
