"""Reductions in float64: ReduceSum / ReduceMean / ReduceMax, with the axes as an attribute
(the GE "D" ops, where GE folded TF's constant axes input) or as an int input (GE's and TF's
plain ops). `keep_dims` defaults to False in both op definitions; the axes have no default.

An empty axes list is refused: TF reduces over nothing then, while other conventions (ONNX's
noop_with_empty_axes=0, some GE kernels) reduce over everything, and a replay must not pick.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from precision_shell.replay.kernels.registry import (
    Attrs,
    Compute,
    KernelCall,
    as_float,
    need_inputs,
    register,
)

Reducer = Callable[..., np.ndarray]
_REDUCERS: dict[str, Reducer] = {"Sum": np.sum, "Mean": np.mean, "Max": np.max}
_ATTR_OPS = {"ReduceSumD": "Sum", "ReduceMeanD": "Mean", "ReduceMaxD": "Max"}
_INPUT_OPS = {
    "ReduceSum": "Sum",
    "ReduceMean": "Mean",
    "ReduceMax": "Max",
    "Sum": "Sum",
    "Mean": "Mean",
    "Max": "Max",
}


def _reduce(call: KernelCall, attrs: Attrs, axes: list[int], kind: str) -> Compute:
    x = as_float(call.inputs[0])
    keep = attrs.bool_(("keep_dims", "keepdims"), False)
    if not axes:
        raise attrs.fail("the axes are empty (TF reduces nothing, GE may reduce everything)")
    ndim = max(x.ndim, 1)
    if any(not -ndim <= axis < ndim for axis in axes):
        raise attrs.fail(f"axes {axes} are out of range for {x.ndim}-D x")
    normalised = tuple(sorted({axis % ndim for axis in axes}))
    reducer = _REDUCERS[kind]

    def compute() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(reducer(x, axis=normalised, keepdims=keep), dtype=np.float64)]

    return compute


@register(*_ATTR_OPS)
def reduce_attr_axes(call: KernelCall, attrs: Attrs) -> Compute:
    """Reduce over the required `axes` attribute."""
    need_inputs(call, 1)
    return _reduce(call, attrs, attrs.ints("axes"), _ATTR_OPS[call.op_type])


@register(*_INPUT_OPS)
def reduce_input_axes(call: KernelCall, attrs: Attrs) -> Compute:
    """Reduce over the axes given as the second (int) input; a fused node that carries them
    as an `axes` attribute instead (GE folded the constant) is read the same way."""
    need_inputs(call, 1, 2)
    if len(call.inputs) == 2:
        raw = np.asarray(call.inputs[1])
        if raw.dtype.kind not in "iu":
            raise attrs.fail(f"the axes input must be integers, got {raw.dtype}")
        axes = [int(axis) for axis in raw.reshape(-1)]
        attrs.note("axes (input)", axes)
    else:
        axes = attrs.ints("axes")
    return _reduce(call, attrs, axes, _INPUT_OPS[call.op_type])
