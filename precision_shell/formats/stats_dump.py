"""Statistics-only NPU dumps: `{op_type}.{op_name}.{task}[.{stream}].{timestamp}.csv`.

CANN writes one of these instead of a tensor dump when the dump config says
`dump_data: stats`. One row per input or output slot; the header names the columns and the
user chose which statistics to record and in which order, so every column is found by its
name, never by its position (FORMATS.md section 2b). Values are as the device computed them
on the tensor *as stored*: in a padded device layout (NC1HWC0, FRACTAL_NZ...) the padding's
zeros are counted in `Count`, dilute `Avg Value` and may be `Max`/`Min`.

`read_stats_dump` reads a file into `StatsDump`; `write_stats_dump` writes one (the demo
builder and the tests make statistics workspaces with it).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.errors import FormatError
from precision_shell.formats.dtypes import DumpDataType
from precision_shell.formats.layouts import LayoutError, format_code, format_name

# A statistics file holds a few rows per op; anything this big is not one.
MAX_STATS_FILE_BYTES = 16 << 20
MAX_STATS_ROWS = 65536

# statistic key -> the header spellings CANN versions use (compared lower-case, spaces squeezed)
STATISTIC_HEADERS: dict[str, tuple[str, ...]] = {
    "count": ("count",),
    "max": ("max value", "max"),
    "min": ("min value", "min"),
    "mean": ("avg value", "avg", "mean value", "mean"),
    "l2norm": ("l2norm", "l2norm value", "l2 norm", "l2 norm value"),
    "nan_count": ("nan count",),
    "neg_inf_count": ("negative inf count", "-inf count"),
    "pos_inf_count": ("positive inf count", "+inf count", "inf count"),
}
COUNT_KEYS = ("count", "nan_count", "neg_inf_count", "pos_inf_count")
VALUE_KEYS = ("max", "min", "mean", "l2norm")
_FIXED_HEADERS = {
    "input/output": "kind",
    "index": "index",
    "data size": "data_size",
    "data type": "dtype",
    "format": "format",
    "shape": "shape",
    "md5 value": "md5",
    "md5": "md5",
}
_HEADER_KEY = {
    **_FIXED_HEADERS,
    **{alias: key for key, aliases in STATISTIC_HEADERS.items() for alias in aliases},
}
# the names `write_stats_dump` uses: CANN's current spelling
_WRITE_HEADERS = {
    "count": "Count",
    "max": "Max Value",
    "min": "Min Value",
    "mean": "Avg Value",
    "l2norm": "L2Norm Value",
    "nan_count": "Nan Count",
    "neg_inf_count": "Negative Inf Count",
    "pos_inf_count": "Positive Inf Count",
}
_DTYPE_ALIASES = {
    "HALF": "FLOAT16",
    "FP16": "FLOAT16",
    "FLOAT32": "FLOAT",
    "FP32": "FLOAT",
    "FLOAT64": "DOUBLE",
    "FP64": "DOUBLE",
    "BFLOAT16": "BF16",
}
_SHAPE_SPLIT = re.compile(r"[\s,x×;]+")
_DIGITS = re.compile(r"[0-9]{1,19}")  # ASCII digits only (str.isdigit takes "²"), int64-sized
_MISSING = frozenset({"", "n/a", "na", "null", "none", "-"})


@dataclass(frozen=True)
class StatsRow:
    """One input or output slot of a statistics dump, as the device recorded it.

    `dtype` is the dump data type's name ("FLOAT16", "BF16", "FLOAT"; an unknown spelling kept
    upper-cased), `format` the layout name ("NC1HWC0"); `values` holds the statistics the file
    has, keyed by `STATISTIC_HEADERS` (counts as floats too; missing ones are absent).
    """

    kind: str  # "input" | "output"
    index: int
    dtype: str
    format: str
    shape: tuple[int, ...] | None
    data_size: int | None = None
    values: dict[str, float] = field(default_factory=dict)
    md5: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} {self.index}"

    @property
    def element_count(self) -> int | None:
        """Elements as stored (pads included): `Count`, else the product of `Shape`."""
        count = self.values.get("count")
        if count is not None and math.isfinite(count) and count >= 0:
            return int(count)
        if self.shape is None:
            return None
        return math.prod(self.shape)

    def get(self, key: str) -> float | None:
        return self.values.get(key)


@dataclass(frozen=True)
class StatsDump:
    path: str
    rows: tuple[StatsRow, ...]
    columns: tuple[str, ...]  # the statistic keys the file records, in file order

    def row(self, kind: str, index: int) -> StatsRow | None:
        for row in self.rows:
            if row.kind == kind and row.index == index:
                return row
        return None

    @property
    def inputs(self) -> list[StatsRow]:
        return sorted((r for r in self.rows if r.kind == "input"), key=lambda r: r.index)

    @property
    def outputs(self) -> list[StatsRow]:
        return sorted((r for r in self.rows if r.kind == "output"), key=lambda r: r.index)


def _squeeze(text: str) -> str:
    return " ".join(text.strip().lower().split())


def dtype_of(text: str) -> str:
    """The dump data type name of a `Data Type` cell: "DT_FLOAT16", "float16", "1"..."""
    cell = text.strip()
    if _DIGITS.fullmatch(cell):
        try:
            return DumpDataType(int(cell)).name
        except ValueError:
            return cell
    key = cell.upper().removeprefix("DT_")
    key = _DTYPE_ALIASES.get(key, key)
    return key if key in DumpDataType.__members__ else cell.upper()


def _format_of(text: str, where: str) -> str:
    cell = text.strip()
    if not cell:
        return "ND"
    try:
        if _DIGITS.fullmatch(cell):
            code = int(cell)
            name = format_name(code)
            if name.startswith("UNKNOWN"):
                raise LayoutError(name)
            return name
        return format_name(format_code(cell))
    except LayoutError:
        raise ValueError(f"{where}: unknown Format {cell[:40]!r}") from None


def _shape_of(text: str, where: str) -> tuple[int, ...] | None:
    if text.strip().lower() in _MISSING - {""}:
        return None  # unknown (our writer's "N/A")
    cell = text.strip().strip("[]()").strip()
    if not cell:
        return ()
    parts = [p for p in _SHAPE_SPLIT.split(cell) if p]
    if len(parts) > 32 or not all(_DIGITS.fullmatch(p) for p in parts):
        raise ValueError(f"{where}: Shape {text.strip()[:40]!r} is not a list of dims")
    dims = tuple(int(p) for p in parts)
    if any(d > 1 << 48 for d in dims):
        raise ValueError(f"{where}: Shape {text.strip()[:40]!r} has an impossible dim")
    return dims


def _number(text: str, where: str, column: str) -> float | None:
    cell = text.strip()
    if cell.lower() in _MISSING:
        return None
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{where}: {column} {cell[:40]!r} is not a number") from None


def _header_keys(header: Sequence[str]) -> list[str | None]:
    keys: list[str | None] = []
    seen: set[str] = set()
    for name in header:
        key = _HEADER_KEY.get(_squeeze(name))
        if key is not None and key in seen:
            raise ValueError(f"column {name.strip()!r} appears twice in the header")
        if key is not None:
            seen.add(key)
        keys.append(key)
    for needed, text in (("kind", "Input/Output"), ("index", "Index")):
        if needed not in seen:
            raise ValueError(f"the header has no {text} column (not a statistics dump)")
    return keys


def _parse_row(cells: list[str], keys: list[str | None], header: list[str], line: int) -> StatsRow:
    where = f"line {line}"
    if len(cells) != len(keys):
        raise ValueError(f"{where}: {len(cells)} cells for {len(keys)} columns")
    named = {key: cell for key, cell in zip(keys, cells, strict=True) if key is not None}
    kind = named["kind"].strip().lower()
    if kind not in ("input", "output"):
        raise ValueError(f"{where}: Input/Output is {named['kind'].strip()[:20]!r}")
    index_text = named["index"].strip()
    if not _DIGITS.fullmatch(index_text) or int(index_text) > 1 << 20:
        raise ValueError(f"{where}: Index {index_text[:20]!r} is not a slot number")
    size = named.get("data_size", "").strip()
    if size.lower() in _MISSING:
        size = ""
    elif not _DIGITS.fullmatch(size):
        raise ValueError(f"{where}: Data Size {size[:20]!r} is not a byte count")
    values: dict[str, float] = {}
    for key, cell, column in zip(keys, cells, header, strict=True):
        if key in STATISTIC_HEADERS:
            value = _number(cell, where, column.strip())
            if value is not None:
                if key in COUNT_KEYS and not (value >= 0 and float(value).is_integer()):
                    raise ValueError(f"{where}: {column.strip()} {cell.strip()!r} is not a count")
                values[key] = value
    md5 = named.get("md5", "").strip() or None
    return StatsRow(
        kind=kind,
        index=int(index_text),
        dtype=dtype_of(named.get("dtype", "")),
        format=_format_of(named.get("format", ""), where),
        shape=_shape_of(named["shape"], where) if "shape" in named else None,
        data_size=int(size) if size else None,
        values=values,
        md5=md5,
    )


def parse_stats_text(text: str, path: str) -> StatsDump:
    """A statistics dump's text; FormatError naming `path` and the line when it is not one."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if header is None:
            raise ValueError("empty file (expected a statistics header)")
        keys = _header_keys(header)
        rows: list[StatsRow] = []
        seen: set[tuple[str, int]] = set()
        for line, cells in enumerate(reader, start=2):
            if not any(c.strip() for c in cells):
                continue
            if len(rows) >= MAX_STATS_ROWS:
                raise ValueError(f"more than {MAX_STATS_ROWS} rows")
            row = _parse_row(cells, keys, header, line)
            if (row.kind, row.index) in seen:
                raise ValueError(f"line {line}: {row.label} is listed twice")
            seen.add((row.kind, row.index))
            rows.append(row)
    except csv.Error as exc:
        raise FormatError(path, f"not a CSV file: {exc}") from None
    except ValueError as exc:
        raise FormatError(path, str(exc)) from None
    columns = tuple(k for k in keys if k is not None and k in STATISTIC_HEADERS)
    return StatsDump(path, tuple(rows), columns)


