"""The `toolkit.dumpdata` protobuf schema of NPU dump headers, built at import time.

The schema (FORMATS.md section 2) is assembled as a FileDescriptorProto in a private descriptor
pool, so no protoc run and no generated module are needed, and nothing is registered in the
process-wide default pool (where another copy of `dump_data.proto` could clash with it).
Enum fields are open (proto3): codes this schema does not list still come through as ints.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from google.protobuf import descriptor_pb2

from precision_shell.formats.dtypes import DumpDataType
from precision_shell.formats.layouts import DumpFormat
from precision_shell.formats.proto_schema import Schema, add_field

PACKAGE = "toolkit.dumpdata"

# (message, [(field name, number, type, repeated)]); a type that is not a scalar names an enum
# (ending in "Type", "Format") or a message of this package.
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool]]]] = [
    (
        "OriginalOp",
        [
            ("name", 1, "string", False),
            ("output_index", 2, "uint32", False),
            ("data_type", 3, "OutputDataType", False),
            ("format", 4, "OutputFormat", False),
        ],
    ),
    ("Shape", [("dim", 1, "uint64", True)]),
    (
        "OpOutput",
        [
            ("data_type", 1, "OutputDataType", False),
            ("format", 2, "OutputFormat", False),
            ("shape", 3, "Shape", False),
            ("original_op", 4, "OriginalOp", False),
            ("data", 5, "bytes", False),
            ("size", 6, "uint64", False),
            ("original_shape", 7, "Shape", False),
            ("sub_format", 8, "int32", False),
            ("address", 9, "uint64", False),
        ],
    ),
    (
        "OpInput",
        [
            ("data_type", 1, "OutputDataType", False),
            ("format", 2, "OutputFormat", False),
            ("shape", 3, "Shape", False),
            ("data", 4, "bytes", False),
            ("size", 5, "uint64", False),
            ("original_shape", 6, "Shape", False),
            ("sub_format", 7, "int32", False),
            ("address", 8, "uint64", False),
        ],
    ),
    (
        "OpBuffer",
        [
            ("buffer_type", 1, "BufferType", False),
            ("data", 2, "bytes", False),
            ("size", 3, "uint64", False),
        ],
    ),
    ("OpAttr", [("name", 1, "string", False), ("value", 2, "string", False)]),
    (
        "Workspace",
        [
            ("type", 1, "Workspace.SpaceType", False),
            ("data", 2, "bytes", False),
            ("size", 3, "uint64", False),
        ],
    ),
    (
        "DumpData",
        [
            ("version", 1, "string", False),
            ("dump_time", 2, "uint64", False),
            ("output", 3, "OpOutput", True),
            ("input", 4, "OpInput", True),
            ("buffer", 5, "OpBuffer", True),
            ("op_name", 6, "string", False),
            ("attr", 7, "OpAttr", True),
            ("space", 8, "Workspace", True),
        ],
    ),
]

_ENUM_NAMES = {"OutputDataType", "OutputFormat", "BufferType", "Workspace.SpaceType"}


def _add_enum(
    enum: descriptor_pb2.EnumDescriptorProto, name: str, values: list[tuple[str, int]]
) -> None:
    enum.name = name
    for value_name, number in values:
        enum.value.add(name=value_name, number=number)


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="precision_shell/dump_data.proto", package=PACKAGE, syntax="proto3"
    )
    _add_enum(
        proto.enum_type.add(),
        "OutputDataType",
        [(f"DT_{member.name}", int(member)) for member in DumpDataType],
    )
    _add_enum(
        proto.enum_type.add(),
        "OutputFormat",
        [(f"FORMAT_{member.name}", int(member)) for member in DumpFormat],
    )
    _add_enum(proto.enum_type.add(), "BufferType", [("L1", 0)])
    for message_name, fields in _MESSAGES:
        message = proto.message_type.add(name=message_name)
        if message_name == "Workspace":
            _add_enum(message.enum_type.add(), "SpaceType", [("LOG", 0)])
        for field_name, number, type_name, repeated in fields:
            add_field(
                message,
                field_name,
                number,
                type_name,
                repeated,
                package=PACKAGE,
                enum_types=_ENUM_NAMES,
            )
    return proto


_SCHEMA = Schema(_build_file())
_message_class = _SCHEMA.message_class

DumpData = _message_class("DumpData")
OpOutput = _message_class("OpOutput")
OpInput = _message_class("OpInput")
OriginalOp = _message_class("OriginalOp")
Shape = _message_class("Shape")
OpBuffer = _message_class("OpBuffer")
OpAttr = _message_class("OpAttr")
Workspace = _message_class("Workspace")


# --- checking a whole-file DumpData before reading it -----------------------------------------

_VARINT, _LENGTH_DELIMITED = 0, 2
_LENGTH_DELIMITED_TYPES = {
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
}
# Field number -> wire type of every DumpData field.
_DUMP_DATA_WIRE_TYPES = {
    field.number: _LENGTH_DELIMITED if field.type in _LENGTH_DELIMITED_TYPES else _VARINT
    for field in DumpData.DESCRIPTOR.fields
}
# More top-level fields than any dump has tensors and attributes; bounds the walk's time.
MAX_TOP_LEVEL_FIELDS = 1 << 20
_MAX_VARINT_BYTES = 10


def _read_varint(stream: BinaryIO) -> tuple[int, int] | None:
    """(value, bytes read) of the varint at the stream position, or None if none ends there."""
    value = 0
    for count in range(_MAX_VARINT_BYTES):
        byte = stream.read(1)
        if not byte:
            return None
        value |= (byte[0] & 0x7F) << (7 * count)
        if byte[0] < 0x80:
            return value, count + 1
    return None


def whole_file_problem(stream: BinaryIO, size: int) -> str | None:
    """Why the `size` bytes from the start of `stream` are not one whole DumpData, or None.

    Reads only the top-level field keys and lengths and seeks over the field values, so a
    huge file of junk is refused after a few bytes, never read into memory. Accepts only
    DumpData's own fields with their wire types, laid end to end up to exactly `size`.
    """
    stream.seek(0)
    position = 0
    fields = 0
    while position < size:
        fields += 1
        if fields > MAX_TOP_LEVEL_FIELDS:
            return f"more than {MAX_TOP_LEVEL_FIELDS} top-level fields"
        key = _read_varint(stream)
        if key is None:
            return f"no field key at byte {position}"
        number, wire_type = key[0] >> 3, key[0] & 7
        if _DUMP_DATA_WIRE_TYPES.get(number) != wire_type:
            return f"byte {position} holds field {number} of wire type {wire_type}, not a DumpData field"
        position += key[1]
        value = _read_varint(stream)
        if value is None:
            return f"field {number} at byte {position} has no valid varint"
        position += value[1]
        if wire_type == _LENGTH_DELIMITED:
            if value[0] > size - position:
                return (
                    f"field {number} at byte {position} declares {value[0]} bytes; "
                    f"only {size - position} follow"
                )
            stream.seek(value[0], io.SEEK_CUR)
            position += value[0]
    return None
