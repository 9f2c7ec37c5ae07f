"""Reading compare result CSVs: ours and msaccucmp's, current and old headers, by column name.

`DataType` appears twice in the current header (device, then ground truth), so columns are
taken by position after the header is read, never through a plain dict reader.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.results.csv_writer import LEAD_COLUMNS, REASON_COLUMN
from precision_shell.errors import PrecisionError

# `result_<YYYYmmddHHMMSS>.csv`: vc's primary compare (and msaccucmp's only CSV)
_PRIMARY_NAME = re.compile(r"result_\d{14}\.csv")

# Metrics where a larger value is better (the rest are errors: smaller is better).
HIGHER_IS_BETTER = frozenset({"CosineSimilarity"})


@dataclass(frozen=True, slots=True)
class CsvRow:
    line: int
    index: int | None
    op: str  # NPUDump / LeftOp
    op_type: str
    ground_truth: str  # GroundTruth / RightOp
    kind: str  # "input" | "output" | "" when TensorIndex is not op:kind:k
    slot: int
    tensor_index: str
    shape: str
    metrics: dict[str, float]  # metric column -> value (NaN when not computed)
    texts: dict[str, str]  # raw cells of the metric columns (StandardDeviation is text)
    reason: str
    overflow: str = ""  # OverFlow cell (YES/NO/NaN) when the file has the column

    def nonfinite(self, column: str) -> bool:
        """The cell holds nan/inf propagated from the data (msaccucmp prints those lower-case;
        `NaN` means "not computed" and is not this)."""
        return self.texts.get(column, "") in _NONFINITE_TEXTS

    @property
    def op_name(self) -> str:
        """The device op of this tensor: from TensorIndex (NPUDump names every op of a
        one-to-many group), else NPUDump."""
        if self.kind:
            return self.tensor_index.rsplit(":", 2)[0] or self.op
        return self.op


@dataclass
class ResultTable:
    path: Path
    header: list[str]
    rows: list[CsvRow] = field(default_factory=list)
    metric_columns: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_NONFINITE_TEXTS = frozenset({"nan", "inf", "-inf"})

# Every non-metric column: ours, msaccucmp's current and old headers (-r/-s add OpSequence).
_LEAD = {*LEAD_COLUMNS, REASON_COLUMN, "OverFlow", "OpSequence", "LeftOp", "RightOp"}


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _parse_tensor_index(text: str) -> tuple[str, int]:
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1] in ("input", "output") and parts[2].isdigit():
        return parts[1], int(parts[2])
    return "", 0


def read_result_csv(path: str | Path) -> ResultTable:
    """Parse one result CSV; a malformed file is a PrecisionError naming it, odd rows warnings."""
    path = Path(path)
    try:
        fh = open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115
    except OSError as exc:
        raise PrecisionError(f"{path}: cannot open: {exc.strerror}") from None
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise PrecisionError(f"{path}: empty file, expected a compare result header") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PrecisionError(f"{path}: not a CSV file: {exc}") from None
        header = [h.strip() for h in header]
        col = {name: i for i, name in reversed(list(enumerate(header)))}  # first occurrence wins
        op_col = col.get("NPUDump", col.get("LeftOp"))
        if op_col is None or "TensorIndex" not in col:
            raise PrecisionError(
                f"{path}: not a compare result (header needs NPUDump or LeftOp, and TensorIndex)"
            )
        gt_col = col.get("GroundTruth", col.get("RightOp"))
        metric_columns = [h for h in header if h not in _LEAD]
        table = ResultTable(path, header, metric_columns=metric_columns)
        metric_idx = [(name, header.index(name)) for name in metric_columns]
        try:
            for line, cells in enumerate(reader, start=2):
                if not cells or all(not c.strip() for c in cells):
                    continue
                if len(cells) < len(header):
                    table.warnings.append(
                        f"{path}:{line}: {len(cells)} cells, header has {len(header)}"
                    )
                    cells = cells + [""] * (len(header) - len(cells))

                def cell(name: str, cells: list[str] = cells) -> str:
                    i = col.get(name)
                    return cells[i].strip() if i is not None else ""

                tensor_index = cell("TensorIndex")
                kind, slot = _parse_tensor_index(tensor_index)
                index_text = cell("Index")
                table.rows.append(
                    CsvRow(
                        line=line,
                        index=int(index_text) if index_text.isdigit() else None,
                        op=cells[op_col].strip(),
                        op_type=cell("OpType"),
                        ground_truth=cells[gt_col].strip() if gt_col is not None else "",
                        kind=kind,
                        slot=slot,
                        tensor_index=tensor_index,
                        shape=cell("Shape"),
                        metrics={name: _float(cells[i]) for name, i in metric_idx},
                        texts={name: cells[i].strip() for name, i in metric_idx},
                        reason=cell("CompareFailReason"),
                        overflow=cell("OverFlow"),
                    )
                )
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PrecisionError(f"{path}: unreadable CSV: {exc}") from None
    return table


def find_result_csv(target: Path) -> Path:
    """A CSV file itself, or the newest `result_*.csv` in a dir (or its newest timestamped subdir)."""
    if target.is_file():
        return target
    if not target.is_dir():
        raise PrecisionError(f"{target}: no such file or directory")
    direct = sorted(target.glob("result_*.csv"))
    if direct:
        # a vc result dir also holds the device-vs-device CSV, written after the primary one
        primary = [p for p in direct if _PRIMARY_NAME.fullmatch(p.name)] or direct
        return max(primary, key=lambda p: (p.stat().st_mtime_ns, p.name))
    subdirs = sorted(
        (d for d in target.iterdir() if d.is_dir() and d.name[:14].isdigit()), key=lambda d: d.name
    )
    for sub in reversed(subdirs):
        found = sorted(sub.glob("result_*.csv"))
        if found:
            return found[0]
    raise PrecisionError(f"{target}: no result_*.csv here; run vc first")
