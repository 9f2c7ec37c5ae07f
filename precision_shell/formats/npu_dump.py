"""Reader of NPU dump files (FORMATS.md section 2); the writer is `npu_dump_writer`.

Two layouts exist. "v2": a little-endian u64 header length, a `DumpData` protobuf whose `data`
fields are empty, then the payloads back to back in the order inputs, outputs, buffers,
workspaces. The old "inline" one: the whole file is a `DumpData` with `data` filled in.
Reading a header never touches the payloads; tensors are memory-mapped from the file.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError, Message

from precision_shell.errors import FormatError
from precision_shell.formats import dump_proto
from precision_shell.formats.dtypes import (
    DumpDataType,
    UnsupportedDtype,
    bits_per_value,
    decode_values,
    dtype_name,
    payload_nbytes,
    value_dtype,
)
from precision_shell.formats.layouts import (
    DumpFormat,
    LayoutError,
    format_name,
    is_plain_format,
    to_origin_layout,
)
from precision_shell.formats.payload import read_payload
from precision_shell.formats.shapes import shape_problem

KINDS = ("input", "output", "buffer", "space")
LENGTH_PREFIX = struct.Struct("<Q")  # the v2 layout's header length
# A v2 header holds no tensor data: 64 MiB is ~a million tensors. A larger length is junk,
# and reading it would take that much memory.
MAX_HEADER_BYTES = 64 << 20


@dataclass(frozen=True)
class TensorMeta:
    """One tensor (or raw buffer / workspace) described by a dump header."""

    kind: str  # "input" | "output" | "buffer" | "space"
    index: int
    dtype: int  # DumpDataType code; buffers and workspaces are UINT8 bytes
    format: int  # DumpFormat code
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    size: int  # payload bytes
    offset: int  # absolute byte offset of the payload in the file, -1 when the data is inline
    original_op: tuple[str, int] | None  # (name, output index) of the framework op, outputs only
    original_format: int | None  # layout of the framework op's output, when recorded
    sub_format: int
    address: int

    @property
    def label(self) -> str:
        """How messages name the tensor: "output 0"."""
        return f"{self.kind} {self.index}"

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype)

    @property
    def format_name(self) -> str:
        return format_name(self.format)

    @property
    def element_count(self) -> int:
        """Values in the tensor: the product of `shape`; an empty shape holds size / itemsize.

        Raises UnsupportedDtype for an empty shape of a type without an item size.
        """
        if self.shape:
            return math.prod(self.shape)
        return self.size * 8 // bits_per_value(self.dtype)


@dataclass(frozen=True)
class DumpHeader:
    """Everything a dump file says about its tensors, without their values."""

    path: str
    version: str
    dump_time: int
    op_name: str
    inputs: tuple[TensorMeta, ...]
    outputs: tuple[TensorMeta, ...]
    buffers: tuple[TensorMeta, ...]
    spaces: tuple[TensorMeta, ...]
    attrs: dict[str, str]
    inline: bool
    file_size: int
    trailing_bytes: int  # bytes after the last payload (tolerated; older tools refused them)
    # Payload bytes of inline dumps, keyed by (kind, index).
    _inline_payloads: Mapping[tuple[str, int], bytes] = field(
        default_factory=dict, repr=False, compare=False
    )

    def tensor(self, kind: str, index: int) -> TensorMeta:
        """The tensor `kind` ("input", "output", "buffer", "space") number `index`."""
        if kind not in KINDS:
            raise FormatError(
                self.path, f"unknown tensor kind {kind!r}; use input, output, buffer or space"
            )
        tensors = getattr(self, f"{kind}s")
        if not 0 <= index < len(tensors):
            raise FormatError(
                self.path, f"the dump has no {kind} {index} (it has {len(tensors)} {kind}s)"
            )
        return tensors[index]


def _parse_dump_data(data: bytes) -> tuple[Message | None, str]:
    """(message, "") or (None, why not) for bytes that should be a DumpData."""
    try:
        message = dump_proto.DumpData.FromString(data)
    except DecodeError:
        return None, "is not a valid DumpData protobuf"
    # Arbitrary bytes can parse as unknown fields only; a real header always sets a known one.
    if not message.ListFields():
        return None, "parses to an empty DumpData"
    return message, ""


def _entries(message: Message) -> list[tuple[str, Sequence[Message]]]:
    # Payload order on disk, which is not the proto's field order.
    return [
        ("input", message.input),
        ("output", message.output),
        ("buffer", message.buffer),
        ("space", message.space),
    ]


def _meta(kind: str, index: int, entry: Message, size: int, offset: int) -> TensorMeta:
    if kind in ("buffer", "space"):
        return TensorMeta(
            kind=kind,
            index=index,
            dtype=DumpDataType.UINT8,
            format=DumpFormat.ND,
            shape=(size,),
            original_shape=(),
            size=size,
            offset=offset,
            original_op=None,
            original_format=None,
            sub_format=0,
            address=0,
        )
    original_op, original_format = None, None
    if kind == "output" and entry.HasField("original_op") and entry.original_op.ListFields():
        op = entry.original_op
        original_op = (op.name, op.output_index) if op.name else None
        original_format = op.format
    return TensorMeta(
        kind=kind,
        index=index,
        dtype=entry.data_type,
        format=entry.format,
        shape=tuple(entry.shape.dim),
        original_shape=tuple(entry.original_shape.dim),
        size=size,
        offset=offset,
        original_op=original_op,
        original_format=original_format,
        sub_format=entry.sub_format,
        address=entry.address,
    )


def _header(
    path: str,
    message: Message,
    metas: dict[str, list[TensorMeta]],
    inline: bool,
    file_size: int,
    trailing_bytes: int,
    inline_payloads: dict[tuple[str, int], bytes],
) -> DumpHeader:
    return DumpHeader(
        path=path,
        version=message.version,
        dump_time=message.dump_time,
        op_name=message.op_name,
        inputs=tuple(metas["input"]),
        outputs=tuple(metas["output"]),
        buffers=tuple(metas["buffer"]),
        spaces=tuple(metas["space"]),
        attrs={attr.name: attr.value for attr in message.attr},
        inline=inline,
        file_size=file_size,
        trailing_bytes=trailing_bytes,
        _inline_payloads=inline_payloads,
    )


def _v2_header(path: str, message: Message, header_len: int, file_size: int) -> DumpHeader:
    metas: dict[str, list[TensorMeta]] = {kind: [] for kind in KINDS}
    offset = LENGTH_PREFIX.size + header_len
    for kind, entries in _entries(message):
        for index, entry in enumerate(entries):
            if entry.data:
                raise FormatError(path, f"{kind} {index} has inline data inside a v2 header")
            end = offset + entry.size
            if end > file_size:
                raise FormatError(
                    path,
                    f"{kind} {index} payload ({entry.size} bytes at offset {offset}) runs "
                    f"{end - file_size} bytes past the end of the file ({file_size} bytes); "
                    "the dump is truncated",
                )
            metas[kind].append(_meta(kind, index, entry, entry.size, offset))
            offset = end
    return _header(path, message, metas, False, file_size, file_size - offset, {})


def _inline_header(path: str, message: Message, file_size: int) -> DumpHeader:
    metas: dict[str, list[TensorMeta]] = {kind: [] for kind in KINDS}
    payloads: dict[tuple[str, int], bytes] = {}
    for kind, entries in _entries(message):
        for index, entry in enumerate(entries):
            data = entry.data
            if entry.size and entry.size != len(data):
                raise FormatError(
                    path,
                    f"{kind} {index}: size says {entry.size} bytes but the inline data has "
                    f"{len(data)}",
                )
            metas[kind].append(_meta(kind, index, entry, len(data), -1))
            payloads[(kind, index)] = data
    return _header(path, message, metas, True, file_size, 0, payloads)


def read_dump_header(path: str | Path) -> DumpHeader:
    """The header of an NPU dump file; reads the length prefix and the header, not the payloads.

    Falls back to the old inline layout when the v2 header does not parse. Raises FormatError
    naming the file and the problem for anything that is not a valid dump.
    """
    path_text = str(path)
    prefix_size = LENGTH_PREFIX.size
    try:
        with open(path, "rb") as stream:
            file_size = os.fstat(stream.fileno()).st_size
            if file_size == 0:
                raise FormatError(path_text, "empty file (0 bytes); not an NPU dump")
            if file_size <= prefix_size:
                raise FormatError(
                    path_text,
                    f"only {file_size} bytes; an NPU dump needs an 8-byte header length and "
                    "a header",
                )
            (header_len,) = LENGTH_PREFIX.unpack(stream.read(prefix_size))
            if header_len > file_size - prefix_size:
                v2_problem = (
                    f"the header length {header_len} in the first 8 bytes exceeds the "
                    f"{file_size - prefix_size} bytes after them"
                )
            elif header_len > MAX_HEADER_BYTES:
                v2_problem = (
                    f"the header length {header_len} in the first 8 bytes is more than a dump "
                    f"header can be ({MAX_HEADER_BYTES} bytes)"
                )
            else:
                message, why = _parse_dump_data(stream.read(header_len))
                if message is not None:
                    return _v2_header(path_text, message, header_len, file_size)
                v2_problem = f"the {header_len}-byte header {why}"
            # The whole file is read only once its fields are seen to fill it exactly: a big
            # file of junk is refused after a few bytes.
            inline_problem = dump_proto.whole_file_problem(stream, file_size)
            if inline_problem is None:
                stream.seek(0)
                whole = stream.read()
    except OSError as err:
        raise FormatError(path_text, f"cannot read: {err.strerror or err}") from None
    if inline_problem is not None:
        raise FormatError(
            path_text,
            f"not an NPU dump: {v2_problem}; read as an old inline dump, the whole file is "
            f"not a valid DumpData protobuf ({inline_problem})",
        )
    message, why = _parse_dump_data(whole)
    if message is None:
        raise FormatError(
            path_text,
            f"not an NPU dump: {v2_problem}; read as an old inline dump, the whole file {why}",
        )
    return _inline_header(path_text, message, file_size)


def check_tensor(header: DumpHeader, kind: str, index: int) -> None:
    """What `read_tensor` checks before it reads (a dtype we decode, a shape and a payload size
    that agree: FormatError naming the file and the tensor otherwise), for a caller that needs
    no values: the header reader has already checked that the payload lies inside the file."""
    _readable(header, kind, index)


def _readable(header: DumpHeader, kind: str, index: int) -> tuple[TensorMeta, np.dtype, int, bool]:
    """(meta, value dtype, element count, bit-packed) of a tensor `read_tensor` can read."""
    meta = header.tensor(kind, index)
    try:
        dtype = value_dtype(meta.dtype)
        count = meta.element_count
        needed = payload_nbytes(meta.dtype, count)
    except UnsupportedDtype as err:
        raise FormatError(header.path, f"{meta.label}: {err}") from None
    problem = shape_problem(meta.shape, dtype.itemsize)
    if problem is not None:
        raise FormatError(header.path, f"{meta.label}: {problem}")
    packed = bits_per_value(meta.dtype) < 8
    # Bit-packed payloads may be padded past their last value; whole items may not.
    if meta.size != needed and not (packed and meta.size > needed):
        if meta.shape:
            problem = (
                f"shape {list(meta.shape)} of {meta.dtype_name} needs {needed} bytes but the "
                f"payload has {meta.size}"
            )
        else:
            problem = (
                f"the shape is empty and the {meta.size}-byte payload is not a whole number "
                f"of {dtype.itemsize}-byte {meta.dtype_name} values"
            )
        raise FormatError(header.path, f"{meta.label}: {problem}")
    return meta, dtype, count, packed


def read_tensor(header: DumpHeader, kind: str, index: int) -> np.ndarray:
    """The values of one tensor in its device layout, shaped by the header's `shape`.

    Byte-aligned types are a read-only array of the file's bytes (`payload.read_payload`: read
    when small, memory-mapped when large, empty without opening the file) or a view of the
    inline bytes; UINT1 / INT4 are unpacked into a new array. An empty shape gives a 1-D array
    of size / itemsize values.
    """
    meta, dtype, count, packed = _readable(header, kind, index)
    shape = meta.shape if meta.shape else (count,)
    if meta.offset < 0:
        raw = np.frombuffer(header._inline_payloads[(kind, index)], dtype=np.uint8)
        return decode_values(raw, meta.dtype, count).reshape(shape)
    try:
        if not packed:
            return read_payload(header.path, meta.offset, dtype, shape)
        raw = read_payload(header.path, meta.offset, np.dtype(np.uint8), (meta.size,))
    except (OSError, ValueError) as err:
        raise FormatError(header.path, f"{meta.label}: cannot read the payload ({err})") from None
    return decode_values(raw, meta.dtype, count).reshape(shape)


def read_tensor_converted(
    header: DumpHeader,
    kind: str,
    index: int,
    origin_format: str | None = None,
    origin_shape: Sequence[int] | None = None,
) -> np.ndarray:
    """One tensor converted from its device layout to the original framework layout.

    Defaults: the format recorded in the output's `original_op` and the header's
    `original_shape`. Raises FormatError when the conversion is impossible, with the reason.
    """
    meta = header.tensor(kind, index)
    arr = read_tensor(header, kind, index)
    target_format: str | int
    if origin_format is None:
        if meta.original_format is None and not is_plain_format(meta.format):
            raise FormatError(
                header.path,
                f"{meta.label}: the dump does not record the origin format of this "
                f"{meta.format_name} tensor; give the origin format",
            )
        target_format = meta.format if meta.original_format is None else meta.original_format
    else:
        target_format = origin_format
    if origin_shape is None:
        origin_shape = meta.original_shape or arr.shape
    try:
        return to_origin_layout(arr, meta.format, target_format, origin_shape)
    except LayoutError as err:
        raise FormatError(header.path, f"{meta.label}: {err}") from None
