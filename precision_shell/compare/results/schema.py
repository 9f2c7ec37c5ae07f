"""The compare result CSV: its columns, the one row type written and read, the writer, the reader.

The header is msaccucmp's (FORMATS.md section 7); `DataType` appears twice (device, then
benchmark), so columns are taken by position after the header is read, never through a dict
reader. A `ResultRow` holds the cells as printed: the worker builds it from the metrics it
computed, the reader from a file (ours or msaccucmp's, current or old header), and every
consumer (summary, `vcs`, diagnosis, report, `ni`) reads the same numbers.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import io
import math
import os
import re
import time as _time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from precision_shell.compare.metrics.cells import METRIC_COLUMNS, NOT_COMPUTED
from precision_shell.compare.results.journaled_prefix import open_prefix
from precision_shell.errors import PrecisionError
from precision_shell.file_name_text import TEXT_ERRORS
from precision_shell.pickling import by_fields
from precision_shell.workspace.output_files import output_error

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
OVERFLOW_COLUMN = "OverFlow"
REASON_COLUMN = "CompareFailReason"
COSINE = "CosineSimilarity"

# Metrics where a larger value is better (the rest are errors: smaller is better).
HIGHER_IS_BETTER = frozenset({COSINE})

# What a row that was not compared says (the reason's marker), so counts keep them apart.
CONSTANT_INPUT = "constant input"
# a compared row's reason note: the device tensor was larger than its benchmark and cut to
# the benchmark's shape (msaccucmp's rule; compare/pipeline/worker.py `sliced_note`)
CUT_TO_BENCHMARK = "cut to the benchmark's"

# `result_<YYYYmmddHHMMSS>.csv`: vc's primary compare (and msaccucmp's only CSV)
_PRIMARY_NAME = re.compile(r"(result|statistics)_\d{14}(_\d+)?\.csv")
# how a metric cell holds NaN/inf from the data (msaccucmp's lower case; `NaN`: not computed)
NONFINITE_TEXTS = ("nan", "inf", "-inf")
# Every non-metric column: ours, msaccucmp's current and old headers (-r/-s add OpSequence).
_LEAD = {*LEAD_COLUMNS, REASON_COLUMN, OVERFLOW_COLUMN, "OpSequence", "LeftOp", "RightOp"}


def csv_header(overflow: bool) -> list[str]:
    return [*LEAD_COLUMNS, *([OVERFLOW_COLUMN] if overflow else []), *METRIC_COLUMNS, REASON_COLUMN]


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_index(text: str) -> int | None:
    """The Index cell as a number; None when it is not one (`²` passes isdigit, not int)."""
    if not text.isdigit():
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _parse_tensor_index(text: str) -> tuple[str, int]:
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1] in ("input", "output") and parts[2].isdigit():
        return parts[1], int(parts[2])
    return "", 0


@by_fields
@dataclass(frozen=True, slots=True)
class ResultRow:
    """One device tensor against its benchmark, as the CSV holds it."""

    index: int | None
    op_type: str
    npu_dump: str  # NPUDump / LeftOp
    ground_truth: str  # GroundTruth / RightOp: the benchmark op(s)
    tensor_index: str
    shape: str
    texts: dict[str, str]  # metric column -> printed cell (`NaN`: not computed)
    reason: str = ""
    overflow: str = "NaN"  # OverFlow cell (YES/NO/NaN)
    device_dtype: str = "NaN"
    benchmark_dtype: str = "NaN"
    address: str = "NaN"
    line: int = 0  # record number in the file it was read from (header = 1); 0 when built
    extras: dict[str, float] = field(default_factory=dict)  # not in the CSV (SQNR, ratios)
    metrics: dict[str, float] = field(init=False, compare=False, repr=False)
    kind: str = field(init=False, compare=False)  # "input" | "output" | "" (odd TensorIndex)
    slot: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", {k: _float(v) for k, v in self.texts.items()})
        kind, slot = _parse_tensor_index(self.tensor_index)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "slot", slot)

    @property
    def op_name(self) -> str:
        """The device op of this tensor: from TensorIndex (NPUDump names every op of a
        one-to-many group), else NPUDump."""
        if self.kind:
            return self.tensor_index.rsplit(":", 2)[0] or self.npu_dump
        return self.npu_dump

    @property
    def compared(self) -> bool:
        """Some metric was computed (a row that was not compared prints `NaN` everywhere)."""
        return any(text != NOT_COMPUTED and text != "" for text in self.texts.values())

    @property
    def constant_input(self) -> bool:
        """Not compared because the tensor is a folded constant (weights are not dumped)."""
        return not self.compared and CONSTANT_INPUT in self.reason

    def nonfinite(self, column: str) -> bool:
        """The cell holds nan/inf propagated from the data (msaccucmp prints those lower-case;
        `NaN` means "not computed" and is not this)."""
        return self.texts.get(column, "") in NONFINITE_TEXTS

    def value(self, column: str) -> float | None:
        """A computed, finite metric value; None when not computed or non-finite."""
        v = self.metrics.get(column, math.nan)
        return v if math.isfinite(v) else None

    def measured(self, column: str) -> float | None:
        """A computed metric value, nan/inf from the data included (a finding, printed as
        such); None only when it was not computed (`NaN`, empty)."""
        v = self.metrics.get(column, math.nan)
        return v if math.isfinite(v) or self.nonfinite(column) else None

    def cells(self, overflow: bool) -> list[str]:
        """The row as written, in `csv_header(overflow)` order."""
        lead = [
            "" if self.index is None else str(self.index),
            self.op_type,
            self.npu_dump,
            self.device_dtype,
            self.address,
            self.ground_truth,
            self.benchmark_dtype,
            self.tensor_index,
            self.shape,
        ]
        if overflow:
            lead.append(self.overflow)
        return [*lead, *(self.texts.get(c, NOT_COMPUTED) for c in METRIC_COLUMNS), self.reason]


class ResultCsvWriter:
    """Writes rows as they arrive and flushes, so an interrupted compare keeps its rows.

    `header=False` appends to a CSV that has its header already (a resumed compare)."""

    def __init__(self, fh: IO[str], path: Path, overflow: bool, header: bool = True) -> None:
        self.path = path
        self.overflow = overflow
        self._fh = fh
        # a write's rows are formatted here and reach `fh` in one write (one call through
        # the journal's byte counter and hash, not one per row)
        self._text = io.StringIO()
        self._writer = csv.writer(self._text)
        if header:
            self._writer.writerow(csv_header(overflow))
            self._drain()
        self.rows = 0
        # given the cells of each write's rows once they are written (vc's columns cache)
        self.on_written: Callable[[list[list[str]]], None] | None = None

    def write(self, rows: Iterable[ResultRow]) -> None:
        """Write and flush `rows`. A failed write (a full disk) is an OutputError naming this
        CSV: where several CSVs are open at once, the error must name the one whose write
        failed, whatever their closing meets afterwards."""
        records = [row.cells(self.overflow) for row in rows]
        self._take()  # what an interrupted write left is never written after it
        self._writer.writerows(records)
        try:
            self._drain()
            self._fh.flush()
        except OSError as exc:
            raise output_error(self.path, exc) from None
        self.rows += len(records)
        if self.on_written is not None:
            self.on_written(records)

    def _take(self) -> str:
        text = self._text.getvalue()
        self._text.seek(0)
        self._text.truncate()
        return text

    def _drain(self) -> None:
        self._fh.write(self._take())


@dataclass
class ResultTable:
    path: Path
    header: list[str]
    rows: list[ResultRow] = field(default_factory=list)
    metric_columns: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def computed_metrics(self) -> list[str]:
        """The metric columns holding a computed value in some row (`ResultColumns`' too)."""
        return [m for m in self.metric_columns if any(r.measured(m) is not None for r in self.rows)]


@dataclass(frozen=True)
class RowLayout:
    """Where a header puts each ResultRow field: the one mapping from a record's cells (stripped,
    padded to the header's width) to a row, shared by the CSV reader and the columns cache."""

    header: tuple[str, ...]
    metric_columns: tuple[str, ...]
    col: dict[str, int]  # name -> first position
    op_col: int
    gt_col: int | None
    dtype_cols: tuple[int, ...]
    metric_idx: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, path: Path, header: list[str]) -> RowLayout:
        col = {name: i for i, name in reversed(list(enumerate(header)))}  # first occurrence wins
        op_col = col.get("NPUDump", col.get("LeftOp"))
        if op_col is None or "TensorIndex" not in col:
            raise PrecisionError(
                f"{path}: not a compare result (header needs NPUDump or LeftOp, and TensorIndex)"
            )
        metric_columns = tuple(h for h in header if h not in _LEAD)
        return cls(
            header=tuple(header),
            metric_columns=metric_columns,
            col=col,
            op_col=op_col,
            gt_col=col.get("GroundTruth", col.get("RightOp")),
            dtype_cols=tuple(i for i, name in enumerate(header) if name == "DataType"),
            metric_idx=tuple((name, header.index(name)) for name in metric_columns),
        )

    def row(self, cells: list[str], line: int) -> ResultRow:
        """The row of one record; `cells` already stripped and as wide as the header."""
        col, dtypes = self.col, self.dtype_cols

        def cell(name: str) -> str:
            i = col.get(name)
            return cells[i] if i is not None else ""

        return ResultRow(
            index=parse_index(cell("Index")),
            op_type=cell("OpType"),
            npu_dump=cells[self.op_col],
            ground_truth=cells[self.gt_col] if self.gt_col is not None else "",
            tensor_index=cell("TensorIndex"),
            shape=cell("Shape"),
            texts={name: cells[i] for name, i in self.metric_idx},
            reason=cell(REASON_COLUMN),
            overflow=cell(OVERFLOW_COLUMN),
            device_dtype=cells[dtypes[0]] if dtypes else "",
            benchmark_dtype=cells[dtypes[1]] if len(dtypes) > 1 else "",
            address=cell("Address"),
            line=line,
        )


