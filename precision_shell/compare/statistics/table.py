"""The statistics compare's rows and its CSV (`statistics_<ts>.csv`), written and read here only.

One row per tensor slot of each statistics dump file, in execution order; the header is
`STATISTICS_HEADER` (documented in docs/FORMATS.md section 7). Numbers are written with
`repr` (round-trip exact); an empty cell is a value the file or the benchmark does not have.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from precision_shell.compare.statistics.judge import (
    DRIFT,
    FAILING,
    NOT_COMPARED,
    StatisticDiff,
    TensorJudgement,
)
from precision_shell.errors import FormatError
from precision_shell.file_name_text import TEXT_ERRORS
from precision_shell.formats.bounded_read import read_bounded_text
from precision_shell.formats.stats_dump import VALUE_KEYS, StatsRow
from precision_shell.json_numbers import json_number
from precision_shell.workspace.output_files import replace_output

# Read back from a result dir: a row per tensor, ~200 bytes; more than this is none of ours.
MAX_STATISTICS_CSV_BYTES = 1 << 30

_VALUE_COLUMNS = {"max": "Max", "min": "Min", "mean": "Avg", "l2norm": "L2Norm"}
_COUNT_COLUMNS = {
    "nan_count": "NanCount",
    "neg_inf_count": "NegInfCount",
    "pos_inf_count": "PosInfCount",
}

STATISTICS_HEADER: tuple[str, ...] = (
    "Index",
    "OpType",
    "NPUDump",
    "GroundTruth",
    "TensorIndex",
    "DataType",
    "Format",
    "Shape",
    "DataSize",
    "Count",
    "RealCount",
    "PadCount",
    *(
        f"{side}{name}"
        for name in _VALUE_COLUMNS.values()
        for side in ("NPU", "Bench", "AbsDiff", "RelDiff", "Allowed")
    ),
    *(f"{side}{name}" for name in _COUNT_COLUMNS.values() for side in ("NPU", "Bench")),
    "MainStatistic",
    "Deviation",
    "Verdict",
    "Reason",
)


@dataclass(frozen=True)
class StatisticsRow:
    """One tensor of a statistics compare."""

    index: int  # the op's position among the compared ops
    op_type: str
    op_name: str
    ground_truth: str
    kind: str
    slot: int
    dtype: str
    format: str
    shape: tuple[int, ...] | None
    data_size: int | None
    count: int | None
    verdict: str
    deviation: float | None = None
    main_statistic: str = ""
    real_count: int | None = None
    pad_count: int = 0
    values: dict[str, tuple[float | None, float | None, float | None]] | None = None
    counts: dict[str, tuple[float | None, float | None]] | None = None
    reason: str = ""

    @property
    def tensor_index(self) -> str:
        return f"{self.op_name}:{self.kind}:{self.slot}"

    @property
    def deviates(self) -> bool:
        return self.verdict in FAILING

    @property
    def compared(self) -> bool:
        return self.verdict != NOT_COMPARED

    @property
    def device_nonfinite(self) -> str:
        """What NaN/inf the device side holds ("1 nan, 2 pos inf"; a dump without the counts:
        "max inf"), "" when none: whatever the benchmark holds."""
        counts = [
            f"{int(d)} {key.removesuffix('_count').replace('_', ' ')}"
            for key, (d, _) in (self.counts or {}).items()
            if d is not None and d > 0
        ]
        if counts:
            return ", ".join(counts)
        values = [
            f"{key} {d}"
            for key, (d, _, _) in (self.values or {}).items()
            if d is not None and not math.isfinite(d)
        ]
        return ", ".join(values)

    def statistic(self, key: str) -> tuple[float | None, float | None, float | None]:
        """(device, benchmark, allowed) of one value statistic."""
        return (self.values or {}).get(key, (None, None, None))

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op_name,
            "type": self.op_type,
            "index": self.index,
            "tensor": self.tensor_index,
            "verdict": self.verdict,
            "deviation": json_number(self.deviation),
            "statistic": self.main_statistic or None,
            "reason": self.reason or None,
        }


def as_drift(row: StatisticsRow) -> StatisticsRow:
    """The row with its verdict `drift` (beyond rounding, inherited from its inputs)."""
    return replace(row, verdict=DRIFT)


def row_of(
    index: int,
    op_type: str,
    op_name: str,
    ground_truth: str,
    kind: str,
    slot: int,
    device: StatsRow,
    judgement: TensorJudgement | None,
    reason: str = "",
) -> StatisticsRow:
    """A row from a device `StatsRow` and its judgement (None: not compared, `reason` why)."""
    unjudged = StatisticsRow(
        index=index,
        op_type=op_type,
        op_name=op_name,
        ground_truth=ground_truth,
        kind=kind,
        slot=slot,
        dtype=device.dtype,
        format=device.format,
        shape=device.shape,
        data_size=device.data_size,
        count=device.element_count,
        verdict=NOT_COMPARED,
        values={k: (device.values.get(k), None, None) for k in VALUE_KEYS},
        counts={k: (device.values.get(k), None) for k in _COUNT_COLUMNS},
        reason=reason,
    )
    if judgement is None:
        return unjudged
    main = judgement.main
    return replace(
        unjudged,
        verdict=judgement.verdict,
        deviation=judgement.deviation,
        main_statistic=main.key if main is not None else "",
        real_count=judgement.real_count,
        pad_count=judgement.pad_count,
        values={k: _triple(judgement.diffs.get(k), device.values.get(k)) for k in VALUE_KEYS},
        counts=judgement.counts,
        reason="; ".join(judgement.notes),
    )


def _triple(
    diff: StatisticDiff | None, raw: float | None
) -> tuple[float | None, float | None, float | None]:
    if diff is None:
        return (raw, None, None)
    return (diff.device, diff.benchmark, diff.allowed)


def _cell(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _cells(row: StatisticsRow) -> list[str]:
    shape = "" if row.shape is None else "[" + ",".join(str(d) for d in row.shape) + "]"
    cells = [
        str(row.index),
        row.op_type,
        row.op_name,
        row.ground_truth,
        row.tensor_index,
        row.dtype,
        row.format,
        shape,
        _cell(row.data_size),
        _cell(row.count),
        _cell(row.real_count),
        str(row.pad_count),
    ]
    for key in _VALUE_COLUMNS:
        device, bench, allowed = row.statistic(key)
        diff = StatisticDiff(key, device, bench, allowed)
        cells += [
            _cell(device),
            _cell(bench),
            _cell(diff.abs_diff),
            _cell(diff.rel_diff),
            _cell(allowed),
        ]
    for key in _COUNT_COLUMNS:
        device_count, bench_count = (row.counts or {}).get(key, (None, None))
        cells += [_cell(device_count), _cell(bench_count)]
    cells += [row.main_statistic, _cell(row.deviation), row.verdict, row.reason]
    return cells


def write_statistics_csv(path: Path, rows: Iterable[StatisticsRow]) -> None:
    """The whole CSV, atomically (a reader never sees half of it)."""

    def write(fh: IO[Any]) -> None:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(STATISTICS_HEADER)
        for row in rows:
            writer.writerow(_cells(row))

    replace_output(path, write, text=True)


def _number(text: str) -> float | None:
    if not text:
        return None
    return float(text)


def _int(text: str) -> int | None:
    return int(text) if text else None


def read_statistics_csv(path: Path) -> list[StatisticsRow]:
    """The rows `write_statistics_csv` wrote; FormatError naming the file otherwise."""
    try:
        text = read_bounded_text(path, MAX_STATISTICS_CSV_BYTES, errors=TEXT_ERRORS)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        return _parse_rows(path, csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise FormatError(path, f"not a CSV file: {exc}") from None


def _parse_rows(path: Path, reader: Any) -> list[StatisticsRow]:
    header = next(reader, None)
    if header is None or tuple(header) != STATISTICS_HEADER:
        raise FormatError(path, "not a statistics compare CSV (its header differs)")
    rows = []
    for line, cells in enumerate(reader, start=2):
        if len(cells) != len(STATISTICS_HEADER):
            raise FormatError(path, f"line {line}: {len(cells)} cells, expected {len(header)}")
        named = dict(zip(STATISTICS_HEADER, cells, strict=True))
        try:
            op, kind, slot = named["TensorIndex"].rsplit(":", 2)
            shape_text = named["Shape"].strip("[]")
            values = {
                key: (
                    _number(named[f"NPU{name}"]),
                    _number(named[f"Bench{name}"]),
                    _number(named[f"Allowed{name}"]),
                )
                for key, name in _VALUE_COLUMNS.items()
            }
            counts = {
                key: (_number(named[f"NPU{name}"]), _number(named[f"Bench{name}"]))
                for key, name in _COUNT_COLUMNS.items()
            }
            rows.append(
                StatisticsRow(
                    index=int(named["Index"]),
                    op_type=named["OpType"],
                    op_name=named["NPUDump"],
                    ground_truth=named["GroundTruth"],
                    kind=kind,
                    slot=int(slot),
                    dtype=named["DataType"],
                    format=named["Format"],
                    shape=tuple(int(d) for d in shape_text.split(",") if d)
                    if named["Shape"]
                    else None,
                    data_size=_int(named["DataSize"]),
                    count=_int(named["Count"]),
                    verdict=named["Verdict"],
                    deviation=_number(named["Deviation"]),
                    main_statistic=named["MainStatistic"],
                    real_count=_int(named["RealCount"]),
                    pad_count=int(named["PadCount"] or 0),
                    values=values,
                    counts=counts,
                    reason=named["Reason"],
                )
            )
        except ValueError as exc:
            raise FormatError(path, f"line {line}: {exc}") from None
    return rows
