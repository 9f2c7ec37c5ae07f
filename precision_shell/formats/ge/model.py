"""The in-memory GE graph model: plain slotted dataclasses mirroring `ge.proto.ModelDef`.

Cheap to build (the text parser makes millions of them) and picklable (the workspace
index caches them). Attribute values are natural Python values; see `DataTypeName`
for the one wrapper type, which keeps `dt` attributes apart from string ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precision_shell.formats.ge.proto import GE_DATA_TYPES, PROTO_DATA_TYPES

# Messages nested deeper than this are refused by the readers. Real dumps nest a handful of
# levels (graph, op, desc, attr, value, list, maybe a subgraph or two); a bound keeps every
# model picklable (pickle recurses once per level) and every converter's recursion shallow.
MAX_NESTING_DEPTH = 64

PROTO_DTYPE_NAMES: dict[int, str] = {number: name for name, number in PROTO_DATA_TYPES.items()}
GE_DTYPE_NAMES: dict[int, str] = {number: name for name, number in GE_DATA_TYPES.items()}


class DataTypeName(str):
    """A `dt` attribute value ("DT_FLOAT16"): a str that remembers it is a data type.

    Equal to the plain string; the writer uses the type to emit `dt` instead of `s`.
    An unknown number is kept as its decimal text ("77").
    """

    __slots__ = ()


def ge_dtype_name(number: int) -> DataTypeName:
    """The name of a C++ `ge::DataType` number, as stored in `AttrDef.dt`."""
    return DataTypeName(GE_DTYPE_NAMES.get(number) or str(number))


def proto_dtype_name(number: int) -> str:
    """The name of a proto `DataType` number, as stored in `TensorDescriptor.dtype`."""
    return PROTO_DTYPE_NAMES.get(number) or str(number)


def _text_attr(attrs: dict[str, Any], key: str) -> str | None:
    value = attrs.get(key)
    if isinstance(value, str) and value:
        return value
    return None


@dataclass(slots=True)
class TensorDesc:
    """One input or output tensor description of an op."""

    name: str = ""
    dtype: str = "DT_UNDEFINED"
    shape: tuple[int, ...] = ()
    layout: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def origin_name(self) -> str | None:
        """The benchmark op this tensor comes from (`_datadump_origin_name`)."""
        return _text_attr(self.attrs, "_datadump_origin_name")

    @property
    def origin_output_index(self) -> int | None:
        """The output index on the origin op (`_datadump_origin_output_index`)."""
        value = self.attrs.get("_datadump_origin_output_index")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return None

    @property
    def origin_format(self) -> str | None:
        """The benchmark layout: `_datadump_origin_format`, else `origin_format`."""
        return _text_attr(self.attrs, "_datadump_origin_format") or _text_attr(
            self.attrs, "origin_format"
        )

    @property
    def origin_shape(self) -> tuple[int, ...] | None:
        """The benchmark shape (`origin_shape`, a list of ints)."""
        value = self.attrs.get("origin_shape")
        if isinstance(value, list) and all(isinstance(dim, int) for dim in value):
            return tuple(value)
        return None


@dataclass(slots=True)
class OpDef:
    """One op of a GE graph; `inputs` keeps GE's raw "src:idx" strings."""

    name: str = ""
    type: str = ""
    id: int = 0
    inputs: list[str] = field(default_factory=list)
    input_descs: list[TensorDesc] = field(default_factory=list)
    output_descs: list[TensorDesc] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    subgraph_names: list[str] = field(default_factory=list)
    stream_id: int = 0
    src_name: list[str] = field(default_factory=list)
    src_index: list[int] = field(default_factory=list)
    dst_name: list[str] = field(default_factory=list)
    dst_index: list[int] = field(default_factory=list)

    @property
    def data_inputs(self) -> list[tuple[str, int]]:
        """(source op, output index) per data input; empty inputs and control edges skipped."""
        edges = []
        for text in self.inputs:
            if not text:
                continue
            source, index = split_input(text)
            if index >= 0:
                edges.append((source, index))
        return edges

    @property
    def control_inputs(self) -> list[str]:
        """Source ops of the control edges ("src:-1")."""
        return [
            source for source, index in map(split_input, filter(None, self.inputs)) if index < 0
        ]

    @property
    def original_op_names(self) -> list[str] | None:
        """Benchmark ops fused into this op; None when the attr is absent, [] when empty."""
        value = self.attrs.get("_datadump_original_op_names")
        if value is None:
            return None
        if isinstance(value, str):
            return [value] if value else []
        if isinstance(value, list):
            return [str(name) for name in value]
        return None

    @property
    def pass_name(self) -> str | None:
        """The fusion pass(es) that made this op, comma-joined; None when unset or empty."""
        value = self.attrs.get("pass_name")
        if isinstance(value, list):
            value = ",".join(str(name) for name in value)
        return value if isinstance(value, str) and value else None

    @property
    def kernel_name(self) -> str | None:
        """`<op name>_kernelname`, else `_kernelname`."""
        return _text_attr(self.attrs, f"{self.name}_kernelname") or _text_attr(
            self.attrs, "_kernelname"
        )

    @property
    def l1_fusion_group(self) -> int | None:
        """`_L1_fusion_sub_graph_no`: ops sharing it were fused in L1."""
        value = self.attrs.get("_L1_fusion_sub_graph_no")
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        return None

    @property
    def is_multiop(self) -> bool:
        """`_datadump_is_multiop`: one benchmark op split into several device ops."""
        return bool(self.attrs.get("_datadump_is_multiop", False))


def split_input(text: str) -> tuple[str, int]:
    """ "src:idx" -> ("src", idx); no or non-numeric suffix -> (text, 0)."""
    source, sep, index = text.rpartition(":")
    if sep:
        try:
            return source, int(index)
        except ValueError:
            pass
    return text, 0


@dataclass(slots=True)
class GraphDef:
    """One graph (the root graph or a subgraph, which an op names in `subgraph_names`)."""

    name: str = ""
    ops: list[OpDef] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ModelDef:
    """A whole GE dump: the root graph first, then its subgraphs."""

    name: str = ""
    version: int = 0
    graphs: list[GraphDef] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)

    def graph(self, name: str) -> GraphDef | None:
        """The graph called `name`, or None."""
        for graph in self.graphs:
            if graph.name == name:
                return graph
        return None