def op_name_of(tensor_index: str, npu_dump: str) -> str:
    """`ResultRow.op_name` from the two cells it depends on (for readers that keep no rows)."""
    parts = tensor_index.rsplit(":", 2)
    if len(parts) == 3 and parts[1] in ("input", "output") and parts[2].isdigit():
        return parts[0] or npu_dump
    return npu_dump


def iter_result_records(
    path: str | Path, warnings: list[str], strip_cells: bool = True, upto: int | None = None
) -> tuple[RowLayout, Generator[tuple[int, list[str]], None, None]]:
    """The header's layout and (record number, cells) of every non-blank record, each cell
    stripped (unless `strip_cells` is False: the caller strips) and the record cut or padded
    to the header's width (a short one noted in `warnings`); with `upto`, of the file's first
    `upto` bytes only (see journaled_prefix).

    A malformed file is a PrecisionError naming it, raised here or while iterating."""
    path = Path(path)
    try:
        if upto is None:
            fh = open(path, newline="", encoding="utf-8-sig", errors=TEXT_ERRORS)  # noqa: SIM115
        else:
            fh = open_prefix(path, upto)
    except OSError as exc:
        raise PrecisionError(f"{path}: cannot open: {exc.strerror}") from None
    reader = csv.reader(fh)
    try:
        header = [h.strip() for h in next(reader)]
        layout = RowLayout.of(path, header)
    except StopIteration:
        fh.close()
        raise PrecisionError(f"{path}: empty file, expected a compare result header") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        fh.close()
        raise PrecisionError(f"{path}: not a CSV file: {exc}") from None
    except BaseException:
        fh.close()
        raise

    def records() -> Generator[tuple[int, list[str]], None, None]:
        width = len(header)
        with fh:
            try:
                strip = str.strip
                for line, cells in enumerate(reader, start=2):
                    if not cells or (not strip(cells[0]) and all(not strip(c) for c in cells)):
                        continue
                    if len(cells) != width:
                        if len(cells) < width:
                            warnings.append(
                                f"{path}:{line}: {len(cells)} cells, header has {width}"
                            )
                            cells = cells + [""] * (width - len(cells))
                        else:
                            cells = cells[:width]
                    yield line, list(map(strip, cells)) if strip_cells else cells
            except (csv.Error, UnicodeDecodeError) as exc:
                raise PrecisionError(f"{path}: unreadable CSV: {exc}") from None

    return layout, records()


