"""Benchmark ("benchmark") tensors: `.npy` files harvested from a TensorFlow run.

Owns the file-name rule (`{op}.{output_index}.{timestamp}.npy`, FORMATS.md section 4),
the lookup key of an origin `(name, k)`, the directory index (newest timestamp wins,
long names resolved through `mapping.csv`), a safe loader and a writer.

Name parsing: TF writes `{tensor name with '/'->'_' and ':'->'.'}.{ts}.npy`, so a `.`
in the op part survives (TF node names may contain dots). A name is therefore read from
the right: the last two dot-separated fields before `.npy` are the output index and the
timestamp, everything before them is the op. The lookup key also replaces those dots by
`_`, exactly as `benchmark_key` does for the origin name.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from precision_shell.errors import FormatError
from precision_shell.file_name_text import TEXT_ERRORS
from precision_shell.formats.bounded_read import read_bounded_text
from precision_shell.formats.dir_entries import list_dir, odd_entry_warnings
from precision_shell.formats.dump_names import MAX_MAPPING_BYTES
from precision_shell.formats.payload import read_payload
from precision_shell.formats.shapes import shape_problem, shape_text

MAPPING_FILE_NAME = "mapping.csv"
# left in a benchmark dir by a harvest into it that did not finish (Ctrl-C, SIGTERM, a kill):
# its tensors may mix that run's with an earlier harvest's; a whole harvest removes it
HARVEST_CUT_NAME = ".harvest_cut_short"

_NPY_MAGIC = b"\x93NUMPY"
_TENSOR_NAME = re.compile(r"^(?P<op>.+):(?P<slot>\d+)$")
_KEY_UNSAFE = str.maketrans({"/": "_", ".": "_", ":": "_"})
# The header of a .npy file is a Python dict literal; larger ones are not numpy's.
_MAX_HEADER_LEN = 1 << 16
# The header numpy itself writes, `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`
# padded with spaces and a newline: parsed directly (vc reads one per benchmark tensor, and
# ast.literal_eval was ~4% of a compare); any other spelling goes through literal_eval.
_NUMPY_HEADER = re.compile(
    r"\{'descr': '([<>|=]?[a-zA-Z][0-9]{0,4})', 'fortran_order': (True|False), "
    r"'shape': \((|[0-9]{1,19},|[0-9]{1,19}(?:, [0-9]{1,19}){1,31})\), \} *\n?"
)


_V = TypeVar("_V")


def benchmark_key(origin_name: str, output_index: int) -> str:
    """The lookup key of output `output_index` of benchmark op `origin_name`."""
    return f"{origin_name.translate(_KEY_UNSAFE)}.{output_index}"


def tensor_file_stem(tensor_name: str) -> str:
    """`"dense/BiasAdd:0"` -> `"dense_BiasAdd.0"`: the file-name stem TF dumps use."""
    match = _TENSOR_NAME.match(tensor_name)
    if match is None:
        raise ValueError(f"tensor name {tensor_name!r} is not of the form 'op:slot'")
    stem = f"{match['op'].replace('/', '_')}.{match['slot']}"
    # The stem becomes a file name: it must never name another directory.
    if os.sep in stem or (os.altsep and os.altsep in stem) or "\0" in stem:
        raise ValueError(f"tensor name {tensor_name!r} cannot be used as a file name")
    return stem


@dataclass(frozen=True, slots=True)
class BenchmarkFile:
    """One benchmark tensor file and what its name says."""

    path: str
    key: str
    op_name: str  # sanitized: '/', '.', ':' replaced by '_'
    output_index: int
    timestamp: int


def _split_benchmark_name(file_name: str) -> tuple[str, str, str] | None:
    """`{op}.{k}.{ts}.npy` -> (op, k, ts) as written, or None when the name does not fit."""
    parts = file_name.rsplit(".", 3)
    if len(parts) != 4 or parts[3] != "npy":
        return None
    op, index, timestamp, _ = parts
    # isascii: int() would accept other Unicode digits, which no tool writes.
    if not (op and index.isdigit() and timestamp.isdigit() and (index + timestamp).isascii()):
        return None
    return op, index, timestamp


def _sanitize(op: str) -> str:
    return op.replace("/", "_").replace(".", "_").replace(":", "_")


def parse_benchmark_name(file_name: str, path: str | None = None) -> BenchmarkFile | None:
    """Parse `{op}.{k}.{ts}.npy`; None for a name not ending in `.npy`.

    Raises ValueError for a `.npy` name that does not follow the rule. `path` (default:
    `file_name`) is stored in the result.
    """
    if not file_name.endswith(".npy"):
        return None
    parsed = _split_benchmark_name(file_name)
    if parsed is None:
        raise ValueError(
            f"{file_name!r} does not follow '{{op}}.{{output_index}}.{{timestamp}}.npy'"
        )
    op, index, timestamp = parsed
    op_name = _sanitize(op)
    output_index = int(index)
    return BenchmarkFile(
        path=file_name if path is None else path,
        key=f"{op_name}.{output_index}",
        op_name=op_name,
        output_index=output_index,
        timestamp=int(timestamp),
    )


# TensorFlow feeds a placeholder through a node it names `_arg_<node>_<slot>_<feed number>`
# (graph rewriting for a session's feeds), and tfdbg dumps the fed value under that name
_FED = re.compile(r"_arg_(.+)_(\d+)_\d+\.0")


def fed_aliases(files_by_key: Mapping[str, object]) -> dict[str, str]:
    """Key of a fed placeholder's output (`x.0`) -> the key of its `_arg_x_0_0` file, for each
    placeholder whose own name has no file: what a session's feed was, is its value."""
    aliases: dict[str, str] = {}
    for key in files_by_key:
        if not key.startswith("_arg_"):
            continue
        fed = _FED.fullmatch(key)
        if fed is not None:
            alias = f"{fed.group(1)}.{int(fed.group(2))}"
            if alias not in files_by_key:
                aliases.setdefault(alias, key)
    return aliases


