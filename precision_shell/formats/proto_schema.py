"""Building protobuf schemas at run time from field tables (no protoc, no generated code).

Shared by the dump-file schema (`dump_proto`) and GE's graph schema (`ge_proto`): each keeps
its own private descriptor pool, so nothing is registered in protobuf's default pool.
"""

from __future__ import annotations

from collections.abc import Collection

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

_F = descriptor_pb2.FieldDescriptorProto
SCALAR_TYPES = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64,
    "float": _F.TYPE_FLOAT,
    "bool": _F.TYPE_BOOL,
}


def add_field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    type_name: str,
    repeated: bool,
    *,
    package: str,
    enum_types: Collection[str],
    oneof: int | None = None,
) -> None:
    """Add one field: a scalar, an enum or message of `package` (by name relative to it),
    or `map:X` for map<string, X>."""
    field = message.field.add(name=name, number=number)
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if oneof is not None:
        field.oneof_index = oneof
    if type_name.startswith("map:"):
        # proto3 maps are a repeated nested `<Name>Entry` message flagged map_entry.
        entry_name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
        entry = message.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        add_field(entry, "key", 1, "string", False, package=package, enum_types=enum_types)
        add_field(entry, "value", 2, type_name[4:], False, package=package, enum_types=enum_types)
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{package}.{message.name}.{entry_name}"
        return
    if type_name in SCALAR_TYPES:
        field.type = SCALAR_TYPES[type_name]
        return
    field.type = _F.TYPE_ENUM if type_name in enum_types else _F.TYPE_MESSAGE
    field.type_name = f".{package}.{type_name}"


class Schema:
    """A file descriptor in its own pool, and the message classes made from it."""

    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        self.file_descriptor = self.pool.Add(file)
        self.package = file.package

    def message_class(self, name: str) -> type[Message]:
        return message_factory.GetMessageClass(
            self.pool.FindMessageTypeByName(f"{self.package}.{name}")
        )