def read_stats_dump(path: str | Path) -> StatsDump:
    """Read one statistics dump file. Raises FormatError naming the file and the problem."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_STATS_FILE_BYTES:
                raise FormatError(
                    name, f"{size} bytes is too large for a statistics dump (at most 16 MiB)"
                )
            data = fh.read(MAX_STATS_FILE_BYTES + 1)
    except OSError as exc:
        raise FormatError(name, f"cannot read the file ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise FormatError(name, "binary data in a statistics dump (expected CSV text)")
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    return parse_stats_text(text, name)


def _cell(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if float(value).is_integer() and abs(value) < 1 << 53:
        return str(int(value))
    return repr(float(value))


def write_stats_dump(
    path: str | Path, rows: Sequence[StatsRow], columns: Sequence[str] = tuple(_WRITE_HEADERS)
) -> None:
    """Write `rows` as CANN does: the fixed columns, then `columns` (statistic keys) in order."""
    header = ["Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape"]
    header += [_WRITE_HEADERS[key] for key in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        shape = "N/A" if row.shape is None else "x".join(str(d) for d in row.shape)
        cells = [
            row.kind.capitalize(),
            str(row.index),
            "" if row.data_size is None else str(row.data_size),
            f"DT_{row.dtype}",
            row.format,
            shape,
        ]
        cells += [_cell(row.values[k]) if k in row.values else "" for k in columns]
        writer.writerow(cells)
    Path(path).write_text(out.getvalue(), encoding="utf-8")