class _BenchmarkFiles:
    """What a scan keeps: key -> (timestamp, name on disk) oldest first, and `mapping.csv`.

    BenchmarkFile objects are built only when asked for: indexing 100k files then costs one
    string split per file, not one object.
    """

    def __init__(
        self,
        directory: str,
        files_by_key: dict[str, list[tuple[int, str]]],
        mapping: dict[str, str],
    ) -> None:
        self.directory = directory
        self.files_by_key = files_by_key
        self.mapping = mapping
        self.aliases = fed_aliases(files_by_key)
        # the files `mapping.csv` names with the op as TF wrote it (`a/b` beside `a_b`, whose
        # keys meet): op.slot -> (timestamp, name on disk) oldest first; and those of them
        # no other op may take (their op name is not the key's spelling)
        self.exact: dict[str, list[tuple[int, str]]] = {}
        self.claimed: set[str] = set()
        if mapping:
            self._index_real_names()

    def _index_real_names(self) -> None:
        for entries in self.files_by_key.values():
            for timestamp, disk_name in entries:
                real = self.mapping.get(disk_name)
                parsed = _split_benchmark_name(real) if real is not None else None
                if parsed is None:
                    continue
                op, index, _ = parsed
                self.exact.setdefault(f"{op}.{int(index)}", []).append((timestamp, disk_name))
                if _sanitize(op) != op:
                    self.claimed.add(disk_name)
        for same in self.exact.values():
            same.sort()

    def real_key(self, key: str) -> str:
        """`key`, or the key of the fed placeholder's file it names (`fed_aliases`)."""
        return key if key in self.files_by_key else self.aliases.get(key, key)

    def lookup(self, origin_name: str, output_index: int) -> BenchmarkFile | None:
        """The newest file of benchmark op `origin_name`'s output `output_index`: of those
        `mapping.csv` names with this very op when there are any, else of its key's files but
        those it names with another op (QA: `dup/x`, `dup_x` and `dup.x` share the key
        `dup_x.0`, and all three read the newest one's tensor)."""
        exact = self.exact.get(f"{origin_name}.{output_index}")
        if exact:
            return self.build(exact[-1][1])
        entries = self.files_by_key.get(self.real_key(benchmark_key(origin_name, output_index)))
        free = [name for _, name in entries or () if name not in self.claimed]
        return self.build(free[-1]) if free else None

    def build(self, disk_name: str) -> BenchmarkFile:
        """The BenchmarkFile of a stored name (its real name when `mapping.csv` lists it)."""
        real_name = self.mapping.get(disk_name, disk_name)
        benchmark = parse_benchmark_name(real_name, os.path.join(self.directory, disk_name))
        if benchmark is None:  # never: only `.npy` names are stored
            raise KeyError(disk_name)
        return benchmark


