"""Replay of a GE-fused op member by member, from its original (TF) op types and names.

GE keeps `_datadump_original_op_types` / `_datadump_original_op_names` on a fused node. The
fused node's inputs are handed out in order:

- the first member takes what its arity needs: Conv2D x, filter and the bias when the next
  input is a 1-D vector of the output channels; MatMul* x1, x2 and likewise a bias; a batch
  norm 5; LayerNorm 3; a binary op 2; anything else 1. It runs with the fused node's
  attributes (they are the first member's, which GE kept).
- each later member takes the previous member's output, and a binary member (Add, AddV2, Sub,
  Mul, RealDiv, Maximum, Minimum, BiasAdd) also the next unconsumed input, as its *second*
  operand (GE's UB fusion feeds the chain value into x1).
- a batch norm or BiasAdd right after the first member, a Conv2D or MatMul, when the fused op
  has no input left for it (beyond what later binary members need), was folded into the
  filter / bias constants by ConvBatchnormFusionPass / MatMulBiasAddFusionPass: it is skipped
  and the description says so.

Members after the first have no attributes on the fused node. Only those whose op definition
leaves nothing to guess are replayed (activations without parameters, element-wise binaries,
BiasAdd, Softmax); any other (LeakyRelu's slope, Muls' value, an unfolded batch norm's
epsilon and mode...) makes the op ReplayUnsupported, naming the member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precision_shell.replay.kernels.registry import (
    KernelCall,
    ReplayUnsupported,
    TensorInfo,
    check_outputs,
    has_kernel,
    input_format,
    prepare,
    replay_op,
)

_CONVS = frozenset({"Conv2D"})
_MATMULS = frozenset({"MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"})
_BATCH_NORMS = frozenset(
    {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "BatchNorm", "BNInfer"}
)
_BINARY = frozenset({"Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "BiasAdd"})
# Later members replayed from their op definition alone: no attributes, or (BiasAdd) only the
# layout, which is the fused node's own data_format (one UB-fused kernel, one layout).
_SAFE_LATER = _BINARY | {
    "Relu",
    "Relu6",
    "Sigmoid",
    "Tanh",
    "Gelu",
    "Square",
    "Sqrt",
    "Rsqrt",
    "Exp",
    "Log",
    "Softmax",
    "LogSoftmax",
}
_FOLD_PASS = {"Conv2D": "ConvBatchnormFusionPass", "MatMul": "MatMulBiasAddFusionPass"}


@dataclass
class _Walk:
    """The state of one pass over the members."""

    call: KernelCall
    fused: str
    next_input: int = 0
    executed: int = 0
    description: dict[str, Any] = field(default_factory=dict)

    def fail(self, member: str, op_type: str, problem: str) -> ReplayUnsupported:
        return ReplayUnsupported(
            f"fused op {self.fused}: original op {member} ({op_type}) {problem}"
        )

    def take(self, count: int) -> list[int]:
        indices = list(range(self.next_input, self.next_input + count))
        self.next_input += count
        return indices

    @property
    def left(self) -> int:
        return len(self.call.inputs) - self.next_input


def _is_bias(call: KernelCall, index: int, channels: int) -> bool:
    if index >= len(call.inputs):
        return False
    value = np.asarray(call.inputs[index])
    return value.ndim == 1 and value.shape[0] == channels


def _out_channels(call: KernelCall, op_type: str) -> int:
    """Output channels of a conv (from the filter's layout) or columns of a matmul."""
    if len(call.inputs) < 2:
        return -1
    second = np.asarray(call.inputs[1])
    if op_type in _CONVS:
        fmt = input_format(call, 1)
        if second.ndim != 4 or fmt not in ("HWCN", "NCHW", "NHWC"):
            return -1
        return int(second.shape[3] if fmt == "HWCN" else second.shape[0])
    if second.ndim < 2:
        return -1
    transposed = any(
        bool(call.attrs.get(name, False))
        for name in ("transpose_x2", "transpose_b", "adj_x2", "adj_y")
    )
    return int(second.shape[-2] if transposed else second.shape[-1])


def _first_arity(call: KernelCall, op_type: str) -> int:
    if op_type in _CONVS or op_type in _MATMULS:
        return 3 if _is_bias(call, 2, _out_channels(call, op_type)) else 2
    if op_type in _BATCH_NORMS:
        return 5
    if op_type == "LayerNorm":
        return 3
    return 2 if op_type in _BINARY else 1


def _sub_call(
    walk: _Walk,
    op_type: str,
    name: str,
    attrs: dict[str, Any],
    inputs: list[np.ndarray],
    infos: list[TensorInfo],
) -> KernelCall:
    return KernelCall(
        op_type=op_type,
        attrs=attrs,
        inputs=inputs,
        input_info=infos,
        output_info=list(walk.call.output_info[:1]),
        op_name=name,
    )


def _run(walk: _Walk, sub: KernelCall, compute: bool) -> np.ndarray | None:
    try:
        run, used = prepare(sub)
        walk.description[f"{sub.op_name} ({sub.op_type})"] = used
        if not compute:
            return None
        return check_outputs(sub, run())[0]
    except ReplayUnsupported as err:
        problem = str(err).removeprefix(f"{sub.op_type}: ")
        raise ReplayUnsupported(
            f"fused op {walk.fused}: original op {sub.op_name} ({sub.op_type}): {problem}"
        ) from None


def _walk(
    call: KernelCall, original_types: Sequence[str], original_names: Sequence[str], compute: bool
) -> tuple[list[np.ndarray], dict[str, Any]]:
    fused = call.op_name or call.op_type
    types, names = list(original_types), list(original_names)
    if not types or len(types) != len(names):
        raise ReplayUnsupported(
            f"fused op {fused}: {len(types)} original op types but {len(names)} names"
        )
    walk = _Walk(call, fused)
    for op_type, name in zip(types, names, strict=True):
        if not has_kernel(op_type):
            raise walk.fail(name, op_type, "has no replay kernel")

    def infos(indices: list[int]) -> list[TensorInfo]:
        return [call.input_info[i] for i in indices if i < len(call.input_info)]

    first_type, first_name = types[0], names[0]
    taken = walk.take(min(_first_arity(call, first_type), len(call.inputs)))
    value = _run(
        walk,
        _sub_call(
            walk,
            first_type,
            first_name,
            dict(call.attrs),
            [call.inputs[i] for i in taken],
            infos(taken),
        ),
        compute,
    )
    # Without computing, later members check their attributes against a stand-in of the
    # chain value with the fused output's shape (every member keeps it).
    if value is None:
        shape = tuple(call.output_info[0].shape) if call.output_info else ()
        value = np.zeros(shape)
    for position in range(1, len(types)):
        op_type, name = types[position], names[position]
        later_binary = sum(1 for t in types[position + 1 :] if t in _BINARY)
        spare = walk.left - later_binary
        foldable = walk.executed == 0 and (first_type in _CONVS or first_type in _MATMULS)
        key = f"{name} ({op_type})"
        if op_type in _BATCH_NORMS and foldable and spare < 4:
            walk.description[key] = _folded(first_type, "filter and bias")
            continue
        if op_type == "BiasAdd" and foldable and spare < 1:
            walk.description[key] = _folded(first_type, "bias")
            continue
        if op_type not in _SAFE_LATER:
            raise walk.fail(
                name,
                op_type,
                "needs attributes the fused node does not carry, and has no safe defaults",
            )
        inputs, member_infos = [value], [call.output_info[0]] if call.output_info else []
        if op_type in _BINARY:
            if walk.left < 1:
                raise walk.fail(name, op_type, "needs a second input; the fused op has none left")
            (index,) = walk.take(1)
            inputs.append(call.inputs[index])
            member_infos += infos([index])
        attrs: dict[str, Any] = {}
        if op_type == "BiasAdd" and "data_format" in call.attrs:
            attrs["data_format"] = call.attrs["data_format"]
        result = _run(walk, _sub_call(walk, op_type, name, attrs, inputs, member_infos), compute)
        walk.executed += 1
        if result is not None:
            value = result
    if walk.left > 0:
        unused = ", ".join(str(i) for i in range(walk.next_input, len(call.inputs)))
        raise ReplayUnsupported(
            f"fused op {fused}: input(s) {unused} are not used by any original op "
            f"({', '.join(types)})"
        )
    return [value], walk.description


def _folded(first_type: str, what: str) -> str:
    family = "Conv2D" if first_type in _CONVS else "MatMul"
    return f"skipped: folded into the {what} constants by {_FOLD_PASS[family]}"


def replay_fused(
    call: KernelCall, original_types: Sequence[str], original_names: Sequence[str]
) -> list[np.ndarray]:
    """The fused op recomputed in float64 by replaying its original ops in order.

    A single-member op whose own (GE) type has a kernel is replayed as itself: GE renamed it
    (Sum -> ReduceSumD, Softmax -> SoftmaxV2) and its attributes are the GE op's."""
    if len(original_types) == 1 and has_kernel(call.op_type):
        return replay_op(call)
    outputs, _ = _walk(call, original_types, original_names, compute=True)
    return check_outputs(call, outputs)


def describe_fused(
    call: KernelCall, original_types: Sequence[str], original_names: Sequence[str]
) -> dict[str, Any]:
    """Per member ("name (type)"), the attributes its replay uses, or why it is skipped.
    Raises ReplayUnsupported where `replay_fused` would, without computing anything."""
    if len(original_types) == 1 and has_kernel(call.op_type):
        _, used = prepare(call)
        return {f"{original_names[0]} ({call.op_type})": used}
    return _walk(call, original_types, original_names, compute=False)[1]
