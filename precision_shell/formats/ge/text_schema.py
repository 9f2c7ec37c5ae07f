"""The schema and value spellings behind the GE text parser (`ge_text`).

A `MessageSpec` per `ge.proto` message, derived once from the `ge_proto` descriptors:
each field's kind (text, bytes, int, enum, float, bool, message, map), whether it
repeats, and how a message's collected values become our model value (`finish`).
Also the scalar readers the fast path uses on the plainest spellings; they return
`MISSING` for anything else, which then goes to the token path (`ge_text_tokens`).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from typing import Any

from google.protobuf import text_encoding
from google.protobuf.descriptor import FieldDescriptor

from precision_shell.formats.ge import proto as ge_proto
from precision_shell.formats.ge.message import LIST_MEMBERS
from precision_shell.formats.ge.model import (
    GraphDef,
    ModelDef,
    OpDef,
    TensorDesc,
    ge_dtype_name,
)

# Field kinds. K_STR: text (proto string, or bytes the model keeps as str);
# K_RAW: bytes kept as bytes; K_SKIP: an unknown field, read and dropped.
K_STR, K_RAW, K_INT, K_ENUM, K_FLOAT, K_BOOL, K_MSG, K_MAP, K_SKIP = range(9)

_RAW_BYTES_FIELDS = {("AttrDef", "bt"), ("ListValue", "bt"), ("TensorDef", "data")}
BOOLS = {"true": True, "t": True, "1": True, "True": True}
BOOLS.update({"false": False, "f": False, "0": False, "False": False})

PLAIN_QUOTED = re.compile(r'"([^"\n]*)"')
_LIST_ITEM = re.compile(r"[ \t]*([a-z_]+): ([^\n]*)\n")
IDENT = re.compile(r"[A-Za-z_][0-9A-Za-z_]*")
_DQ_STRING = re.compile(r'"[^"\n\\]*(?:\\.[^"\n\\]*)*"')
C_OCTAL = re.compile(r"(-?)0(\d+)")
_FLOAT_INF = re.compile(r"-?inf(?:inity)?f?", re.IGNORECASE)
_FLOAT_NAN = re.compile(r"-?nanf?", re.IGNORECASE)
_F32 = struct.Struct("<f")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# (lowest, highest) value of each integer field type, as protobuf checks them.
_INT_RANGES = {
    FieldDescriptor.TYPE_INT64: (INT64_MIN, INT64_MAX),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
}
# Digits of the longest int64; longer numbers are out of range (and Python's int() refuses
# more than 4,300 digits with a ValueError).
_MAX_INT_DIGITS = 20


def to_float32(value: float) -> float:
    """`value` rounded to float32, as a protobuf `float` field stores it."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


class MessageSpec:
    """One message type: its fields and how its collected values become a model value."""

    __slots__ = ("name", "fields", "finish", "has_attr_map", "has_shape")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: dict[str, tuple[int, bool, Any]] = {}
        self.finish: Callable[[dict[str, Any]], Any] = dict
        # whether the block fast path may store an `attr { ... }` entry / a `shape { ... }`
        self.has_attr_map = False
        self.has_shape = False


def _finish_attr(values: dict[str, Any]) -> Any:
    if not values:
        return None
    member = next(reversed(values))  # a oneof: the last member set wins
    value = values[member]
    return ge_dtype_name(value) if member == "dt" else value


def _finish_list(values: dict[str, Any]) -> list[Any]:
    for member in LIST_MEMBERS:
        items = values.get(member)
        if items:
            return [ge_dtype_name(item) for item in items] if member == "dt" else items
    return []


_FINISHERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "ModelDef": lambda v: ModelDef(
        v.get("name", ""), v.get("version", 0), v.get("graph") or [], v.get("attr") or {}
    ),
    "GraphDef": lambda v: GraphDef(
        v.get("name", ""),
        v.get("op") or [],
        v.get("input") or [],
        v.get("output") or [],
        v.get("attr") or {},
    ),
    "OpDef": lambda v: OpDef(
        v.get("name", ""),
        v.get("type", ""),
        v.get("id", 0),
        v.get("input") or [],
        v.get("input_desc") or [],
        v.get("output_desc") or [],
        v.get("attr") or {},
        v.get("subgraph_name") or [],
        v.get("stream_id", 0),
        v.get("src_name") or [],
        v.get("src_index") or [],
        v.get("dst_name") or [],
        v.get("dst_index") or [],
    ),
    "TensorDescriptor": lambda v: TensorDesc(
        v.get("name", ""),
        v.get("dtype", "DT_UNDEFINED"),
        v.get("shape", ()),
        v.get("layout", ""),
        v.get("attr") or {},
    ),
    "ShapeDef": lambda v: tuple(v.get("dim", ())),
    "TensorDef": lambda v: {"desc": v.get("desc"), "data": v.get("data", b"")},
    "NamedAttrs": lambda v: {"name": v.get("name", ""), "attrs": v.get("attr") or {}},
    "AttrDef": _finish_attr,
    "ListValue": _finish_list,
    "ListListInt": lambda v: v.get("list_list_i") or [],
    "ListInt": lambda v: v.get("list_i") or [],
    "ListListFloat": lambda v: v.get("list_list_f") or [],
    "ListFloat": lambda v: v.get("list_f") or [],
    "AttrEntry": lambda v: (v.get("key", ""), v.get("value")),
}

_SCALAR_KINDS = {
    FieldDescriptor.TYPE_STRING: K_STR,
    FieldDescriptor.TYPE_BYTES: K_STR,
    FieldDescriptor.TYPE_INT64: K_INT,
    FieldDescriptor.TYPE_UINT32: K_INT,
    FieldDescriptor.TYPE_INT32: K_INT,
    FieldDescriptor.TYPE_FLOAT: K_FLOAT,
    FieldDescriptor.TYPE_DOUBLE: K_FLOAT,
    FieldDescriptor.TYPE_BOOL: K_BOOL,
}