class _ByKeyView(Mapping[str, _V]):
    """A read-only key -> value view over the scanned names; values built on first access."""

    def __init__(self, files: _BenchmarkFiles) -> None:
        self._files = files
        self._built: dict[str, _V] = {}

    def _build(self, key: str) -> _V:
        raise NotImplementedError

    def __getitem__(self, key: str) -> _V:
        key = self._files.real_key(key)
        value = self._built.get(key)
        if value is None:
            value = self._built[key] = self._build(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._files.files_by_key or key in self._files.aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self._files.files_by_key)

    def __len__(self) -> int:
        return len(self._files.files_by_key)


class _NewestByKey(_ByKeyView[BenchmarkFile]):
    """key -> the file with the largest timestamp."""

    def _build(self, key: str) -> BenchmarkFile:
        return self._files.build(self._files.files_by_key[key][-1][1])


class _AllByKey(_ByKeyView[list[BenchmarkFile]]):
    """key -> every file of that key, oldest first."""

    def _build(self, key: str) -> list[BenchmarkFile]:
        return [self._files.build(name) for _, name in self._files.files_by_key[key]]


class BenchmarkIndex:
    """The benchmark tensors of one directory, by lookup key.

    `newest`: key -> file with the largest timestamp; `all`: key -> files sorted by
    timestamp; `warnings`: odd names, each naming the file. Both maps are read-only.
    """

    def __init__(self, files: _BenchmarkFiles, warnings: list[str]) -> None:
        self.directory = files.directory
        self.newest: Mapping[str, BenchmarkFile] = _NewestByKey(files)
        self.all: Mapping[str, list[BenchmarkFile]] = _AllByKey(files)
        self.warnings = warnings
        self._files = files

    def lookup(self, origin_name: str, output_index: int) -> BenchmarkFile | None:
        """The benchmark file of origin `(origin_name, output_index)`, or None: the newest of
        its key, but for ops whose names meet in one key (`_BenchmarkFiles.lookup`)."""
        return self._files.lookup(origin_name, output_index)

    def __len__(self) -> int:
        return len(self.newest)

    def __repr__(self) -> str:
        return (
            f"BenchmarkIndex({self.directory!r}, {len(self)} keys, {len(self.warnings)} warnings)"
        )


def read_mapping_csv(path: Path) -> tuple[dict[str, str], list[str]]:
    """Rows `file,real name` of a `mapping.csv` -> ({file: real name}, warnings)."""
    mapping: dict[str, str] = {}
    warnings: list[str] = []
    try:
        text = read_bounded_text(path, MAX_MAPPING_BYTES, errors=TEXT_ERRORS).removeprefix(
            "\ufeff"
        )  # an editor's BOM (QA Q24 #7)
        for line_number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                warnings.append(f"{path}: line {line_number}: expected 'file,real name'")
                continue
            # the last row of a file wins: our harvest appends (a re-harvest's row is last)
            mapping[row[0].strip()] = ",".join(row[1:]).strip()
    except FormatError as error:  # a FIFO, a device, 6 GB: the dir's tensors still count
        warnings.append(f"{error}; names in it are not resolved")
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        warnings.append(f"{path}: cannot read: {error}")
    return mapping, warnings


def _odd_name_warning(directory: Path, disk_name: str, name: str) -> str:
    shown = disk_name if name == disk_name else f"{disk_name} (mapped to {name})"
    return (
        f"{directory / shown}: not a benchmark tensor name "
        "'{op}.{output_index}.{timestamp}.npy'; skipped"
    )


# in the index cache's fingerprint: 2 warns of dirs and dangling links named like a tensor,
# 3 of links to a file not named `.npy`, 4 but not of links into a content-addressed store,
# 5 a fed placeholder's `_arg_*` file answers for the placeholder
BENCHMARK_INDEX_VERSION = 5


def _npy_named(name: str) -> bool:
    return name.endswith(".npy")


