"""ResultCsvWriter: each write's rows reach the file in one write and are flushed; rows an
interrupted write had begun to format never land in the CSV after it."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from precision_shell.compare.metrics.cells import METRIC_COLUMNS
from precision_shell.compare.results.schema import ResultCsvWriter, ResultRow, csv_header


def _row(n: int) -> ResultRow:
    texts = {c: f"0.{n}" for c in METRIC_COLUMNS}
    return ResultRow(n, "Conv2D", f"op{n}", f"tf/op{n}", f"op{n}:output:0", "[1,2]", texts,
                     device_dtype="DT_FLOAT16", benchmark_dtype="DT_FLOAT", overflow="NO")  # fmt: skip


class _Recording(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1


def test_a_write_reaches_the_file_in_one_write_and_is_flushed() -> None:
    fh = _Recording()
    writer = ResultCsvWriter(fh, Path("r.csv"), overflow=False)
    assert len(fh.writes) == 1  # the header
    writer.write([_row(1), _row(2), _row(3)])
    assert len(fh.writes) == 2 and fh.flushes == 1 and writer.rows == 3
    records = list(csv.reader(io.StringIO(fh.getvalue())))
    assert records[0] == csv_header(False)
    assert [r[0] for r in records[1:]] == ["1", "2", "3"]
    assert records[2] == _row(2).cells(False)


def test_rows_an_interrupted_write_began_are_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    fh = _Recording()
    writer = ResultCsvWriter(fh, Path("r.csv"), overflow=True)
    real = writer._writer

    class Torn:
        def writerows(self, records: Any) -> None:
            real.writerow(records[0])
            writer._text.write("half a row,")
            raise KeyboardInterrupt

    writer._writer = Torn()  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        writer.write([_row(1), _row(2)])
    writer._writer = real
    writer.write([_row(3)])
    records = list(csv.reader(io.StringIO(fh.getvalue())))
    assert records == [csv_header(True), _row(3).cells(True)]
    assert writer.rows == 1
