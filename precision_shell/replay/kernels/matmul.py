"""MatMul / MatMulV2 / BatchMatMul / BatchMatMulV2 in float64, with the optional bias input.

Transpose flags: GE's MatMul family names them transpose_x1 / transpose_x2 (TF MatMul:
transpose_a / transpose_b), the BatchMatMul family adj_x1 / adj_x2 (TF: adj_x / adj_y); all
default to False in both op definitions. Real inputs, so adjoint = transpose.
"""

from __future__ import annotations

import numpy as np

from precision_shell.replay.kernels.registry import (
    Attrs,
    Compute,
    KernelCall,
    as_float,
    need_inputs,
    register,
)

_MATMUL_FLAGS = (("transpose_x1", "transpose_a"), ("transpose_x2", "transpose_b"))
_BATCH_FLAGS = (("adj_x1", "adj_x"), ("adj_x2", "adj_y"))


def _matmul(call: KernelCall, attrs: Attrs, batched: bool, broadcast: bool) -> Compute:
    need_inputs(call, 2, 4)
    flags = _BATCH_FLAGS if batched else _MATMUL_FLAGS
    trans_a = attrs.bool_(flags[0], False)
    trans_b = attrs.bool_(flags[1], False)
    a, b = as_float(call.inputs[0]), as_float(call.inputs[1])
    if a.ndim < 2 or b.ndim < 2 or (not batched and (a.ndim != 2 or b.ndim != 2)):
        want = "at least 2-D" if batched else "2-D"
        raise attrs.fail(f"x1 and x2 must be {want}, got shapes {a.shape} and {b.shape}")
    if batched and not broadcast and a.shape[:-2] != b.shape[:-2]:
        raise attrs.fail(
            f"batch dims {a.shape[:-2]} and {b.shape[:-2]} differ (only BatchMatMulV2 broadcasts)"
        )
    if trans_a:
        a = np.swapaxes(a, -1, -2)
    if trans_b:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise attrs.fail(
            f"x1 {a.shape} and x2 {b.shape} (after the transpose flags) do not multiply"
        )
    bias = None
    if len(call.inputs) > 2 and np.asarray(call.inputs[2]).size > 0:
        bias = as_float(call.inputs[2])
        if bias.ndim != 1 or bias.shape[0] != b.shape[-1]:
            raise attrs.fail(f"bias must have shape ({b.shape[-1]},), got {bias.shape}")
    if len(call.inputs) > 3 and np.any(np.asarray(call.inputs[3]) != 0):
        raise attrs.fail("a non-zero offset_w (quantized matmul) is not replayed")

    def compute() -> list[np.ndarray]:
        y = np.matmul(a, b)
        return [y if bias is None else y + bias]

    return compute


@register("MatMul", "MatMulV2")
def matmul(call: KernelCall, attrs: Attrs) -> Compute:
    """x1 @ x2 (+ bias) on 2-D matrices."""
    return _matmul(call, attrs, batched=False, broadcast=False)


@register("BatchMatMul")
def batch_matmul(call: KernelCall, attrs: Attrs) -> Compute:
    """Batched x1 @ x2 (+ bias); the batch dims must be equal."""
    return _matmul(call, attrs, batched=True, broadcast=False)


@register("BatchMatMulV2")
def batch_matmul_v2(call: KernelCall, attrs: Attrs) -> Compute:
    """Batched x1 @ x2 (+ bias) with numpy broadcasting of the batch dims."""
    return _matmul(call, attrs, batched=True, broadcast=True)