def read_result_csv(path: str | Path) -> ResultTable:
    """Parse one result CSV; a malformed file is a PrecisionError naming it, odd rows warnings."""
    path = Path(path)
    warnings: list[str] = []
    layout, records = iter_result_records(path, warnings)
    table = ResultTable(path, list(layout.header), metric_columns=list(layout.metric_columns))
    table.warnings = warnings
    table.rows = [layout.row(cells, line) for line, cells in records]
    return table


def find_result_csv(target: Path, statistics: bool = False) -> Path:
    """A CSV file itself, or the newest `result_*.csv` in a dir (or its newest timestamped subdir).

    With `statistics`, a statistics compare's `statistics_*.csv` counts too (whichever run is
    newest); callers that read only tensor compares leave it off."""
    if target.is_file():
        return target
    if not target.is_dir():
        raise PrecisionError(f"{target}: no such file or directory")
    found = result_csv_in(target, statistics)
    for sub in [] if found is not None else result_subdirs(target):
        found = result_csv_in(sub, statistics)
        if found is not None:
            break
    if found is None:
        raise PrecisionError(f"{target}: no result_*.csv here; run vc first")
    return found


def result_csv_in(directory: Path, statistics: bool = False) -> Path | None:
    """The primary result CSV right in `directory` (not the device-vs-device one, written after
    it), the newest when there are several; None when it holds none."""
    kinds = ("result", "statistics") if statistics else ("result",)
    found = sorted(p for kind in kinds for p in directory.glob(f"{kind}_*.csv"))
    if not found:
        return None
    primary = [p for p in found if _PRIMARY_NAME.fullmatch(p.name)] or found
    return max(primary, key=lambda p: (p.stat().st_mtime_ns, p.name))


