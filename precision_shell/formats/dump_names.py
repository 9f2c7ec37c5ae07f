"""Names of NPU dump files (`{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}...`) and the
`mapping.csv` that stores names too long for the file system (FORMATS.md section 2).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from precision_shell.errors import FormatError
from precision_shell.file_name_text import TEXT_ERRORS
from precision_shell.formats.bounded_read import read_bounded_text

MAPPING_FILE_NAME = "mapping.csv"
# A row per renamed file, ~250 bytes: 64 MiB is a quarter of a million of them.
MAX_MAPPING_BYTES = 64 << 20
STATS_SUFFIX = ".csv"
TIMESTAMP_DIGITS = 16
FFTS_TASK_TYPES = range(5)

_UNSAFE_IN_NAME = re.compile(r"[/.\\ ]")
_NAME_PATTERN = (
    "{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}"
    "[.{task_type}.{context_id}.{thread_id}.{n}][.csv]"
)


def sanitize_dump_name(name: str) -> str:
    """`name` as the dumper writes it into file names: `/`, `.`, `\\` and space become `_`."""
    return _UNSAFE_IN_NAME.sub("_", name)


@dataclass(frozen=True)
class DumpName:
    """The parts of a dump file name."""

    file_name: str
    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    ffts: tuple[int, int, int, int] | None  # (task_type, context_id, thread_id, n)
    stats_csv: bool


def parse_dump_name(file_name: str) -> DumpName:
    """The parts of a dump (or `Opdebug.Node_OpDebug...` overflow) file name.

    Raises ValueError saying why a name does not fit the pattern.
    """
    # The dumper replaces every `.` in type and name, so the first two dot-separated fields are
    # type and name and every later field is a number. Only four counts of numbers can occur,
    # which tells the optional parts apart without guessing:
    #   2: task, timestamp           3: task, stream, timestamp
    #   6: task, timestamp, FFTS x4  7: task, stream, timestamp, FFTS x4
    # The timestamp must then sit at the expected place and have exactly 16 digits.
    stem = file_name
    stats_csv = stem.endswith(STATS_SUFFIX)
    if stats_csv:
        stem = stem[: -len(STATS_SUFFIX)]
    fields = stem.split(".")

    def bad(reason: str) -> ValueError:
        return ValueError(f"{file_name!r} is not a dump file name ({_NAME_PATTERN}): {reason}")

    if len(fields) < 4:
        raise bad(f"it has {len(fields)} dot-separated fields, at least 4 are needed")
    op_type, op_name, numbers = fields[0], fields[1], fields[2:]
    if not op_type or not op_name:
        raise bad("the op type or op name is empty")
    for field in numbers:
        if not (field.isascii() and field.isdigit()):
            raise bad(f"{field!r} after the op name is not a number")
    if len(numbers) not in (2, 3, 6, 7):
        raise bad(f"{len(numbers)} numbers follow the op name; 2, 3, 6 or 7 are possible")
    has_stream = len(numbers) in (3, 7)
    timestamp_text = numbers[2 if has_stream else 1]
    if len(timestamp_text) != TIMESTAMP_DIGITS:
        raise bad(f"the timestamp {timestamp_text!r} does not have {TIMESTAMP_DIGITS} digits")
    ffts = None
    if len(numbers) > 3:
        task_type, context_id, thread_id, n = (int(field) for field in numbers[-4:])
        if task_type not in FFTS_TASK_TYPES:
            raise bad(f"the FFTS task type {task_type} is not in 0..4")
        ffts = (task_type, context_id, thread_id, n)
    return DumpName(
        file_name=file_name,
        op_type=op_type,
        op_name=op_name,
        task_id=int(numbers[0]),
        stream_id=int(numbers[1]) if has_stream else None,
        timestamp=int(timestamp_text),
        ffts=ffts,
        stats_csv=stats_csv,
    )


def dump_file_name(
    op_type: str,
    op_name: str,
    task_id: int,
    timestamp: int,
    stream_id: int | None = None,
    ffts: tuple[int, int, int, int] | None = None,
) -> str:
    """The dump file name for these parts (type and name sanitized, timestamp 16 digits)."""
    safe_type, safe_name = sanitize_dump_name(op_type), sanitize_dump_name(op_name)
    if not safe_type or not safe_name:
        raise ValueError("a dump file name needs a non-empty op type and op name")
    if not 0 <= timestamp < 10**TIMESTAMP_DIGITS:
        raise ValueError(f"timestamp {timestamp} does not fit in {TIMESTAMP_DIGITS} digits")
    numbers = [task_id] if stream_id is None else [task_id, stream_id]
    if any(number < 0 for number in numbers):
        raise ValueError("task and stream ids must not be negative")
    parts = [safe_type, safe_name, *map(str, numbers), f"{timestamp:0{TIMESTAMP_DIGITS}d}"]
    if ffts is not None:
        if ffts[0] not in FFTS_TASK_TYPES or any(value < 0 for value in ffts):
            raise ValueError(f"FFTS suffix {ffts} needs a task type in 0..4 and no negatives")
        parts += map(str, ffts)
    return ".".join(parts)


def read_mapping_csv(directory: Path) -> tuple[dict[str, str], list[str]]:
    """The `mapping.csv` of a dump dir as {file name on disk: real dump file name}, and warnings.

    Rows are `file_name,real_name` (extra columns are ignored). A missing file gives ({}, []);
    bad rows are skipped with a warning naming the file and line; the first of two rows for the
    same file wins.
    """
    path = Path(directory) / MAPPING_FILE_NAME
    mapping: dict[str, str] = {}
    warnings: list[str] = []
    try:
        text = read_bounded_text(path, MAX_MAPPING_BYTES, errors=TEXT_ERRORS).removeprefix(
            "\ufeff"
        )  # an editor's BOM (QA Q24 #7)
        rows = _numbered_rows(io.StringIO(text, newline=""))
    except FileNotFoundError:
        return {}, []
    except FormatError as err:  # a FIFO, a device, 6 GB: the dir's other files still count
        return {}, [f"{err}; names in it are not resolved"]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        return {}, [f"{path}: cannot read ({err}); names in it are not resolved"]
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        where = f"{path}:{line}"
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            warnings.append(f"{where}: expected 'file_name,real_name', got {','.join(row)!r}")
            continue
        file_name, real_name = row[0].strip(), row[1].strip()
        if "/" in real_name or "\\" in real_name or "\0" in real_name:
            warnings.append(f"{where}: real name {real_name!r} is not a file name")
            continue
        known = mapping.get(file_name)
        if known is not None and known != real_name:
            warnings.append(
                f"{where}: {file_name!r} already maps to {known!r}; ignoring {real_name!r}"
            )
            continue
        mapping[file_name] = real_name
    return mapping, warnings


def _numbered_rows(stream: TextIO) -> list[tuple[int, list[str]]]:
    reader = csv.reader(stream)
    # line_num after reading a row is the line the row ends on; a row starts one line after the
    # previous row ended (quoted cells may span lines).
    rows, start = [], 1
    for row in reader:
        rows.append((start, row))
        start = reader.line_num + 1
    return rows


def write_mapping_csv(directory: Path, mapping: dict[str, str]) -> Path:
    """Add `mapping` to the dir's `mapping.csv` (new rows win over old ones); returns its path.

    Used by our own writers to build fixtures; never run on user data.
    """
    path = Path(directory) / MAPPING_FILE_NAME
    merged, _ = read_mapping_csv(directory)
    merged.update(mapping)
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerows(merged.items())
    return path


def is_statistics_dump_name(file_name: str) -> bool:
    """True for a statistics dump's name (`Type.name.task[.stream].timestamp.csv`)."""
    try:
        return parse_dump_name(file_name).stats_csv
    except ValueError:
        return False
