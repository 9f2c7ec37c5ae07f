"""GE's `ge.proto` ModelDef schema (from GE's `ge_ir.proto`), built at run time.

No protoc and no generated code: the descriptors are assembled here with
`descriptor_pb2` in a private pool, so the message classes never clash with any
other `ge.proto` a process may load. Field names and numbers follow `ge_ir.proto`.

Two data-type numberings exist in GE and both are kept here:
`TensorDescriptor.dtype` uses the proto enum `DataType` (`PROTO_DATA_TYPES`), while
`AttrDef.dt` / `ListValue.dt` are plain int64 holding the C++ `ge::DataType` value
(`GE_DATA_TYPES`: DT_FLOAT = 0, DT_FLOAT16 = 1, ...).
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from precision_shell.formats.proto_schema import Schema, add_field

PACKAGE = "ge.proto"

# proto enum ge.proto.DataType (TensorDescriptor.dtype)
PROTO_DATA_TYPES: dict[str, int] = {
    "DT_UNDEFINED": 0,
    "DT_FLOAT": 1,
    "DT_FLOAT16": 2,
    "DT_INT8": 3,
    "DT_UINT8": 4,
    "DT_INT16": 5,
    "DT_UINT16": 6,
    "DT_INT32": 7,
    "DT_INT64": 8,
    "DT_UINT32": 9,
    "DT_UINT64": 10,
    "DT_BOOL": 11,
    "DT_DOUBLE": 12,
    "DT_STRING": 13,
    "DT_DUAL_SUB_INT8": 14,
    "DT_DUAL_SUB_UINT8": 15,
    "DT_COMPLEX64": 16,
    "DT_COMPLEX128": 17,
    "DT_QINT8": 18,
    "DT_QINT16": 19,
    "DT_QINT32": 20,
    "DT_QUINT8": 21,
    "DT_QUINT16": 22,
    "DT_RESOURCE": 23,
    "DT_STRING_REF": 24,
    "DT_DUAL": 25,
    "DT_VARIANT": 26,
    "DT_BF16": 27,
    "DT_INT4": 28,
    "DT_UINT1": 29,
    "DT_INT2": 30,
    "DT_UINT2": 31,
    "DT_COMPLEX32": 32,
    "DT_HIFLOAT8": 33,
    "DT_FLOAT8_E5M2": 34,
    "DT_FLOAT8_E4M3FN": 35,
    "DT_FLOAT8_E8M0": 36,
    "DT_FLOAT6_E3M2": 37,
    "DT_FLOAT6_E2M3": 38,
    "DT_FLOAT4_E2M1": 39,
    "DT_FLOAT4_E1M2": 40,
    "DT_HIFLOAT4": 41,
}

# C++ enum ge::DataType (graph/types.h): what AttrDef.dt and ListValue.dt hold.
GE_DATA_TYPES: dict[str, int] = {
    "DT_FLOAT": 0,
    "DT_FLOAT16": 1,
    "DT_INT8": 2,
    "DT_INT32": 3,
    "DT_UINT8": 4,
    "DT_INT16": 6,
    "DT_UINT16": 7,
    "DT_UINT32": 8,
    "DT_INT64": 9,
    "DT_UINT64": 10,
    "DT_DOUBLE": 11,
    "DT_BOOL": 12,
    "DT_STRING": 13,
    "DT_DUAL_SUB_INT8": 14,
    "DT_DUAL_SUB_UINT8": 15,
    "DT_COMPLEX64": 16,
    "DT_COMPLEX128": 17,
    "DT_QINT8": 18,
    "DT_QINT16": 19,
    "DT_QINT32": 20,
    "DT_QUINT8": 21,
    "DT_QUINT16": 22,
    "DT_RESOURCE": 23,
    "DT_STRING_REF": 24,
    "DT_DUAL": 25,
    "DT_VARIANT": 26,
    "DT_BF16": 27,
    "DT_UNDEFINED": 28,
    "DT_INT4": 29,
    "DT_UINT1": 30,
    "DT_INT2": 31,
    "DT_UINT2": 32,
    "DT_COMPLEX32": 33,
    "DT_HIFLOAT8": 34,
    "DT_FLOAT8_E5M2": 35,
    "DT_FLOAT8_E4M3FN": 36,
    "DT_FLOAT8_E8M0": 37,
    "DT_FLOAT6_E3M2": 38,
    "DT_FLOAT6_E2M3": 39,
    "DT_FLOAT4_E2M1": 40,
    "DT_FLOAT4_E1M2": 41,
    "DT_HIFLOAT4": 42,
}

LIST_VALUE_TYPES: dict[str, int] = {
    "VT_LIST_NONE": 0,
    "VT_LIST_STRING": 1,
    "VT_LIST_INT": 2,
    "VT_LIST_FLOAT": 3,
    "VT_LIST_BOOL": 4,
    "VT_LIST_BYTES": 5,
    "VT_LIST_TENSOR_DESC": 6,
    "VT_LIST_TENSOR": 7,
    "VT_LIST_GRAPH": 8,
    "VT_LIST_NAMED_ATTRS": 9,
    "VT_LIST_DATA_TYPE": 10,
}

# (message, [(field name, number, type, repeated, oneof index or None)]); a type that
# is not a scalar name is a message or enum name relative to the package; "map:X" is
# map<string, X>. Declaration order = field-number order except AttrDef's oneof.
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool, int | None]]]] = [
    ("ModelDef", [
        ("name", 1, "string", False, None),
        ("version", 2, "uint32", False, None),
        ("custom_version", 3, "string", False, None),
        ("graph", 7, "GraphDef", True, None),
        ("attr", 11, "map:AttrDef", True, None),
    ]),
    ("GraphDef", [
        ("name", 1, "string", False, None),
        ("input", 4, "string", True, None),
        ("output", 5, "string", True, None),
        ("op", 6, "OpDef", True, None),
        ("attr", 11, "map:AttrDef", True, None),
    ]),
    ("OpDef", [
        ("name", 1, "string", False, None),
        ("type", 2, "string", False, None),
        ("input", 5, "string", True, None),
        ("attr", 10, "map:AttrDef", True, None),
        ("has_out_attr", 20, "bool", False, None),
        ("id", 21, "int64", False, None),
        ("stream_id", 22, "int64", False, None),
        ("input_name", 23, "string", True, None),
        ("src_name", 24, "string", True, None),
        ("src_index", 25, "int64", True, None),
        ("dst_name", 26, "string", True, None),
        ("dst_index", 27, "int64", True, None),
        ("input_i", 28, "int64", True, None),
        ("output_i", 29, "int64", True, None),
        ("workspace", 30, "int64", True, None),
        ("workspace_bytes", 31, "int64", True, None),
        ("is_input_const", 32, "bool", True, None),
        ("input_desc", 33, "TensorDescriptor", True, None),
        ("output_desc", 34, "TensorDescriptor", True, None),
        ("subgraph_name", 35, "string", True, None),
    ]),
    ("ShapeDef", [("dim", 1, "int64", True, None)]),
    ("TensorDescriptor", [
        ("name", 1, "string", False, None),
        ("dtype", 2, "DataType", False, None),
        ("shape", 3, "ShapeDef", False, None),
        ("layout", 4, "string", False, None),
        ("attr", 5, "map:AttrDef", True, None),
        ("has_out_attr", 9, "bool", False, None),
        ("size", 10, "int64", False, None),
        ("weight_size", 11, "int64", False, None),
        ("reuse_input", 12, "bool", False, None),
        ("output_tensor", 13, "bool", False, None),
        ("device_type", 14, "string", False, None),
        ("input_tensor", 15, "bool", False, None),
        ("real_dim_cnt", 16, "int64", False, None),
        ("reuse_input_index", 17, "int64", False, None),
        ("data_offset", 18, "int64", False, None),
        ("cmps_size", 19, "int64", False, None),
        ("cmps_tab", 20, "string", False, None),
        ("cmps_tab_offset", 21, "int64", False, None),
    ]),
    ("TensorDef", [
        ("desc", 1, "TensorDescriptor", False, None),
        ("data", 2, "bytes", False, None),
    ]),
    ("NamedAttrs", [
        ("name", 1, "string", False, None),
        ("attr", 2, "map:AttrDef", True, None),
    ]),
    ("AttrDef", [
        ("s", 2, "bytes", False, 0),
        ("i", 3, "int64", False, 0),
        ("f", 4, "float", False, 0),
        ("b", 5, "bool", False, 0),
        ("bt", 7, "bytes", False, 0),
        ("list", 1, "AttrDef.ListValue", False, 0),
        ("func", 10, "NamedAttrs", False, 0),
        ("td", 11, "TensorDescriptor", False, 0),
        ("t", 12, "TensorDef", False, 0),
        ("g", 13, "GraphDef", False, 0),
        ("list_list_int", 14, "AttrDef.ListListInt", False, 0),
        ("dt", 15, "int64", False, 0),
        ("list_list_float", 16, "AttrDef.ListListFloat", False, 0),
    ]),
]  # fmt: skip

_ATTR_NESTED: list[tuple[str, list[tuple[str, int, str, bool, int | None]]]] = [
    ("ListValue", [
        ("s", 2, "bytes", True, None),
        ("i", 3, "int64", True, None),
        ("f", 4, "float", True, None),
        ("b", 5, "bool", True, None),
        ("bt", 7, "bytes", True, None),
        ("td", 8, "TensorDescriptor", True, None),
        ("t", 9, "TensorDef", True, None),
        ("g", 10, "GraphDef", True, None),
        ("na", 11, "NamedAttrs", True, None),
        ("dt", 12, "int64", True, None),
        ("val_type", 20, "AttrDef.ListValue.ListValueType", False, None),
    ]),
    ("ListListInt", [("list_list_i", 1, "AttrDef.ListListInt.ListInt", True, None)]),
    ("ListListFloat", [("list_list_f", 1, "AttrDef.ListListFloat.ListFloat", True, None)]),
]  # fmt: skip

_ENUM_TYPES = {"DataType", "AttrDef.ListValue.ListValueType"}


def _add_field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    type_name: str,
    repeated: bool,
    oneof: int | None,
) -> None:
    add_field(
        message,
        name,
        number,
        type_name,
        repeated,
        package=PACKAGE,
        enum_types=_ENUM_TYPES,
        oneof=oneof,
    )


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="precision_shell/ge_ir.proto", package=PACKAGE, syntax="proto3"
    )
    data_type = file.enum_type.add(name="DataType")
    for name, number in PROTO_DATA_TYPES.items():
        data_type.value.add(name=name, number=number)
    for message_name, fields in _MESSAGES:
        message = file.message_type.add(name=message_name)
        if message_name == "AttrDef":
            message.oneof_decl.add(name="value")
            _add_attr_nested(message)
        for spec in fields:
            _add_field(message, *spec)
    return file


def _add_attr_nested(attr_def: descriptor_pb2.DescriptorProto) -> None:
    for nested_name, fields in _ATTR_NESTED:
        nested = attr_def.nested_type.add(name=nested_name)
        for spec in fields:
            _add_field(nested, *spec)
    list_value = attr_def.nested_type[0]
    value_type = list_value.enum_type.add(name="ListValueType")
    for name, number in LIST_VALUE_TYPES.items():
        value_type.value.add(name=name, number=number)
    list_int = attr_def.nested_type[1].nested_type.add(name="ListInt")
    _add_field(list_int, "list_i", 1, "int64", True, None)
    list_float = attr_def.nested_type[2].nested_type.add(name="ListFloat")
    _add_field(list_float, "list_f", 1, "float", True, None)


_SCHEMA = Schema(_build_file())
POOL = _SCHEMA.pool
FILE_DESCRIPTOR = _SCHEMA.file_descriptor
_message_class = _SCHEMA.message_class

ModelDef = _message_class("ModelDef")
GraphDef = _message_class("GraphDef")
OpDef = _message_class("OpDef")
TensorDescriptor = _message_class("TensorDescriptor")
ShapeDef = _message_class("ShapeDef")
TensorDef = _message_class("TensorDef")
NamedAttrs = _message_class("NamedAttrs")
AttrDef = _message_class("AttrDef")

__all__ = [
    "GE_DATA_TYPES",
    "LIST_VALUE_TYPES",
    "PROTO_DATA_TYPES",
    "AttrDef",
    "GraphDef",
    "ModelDef",
    "NamedAttrs",
    "OpDef",
    "ShapeDef",
    "TensorDef",
    "TensorDescriptor",
]
