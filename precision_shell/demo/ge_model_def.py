"""The Build-stage GE graph dump of the demo: a `DevicePlan` as a `ModelDef`.

Attributes follow what msaccucmp and precision_tool read (FORMATS.md sections 3 and 5): the
original op names and types on every op, the origin name / index / format / shape on every
output that has a benchmark counterpart, kernel names and engines on the ops, the session id on
the graph. Compute ops also carry the kernel attributes GE keeps on them (a Conv2D's strides and
pads, a pool's window, a reduction's axes), which is what `replay` recomputes them from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from precision_shell.demo.device_graph import CHAIN_TYPES
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


# Device op type of a one-member chain -> the benchmark (TF) op type it computes.
_CHAIN_ORIGINAL_TYPES = {device: original for original, (device, _) in CHAIN_TYPES.items()}


def _member_types(op: DeviceOp) -> list[str]:
    """The TF op types of `op.members`, in order (parallel to its original op names).

    They follow from how `device_graph` groups the benchmark ops: a conv group is Conv2D and
    its batch norm, then the residual AddV2 when the op reads a shortcut (a 4th input), then
    Relu; the dense op is MatMul + BiasAdd; a chain repeats the one benchmark type it fuses."""
    if op.kind == "conv":
        types = ["Conv2D", "FusedBatchNormV3"]
        if len(op.data_inputs) > 3:
            types.append("AddV2")
        return types + ["Relu"] * (len(op.members) - len(types))
    if op.kind == "matmul":
        return ["MatMul", "BiasAdd"]
    if op.kind == "reshape":
        return ["Reshape"]
    original = "Mul" if op.type == "Mul" else _CHAIN_ORIGINAL_TYPES[op.type]
    return [original] * len(op.members)


def _kernel_attrs(op: DeviceOp, scalars: Mapping[str, float]) -> dict[str, Any]:
    """The attributes GE keeps on a compute op for its kernel (the demo computes NHWC);
    `scalars`: the constant operand of each TF Mul, which GE makes a Muls' `value` (a fused
    chain of them keeps its first member's only)."""
    if op.type == "Muls" and op.members and op.members[0] in scalars:
        return {"value": scalars[op.members[0]]}
    if op.type == "Conv2D":
        kh, kw = op.input_descs[1].origin_shape[:2]  # the HWCN filter
        return {
            "strides": [1, 1, 1, 1],
            "pads": [kh // 2, kh - 1 - kh // 2, kw // 2, kw - 1 - kw // 2],
            "dilations": [1, 1, 1, 1],
            "groups": 1,
            "data_format": "NHWC",
        }
    if op.type == "MaxPool":
        return {
            "ksize": [1, 2, 2, 1],
            "strides": [1, 2, 2, 1],
            "padding": "VALID",
            "data_format": "NHWC",
        }
    if op.type == "ReduceSumD":
        rank = len(op.input_descs[0].origin_shape)
        return {"axes": list(range(1, rank)), "keep_dims": False}
    if op.type == "ReduceMeanD":
        return {"axes": [1, 2], "keep_dims": True}
    if op.type == "SoftmaxV2":
        return {"axes": [-1]}
    if op.type == "MatMulV2":
        return {"transpose_x1": False, "transpose_x2": False}
    return {}


def _op_def(
    op: DeviceOp,
    consumers: dict[str, list[tuple[str, int]]],
    stream_id: int,
    scalars: Mapping[str, float],
) -> OpDef:
    attrs: dict[str, Any] = {}
    if op.original_names is not None:
        attrs["_datadump_original_op_names"] = list(op.original_names)
    if op.members and op.kind != "const":  # a constant's members are the ops it serves
        attrs["_datadump_original_op_types"] = _member_types(op)
    attrs.update(_kernel_attrs(op, scalars))
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


def model_def(
    plan: DevicePlan, stream_id: int, scalars: Mapping[str, float] | None = None
) -> ModelDef:
    """The Build-stage `ModelDef` of the device graph; `scalars`: the network's scalar
    constants by benchmark op (`Network.scalar_constants`), written as Muls' `value`."""
    scalars = scalars or {}
    consumers: dict[str, list[tuple[str, int]]] = {}
    for op in plan.ops:
        for position, (source, _) in enumerate(op.data_inputs):
            consumers.setdefault(source, []).append((op.name, position))
    outputs = [f"{op.name}:0" for op in plan.ops if op.has_task and op.name not in consumers]
    graph = GraphDef(
        name=plan.graph_name,
        ops=[_op_def(op, consumers, stream_id, scalars) for op in plan.ops],
        inputs=[f"{op.name}:0" for op in plan.ops if op.kind == "data"],
        outputs=outputs,
        attrs={"_session_graph_id": SESSION_GRAPH_ID},
    )
    return ModelDef(name=plan.graph_name, version=1, graphs=[graph])
