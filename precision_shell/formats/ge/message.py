"""Conversion between `ge.proto.ModelDef` protobuf messages and our GE graph model.

`model_from_message` is the reference converter (the fast text parser is tested
against `text_format.Parse` + this); `model_to_message` is the writer behind
`model_to_text` / `model_to_json`, so the files we write are real protobuf.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from precision_shell.formats.ge import proto as ge_proto
from precision_shell.formats.ge.model import (
    DataTypeName,
    GraphDef,
    ModelDef,
    OpDef,
    TensorDesc,
    ge_dtype_name,
    proto_dtype_name,
)

# ListValue members in the order a reader picks the populated one.
LIST_MEMBERS = ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt")


def model_from_message(message: Any) -> ModelDef:
    """Our model from a `ge.proto.ModelDef` message."""
    return ModelDef(
        message.name,
        message.version,
        [_graph_from(graph) for graph in message.graph],
        _attrs_from(message.attr),
    )


def _graph_from(graph: Any) -> GraphDef:
    return GraphDef(
        graph.name,
        [_op_from(op) for op in graph.op],
        list(graph.input),
        list(graph.output),
        _attrs_from(graph.attr),
    )


def _op_from(op: Any) -> OpDef:
    return OpDef(
        op.name,
        op.type,
        op.id,
        list(op.input),
        [_desc_from(desc) for desc in op.input_desc],
        [_desc_from(desc) for desc in op.output_desc],
        _attrs_from(op.attr),
        list(op.subgraph_name),
        op.stream_id,
        list(op.src_name),
        list(op.src_index),
        list(op.dst_name),
        list(op.dst_index),
    )


def _desc_from(desc: Any) -> TensorDesc:
    return TensorDesc(
        desc.name,
        proto_dtype_name(desc.dtype),
        tuple(desc.shape.dim),
        desc.layout,
        _attrs_from(desc.attr),
    )


def _attrs_from(attr_map: Any) -> dict[str, Any]:
    return {key: attr_value_from(value) for key, value in attr_map.items()}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _tensor_from(tensor: Any) -> dict[str, Any]:
    desc = _desc_from(tensor.desc) if tensor.HasField("desc") else None
    return {"desc": desc, "data": bytes(tensor.data)}


def _named_from(named: Any) -> dict[str, Any]:
    return {"name": named.name, "attrs": _attrs_from(named.attr)}


_LIST_CONVERTERS = {
    "s": lambda items: [_text(item) for item in items],
    "i": list,
    "f": list,
    "b": list,
    "bt": lambda items: [bytes(item) for item in items],
    "td": lambda items: [_desc_from(item) for item in items],
    "t": lambda items: [_tensor_from(item) for item in items],
    "g": lambda items: [_graph_from(item) for item in items],
    "na": lambda items: [_named_from(item) for item in items],
    "dt": lambda items: [ge_dtype_name(item) for item in items],
}


def attr_value_from(attr: Any) -> Any:
    """The natural Python value of one `AttrDef` message (None when no value is set)."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        return _text(attr.s)
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "bt":
        return bytes(attr.bt)
    if kind == "dt":
        return ge_dtype_name(attr.dt)
    if kind == "list":
        for member in LIST_MEMBERS:
            items = getattr(attr.list, member)
            if len(items):
                return _LIST_CONVERTERS[member](items)
        return []
    if kind == "func":
        return _named_from(attr.func)
    if kind == "td":
        return _desc_from(attr.td)
    if kind == "t":
        return _tensor_from(attr.t)
    if kind == "g":
        return _graph_from(attr.g)
    if kind == "list_list_int":
        return [list(row.list_i) for row in attr.list_list_int.list_list_i]
    if kind == "list_list_float":
        return [list(row.list_f) for row in attr.list_list_float.list_list_f]
    return None


def model_to_message(model: ModelDef) -> Any:
    """A `ge.proto.ModelDef` message holding `model`."""
    message = ge_proto.ModelDef(name=model.name, version=model.version)
    for graph in model.graphs:
        _fill_graph(message.graph.add(), graph)
    _fill_attrs(message.attr, model.attrs)
    return message


def _fill_graph(message: Any, graph: GraphDef) -> None:
    message.name = graph.name
    message.input.extend(graph.inputs)
    message.output.extend(graph.outputs)
    for op in graph.ops:
        _fill_op(message.op.add(), op)
    _fill_attrs(message.attr, graph.attrs)


def _fill_op(message: Any, op: OpDef) -> None:
    message.name = op.name
    message.type = op.type
    message.input.extend(op.inputs)
    _fill_attrs(message.attr, op.attrs)
    message.id = op.id
    message.stream_id = op.stream_id
    message.src_name.extend(op.src_name)
    message.src_index.extend(op.src_index)
    message.dst_name.extend(op.dst_name)
    message.dst_index.extend(op.dst_index)
    for desc in op.input_descs:
        _fill_desc(message.input_desc.add(), desc)
    for desc in op.output_descs:
        _fill_desc(message.output_desc.add(), desc)
    message.subgraph_name.extend(op.subgraph_names)


