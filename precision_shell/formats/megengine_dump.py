"""Readers (and the tests' writers) of MegEngine's per-var dumps (docs/FORMATS-OTHER.md part 1).

Two forms, both written by load_and_run / megenginelite's OprIODump plugins:

- `--bin-io-dump DIR`: one file per output var, named by the var id in lowercase hex (at least
  6 digits); with `MGB_DUMP_INPUT` set, `<hex>-inp<i>` holds the i-th input of the op that
  produced var `<hex>`. A file is a 12-byte header (`name_len`, dtype code, `max_ndim`, all
  little-endian u32), `max_ndim` u32 dims (7 in every MegEngine; unused trailing dims 0), the
  ASCII title, then the raw contiguous values. The title names the var, its owner op and
  that op's inputs: it is the graph.
- `--io-dump FILE`: text blocks `varN produced: ...` / ` deps:` / ` val: ... min= max= mean=
  l2= sd= s`, at most 5 values each: the graph and per-var statistics, never exact values.

`MegVar` records are lazy: reading a dir reads headers and titles only, `read_values(var)`
maps the payload. A format is recognised from the files (`detect`), never from a flag.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np

from precision_shell.errors import FormatError
from precision_shell.formats.shapes import MAX_DIMS, shape_problem

KIND_BIN_DIR = "megengine_bin_io_dump"  # a --bin-io-dump directory
KIND_BIN_FILE = "megengine_bin_var"  # one file of such a directory
KIND_TEXT = "megengine_io_dump_text"  # a --io-dump text file

PREFIX = struct.Struct("<III")  # name_len, dtype, max_ndim
MAX_NDIM = 7  # TensorShape::MAX_NDIM, what every MegEngine writes
HEADER_BYTES = PREFIX.size + 4 * MAX_NDIM  # 40
# A title is one var's info plus one per input of its op (~150 bytes each): 4 MiB is ~25,000
# inputs. A larger length field is junk and is refused before anything is allocated.
MAX_TITLE_BYTES = 4 << 20
MAX_DIR_FILES = 1 << 20
MAX_TEXT_BYTES = 256 << 20
MAX_TEXT_LINE = 1 << 20
MAX_ID = 1 << 48

_FILE_NAME = re.compile(r"([0-9a-f]{6,12})(?:-inp([0-9]{1,6}))?")
_INPUT_PREFIX = re.compile(r"inp([0-9]{1,6}): ")
_INPUT_INDEX = re.compile(r"(?:^| )([0-9]{1,6})=(?=\{id:)")
_VAR_HEAD = re.compile(r"\{id:([0-9]{1,15}), (layout|shape):")
_INT = re.compile(r"-?[0-9]{1,15}")


@dataclass(frozen=True)
class MegDType:
    code: int
    name: str
    numpy: str | None  # numpy dtype name of the stored values; None: not decodable
    why: str = ""  # why not, for the error message


def _np(name: str) -> np.dtype:
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name).newbyteorder("<")


# DTypeEnum (dnn/include/megdnn/dtype.h). Quantized types store plain integers; their scale and
# zero point are not in the file.
_LOWBIT = "packed low-bit values are not supported"
DTYPES: dict[int, MegDType] = {
    d.code: d
    for d in (
        MegDType(0, "Float32", "float32"),
        MegDType(1, "Uint8", "uint8"),
        MegDType(2, "Int8", "int8"),
        MegDType(3, "Int16", "int16"),
        MegDType(4, "Int32", "int32"),
        MegDType(5, "IntB1", None, _LOWBIT),
        MegDType(6, "IntB2", None, _LOWBIT),
        MegDType(7, "IntB4", None, _LOWBIT),
        MegDType(8, "Byte", None, "raw Byte storage has no values to compare"),
        MegDType(9, "Float16", "float16"),
        MegDType(10, "UintB4", None, _LOWBIT),
        MegDType(11, "BFloat16", "bfloat16"),
        MegDType(12, "Bool", "bool"),
        MegDType(13, "Uint16", "uint16"),
        MegDType(14, "Complex64", None, "complex values are not supported"),
        MegDType(100000, "Quantized8Asymm", "uint8"),
        MegDType(100001, "QuantizedS32", "int32"),
        MegDType(100002, "QuantizedS8", "int8"),
        MegDType(100003, "Quantized4Asymm", None, _LOWBIT),
        MegDType(100004, "QuantizedS4", None, _LOWBIT),
        MegDType(100005, "QuantizedS16", "int16"),
        MegDType(100006, "QuantizedS1", "int8"),  # one byte a value (MegEngine 1.13.0)
    )
}
DTYPE_CODES = {d.name: d.code for d in DTYPES.values()}


def dtype_name(code: int) -> str:
    known = DTYPES.get(code)
    return known.name if known else f"unknown dtype code {code}"


@dataclass(frozen=True)
class VarInfo:
    """One var as `cg::dump_var_info` prints it: `{id:9, layout:{...}, Float32, owner:add{Elemwise},
    name:add, slot:0, cpu0:0, d, 0, 0}`."""

    id: int
    layout: str  # "{1(18),2(9) Float32}"; "{1,2}" when the var was invalid (`shape:`)
    dtype: str  # dtype name
    owner_name: str
    owner_type: str
    name: str
    slot: int
    comp_node: str = "cpu0:0"
    storage: str = "d"  # s(tatic) or d(ynamic)
    infer_types: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class MegVar:
    """One file of a `--bin-io-dump` dir: a var's header and title; values via `read_values`.

    For a `<hex>-inp<i>` file, `input_index` is i, `consumer_id` is the var id of the file name
    (an output of the op the input feeds) and `info` describes the input var itself.
    """

    path: str
    info: VarInfo
    inputs: tuple[VarInfo, ...]  # the inputs of `info`'s owner op, in input order
    dtype: int  # DTypeEnum code
    shape: tuple[int, ...]
    offset: int  # payload offset in the file
    nbytes: int  # payload bytes
    title: str
    input_index: int | None = None
    consumer_id: int | None = None

    @property
    def var_id(self) -> int:
        return self.info.id

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def op_name(self) -> str:
        return self.info.owner_name

    @property
    def op_type(self) -> str:
        return self.info.owner_type

    @property
    def slot(self) -> int:
        return self.info.slot

    @property
    def input_ids(self) -> tuple[int, ...]:
        return tuple(i.id for i in self.inputs)

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    @property
    def is_input_dump(self) -> bool:
        return self.input_index is not None


@dataclass(frozen=True)
class MegRun:
    """A `--bin-io-dump` directory: vars by id, and the `-inp` dumps by consumer var id."""

    path: str
    vars: Mapping[int, MegVar]
    input_dumps: Mapping[int, tuple[MegVar, ...]]  # consumer var id -> its op's inputs by index
    ignored: tuple[str, ...] = ()  # file names that are not var dumps

    def op_vars(self, op_name: str) -> list[MegVar]:
        """The output vars of the op named `op_name`, by slot."""
        found = [v for v in self.vars.values() if v.op_name == op_name]
        return sorted(found, key=lambda v: (v.slot, v.var_id))

    def op_inputs(self, var_id: int) -> tuple[MegVar, ...]:
        """The dumped inputs of the op that produced `var_id` (any of its outputs' -inp files)."""
        own = self.input_dumps.get(var_id)
        if own:
            return own
        var = self.vars.get(var_id)
        if var is None:
            return ()
        for sibling in self.op_vars(var.op_name):
            if sibling.info.owner_type == var.info.owner_type and self.input_dumps.get(
                sibling.var_id
            ):
                return self.input_dumps[sibling.var_id]
        return ()


# ---------------------------------------------------------------------------- titles


def _closing_brace(text: str, start: int) -> int:
    """Where the `{` at `start` closes (a 4-bit layout nests one: `{2(4),4(1) @ LOWBITS{4,8}
    QuantizedS4}`), or -1. Linear: one find per brace."""
    depth, at = 0, start
    while True:
        close = text.find("}", at)
        if close < 0:
            return -1
        opened = text.find("{", at, close)
        if opened >= 0:
            depth, at = depth + 1, opened + 1
            continue
        depth, at = depth - 1, close + 1
        if depth == 0:
            return close


def _parse_var_info(text: str) -> VarInfo:
    """`{id:..., }` exactly; ValueError saying what is wrong. Linear: finds, no backtracking."""
    head = _VAR_HEAD.match(text)
    if head is None or not text.endswith("}"):
        raise ValueError(f"var info {text[:40]!r} does not start with '{{id:N, layout:'")
    layout_end = _closing_brace(text, head.end())
    if not text.startswith("{", head.end()) or layout_end < 0:
        raise ValueError(f"var {head.group(1)}: no {{...}} layout")
    layout = text[head.end() : layout_end + 1]
    owner_at = text.find(", owner:", layout_end)
    if not text.startswith(", ", layout_end + 1) or owner_at < 0:
        raise ValueError(f"var {head.group(1)}: no owner")
    dtype = text[layout_end + 3 : owner_at]
    name_at = text.find("}, name:", owner_at)
    slot_at = text.rfind(", slot:")
    if name_at < 0 or slot_at < name_at:
        raise ValueError(f"var {head.group(1)}: no 'owner:OP{{Type}}, name:..., slot:'")
    owner = text[owner_at + len(", owner:") : name_at + 1]
    type_at = owner.rfind("{")
    if type_at < 0:
        raise ValueError(f"var {head.group(1)}: owner {owner[:40]!r} has no {{Type}}")
    name = text[name_at + len("}, name:") : slot_at]
    tail = text[slot_at + len(", slot:") : -1].split(", ")
    if not _INT.fullmatch(tail[0]):
        raise ValueError(f"var {head.group(1)}: slot {tail[0][:20]!r} is not a number")
    comp, storage, infer = "", "", (0, 0)
    if len(tail) == 5 and _INT.fullmatch(tail[3]) and _INT.fullmatch(tail[4]):
        comp, storage, infer = tail[1], tail[2], (int(tail[3]), int(tail[4]))
    return VarInfo(
        id=int(head.group(1)),
        layout=layout,
        dtype=dtype,
        owner_name=owner[:type_at],
        owner_type=owner[type_at + 1 : -1],
        name=name,
        slot=int(tail[0]),
        comp_node=comp,
        storage=storage,
        infer_types=infer,
    )


def _parse_inputs(text: str) -> tuple[VarInfo, ...]:
    text = text.strip()
    if not text:
        return ()
    if text.startswith("{id:"):
        return (_parse_var_info(text),)
    marks = list(_INPUT_INDEX.finditer(text))
    if not marks or marks[0].start() != 0:
        raise ValueError(f"owner_opr_inputs {text[:40]!r} is not '0={{id:...}} 1={{id:...}}'")
    infos = []
    for number, mark in enumerate(marks):
        if int(mark.group(1)) != number:
            raise ValueError(f"owner_opr_inputs: input {mark.group(1)} where {number} was due")
        end = marks[number + 1].start() if number + 1 < len(marks) else len(text)
        infos.append(_parse_var_info(text[mark.end() : end]))
    return tuple(infos)


def parse_title(title: str) -> tuple[int | None, VarInfo, tuple[VarInfo, ...]]:
    """(input index of an `inp<i>: ` title or None, the var, its owner op's inputs).

    Raises ValueError naming what is wrong."""
    index = None
    prefix = _INPUT_PREFIX.match(title)
    rest = title
    if prefix is not None:
        index = int(prefix.group(1))
        rest = title[prefix.end() :]
    if not rest.startswith("var="):
        raise ValueError(f"the title {title[:40]!r} does not start with 'var={{id:'")
    split = rest.find(" owner_opr_inputs=")
    if split < 0:
        raise ValueError("the title has no 'owner_opr_inputs='")
    info = _parse_var_info(rest[len("var=") : split])
    return index, info, _parse_inputs(rest[split + len(" owner_opr_inputs=") :])


# ---------------------------------------------------------------------------- binary reader


def _read_head(
    stream: BinaryIO, path: str, file_size: int
) -> tuple[int, int, tuple[int, ...], int, str]:
    if file_size < PREFIX.size:
        raise FormatError(
            path, f"only {file_size} bytes; a MegEngine var dump starts with a 40-byte header"
        )
    name_len, code, max_ndim = PREFIX.unpack(stream.read(PREFIX.size))
    if not 1 <= max_ndim <= MAX_DIMS:
        raise FormatError(
            path,
            f"header says {max_ndim} dims (MegEngine writes {MAX_NDIM}); not a MegEngine var dump",
        )
    header_bytes = PREFIX.size + 4 * max_ndim
    if file_size < header_bytes:
        raise FormatError(path, f"only {file_size} bytes; the header needs {header_bytes}")
    dims = list(struct.unpack(f"<{max_ndim}I", stream.read(4 * max_ndim)))
    if name_len > MAX_TITLE_BYTES:
        raise FormatError(
            path, f"title length {name_len} is more than a title can be ({MAX_TITLE_BYTES} bytes)"
        )
    if header_bytes + name_len > file_size:
        raise FormatError(
            path,
            f"title length {name_len} runs past the end of the file ({file_size} bytes); "
            "the dump is truncated or not a MegEngine var dump",
        )
    raw = stream.read(name_len)
    try:
        title = raw.decode("ascii")
    except UnicodeDecodeError:
        raise FormatError(path, "the title is not ASCII text; not a MegEngine var dump") from None
    if "\n" in title or "\r" in title or "\x00" in title:
        raise FormatError(path, "the title holds control characters; not a MegEngine var dump")
    while dims and dims[-1] == 0:
        dims.pop()
    return code, header_bytes + name_len, tuple(dims), header_bytes, title


def read_var_file(path: str | Path) -> MegVar:
    """Read one `--bin-io-dump` file's header and title (not the values).

    Raises FormatError naming the file for anything that is not a valid var dump, including
    unknown dtype codes and a payload that does not fill the shape.
    """
    name = str(path)
    try:
        with open(path, "rb") as stream:
            file_size = os.fstat(stream.fileno()).st_size
            code, offset, dims, _, title = _read_head(stream, name, file_size)
    except OSError as err:
        raise FormatError(name, f"cannot read: {err.strerror or err}") from None
    try:
        input_index, info, inputs = parse_title(title)
    except ValueError as err:
        raise FormatError(name, f"malformed title: {err}") from None
    known = DTYPES.get(code)
    if known is None:
        raise FormatError(name, f"unknown dtype code {code} (var {info.id})")
    nbytes = file_size - offset
    shape = dims
    if known.numpy is not None:
        itemsize = _np(known.numpy).itemsize
        if nbytes == 0 and math.prod(dims) != 0:
            # A zero dim at the end was stripped with the unused ones: keep the array empty.
            shape = (*dims, 0)
        problem = shape_problem(shape, itemsize)
        if problem is not None:
            raise FormatError(name, f"var {info.id}: {problem}")
        needed = math.prod(shape) * itemsize
        if needed != nbytes:
            raise FormatError(
                name,
                f"var {info.id}: shape {list(shape)} of {known.name} needs {needed} bytes but "
                f"the file holds {nbytes} after the title (MegEngine writes a var's values "
                "contiguous, whatever its layout: the file is truncated or not MegEngine's)",
            )
    stem = Path(name).name
    match = _FILE_NAME.fullmatch(stem)
    consumer = None
    if match is not None:
        file_id = int(match.group(1), 16)
        file_input = None if match.group(2) is None else int(match.group(2))
        if file_input != input_index:
            raise FormatError(
                name, "the file name and the title disagree on whether this is an input dump"
            )
        if file_input is None and file_id != info.id:
            raise FormatError(
                name, f"the file name says var {file_id} but the title says var {info.id}"
            )
        if file_input is not None:
            consumer = file_id
    return MegVar(
        path=name,
        info=info,
        inputs=inputs,
        dtype=code,
        shape=shape,
        offset=offset,
        nbytes=nbytes,
        title=title,
        input_index=input_index,
        consumer_id=consumer,
    )


def read_values(var: MegVar) -> np.ndarray:
    """The values of `var` as stored (quantized types as their integers), shaped."""
    known = DTYPES.get(var.dtype)
    if known is None or known.numpy is None:
        why = known.why if known else "unknown dtype"
        raise FormatError(var.path, f"var {var.var_id}: dtype {var.dtype_name}: {why}")
    dtype = _np(known.numpy)
    count = var.nbytes // dtype.itemsize
    if count != math.prod(var.shape):
        raise FormatError(var.path, f"var {var.var_id}: the payload does not fill the shape")
    try:
        with open(var.path, "rb") as stream:
            if os.fstat(stream.fileno()).st_size != var.offset + var.nbytes:
                raise FormatError(var.path, "the file changed since its header was read")
            stream.seek(var.offset)
            values = np.fromfile(stream, dtype=dtype, count=count)
    except OSError as err:
        raise FormatError(var.path, f"cannot read: {err.strerror or err}") from None
    if values.size != count:
        raise FormatError(var.path, "the file changed since its header was read")
    return values.reshape(var.shape)


def read_bin_io_dump(directory: str | Path) -> MegRun:
    """Every var file of a `--bin-io-dump` directory; `-inp<i>` files grouped by consumer var.

    Other files, and symbolic links (a workspace may come from someone else: a link could
    point anywhere), are listed in `ignored`. Raises FormatError naming the first bad file.
    """
    root = str(directory)
    try:
        names = []
        links = set()
        with os.scandir(directory) as entries:
            for entry in entries:
                names.append(entry.name)
                if entry.is_symlink():
                    links.add(entry.name)
                if len(names) > MAX_DIR_FILES:
                    raise FormatError(root, f"more than {MAX_DIR_FILES} files")
    except OSError as err:
        raise FormatError(root, f"cannot list the directory: {err.strerror or err}") from None
    vars_: dict[int, MegVar] = {}
    inputs: dict[int, dict[int, MegVar]] = {}
    ignored = []
    for file_name in sorted(names):
        path = os.path.join(root, file_name)
        if (
            file_name in links
            or _FILE_NAME.fullmatch(file_name) is None
            or not os.path.isfile(path)
        ):
            ignored.append(file_name)
            continue
        var = read_var_file(path)
        if var.consumer_id is None:
            if var.var_id in vars_:
                raise FormatError(path, f"var {var.var_id} is dumped twice")
            vars_[var.var_id] = var
        else:
            assert var.input_index is not None
            inputs.setdefault(var.consumer_id, {})[var.input_index] = var
    if not vars_ and not inputs:
        raise FormatError(root, "no MegEngine var dump files (named by a 6-digit hex var id)")
    input_dumps = {
        consumer: tuple(by_index[i] for i in sorted(by_index))
        for consumer, by_index in inputs.items()
    }
    return MegRun(root, vars_, input_dumps, tuple(ignored))


# ---------------------------------------------------------------------------- text form


@dataclass(frozen=True)
class TextDep:
    """One ` deps:` line: `[i<k>]var<N>: ...`."""

    var_id: int
    input_index: int | None  # k of `[i<k>]`; None for a dep that is not an input
    kind: str  # "value" | "shape" | "host_value" | "comp_order"
    values: tuple[float, ...] = ()
    truncated: bool = False


@dataclass(frozen=True)
class TextStats:
    min: float
    max: float
    mean: float
    l2: float
    sd: float | None  # None: `sd=N/A` (one element)


@dataclass(frozen=True)
class TextVar:
    """One produced var of a `--io-dump` text file (the last execution's block wins)."""

    var_id: int
    name: str
    layout: str  # "<invalid>" when the var had no valid tensor
    op_name: str
    op_type: str
    op_id: int
    deps: tuple[TextDep, ...] = ()
    values: tuple[float, ...] = ()  # the first values, at most 5 by default
    truncated: bool = False  # the file printed "..." after `values`
    stats: TextStats | None = None
    executions: int = 1

    @property
    def input_ids(self) -> tuple[int, ...]:
        """The op's inputs in input order (deps that are inputs)."""
        ins = sorted((d.input_index, d.var_id) for d in self.deps if d.input_index is not None)
        return tuple(var_id for _, var_id in ins)


@dataclass(frozen=True)
class IoDumpText:
    path: str
    vars: Mapping[int, TextVar]
    lazy: bool = False
    order: tuple[int, ...] = field(default=())  # var ids in first-produced order


_PRODUCED = re.compile(r"var([0-9]{1,15}) produced: name=")
_DEP = re.compile(r"  (?:\[i([0-9]{1,6})\])?var([0-9]{1,15}): ")
_LAZY_OPR = re.compile(r"#[0-9]{1,15}: opr([0-9]{1,15}) ")
_LAZY_VAR = re.compile(r"  var([0-9]{1,15}): name=")
_NUMBER = r"(?:[-+]?(?:[0-9.]+(?:e[-+]?[0-9]+)?|nan|inf|-nan))"
_STATS = re.compile(
    rf"min=({_NUMBER}) max=({_NUMBER}) mean=({_NUMBER}) l2=({_NUMBER}) sd=({_NUMBER}|N/A)$"
)


def _number(text: str) -> float:
    text = text.strip()
    if len(text) > 40:
        raise ValueError(f"{text[:20]!r}... is not a number")
    try:
        return float(text.replace("-nan", "nan"))
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None


def _values(text: str) -> tuple[tuple[float, ...], bool, str]:
    """`[v0, v1, ...]rest` -> (values, truncated, rest)."""
    if not text.startswith("["):
        raise ValueError(f"values {text[:30]!r} do not start with '['")
    end = text.find("]")
    if end < 0:
        raise ValueError("values without a closing ']'")
    items = [t.strip() for t in text[1:end].split(",")] if end > 1 else []
    truncated = bool(items) and items[-1] == "..."
    if truncated:
        items.pop()
    return tuple(_number(t) for t in items), truncated, text[end + 1 :]


def _stats(text: str) -> TextStats:
    match = _STATS.match(text)
    if match is None:
        raise ValueError(f"statistics {text[:60]!r} are not 'min= max= mean= l2= sd='")
    sd = match.group(5)
    low, high, mean, l2 = (_number(match.group(i)) for i in range(1, 5))
    return TextStats(low, high, mean, l2, None if sd == "N/A" else _number(sd))


def _produced(line: str) -> dict[str, Any]:
    head = _PRODUCED.match(line)
    assert head is not None
    rest = line[head.end() :]
    op_at = rest.rfind(" opr")
    owner_at = rest.rfind(" owner_opr=", 0, max(op_at, 0))
    layout_at = rest.rfind(" layout=", 0, max(owner_at, 0))
    if min(op_at, owner_at, layout_at) < 0 or not _INT.fullmatch(rest[op_at + 4 :]):
        raise ValueError("not 'varN produced: name=.. layout=.. owner_opr=OP{Type} oprM'")
    owner = rest[owner_at + len(" owner_opr=") : op_at]
    type_at = owner.rfind("{")
    if type_at < 0 or not owner.endswith("}"):
        raise ValueError(f"owner {owner[:40]!r} is not 'OP{{Type}}'")
    return {
        "var_id": int(head.group(1)),
        "name": rest[:layout_at],
        "layout": rest[layout_at + len(" layout=") : owner_at],
        "op_name": owner[:type_at],
        "op_type": owner[type_at + 1 : -1],
        "op_id": int(rest[op_at + 4 :]),
    }


def _dep(line: str) -> TextDep:
    match = _DEP.match(line)
    if match is None:
        raise ValueError(f"{line[:40]!r} is not a '  [i<k>]var<N>: ...' dep")
    index = None if match.group(1) is None else int(match.group(1))
    rest = _strip_storage(line[match.end() :])
    var_id = int(match.group(2))
    if rest.startswith(" <shape dep"):
        return TextDep(var_id, index, "shape")
    if rest.startswith(" <dev comp order>"):
        return TextDep(var_id, index, "comp_order")
    if rest.startswith(" <host value["):
        values, truncated, _ = _values(rest[len(" <host value[s]> ") :])
        return TextDep(var_id, index, "host_value", values, truncated)
    if rest.startswith("<see lazy value below>") or rest.startswith("<invalid>"):
        return TextDep(var_id, index, "value")
    values, truncated, _ = _values(rest)
    return TextDep(var_id, index, "value", values, truncated)


def _strip_storage(text: str) -> str:
    text = text.rstrip()
    if text.endswith((" s", " d")):
        return text[:-2]
    return text


def parse_io_dump_text(text: str, path: str) -> IoDumpText:
    """A `--io-dump` text; FormatError naming `path` and the line when it is not one."""
    blocks: dict[int, dict[str, Any]] = {}
    order: list[int] = []
    lazy = False
    current: dict[str, Any] | None = None
    recorded = False
    lines = text.split("\n")
    try:
        for number, line in enumerate(lines, start=1):
            where = f"line {number}"
            if len(line) > MAX_TEXT_LINE:
                raise ValueError(f"{where}: longer than {MAX_TEXT_LINE} characters")
            line = line.rstrip("\r")
            try:
                if not line.strip():
                    continue
                if line == "==== begin lazy value recording":
                    lazy = True
                    continue
                if line == "==== recorded values":
                    recorded, current = True, None
                    continue
                if recorded:
                    if _LAZY_OPR.match(line):
                        continue
                    match = _LAZY_VAR.match(line)
                    if match is None:
                        raise ValueError("not '#k: oprN name{Type}' or '  varN: name=...'")
                    block = blocks.get(int(match.group(1)))
                    if block is None:
                        raise ValueError(f"var{match.group(1)} has no 'produced' block")
                    rest = line[match.end() :]
                    value_at = rest.rfind(" [")
                    if value_at < 0:
                        raise ValueError("no values")
                    values, truncated, stats = _values(rest[value_at + 1 :])
                    block.update(values=values, truncated=truncated, stats=_stats(stats))
                    continue
                if _PRODUCED.match(line):
                    current = _produced(line)
                    var_id = current["var_id"]
                    old = blocks.get(var_id)
                    current["executions"] = 1 if old is None else old["executions"] + 1
                    current["deps"] = []
                    if old is None:
                        order.append(var_id)
                    blocks[var_id] = current
                    continue
                if current is None:
                    raise ValueError(f"{line[:40]!r} before any 'varN produced:' line")
                if line == " deps:":
                    continue
                if _DEP.match(line):
                    current["deps"].append(_dep(line))
                    continue
                if line.startswith(" val: "):
                    rest = _strip_storage(line[len(" val: ") :])
                    if rest not in ("<see lazy value below>", "<invalid>"):
                        values, truncated, stats = _values(rest)
                        current.update(values=values, truncated=truncated, stats=_stats(stats))
                    continue
                raise ValueError(f"unexpected line {line[:40]!r}")
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
    except ValueError as err:
        raise FormatError(path, str(err)) from None
    if not blocks:
        raise FormatError(path, "no 'varN produced:' blocks; not a MegEngine --io-dump file")
    vars_ = {}
    for var_id, block in blocks.items():
        block["deps"] = tuple(block["deps"])
        vars_[var_id] = TextVar(**block)
    return IoDumpText(path, vars_, lazy, tuple(order))


def read_io_dump_text(path: str | Path) -> IoDumpText:
    """Read a `--io-dump` text file. Raises FormatError naming the file and the problem."""
    name = str(path)
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > MAX_TEXT_BYTES:
                raise FormatError(name, f"{size} bytes is too large for an --io-dump text file")
            data = stream.read(MAX_TEXT_BYTES + 1)
    except OSError as err:
        raise FormatError(name, f"cannot read: {err.strerror or err}") from None
    if b"\x00" in data:
        raise FormatError(name, "binary data in an --io-dump text file")
    return parse_io_dump_text(data.decode("utf-8", errors="replace"), name)


# ---------------------------------------------------------------------------- detection


def _sniff_file(path: str) -> str | None:
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError:
        return None
    text = head.lstrip(b"\xef\xbb\xbf")
    if text.startswith(b"==== begin lazy value recording") or (
        re.match(rb"var[0-9]{1,15} produced: name=", text) is not None
    ):
        return KIND_TEXT
    if len(head) >= HEADER_BYTES:
        _, code, max_ndim = PREFIX.unpack(head[: PREFIX.size])
        start = PREFIX.size + 4 * max_ndim if 1 <= max_ndim <= MAX_DIMS else -1
        if start > 0 and code in DTYPES:
            title = head[start : start + 16]
            if title.startswith(b"var={id:") or re.match(rb"inp[0-9]{1,6}: var=\{id:", title):
                return KIND_BIN_FILE
    return None


def detect(path: str | Path) -> str | None:
    """What MegEngine dump `path` is, from its contents: KIND_BIN_DIR for a directory holding
    a hex-named var dump, KIND_BIN_FILE for one such file, KIND_TEXT for an --io-dump text
    file; None for anything else (never raises)."""
    name = str(path)
    if os.path.isdir(name):
        try:
            with os.scandir(name) as entries:
                for count, entry in enumerate(entries):
                    if count > 4096:
                        break
                    if (
                        _FILE_NAME.fullmatch(entry.name)
                        and entry.is_file()
                        and _sniff_file(entry.path) == KIND_BIN_FILE
                    ):
                        return KIND_BIN_DIR
        except OSError:
            return None
        return None
    if os.path.isfile(name):
        return _sniff_file(name)
    return None


# ---------------------------------------------------------------------------- writers (tests)


@dataclass(frozen=True)
class VarSpec:
    """One var for `write_bin_io_dump`: values, producer and the producer's input var ids.

    `dtype` is a DTypeEnum code (default: from the values' numpy dtype); `inputs` holds the
    VarInfo of the op's inputs; `input_values` (index -> array) writes `<hex>-inp<i>` files.
    """

    id: int
    values: np.ndarray
    op_name: str
    op_type: str
    name: str = ""
    slot: int = 0
    inputs: tuple[VarInfo, ...] = ()
    dtype: int | None = None
    input_values: Mapping[int, tuple[VarInfo, tuple[VarInfo, ...], np.ndarray]] = field(
        default_factory=dict
    )


_NUMPY_CODES = {"float32": 0, "uint8": 1, "int8": 2, "int16": 3, "int32": 4, "float16": 9}
_NUMPY_CODES |= {"bfloat16": 11, "bool": 12, "uint16": 13}


def layout_text(shape: Sequence[int], dtype: str) -> str:
    """TensorLayout::to_string of a contiguous layout: `{2(3),3(1) Float32}`."""
    strides = []
    step = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    dims = ",".join(f"{d}({s})" for d, s in zip(shape, reversed(strides), strict=True))
    return f"{{{dims} {dtype}}}"


def var_info_text(info: VarInfo) -> str:
    """`cg::dump_var_info` of one var."""
    key = "shape" if not info.layout.endswith(f" {info.dtype}}}") else "layout"
    return (
        f"{{id:{info.id}, {key}:{info.layout}, {info.dtype}, owner:{info.owner_name}"
        f"{{{info.owner_type}}}, name:{info.name}, slot:{info.slot}, {info.comp_node}, "
        f"{info.storage}, {info.infer_types[0]}, {info.infer_types[1]}}}"
    )


def inputs_text(inputs: Sequence[VarInfo]) -> str:
    """`cg::dump_var_info` of an op's inputs: one bare, several as `0={...} 1={...}`."""
    if len(inputs) == 1:
        return var_info_text(inputs[0])
    return " ".join(f"{i}={var_info_text(info)}" for i, info in enumerate(inputs))


def title_text(info: VarInfo, inputs: Sequence[VarInfo], input_index: int | None = None) -> str:
    prefix = "" if input_index is None else f"inp{input_index}: "
    return f"{prefix}var={var_info_text(info)} owner_opr_inputs={inputs_text(inputs)}"


def var_info_of(
    var_id: int,
    values: np.ndarray,
    op_name: str,
    op_type: str,
    name: str = "",
    slot: int = 0,
    dtype: int | None = None,
) -> VarInfo:
    code = _NUMPY_CODES[values.dtype.name] if dtype is None else dtype
    dname = dtype_name(code)
    return VarInfo(
        id=var_id,
        layout=layout_text(values.shape, dname),
        dtype=dname,
        owner_name=op_name,
        owner_type=op_type,
        name=name or op_name,
        slot=slot,
    )


def dump_tensor_bytes(title: str, values: np.ndarray, dtype: int | None = None) -> bytes:
    """`debug::dump_tensor`: header, title, raw little-endian values."""
    code = _NUMPY_CODES[values.dtype.name] if dtype is None else dtype
    if values.ndim > MAX_NDIM:
        raise ValueError(f"MegEngine tensors have at most {MAX_NDIM} dims")
    dims = list(values.shape) + [0] * (MAX_NDIM - values.ndim)
    raw = title.encode("ascii")
    header = PREFIX.pack(len(raw), code, MAX_NDIM) + struct.pack(f"<{MAX_NDIM}I", *dims)
    data = np.ascontiguousarray(values)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    return header + raw + data.tobytes()


def write_bin_io_dump(directory: str | Path, vars: Iterable[VarSpec]) -> list[Path]:
    """Write a `--bin-io-dump` directory as BinaryOprIODump does; returns the files written."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in vars:
        info = var_info_of(
            spec.id, spec.values, spec.op_name, spec.op_type, spec.name, spec.slot, spec.dtype
        )
        path = root / f"{spec.id:06x}"
        path.write_bytes(dump_tensor_bytes(title_text(info, spec.inputs), spec.values, spec.dtype))
        written.append(path)
        for index, (in_info, in_inputs, in_values) in sorted(spec.input_values.items()):
            code = DTYPE_CODES.get(in_info.dtype)
            path = root / f"{spec.id:06x}-inp{index}"
            title = title_text(in_info, in_inputs, index)
            path.write_bytes(dump_tensor_bytes(title, in_values, code))
            written.append(path)
    return written


def _g(value: float, digits: int) -> str:
    """C's `%.<digits>g` (Python's matches except for the nan/inf spellings, which agree)."""
    return f"{value:.{digits}g}"


def values_text(values: np.ndarray, max_size: int = 5) -> str:
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    parts = [_g(float(v), 4) for v in flat[:max_size]]
    if flat.size > max_size:
        parts.append("...")
    return "[" + ", ".join(parts) + "]"


def stats_text(values: np.ndarray) -> str:
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    n = flat.size
    s1, s2 = float(flat.sum()), float((flat * flat).sum())
    text = (
        f"min={_g(float(flat.min()), 3)} max={_g(float(flat.max()), 3)} "
        f"mean={_g(s1 / n, 3)} l2={_g(math.sqrt(s2 / n), 3)}"
    )
    if n > 1:
        return text + f" sd={_g(math.sqrt(max((s2 * n - s1 * s1) / (n * (n - 1)), 0.0)), 3)}"
    return text + " sd=N/A"


@dataclass(frozen=True)
class TextSpec:
    """One produced var for `write_io_dump_text`; `deps` are (input index or None, var id)."""

    id: int
    values: np.ndarray
    op_name: str
    op_type: str
    op_id: int
    name: str = ""
    deps: tuple[tuple[int | None, int], ...] = ()


def write_io_dump_text(
    path: str | Path,
    vars: Sequence[TextSpec],
    values_of: Mapping[int, np.ndarray] | None = None,
    iterations: int = 1,
) -> None:
    """Write a `--io-dump` text file as TextOprIODump does (non-lazy, no addresses), the same
    blocks `iterations` times. `values_of` gives the values printed for each dep var id."""
    known = {spec.id: spec.values for spec in vars} | dict(values_of or {})
    lines = []
    for _ in range(iterations):
        for spec in vars:
            layout = layout_text(
                spec.values.shape, dtype_name(_NUMPY_CODES.get(spec.values.dtype.name, 0))
            )
            lines.append(
                f"var{spec.id} produced: name={spec.name or f'var{spec.id}'} layout={layout} "
                f"owner_opr={spec.op_name}{{{spec.op_type}}} opr{spec.op_id}"
            )
            lines.append(" deps:")
            for index, dep in sorted(spec.deps, key=lambda d: (-1 if d[0] is None else d[0], d[1])):
                mark = "" if index is None else f"[i{index}]"
                lines.append(f"  {mark}var{dep}: {values_text(known[dep])} s")
            lines.append(f" val: {values_text(spec.values)}{stats_text(spec.values)} d")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