def scan_benchmark_dir(directory: Path) -> BenchmarkIndex:
    """Index the `.npy` benchmark tensors directly inside `directory`.

    Files listed in `mapping.csv` are indexed under their real name (nothing is
    renamed). Odd `.npy` names become warnings; other files are ignored.
    """
    directory = Path(directory)
    warnings: list[str] = []
    try:
        # a link to a file not named .npy (`x.0.1.npy -> /etc/passwd`) is no tensor of ours,
        # unless it is a content-addressed store's object (DVC's cache: named by its hash)
        disk_names, others = list_dir(directory, _npy_named, "benchmark tensor (.npy)")
    except OSError as error:
        raise FormatError(directory, f"cannot list benchmark directory: {error.strerror}") from None

    mapping: dict[str, str] = {}
    # one that is no regular file (a FIFO, a link to a device) is read to say so, safely
    if MAPPING_FILE_NAME in disk_names or any(name == MAPPING_FILE_NAME for name, _ in others):
        mapping, warnings = read_mapping_csv(directory / MAPPING_FILE_NAME)
    if HARVEST_CUT_NAME in disk_names:
        warnings.append(
            f"{directory}: a harvest into it was cut short ({HARVEST_CUT_NAME}): its tensors may "
            "mix that run's with an earlier one's; harvest the run again whole"
        )
    # a dir or a dangling symlink named like a tensor is not skipped silently; other dirs
    # (tf_dump --all's run dirs) are no entries of this dir
    warnings += odd_entry_warnings(
        directory, others, lambda name: mapping.get(name, name).endswith(".npy")
    )

    files_by_key: dict[str, list[tuple[int, str]]] = {}
    # The hot loop of a 100k-file directory: inlined split, one tuple per file, no objects.
    for disk_name in disk_names:
        name = mapping.get(disk_name, disk_name) if mapping else disk_name
        parts = name.rsplit(".", 3)
        if len(parts) != 4 or parts[3] != "npy":
            if name.endswith(".npy") or name != disk_name:  # a mapped name is meant as one
                warnings.append(_odd_name_warning(directory, disk_name, name))
            continue
        op, index, timestamp, _ = parts
        if not (op and index.isdigit() and timestamp.isdigit() and (index + timestamp).isascii()):
            warnings.append(_odd_name_warning(directory, disk_name, name))
            continue
        if len(index) > 1 and index[0] == "0":
            index = str(int(index))
        key = op.replace("/", "_").replace(".", "_").replace(":", "_") + "." + index
        same_key = files_by_key.get(key)
        if same_key is None:
            files_by_key[key] = [(int(timestamp), disk_name)]
        else:
            same_key.append((int(timestamp), disk_name))

    for key, same_key in files_by_key.items():
        if len(same_key) > 1:
            same_key.sort()
            if same_key[-1][0] == same_key[-2][0]:
                warnings.append(
                    f"{directory / same_key[-1][1]}: same key {key!r} and timestamp as "
                    f"{same_key[-2][1]}; using {same_key[-1][1]}"
                )
    return BenchmarkIndex(_BenchmarkFiles(str(directory), files_by_key, mapping), warnings)


@dataclass(frozen=True)
class NpyHeader:
    """What the header of a `.npy` file declares."""

    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    data_offset: int

    @property
    def data_bytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def _header_fields(text: str) -> tuple[Any, Any, Any]:
    """(descr, fortran_order, shape) of a `.npy` header dict's text; ValueError/SyntaxError
    (and the rest literal_eval raises) when it is not one."""
    fast = _NUMPY_HEADER.fullmatch(text)
    if fast is not None:
        dims = fast.group(3).rstrip(",")
        shape = tuple(int(d) for d in dims.split(", ")) if dims else ()
        return fast.group(1), fast.group(2) == "True", shape
    header = ast.literal_eval(text)
    return header["descr"], header["fortran_order"], header["shape"]


class PickledTensor(FormatError):
    """A `.npy` of Python objects (what numpy saves for strings, or TensorFlow's resource
    handles): no tensor of numbers, and never unpickled."""