def _dtype_number(name: str, table: dict[str, int]) -> int:
    if name in table:
        return table[name]
    if name.lstrip("-").isdigit():
        return int(name)
    raise ValueError(f"unknown data type {name!r}")


def _fill_desc(message: Any, desc: TensorDesc) -> None:
    message.name = desc.name
    message.dtype = _dtype_number(desc.dtype, ge_proto.PROTO_DATA_TYPES)
    message.shape.dim.extend(desc.shape)
    message.layout = desc.layout
    _fill_attrs(message.attr, desc.attrs)


def _fill_attrs(attr_map: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        _fill_attr(attr_map[key], value)


def _fill_tensor(message: Any, tensor: dict[str, Any]) -> None:
    if tensor.get("desc") is not None:
        _fill_desc(message.desc, tensor["desc"])
    message.data = bytes(tensor.get("data", b""))


def _fill_named(message: Any, named: dict[str, Any]) -> None:
    message.name = named.get("name", "")
    _fill_attrs(message.attr, named.get("attrs", {}))


def _is_tensor(value: dict[str, Any]) -> bool:
    return "desc" in value or "data" in value


def _fill_attr(message: Any, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, DataTypeName):
        message.dt = _dtype_number(value, ge_proto.GE_DATA_TYPES)
    elif isinstance(value, str):
        message.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        message.bt = value
    elif isinstance(value, bool):
        message.b = value
    elif isinstance(value, Integral):
        message.i = int(value)
    elif isinstance(value, Real):
        message.f = float(value)
    elif isinstance(value, TensorDesc):
        _fill_desc(message.td, value)
    elif isinstance(value, GraphDef):
        _fill_graph(message.g, value)
    elif isinstance(value, dict):
        if _is_tensor(value):
            _fill_tensor(message.t, value)
        else:
            _fill_named(message.func, value)
    elif isinstance(value, (list, tuple)):
        _fill_list(message, list(value))
    else:
        raise ValueError(f"cannot write an attribute value of type {type(value).__name__}")


def _list_member(items: list[Any]) -> tuple[str, str]:
    """(ListValue field, VT_LIST_* name) for a non-empty list of plain values."""
    first = items[0]
    if isinstance(first, DataTypeName):
        return "dt", "VT_LIST_DATA_TYPE"
    if isinstance(first, str):
        return "s", "VT_LIST_STRING"
    if isinstance(first, bytes):
        return "bt", "VT_LIST_BYTES"
    if isinstance(first, bool):
        return "b", "VT_LIST_BOOL"
    if all(isinstance(item, Integral) and not isinstance(item, bool) for item in items):
        return "i", "VT_LIST_INT"
    if isinstance(first, Real):
        return "f", "VT_LIST_FLOAT"
    if isinstance(first, TensorDesc):
        return "td", "VT_LIST_TENSOR_DESC"
    if isinstance(first, GraphDef):
        return "g", "VT_LIST_GRAPH"
    if isinstance(first, dict):
        return ("t", "VT_LIST_TENSOR") if _is_tensor(first) else ("na", "VT_LIST_NAMED_ATTRS")
    raise ValueError(f"cannot write a list attribute of {type(first).__name__}")


def _fill_list(message: Any, items: list[Any]) -> None:
    if items and all(isinstance(item, (list, tuple)) for item in items):
        flat = [value for row in items for value in row]
        if all(isinstance(value, Integral) for value in flat):
            rows = message.list_list_int.list_list_i
            for row in items:
                rows.add().list_i.extend(int(value) for value in row)
        else:
            rows = message.list_list_float.list_list_f
            for row in items:
                rows.add().list_f.extend(float(value) for value in row)
        return
    list_value = message.list
    if not items:
        # The element type of an empty list is unknown; GE writes its empty string lists
        # (`_datadump_original_op_names` of an op with no counterpart) this way.
        list_value.val_type = ge_proto.LIST_VALUE_TYPES["VT_LIST_STRING"]
        return
    member, value_type = _list_member(items)
    target = getattr(list_value, member)
    if member == "s":
        target.extend(item.encode("utf-8") for item in items)
    elif member == "dt":
        target.extend(_dtype_number(item, ge_proto.GE_DATA_TYPES) for item in items)
    elif member == "td":
        for item in items:
            _fill_desc(target.add(), item)
    elif member == "g":
        for item in items:
            _fill_graph(target.add(), item)
    elif member == "t":
        for item in items:
            _fill_tensor(target.add(), item)
    elif member == "na":
        for item in items:
            _fill_named(target.add(), item)
    elif member == "f":
        target.extend(float(item) for item in items)
    elif member == "i":
        target.extend(int(item) for item in items)
    else:
        target.extend(items)
    list_value.val_type = ge_proto.LIST_VALUE_TYPES[value_type]
