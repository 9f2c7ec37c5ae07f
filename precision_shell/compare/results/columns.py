"""A result CSV as typed columns: read once, then answered from numpy arrays, not from text.

`ResultColumns` holds every header column as strings (one UTF-8 blob and its offsets, or a
table of distinct values and a code per row when few values repeat) and, derived from them by
the reader's own rules, what the counts and the threshold rule need for every row: its kind
(input/output), its op, whether it was compared or is a constant input, each metric's value
and whether the data held NaN/inf there. `row(i)` rebuilds the very `ResultRow` that
`read_result_csv` gives (through the same `RowLayout`), so a consumer that wants rows gets
them only for the rows it shows.

`load_result_columns` keeps the arrays in a cache file (results/columns_cache.py) keyed to the
CSV, so a 1M-row result is parsed once, not on every `vcs` or `report`.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precision_shell.compare.results.schema import (
    CONSTANT_INPUT,
    HIGHER_IS_BETTER,
    NONFINITE_TEXTS,
    ResultRow,
    RowLayout,
    _float,
    _parse_tensor_index,
    iter_result_records,
    op_name_of,
    parse_index,
)
from precision_shell.compare.results.thresholds import (
    FAILING_REASON_MARKS,
    ThresholdRule,
    reason_fails,
)

KIND_NONE, KIND_INPUT, KIND_OUTPUT = 0, 1, 2
_KIND_CODES = {"": KIND_NONE, "input": KIND_INPUT, "output": KIND_OUTPUT}
_CHUNK = 65_536  # records parsed and encoded at a time (bounds the strings alive at once)
_SAMPLE = 1_000  # a column whose first values are mostly distinct is stored plain


class StrColumn:
    """n strings: `values` (UTF-8 `blob` cut at `offsets`), indexed through `codes` if any."""

    __slots__ = ("blob", "offsets", "codes", "_memo")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, codes: np.ndarray | None) -> None:
        self.blob = blob
        self.offsets = offsets
        self.codes = codes
        self._memo: dict[int, str] = {}

    @property
    def distinct(self) -> int:
        return len(self.offsets) - 1

    def value(self, k: int) -> str:
        """The k-th stored string (the k-th value of the table when coded)."""
        hit = self._memo.get(k)
        if hit is None:
            lo, hi = int(self.offsets[k]), int(self.offsets[k + 1])
            hit = _decode(self.blob[lo:hi].tobytes())
            if self.codes is not None:
                self._memo[k] = hit
        return hit

    def __getitem__(self, i: int) -> str:
        return self.value(int(self.codes[i]) if self.codes is not None else i)

    def take(self, rows: Iterable[int]) -> list[str]:
        return [self[int(i)] for i in rows]

    def values(self) -> list[str]:
        """Every stored string (the table's values when coded)."""
        data, cuts = self.blob.tobytes(), self.offsets.tolist()
        return [_decode(data[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]

    def all(self) -> list[str]:
        """Every cell, in row order."""
        values = self.values()
        if self.codes is None:
            return values
        return [values[c] for c in self.codes.tolist()]


def _decode(data: bytes) -> str:
    """A stored string: `surrogatepass` gives back a cell's lone surrogates (a file name's
    bytes that were not UTF-8, see file_name_text) as `_encode` kept them."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a damaged cache file
        return data.decode("utf-8", "replace")


def _encode(values: Sequence[str]) -> tuple[bytes, list[int]]:
    """The UTF-8 of the strings one after another, and each one's length in bytes."""
    text = "".join(values)
    blob = text.encode("utf-8", "surrogatepass")
    if len(blob) == len(text):  # all ASCII: a byte per character
        return blob, list(map(len, values))
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    return blob, list(map(len, encoded))


class _StrBuilder:
    """One column's strings as they arrive, chunk by chunk: plain, or coded when the first
    chunk shows few distinct values."""

    def __init__(self) -> None:
        self.coded: bool | None = None
        self.table: dict[str, int] = {}
        self.codes: list[np.ndarray] = []
        self.pieces: list[bytes] = []
        self.lengths: list[int] = []

    def add(self, values: Sequence[str]) -> None:
        if self.coded is None:
            sample = values[:_SAMPLE]
            self.coded = len(set(sample)) * 4 <= max(len(sample), 4)
        if self.coded:
            table = self.table
            for value in dict.fromkeys(values):  # the distinct values, first seen first
                if value not in table:
                    table[value] = len(table)
            codes = np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))
            self.codes.append(codes)
        else:
            blob, lengths = _encode(values)
            self.pieces.append(blob)
            self.lengths.extend(lengths)

    def arrays(self, name: str) -> dict[str, np.ndarray]:
        if self.coded:
            blob, lengths = _encode(list(self.table))
            codes = np.concatenate(self.codes) if self.codes else np.zeros(0, np.int32)
            out = {f"{name}.codes": codes}
        else:
            blob, lengths = b"".join(self.pieces), self.lengths
            out = {}
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
        out[f"{name}.blob"] = np.frombuffer(blob, dtype=np.uint8)
        out[f"{name}.offsets"] = offsets
        return out


def _metric_values(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each cell's value as `ResultRow.metrics` parses it, whether it holds NaN/inf from the
    data (`ResultRow.nonfinite`), and whether it holds a value at all (not `NaN`/empty)."""
    cells = np.asarray(texts, dtype=object)
    try:
        values = cells.astype(np.float64)  # float() of each cell
    except (ValueError, TypeError, OverflowError):  # some cell is no number: each distinct once
        parsed = {text: _float(text) for text in dict.fromkeys(texts)}
        values = np.fromiter(map(parsed.__getitem__, texts), dtype=np.float64, count=len(texts))
    # a finite value was computed and is no NaN/inf; only the other cells need their text read
    odd = np.flatnonzero(~np.isfinite(values))
    nonfinite = np.zeros(len(texts), dtype=bool)
    computed = np.ones(len(texts), dtype=bool)
    if len(odd):
        texts_odd = cells[odd]
        nonfinite[odd] = np.isin(texts_odd, NONFINITE_TEXTS)
        computed[odd] = (texts_odd != "NaN") & (texts_odd != "")
    return values, nonfinite, computed


def build_arrays(
    csv_path: Path, upto: int | None = None
) -> tuple[RowLayout, list[str], dict[str, np.ndarray]]:
    """Parse the CSV (with `upto`, its first `upto` bytes) once into the arrays
    `ResultColumns` is made of (CSV warnings aside)."""
    warnings: list[str] = []
    layout, records = iter_result_records(csv_path, warnings, strip_cells=False, upto=upto)
    builder = ColumnsBuilder(layout)
    # millions of short-lived strings and lists, none in a cycle: the cyclic collector would
    # rescan them all again and again for nothing
    enabled = gc.isenabled()
    gc.disable()
    try:
        for record in records:
            builder.add(record)
        return layout, warnings, builder.arrays()
    finally:
        if enabled:
            gc.enable()


class ColumnsBuilder:
    """The arrays `ResultColumns` is made of, from records (line, cells not yet stripped) as
    they come, `chunk` records encoded at a time: what `build_arrays` makes of a CSV's records,
    and what `vc` makes of the rows it writes (`add_written`), without reading them back."""

    def __init__(self, layout: RowLayout, chunk: int = _CHUNK) -> None:
        self.layout = layout
        self.chunk_rows = max(chunk, _SAMPLE)  # the first chunk decides coded or plain
        self.rows = 0
        self._next_line = 2  # the record number of the next written row (header = 1)
        self._chunk: list[tuple[int, list[str]]] = []
        width = len(layout.header)
        self._strings = [_StrBuilder() for _ in range(width)]
        self._ops = _StrBuilder()
        self._ops.coded = True
        self._ti_col, self._op_col = layout.col["TensorIndex"], layout.op_col
        self._reason_col = layout.col.get("CompareFailReason")
        self._metric_cols = [i for _, i in layout.metric_idx]
        self._lines: list[np.ndarray] = []
        self._kinds: list[np.ndarray] = []
        self._compared: list[np.ndarray] = []
        self._constant: list[np.ndarray] = []
        self._values: list[list[np.ndarray]] = [[] for _ in self._metric_cols]
        self._nonfinite: list[list[np.ndarray]] = [[] for _ in self._metric_cols]

    def add(self, record: tuple[int, list[str]]) -> None:
        """One record as the reader yields it (cut or padded to the header's width)."""
        self._chunk.append(record)
        self.rows += 1
        if len(self._chunk) >= self.chunk_rows:
            self.flush()

    def add_written(self, records: Iterable[list[str]]) -> None:
        """Records as `csv.writer` wrote them after the header, one after another: numbered
        and skipped (all cells blank) as the reader will number and skip them."""
        strip = str.strip
        for cells in records:
            line = self._next_line
            self._next_line += 1
            if cells and any(map(strip, cells)):
                self.add((line, cells))

    def flush(self) -> None:
        chunk = self._chunk
        if not chunk:
            return
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._encode(chunk)
        finally:
            if enabled:
                gc.enable()
        self._chunk = []

    def _encode(self, chunk: list[tuple[int, list[str]]]) -> None:
        n = len(chunk)
        self._lines.append(np.fromiter((line for line, _ in chunk), dtype=np.int64, count=n))
        strip = str.strip  # the reader's stripping, a column at a time
        columns = [list(map(strip, c)) for c in zip(*(cells for _, cells in chunk), strict=True)]
        for builder, column in zip(self._strings, columns, strict=True):
            builder.add(column)
        tensors, npu = columns[self._ti_col], columns[self._op_col]
        self._ops.add([op_name_of(t, d) for t, d in zip(tensors, npu, strict=True)])
        self._kinds.append(
            np.fromiter(
                (_KIND_CODES[_parse_tensor_index(t)[0]] for t in tensors), dtype=np.int8, count=n
            )
        )
        any_computed = np.zeros(n, dtype=bool)
        for k, i in enumerate(self._metric_cols):
            v, nf, computed = _metric_values(list(columns[i]))
            self._values[k].append(v)
            self._nonfinite[k].append(nf)
            any_computed |= computed
        self._compared.append(any_computed)
        if self._reason_col is None:
            self._constant.append(np.zeros(n, dtype=bool))
        else:
            marked = np.fromiter(
                (CONSTANT_INPUT in r for r in columns[self._reason_col]), dtype=bool, count=n
            )
            self._constant.append(marked & ~any_computed)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays of every record added so far."""
        self.flush()

        def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        arrays: dict[str, np.ndarray] = {
            "line": joined(self._lines, np.int64),
            "kind": joined(self._kinds, np.int8),
            "compared": joined(self._compared, bool),
            "constant": joined(self._constant, bool),
        }
        for j, builder in enumerate(self._strings):
            if builder.coded is None:  # no records
                builder.coded = False
            arrays.update(builder.arrays(f"c{j}"))
        op_arrays = self._ops.arrays("op")
        arrays["op"] = op_arrays.pop("op.codes")
        arrays.update(op_arrays)
        for k in range(len(self._metric_cols)):
            arrays[f"m{k}.value"] = joined(self._values[k], np.float64)
            arrays[f"m{k}.nonfinite"] = joined(self._nonfinite[k], bool)
        return arrays


def str_column(arrays: dict[str, np.ndarray], name: str) -> StrColumn:
    return StrColumn(arrays[f"{name}.blob"], arrays[f"{name}.offsets"], arrays.get(f"{name}.codes"))


@dataclass
class ResultColumns:
    """A result CSV's rows as columns (see the module doc); `source` says where they came
    from ("csv": parsed now, "cache": the columns cache), `notes` why a cache was not used."""

    path: Path
    layout: RowLayout
    warnings: list[str]
    arrays: dict[str, np.ndarray]
    source: str = "csv"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        a = self.arrays
        self.line: np.ndarray = a["line"]
        self.kind: np.ndarray = a["kind"]
        self.op: np.ndarray = a["op"]
        self.compared: np.ndarray = a["compared"]
        self.constant: np.ndarray = a["constant"]
        self.op_names = str_column(a, "op")
        self.cells = [str_column(a, f"c{j}") for j in range(len(self.layout.header))]
        self.values = {m: a[f"m{k}.value"] for k, (m, _) in enumerate(self.layout.metric_idx)}
        self.nonfinite = {
            m: a[f"m{k}.nonfinite"] for k, (m, _) in enumerate(self.layout.metric_idx)
        }
        self._rows: list[ResultRow] | None = None

    @classmethod
    def from_csv(cls, csv_path: Path, upto: int | None = None) -> ResultColumns:
        layout, warnings, arrays = build_arrays(csv_path, upto)
        return cls(csv_path, layout, warnings, arrays)

    # -- the ResultTable face -------------------------------------------------------------
    @property
    def header(self) -> list[str]:
        return list(self.layout.header)

    @property
    def metric_columns(self) -> list[str]:
        return list(self.layout.metric_columns)

    def __len__(self) -> int:
        return len(self.line)

    def computed_metrics(self) -> list[str]:
        """The metric columns holding a computed value in some row (nan/inf from the data
        counts; `NaN`, not computed, does not)."""
        return [
            m
            for m in self.metric_columns
            if bool((~np.isnan(self.values[m]) | self.nonfinite[m]).any())
        ]

    def record(self, i: int) -> list[str]:
        """Row i's cells (stripped), one per header column."""
        return [c[i] for c in self.cells]

    def row(self, i: int) -> ResultRow:
        return self.layout.row(self.record(i), int(self.line[i]))

    def rows_at(self, rows: Iterable[int]) -> list[ResultRow]:
        return [self.row(int(i)) for i in rows]

    @property
    def rows(self) -> list[ResultRow]:
        """Every row (built once; what small results and row-wise consumers use)."""
        if self._rows is None:
            self._rows = self.rows_at(range(len(self)))
        return self._rows

    # -- vectorised rule and counts -------------------------------------------------------
    def crossing(self, rule: ThresholdRule) -> np.ndarray:
        """Rows whose tensor crosses some limit of `rule` (`rule.fails(row)`, every row)."""
        out = np.zeros(len(self), dtype=bool)
        for metric, limit in rule.active():
            values = self.values.get(metric)
            if values is None:
                continue
            with np.errstate(invalid="ignore"):
                crossed = values < limit if metric in HIGHER_IS_BETTER else values > limit
            out |= self.nonfinite[metric] | crossed
        reason = self.layout.col.get("CompareFailReason")
        if reason is not None and rule.failing_reason_limit() is not None:
            out |= self._failing_reasons(self.cells[reason])
        return out

    def _failing_reasons(self, reasons: StrColumn) -> np.ndarray:
        """Rows whose reason fails them (`thresholds.reason_fails`: an all-zero benchmark,
        NaN/inf cut off the device tensor): judged on each distinct reason of a coded column."""
        blob = reasons.blob.tobytes()
        if not any(mark.encode() in blob for mark in FAILING_REASON_MARKS):
            return np.zeros(len(self), dtype=bool)
        flags = np.fromiter(
            (reason_fails(r) for r in reasons.values()), dtype=bool, count=reasons.distinct
        )
        return flags[reasons.codes] if reasons.codes is not None else flags

    def op_first_rows(self) -> np.ndarray:
        """For each op code, the first row that names it (file order)."""
        first = np.full(self.op_names.distinct, len(self), dtype=np.int64)
        np.minimum.at(first, self.op, np.arange(len(self), dtype=np.int64))
        return first

    def rows_by_op(self, codes: Iterable[int]) -> dict[int, np.ndarray]:
        """Row numbers (file order) of each op code asked for."""
        wanted = np.fromiter(codes, dtype=np.int64)
        if len(wanted) == 0:
            return {}
        if len(wanted) <= 8:
            return {int(c): np.flatnonzero(self.op == c) for c in wanted}
        order = np.argsort(self.op, kind="stable")
        sorted_ops = self.op[order]
        lo = np.searchsorted(sorted_ops, wanted, side="left")
        hi = np.searchsorted(sorted_ops, wanted, side="right")
        return {int(c): order[a:b] for c, a, b in zip(wanted, lo, hi, strict=True)}

    def index_texts(self, rows: Iterable[int]) -> list[str]:
        i = self.layout.col.get("Index")
        return [self.cells[i][int(r)] if i is not None else "" for r in rows]


def load_result_columns(
    csv_path: Path, cache_dir: Callable[[], Path] | None = None, upto: int | None = None
) -> ResultColumns:
    """The columns of a result CSV, from its cache file when one is valid for it (else parsed,
    and cached when the CSV is big enough to be worth it and `cache_dir` gives a place); with
    `upto`, of its first `upto` bytes only (an unfinished run's journaled rows: see
    run_state.ResultPick.journaled_length)."""
    from precision_shell.compare.results.columns_cache import cached_columns

    return cached_columns(csv_path, cache_dir, upto)


def position(index_text: str) -> float:
    """Where an op sorts by its Index cell (ops without one sort last)."""
    index = parse_index(index_text)
    return index if index is not None else math.inf