def read_npy_header(path: str | Path) -> NpyHeader:
    """Parse and check the header of a `.npy` file without loading its data."""
    try:
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8 or prefix[:6] != _NPY_MAGIC:
                if prefix[:2] == b"PK":
                    raise FormatError(path, "is a zip (.npz) archive, not a .npy tensor")
                raise FormatError(path, "not a .npy file (no \\x93NUMPY magic)")
            major = prefix[6]
            if major not in (1, 2, 3):
                raise FormatError(path, f"unsupported .npy format version {major}.{prefix[7]}")
            length_size = 2 if major == 1 else 4
            length_bytes = handle.read(length_size)
            if len(length_bytes) < length_size:
                raise FormatError(path, "truncated .npy header")
            header_len = int.from_bytes(length_bytes, "little")
            if header_len > _MAX_HEADER_LEN:
                raise FormatError(path, f".npy header of {header_len} bytes is implausibly large")
            header_bytes = handle.read(header_len)
            file_size = os.fstat(handle.fileno()).st_size
    except OSError as error:
        raise FormatError(path, f"cannot read: {error.strerror}") from None
    if len(header_bytes) < header_len:
        raise FormatError(path, "truncated .npy header")
    try:
        text = header_bytes.decode("utf-8" if major == 3 else "latin1")
        descr, fortran_order, shape = _header_fields(text)
        dtype = np.lib.format.descr_to_dtype(descr)
        # bool is an int to isinstance; numpy takes True as a dim, no writer does.
        if not isinstance(shape, tuple) or not all(type(dim) is int for dim in shape):
            raise ValueError(f"bad shape {shape!r}")
    except (ValueError, SyntaxError, TypeError, KeyError, MemoryError, RecursionError) as error:
        # RecursionError: a header of deeply nested brackets
        raise FormatError(path, f"unreadable .npy header: {error}") from None
    if dtype.hasobject:
        raise PickledTensor(
            path, "holds Python objects (pickled data); refusing to load it (allow_pickle=False)"
        )
    if dtype.names is not None:
        # numpy's own cast error names the dtype too, but inside a long TypeError
        raise FormatError(
            path,
            f"a structured dtype with fields {', '.join(dtype.names)} ({dtype}), not a tensor of "
            "numbers; save one field (e.g. array['name']) as the benchmark",
        )
    if dtype.itemsize == 0:
        # Zero-byte items hold no values; any shape "fits" in no data, even 2**62 items.
        raise FormatError(path, f"dtype {dtype} has zero-byte items; not a tensor")
    problem = shape_problem(shape, dtype.itemsize)
    if problem is not None:
        raise FormatError(path, f"unreadable .npy header: {problem}")
    npy_header = NpyHeader(dtype, shape, bool(fortran_order), 8 + length_size + header_len)
    available = file_size - npy_header.data_offset
    if available < npy_header.data_bytes:
        raise FormatError(
            path,
            f"truncated: shape {shape_text(shape)} {dtype} needs {npy_header.data_bytes} data bytes, "
            f"file has {max(available, 0)}",
        )
    return npy_header


def load_benchmark(path: str | Path, mmap: bool = True) -> np.ndarray:
    """Load a benchmark tensor, never unpickling: read-only (`payload.read_payload`: read when
    small, memory-mapped when large) by default, or a private writable copy (mmap=False).
    The header read_npy_header checked is the one used: numpy does not parse it again."""
    header = read_npy_header(path)
    try:
        values = read_payload(
            path,
            header.data_offset,
            header.dtype,
            header.shape,
            order="F" if header.fortran_order else "C",
        )
    except (ValueError, OSError) as error:
        raise FormatError(path, f"cannot load .npy data: {error}") from None
    if values.dtype.kind == "c":
        values = real_part(path, values, "save the real part or the magnitude as the benchmark")
    return values if mmap else np.array(values, order="K")


def real_part(path: str | Path, values: np.ndarray, fix: str) -> np.ndarray:
    """A complex tensor with no imaginary part is its real part (nothing lost); one with an
    imaginary part is refused in one line saying `fix`: every compare here is of real values,
    and numpy would drop the imaginary part with only a ComplexWarning on stderr (QA: a
    device tensor of real part + 5j passed as equal to its real part). Real values as they
    are."""
    if values.dtype.kind != "c":
        return values
    if np.any(values.imag):
        raise FormatError(
            path,
            f"{values.dtype} values with a non-zero imaginary part; compares are of real "
            f"tensors ({fix})",
        )
    return values.real


def write_benchmark(directory: Path, tensor_name: str, array: np.ndarray, timestamp: int) -> Path:
    """Write `array` as the benchmark tensor `tensor_name`; never overwrites a file."""
    if timestamp < 0:
        raise ValueError(f"timestamp must be >= 0, got {timestamp}")
    path = Path(directory) / f"{tensor_file_stem(tensor_name)}.{timestamp}.npy"
    array = np.asarray(array)
    if array.dtype.hasobject:
        raise ValueError(f"{tensor_name}: object arrays cannot be written as benchmark tensors")
    with open(path, "xb") as handle:
        np.save(handle, array, allow_pickle=False)
    return path
