"""Compare outputs: the msaccucmp-style result CSV (streamed row by row) and `summary.json`."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from precision_shell.compare.metrics.compute import METRIC_COLUMNS, csv_values
from precision_shell.compare.pipeline.worker import ResultRow

LEAD_COLUMNS = (
    "Index",
    "OpType",
    "NPUDump",
    "DataType",
    "Address",
    "GroundTruth",
    "DataType",
    "TensorIndex",
    "Shape",
)
REASON_COLUMN = "CompareFailReason"
COSINE = "CosineSimilarity"


def csv_header(overflow: bool) -> list[str]:
    return [*LEAD_COLUMNS, *(["OverFlow"] if overflow else []), *METRIC_COLUMNS, REASON_COLUMN]


def row_cells(row: ResultRow, overflow: bool) -> list[str]:
    lead = [
        str(row.index),
        row.op_type,
        row.npu_dump,
        row.device_dtype,
        row.address,
        row.ground_truth,
        row.benchmark_dtype,
        row.tensor_index,
        row.shape,
    ]
    if overflow:
        lead.append(row.overflow)
    metrics = csv_values(row.metrics) if row.metrics is not None else ["NaN"] * len(METRIC_COLUMNS)
    return [*lead, *metrics, row.reason]


class ResultCsvWriter:
    """Writes rows as they arrive and flushes, so an interrupted compare keeps its rows."""

    def __init__(self, path: Path, overflow: bool) -> None:
        self.path = path
        self.overflow = overflow
        self._fh: IO[str] = open(path, "x", newline="", encoding="utf-8")  # noqa: SIM115
        self._writer = csv.writer(self._fh)
        self._writer.writerow(csv_header(overflow))
        self.rows = 0

    def write(self, rows: list[ResultRow]) -> None:
        for row in rows:
            self._writer.writerow(row_cells(row, self.overflow))
        self.rows += len(rows)
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultCsvWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _finite(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return None
    return float(value)


@dataclass
class CompareTally:
    """Running counts of a compare, and its worst outputs, for the summary."""

    cosine_threshold: float
    rows: int = 0
    compared: int = 0
    failed_reasons: Counter = field(default_factory=Counter)
    below: list[ResultRow] = field(default_factory=list)  # outputs below the threshold, in order
    outputs: list[ResultRow] = field(default_factory=list)

    def add(self, rows: list[ResultRow]) -> None:
        for row in rows:
            self.rows += 1
            if row.metrics is None:
                self.failed_reasons[_reason_kind(row.reason)] += 1
                continue
            self.compared += 1
            if row.kind != "output":
                continue
            self.outputs.append(row)
            if cosine_fails(row, self.cosine_threshold):
                self.below.append(row)

    @property
    def failed(self) -> int:
        return sum(self.failed_reasons.values())

    def worst(self, n: int = 10) -> list[ResultRow]:
        """Outputs by cosine, lowest first; a NaN propagated from the data counts as the
        worst, a cosine not computed (e.g. an all-zero side) is left out."""

        def key(row: ResultRow) -> float:
            cos = row.metrics.cosine
            return -math.inf if math.isnan(cos) else cos

        ranked = [r for r in self.outputs if COSINE not in r.metrics.not_computed]
        return sorted(ranked, key=key)[:n]


def cosine_fails(row: ResultRow, threshold: float) -> bool:
    """Below the threshold, or `nan` propagated from the data (as `vcs` reads the CSV: the
    printed `NaN` of a cosine that was not computed is not a failure)."""
    if row.metrics is None or COSINE in row.metrics.not_computed:
        return False
    cos = row.metrics.cosine
    return math.isnan(cos) or cos < threshold


def _reason_kind(reason: str) -> str:
    """Group fail reasons by their kind (file names and numbers stripped) for the summary."""
    if not reason:
        return "no benchmark"
    text = reason.split(": ")[-1] if ": " in reason else reason
    for marker in (
        "constant input",
        "not found",
        "no benchmark",
        "smaller than",
        "element counts differ",
        "past the end",
        "not an NPU dump",
        "cannot convert",
        "op not dumped",
    ):
        if marker in reason:
            return marker
    return text[:80]


def row_json(row: ResultRow) -> dict[str, Any]:
    m = row.metrics
    return {
        "index": row.index,
        "op": row.op_name or row.npu_dump,
        "type": row.op_type,
        "tensor": row.tensor_index,
        "ground_truth": row.ground_truth,
        "benchmark": row.origin,
        "cosine": _finite(m.cosine) if m else None,
        "max_abs_error": _finite(m.max_abs_error) if m else None,
        "relative_euclidean_distance": _finite(m.relative_euclidean_distance) if m else None,
        "sqnr_db": _finite(m.sqnr_db) if m else None,
        "rel_err_ratio_0_001": _finite(m.ratio_rel_err_below_0_001) if m else None,
        "rel_err_ratio_0_005": _finite(m.ratio_rel_err_below_0_005) if m else None,
        "fp16_overflow": m.fp16_overflow if m else None,
        "reason": row.reason,
    }


def write_summary(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
