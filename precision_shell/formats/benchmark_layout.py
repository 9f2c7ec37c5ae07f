"""The one rule that brings a device tensor to its benchmark's layout and shape.

`vc` (the compare worker) and `pt`/`cp`/`ni` (tensor_target) both convert through here, so a
tensor reads the same numbers whichever command looks at it.

Precedence, for the original layout and for the original shape alike:
1. what the dump file records (`original_op.format`, `original_shape`);
2. the GE graph's desc of that tensor (`_datadump_origin_format` / `origin_format`,
   `origin_shape`), when the caller found it;
3. for the layout only, a guess from the shapes (layout_guess), when exactly one fits.

Why the dump first: it is written by the runtime together with the very bytes it describes,
so it cannot be out of step with them, while the graph is tied to the dump by op name only
and may come from another build (a stale or wrong `ge_proto` file beside the dump). The graph
fills in what dumps never record (inputs carry no original format), and the result of a
bare dump file (`cp`/`dc` outside a workspace) is the same as inside one whenever the dump
is complete.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from precision_shell.formats.layout_guess import guess_origin_format
from precision_shell.formats.layouts import (
    LayoutError,
    format_name,
    is_plain_format,
    to_origin_layout,
)
from precision_shell.formats.npu_dump import TensorMeta


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def origin_layout(
    meta: TensorMeta,
    device_shape: Sequence[int],
    graph_format: str | None = None,
    graph_shape: Sequence[int] | None = None,
) -> tuple[str | None, tuple[int, ...]]:
    """(original layout, original shape) of a device tensor by the precedence above.

    The layout is None when nothing tells it (a plain tensor then keeps its stored order);
    the shape is () when neither the dump nor the graph gives one.
    """
    shape = tuple(int(d) for d in (meta.original_shape or graph_shape or ()))
    if meta.original_format is not None:
        return format_name(meta.original_format), shape
    if graph_format:
        return graph_format, shape
    if is_plain_format(meta.format) or not shape:
        return None, shape
    return guess_origin_format(format_name(meta.format), tuple(device_shape), shape), shape


def to_benchmark_layout(
    values: np.ndarray,
    meta: TensorMeta,
    graph_format: str | None = None,
    graph_shape: Sequence[int] | None = None,
) -> np.ndarray:
    """`values` (as stored, in `meta`'s device layout) in the original layout and shape.

    A plain tensor whose element count differs from the original shape is returned as stored
    (the compare then slices larger dims down; `cp` reports the counts). Raises LayoutError
    when a device layout's original layout is unknown or the conversion does not fit.
    """
    return to_benchmark_layout_named(values, meta, graph_format, graph_shape)[0]


def to_benchmark_layout_named(
    values: np.ndarray,
    meta: TensorMeta,
    graph_format: str | None = None,
    graph_shape: Sequence[int] | None = None,
) -> tuple[np.ndarray, str]:
    """`to_benchmark_layout`, and the name of the layout the values it returns are in (the
    device's when they are returned as stored)."""
    fmt, shape = origin_layout(meta, values.shape, graph_format, graph_shape)
    device_fmt = format_name(meta.format)
    if not shape:
        return values, device_fmt
    if is_plain_format(device_fmt):
        if values.size != math.prod(shape):
            return values, device_fmt
        target = fmt if fmt is not None and is_plain_format(fmt) else device_fmt
        return to_origin_layout(values, device_fmt, target, shape), target
    if fmt is None:
        raise LayoutError(
            f"{device_fmt} tensor {_shape_text(values.shape)}: its original layout is not "
            f"recorded and the original shape {_shape_text(shape)} fits more than one"
        )
    return to_origin_layout(values, device_fmt, fmt, shape), fmt


def own_elements(
    values: np.ndarray,
    meta: TensorMeta,
    graph_format: str | None = None,
    graph_shape: Sequence[int] | None = None,
) -> np.ndarray:
    """The tensor's own elements, in any order, without a padded device layout's pad lanes
    (NC1HWC0 with C=8 stored in C0=16, FRACTAL_Z, FRACTAL_NZ): what a NaN/inf count or an
    overflow flag reads. A device keeps whatever a kernel left in the pads, which is no value
    of the tensor. A plain layout is returned as stored (nothing to cut, no copy); a padded one
    is converted back. Raises LayoutError as `to_benchmark_layout` does."""
    if is_plain_format(meta.format):
        return values
    return to_benchmark_layout(values, meta, graph_format, graph_shape)