# a result dir dated later than this after the clock now was not written by a vc of this
# machine as it is: a clock or a time zone ahead, or a crafted name. Taken as the newest, it
# would hide every compare run since (QA: `29991231235959/` shadowed the vc just run).
FUTURE_SLACK_S = 600


# in `temp/vector_compare/`: the name of the result dir vc made last (`mark_latest`)
LATEST_NAME = ".latest"


def result_subdirs(target: Path) -> list[Path]:
    """The timestamped result dirs under `target` (`temp/vector_compare/`), newest first;
    those dated in the future (`dated_result_dirs`) left out."""
    return dated_result_dirs(target).dirs


def mark_latest(result_dir: Path) -> None:
    """Record `result_dir` as the one vc made last, beside it, when vc named it (not a `-o`
    dir): the order of dirs a clock put out of order (`dated_result_dirs`). Written with the
    run's summary. A hint only: a failure to write it is ignored."""
    if result_dir.parent.name != "vector_compare" or not _RESULT_DIR_NAME.fullmatch(
        result_dir.name
    ):
        return
    pointer = result_dir.parent / LATEST_NAME
    staged = pointer.with_name(f"{LATEST_NAME}.{os.getpid()}.tmp")
    try:
        staged.write_text(result_dir.name, encoding="utf-8")
        os.replace(staged, pointer)
    except OSError:
        with contextlib.suppress(OSError):
            staged.unlink()


def _latest_name(target: Path) -> str | None:
    try:
        with open(target / LATEST_NAME, encoding="utf-8", errors="replace") as fh:
            text = fh.read(64).strip()
    except OSError:
        return None
    return text if _RESULT_DIR_NAME.fullmatch(text) else None


@dataclass(frozen=True)
class DatedDirs:
    """`dated_result_dirs`' answer."""

    dirs: list[Path]  # dated up to now (or a little after), newest first
    future: list[Path]  # passed over, by name: never taken as the newest
    ahead: list[Path]  # of `dirs`, dated after now: their order is not their names'


# the names vc gives its result dirs: the local time, then `_<n>` for the n-th of that second
_RESULT_DIR_NAME = re.compile(r"(?P<stamp>\d{14})(?:_(?P<n>\d{1,6}))?")


def dated_result_dirs(
    target: Path, started: Callable[[Path], float | None] | None = None
) -> DatedDirs:
    """The result dirs under `target`: those dated up to now, newest first; the others, by
    name: never taken as the newest. Passed over: a name vc does not write (`X.bak`, a copy
    kept beside its original, QA Q24 #8), or a date more than FUTURE_SLACK_S after now (local
    time, as vc names them). A dir dated after now but within the slack has no trusted place
    by its name (a copy from a host ahead, QA Q24 #3; a clock stepped back, QA Q26 #2): with
    one, the dirs of the last FUTURE_SLACK_S are ordered by `started` (the epoch seconds their
    compare began, from their summaries) where it is known, and the one vc made last
    (`mark_latest`) goes first: a clock stepped back dates it, and its start, before the
    dirs made before it."""
    now: list[tuple[float, int, str, Path]] = []
    future: list[Path] = []
    clock = _time.time()
    for d in target.iterdir():
        named = _RESULT_DIR_NAME.fullmatch(d.name)
        if not d.is_dir() or named is None:
            if d.is_dir() and d.name[:14].isdigit():
                future.append(d)  # looks like ours, is not: said, never picked
            continue
        try:
            stamp = _dt.datetime.strptime(named["stamp"], "%Y%m%d%H%M%S").timestamp()
        except ValueError:
            future.append(d)  # 20261399... is no date vc writes
            continue
        if stamp > clock + FUTURE_SLACK_S:
            future.append(d)
            continue
        now.append((stamp, int(named["n"] or 0), d.name, d))
    ahead = sorted(d for stamp, _, _, d in now if stamp > clock)
    recent = [d for stamp, _, _, d in now if stamp >= clock - FUTURE_SLACK_S]
    if started is not None and ahead:
        # the dirs of the last minutes, those ahead among them, are ordered by when their
        # compares began, as far as their summaries say
        now = [
            (when, n, name, d)
            if stamp >= clock - FUTURE_SLACK_S and (when := started(d)) is not None
            else (stamp, n, name, d)
            for stamp, n, name, d in now
        ]
    now.sort(reverse=True)
    dirs = [d for *_, d in now]
    latest = _latest_name(target) if ahead else None
    made_last = next((d for d in recent if d.name == latest), None)
    if made_last is not None:
        dirs.remove(made_last)
        dirs.insert(0, made_last)
    return DatedDirs(dirs, sorted(future), ahead)


def is_statistics_csv(path: Path) -> bool:
    """A statistics compare's CSV (`statistics_<ts>...csv`), by its name."""
    return path.name.startswith("statistics_")