def _build_specs() -> MessageSpec:
    """Specs for every message reachable from ModelDef; returns the ModelDef spec."""
    specs: dict[str, MessageSpec] = {}

    def spec_for(descriptor: Any) -> MessageSpec:
        if descriptor.full_name in specs:
            return specs[descriptor.full_name]
        spec = specs[descriptor.full_name] = MessageSpec(descriptor.name)
        spec.finish = _FINISHERS.get(descriptor.name, dict)
        for field in descriptor.fields:
            spec.fields[field.name] = field_kind(descriptor, field)
        attr = spec.fields.get("attr")
        spec.has_attr_map = attr is not None and attr[0] == K_MAP and attr[2].name == "AttrEntry"
        shape = spec.fields.get("shape")
        spec.has_shape = shape is not None and shape[0] == K_MSG and shape[2].name == "ShapeDef"
        return spec

    def field_kind(owner: Any, field: Any) -> tuple[int, bool, Any]:
        if field.message_type is not None:
            kind = K_MAP if field.message_type.GetOptions().map_entry else K_MSG
            return kind, field.is_repeated, spec_for(field.message_type)
        if field.enum_type is not None:
            names = {value.name: value.name for value in field.enum_type.values}
            names.update({str(value.number): value.name for value in field.enum_type.values})
            return K_ENUM, field.is_repeated, names
        kind = _SCALAR_KINDS[field.type]
        if (owner.name, field.name) in _RAW_BYTES_FIELDS:
            kind = K_RAW
        return kind, field.is_repeated, _INT_RANGES.get(field.type)

    return spec_for(ge_proto.ModelDef.DESCRIPTOR)


ROOT_SPEC = _build_specs()
_VALUE_TYPES = set(ge_proto.LIST_VALUE_TYPES) | {str(n) for n in ge_proto.LIST_VALUE_TYPES.values()}
SKIP_SPEC = MessageSpec("<unknown>")
SKIP_SPEC.finish = lambda values: None
UNKNOWN_FIELD = (K_SKIP, False, SKIP_SPEC)
MISSING = object()


def unquote(token: str) -> bytes:
    """The bytes of one quoted string token (C escapes resolved like protobuf does).

    Raises ValueError for a malformed escape such as a truncated `\\x`.
    """
    return text_encoding.CUnescape(token[1:-1])


def _escaped(raw: str) -> Any:
    """The bytes of a double-quoted token with escapes, or MISSING for the token path."""
    if not _DQ_STRING.fullmatch(raw):
        return MISSING
    try:
        return unquote(raw)
    except ValueError:
        return MISSING


def plain_string(raw: str) -> Any:
    """The text of a double-quoted string value, or MISSING when the token path must decide."""
    if raw.count('"') == 2 and raw[0] == '"' and raw[-1] == '"':
        value = raw[1:-1]
        if "\\" not in value:
            return value
        value = _escaped(raw)
        if value is not MISSING:
            return value.decode("utf-8", "replace")
    return MISSING


def plain_int(raw: str, low: int = INT64_MIN, high: int = INT64_MAX) -> Any:
    """A decimal integer in low..high, or MISSING ("017" is octal to protobuf, and a number out
    of range is an error: the token path decides)."""
    if len(raw) > _MAX_INT_DIGITS:
        return MISSING
    try:
        value = int(raw)
    except ValueError:
        return MISSING
    if raw[0] == "0" and len(raw) > 1 or raw[:2] == "-0" and len(raw) > 2:
        return MISSING
    if not low <= value <= high:
        return MISSING
    return value


def int64_list(items: str) -> Any:
    """The ints of `dim: 1` / `i: 2` lines (each at most 19 digits, by the fast path's regex),
    or MISSING when one is out of the int64 range."""
    values = list(map(int, items.split()[1::2]))
    if values and (min(values) < INT64_MIN or max(values) > INT64_MAX):
        return MISSING
    return values


def member_value(member: str, raw: str) -> Any:
    """One scalar AttrDef / ListValue member value in its plainest spelling, else MISSING."""
    if member == "s":
        return plain_string(raw)
    if member == "i":
        return plain_int(raw)
    if member == "b":
        return BOOLS.get(raw, MISSING)
    if member == "f":
        try:
            return to_float32(float(raw))
        except ValueError:
            return MISSING
    if member == "dt":
        number = plain_int(raw)
        return MISSING if number is MISSING else ge_dtype_name(number)
    if member == "bt" and raw.count('"') == 2:
        return _escaped(raw)  # bytes need not be UTF-8: never decoded
    return MISSING


def list_value(items: str) -> Any:
    """The value of a `list { ... }` of scalar members (as `_finish_list` picks it), or MISSING."""
    members: dict[str, list[Any]] = {}
    for member, raw in _LIST_ITEM.findall(items):
        if member == "val_type":
            if raw not in _VALUE_TYPES:
                return MISSING
            continue
        value = member_value(member, raw)
        if value is MISSING:
            return MISSING
        bucket = members.get(member)
        if bucket is None:
            members[member] = [value]
        else:
            bucket.append(value)
    for member in LIST_MEMBERS:
        if member in members:
            return members[member]
    return []


def parse_float(text: str) -> float:
    """A float in any spelling protobuf accepts ("1e-05", "inf", "-Infinity", "nan", "1.5f")."""
    try:
        return float(text)
    except ValueError:
        if _FLOAT_INF.fullmatch(text):
            return -math.inf if text[0] == "-" else math.inf
        if _FLOAT_NAN.fullmatch(text):
            return math.nan
        return float(text.rstrip("fF"))
