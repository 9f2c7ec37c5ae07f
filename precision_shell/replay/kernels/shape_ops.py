"""Ops that move or convert values without arithmetic: Cast, TransData, transposes, reshapes
and concatenation. They are replayed so that a wrong layout or a wrong cast on the device shows
as an own error like any other kernel's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from precision_shell.formats.layouts import (
    LayoutError,
    from_origin_layout,
    is_plain_format,
    to_origin_layout,
)
from precision_shell.replay.kernels.registry import (
    Attrs,
    Compute,
    KernelCall,
    as_float,
    need_inputs,
    out_dtype,
    register,
)
from precision_shell.replay.measure import FLOAT_TYPES

_INT_TYPES: dict[str, Any] = {
    "DT_INT8": np.int8,
    "DT_UINT8": np.uint8,
    "DT_INT16": np.int16,
    "DT_UINT16": np.uint16,
    "DT_INT32": np.int32,
    "DT_UINT32": np.uint32,
    "DT_INT64": np.int64,
    "DT_UINT64": np.uint64,
}


def _cast_value(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype in FLOAT_TYPES:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(x).astype(FLOAT_TYPES[dtype]).astype(np.float64)
    if dtype == "DT_BOOL":
        return (np.asarray(x) != 0).astype(np.float64)
    target = np.dtype(_INT_TYPES[dtype])
    if np.asarray(x).dtype.kind in "iub":
        # Integer to integer keeps the low bits (two's complement), as TF's static_cast does.
        return np.asarray(x).astype(target).astype(np.float64)
    info = np.iinfo(target)
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(as_float(x))
        # Out of range and NaN have no defined result (a C++ float-to-int cast is UB there):
        # NaN, so the comparison flags the element instead of passing a guess.
        fits = (truncated >= info.min) & (truncated <= info.max)
    return np.where(fits, truncated, np.nan)


@register("Cast")
def cast(call: KernelCall, attrs: Attrs) -> Compute:
    """The value the cast to output_info[0].dtype should produce, as float64: floats rounded
    to the target type (to nearest even, overflow to inf), float to int truncated toward zero
    as TF does, anything to bool as x != 0."""
    need_inputs(call, 1)
    dtype = out_dtype(call)
    if dtype not in FLOAT_TYPES and dtype not in _INT_TYPES and dtype != "DT_BOOL":
        raise attrs.fail(f"output dtype {dtype or '(none)'} is not replayed")
    attrs.note("dst_type (output desc)", dtype)
    x = call.inputs[0]
    return lambda: [_cast_value(x, dtype)]


@register("TransData")
def trans_data(call: KernelCall, attrs: Attrs) -> Compute:
    """Layout conversion from input_info[0].format to output_info[0].format, by
    `precision_shell.formats.layouts` (device layouts on either side, pads zero-filled)."""
    need_inputs(call, 1)
    if not call.input_info or not call.output_info:
        raise attrs.fail("the input and output descs are needed to know the two layouts")
    src, dst = call.input_info[0], call.output_info[0]
    attrs.note("src_format (input desc)", src.format)
    attrs.note("dst_format (output desc)", dst.format)
    if not is_plain_format(dst.format) and not is_plain_format(src.format):
        raise attrs.fail(f"{src.format} to {dst.format}: both sides are device layouts")
    x = np.asarray(call.inputs[0])

    def compute() -> list[np.ndarray]:
        try:
            if is_plain_format(dst.format):
                y = to_origin_layout(x, src.format, dst.format, dst.shape)
            else:
                c0 = dst.shape[-1] if dst.shape else 16
                y = from_origin_layout(x, dst.format, src.format, c0=c0)
        except LayoutError as err:
            raise attrs.fail(str(err)) from None
        return [as_float(y)]

    return compute


def _perm(attrs: Attrs, perm: list[int], ndim: int) -> list[int]:
    if sorted(axis % ndim if -ndim <= axis < ndim else -1 for axis in perm) != list(range(ndim)):
        raise attrs.fail(f"perm {perm} is not a permutation of the {ndim} axes of x")
    return [axis % ndim for axis in perm]


@register("TransposeD")
def transpose_d(call: KernelCall, attrs: Attrs) -> Compute:
    """x transposed by the required `perm` attribute."""
    need_inputs(call, 1)
    x = as_float(call.inputs[0])
    perm = _perm(attrs, attrs.ints("perm"), x.ndim)
    return lambda: [x.transpose(perm)]


@register("Transpose")
def transpose(call: KernelCall, attrs: Attrs) -> Compute:
    """x transposed by the perm given as the second (int) input."""
    need_inputs(call, 2)
    x = as_float(call.inputs[0])
    raw = [int(axis) for axis in np.asarray(call.inputs[1]).reshape(-1)]
    attrs.note("perm (input)", raw)
    perm = _perm(attrs, raw, x.ndim)
    return lambda: [x.transpose(perm)]


@register("Reshape", "Squeeze", "ExpandDims", "Unsqueeze", "Flatten")
def reshape(call: KernelCall, attrs: Attrs) -> Compute:
    """x in the shape of output_info[0] (shape / axis inputs and attributes only restate it;
    element order is unchanged, so the desc is the one source of the new shape)."""
    need_inputs(call, 1, 2)
    if not call.output_info:
        raise attrs.fail("the output desc is needed for the new shape")
    x = as_float(call.inputs[0])
    shape = tuple(call.output_info[0].shape)
    if int(np.prod(shape)) != x.size:
        raise attrs.fail(f"x has {x.size} elements, the output shape {shape} does not")
    attrs.note("shape (output desc)", list(shape))
    return lambda: [x.reshape(shape)]


def _concat(call: KernelCall, attrs: Attrs, parts: list[np.ndarray], axis: int) -> Compute:
    ndim = parts[0].ndim
    if not -ndim <= axis < ndim:
        raise attrs.fail(f"concat axis {axis} is out of range for {ndim}-D inputs")
    axis %= ndim
    for part in parts[1:]:
        if part.ndim != ndim or any(
            a != b
            for i, (a, b) in enumerate(zip(part.shape, parts[0].shape, strict=True))
            if i != axis
        ):
            raise attrs.fail(
                f"inputs {parts[0].shape} and {part.shape} differ off the concat axis {axis}"
            )
    return lambda: [np.concatenate(parts, axis=axis)]


@register("ConcatV2D", "ConcatD")
def concat_d(call: KernelCall, attrs: Attrs) -> Compute:
    """The N inputs joined along the required `concat_dim` attribute."""
    need_inputs(call, 1, 1 << 16)
    axis = attrs.int_("concat_dim")
    return _concat(call, attrs, [as_float(part) for part in call.inputs], axis)


@register("ConcatV2")
def concat_v2(call: KernelCall, attrs: Attrs) -> Compute:
    """TF's ConcatV2: the values, then the axis as the last (int) input."""
    need_inputs(call, 2, 1 << 16)
    raw = np.asarray(call.inputs[-1])
    if raw.size != 1 or raw.dtype.kind not in "iu":
        raise attrs.fail(f"the last input must be the int axis, got {raw.dtype} {raw.shape}")
    attrs.note("axis (input)", int(raw.reshape(-1)[0]))
    parts = [as_float(part) for part in call.inputs[:-1]]
    return _concat(call, attrs, parts, int(raw.reshape(-1)[0]))
