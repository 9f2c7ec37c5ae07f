"""The Build-stage GE graph dump of the demo: a `DevicePlan` as a `ModelDef`.

Attributes follow what msaccucmp and precision_tool read (FORMATS.md sections 3 and 5): the
original op names on every op, the origin name / index / format / shape on every output that
has a benchmark counterpart, kernel names and engines on the ops, the session id on the graph.
"""

from __future__ import annotations

import hashlib
from typing import Any

from precision_shell.demo.device_ops import SESSION_GRAPH_ID, DeviceOp, DevicePlan, TensorPlan
from precision_shell.formats.ge.model import GraphDef, ModelDef, OpDef, TensorDesc


def kernel_name(op: DeviceOp) -> str:
    """A TBE-style kernel name, stable for a given op name."""
    digest = hashlib.sha256(op.name.encode()).hexdigest()[:16]
    prefix = "te_fused_op_" if len(op.members) > 1 else "te_"
    return f"{prefix}{op.type.lower()}_{digest}_0"


def _desc(plan: TensorPlan, output: bool) -> TensorDesc:
    attrs: dict[str, Any] = {
        "origin_format": plan.origin_format,
        "origin_shape": list(plan.origin_shape),
    }
    if output and plan.origin is not None:
        attrs["_datadump_origin_name"] = plan.origin
        attrs["_datadump_origin_output_index"] = 0
        attrs["_datadump_origin_format"] = plan.origin_format
    return TensorDesc(
        name=plan.name, dtype=plan.dtype, shape=plan.shape, layout=plan.layout, attrs=attrs
    )


def _op_def(op: DeviceOp, consumers: dict[str, list[tuple[str, int]]], stream_id: int) -> OpDef:
    attrs: dict[str, Any] = {}
    if op.original_names is not None:
        attrs["_datadump_original_op_names"] = list(op.original_names)
    passes = [*op.graph_passes, *([op.ub_pass] if op.ub_pass else [])]
    if passes:
        attrs["pass_name"] = passes
    if op.ub_pass:
        attrs["pass_name_ub"] = op.ub_pass
    attrs["_ge_attr_op_kernel_lib_name"] = op.kernel_lib
    if op.has_task:
        attrs[f"{op.name}_kernelname"] = kernel_name(op)
    data_inputs = op.data_inputs
    dsts = consumers.get(op.name, [])
    return OpDef(
        name=op.name,
        type=op.type,
        id=op.id,
        inputs=list(op.inputs),
        input_descs=[_desc(desc, output=False) for desc in op.input_descs],
        output_descs=[_desc(desc, output=True) for desc in op.output_descs],
        attrs=attrs,
        stream_id=stream_id if op.has_task else 0,
        src_name=[source for source, _ in data_inputs],
        src_index=[index for _, index in data_inputs],
        dst_name=[name for name, _ in dsts],
        dst_index=[index for _, index in dsts],
    )


def model_def(plan: DevicePlan, stream_id: int) -> ModelDef:
    """The Build-stage `ModelDef` of the device graph."""
    consumers: dict[str, list[tuple[str, int]]] = {}
    for op in plan.ops:
        for position, (source, _) in enumerate(op.data_inputs):
            consumers.setdefault(source, []).append((op.name, position))
    outputs = [f"{op.name}:0" for op in plan.ops if op.has_task and op.name not in consumers]
    graph = GraphDef(
        name=plan.graph_name,
        ops=[_op_def(op, consumers, stream_id) for op in plan.ops],
        inputs=[f"{op.name}:0" for op in plan.ops if op.kind == "data"],
        outputs=outputs,
        attrs={"_session_graph_id": SESSION_GRAPH_ID},
    )
    return ModelDef(name=plan.graph_name, version=1, graphs=[graph])
