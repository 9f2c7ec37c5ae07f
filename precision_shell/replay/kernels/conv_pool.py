"""Conv2D, MaxPool and AvgPool in float64: windows by stride tricks, sums by one matmul.

Everything is computed in NHWC; NCHW inputs are transposed in and the result back out.
Padding follows TF: SAME gives ceil(in / stride) outputs and puts the odd pad at the end.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from precision_shell.replay.kernels.registry import (
    Attrs,
    Compute,
    KernelCall,
    activation_layout,
    as_float,
    input_format,
    need_inputs,
    register,
)

Pads = tuple[int, int, int, int]  # top, bottom, left, right
Strides = tuple[int, int]  # H, W


def _nhwc(x: np.ndarray, layout: str, attrs: Attrs) -> np.ndarray:
    if x.ndim != 4:
        raise attrs.fail(f"input x must be 4-D ({layout}), got shape {x.shape}")
    return x if layout == "NHWC" else x.transpose(0, 2, 3, 1)


def _from_nhwc(y: np.ndarray, layout: str) -> np.ndarray:
    return y if layout == "NHWC" else y.transpose(0, 3, 1, 2)


def _spatial(values: list[int], layout: str, name: str, attrs: Attrs) -> tuple[int, int]:
    """The H and W entries of a 4-int attribute in data_format order; N and C must be 1."""
    h, w = (1, 2) if layout == "NHWC" else (2, 3)
    c = 3 if layout == "NHWC" else 1
    if values[0] != 1 or values[c] != 1:
        raise attrs.fail(
            f"attribute '{name}' {values} moves over N or C ({layout}); only H and W can"
        )
    if values[h] < 1 or values[w] < 1:
        raise attrs.fail(f"attribute '{name}' must be positive, got {values}")
    return values[h], values[w]


def _same_pads(size: int, window: int, stride: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def _explicit_pads(attrs: Attrs, layout: str) -> Pads:
    """GE's `pads` (top, bottom, left, right), else TF's `explicit_paddings` (8 ints)."""
    if attrs.has("pads") or not attrs.has("explicit_paddings"):
        top, bottom, left, right = attrs.ints("pads", 4)
    else:
        pairs = attrs.ints("explicit_paddings", 8)
        h, w = (1, 2) if layout == "NHWC" else (2, 3)
        top, bottom, left, right = pairs[2 * h], pairs[2 * h + 1], pairs[2 * w], pairs[2 * w + 1]
    if min(top, bottom, left, right) < 0:
        raise attrs.fail(f"pads must not be negative, got {[top, bottom, left, right]}")
    return top, bottom, left, right


def _resolve_pads(
    attrs: Attrs,
    layout: str,
    hw: tuple[int, int],
    window: tuple[int, int],
    strides: tuple[int, int],
    allow_explicit: bool,
) -> Pads:
    """The pads of a conv or pool: from `padding` SAME / VALID when the graph has it (that is
    what GE derives `pads` from), else from the explicit `pads`."""
    choices = ("SAME", "VALID", "EXPLICIT") if allow_explicit else ("SAME", "VALID")
    if allow_explicit and not attrs.has("padding"):
        # GE's Conv2D declares `pads` required; `padding` is the TF form it may also keep.
        return _explicit_pads(attrs, layout)
    mode = attrs.str_("padding", choices=choices)
    if mode == "EXPLICIT":
        return _explicit_pads(attrs, layout)
    if mode == "VALID":
        return 0, 0, 0, 0
    top, bottom = _same_pads(hw[0], window[0], strides[0])
    left, right = _same_pads(hw[1], window[1], strides[1])
    attrs.note("pads (from SAME)", [top, bottom, left, right])
    return top, bottom, left, right


def _out_size(size: int, pad: int, window: int, stride: int) -> int:
    return (size + pad - window) // stride + 1


def _windows(
    x: np.ndarray, pads: Pads, window: tuple[int, int], strides: tuple[int, int], fill: float
) -> np.ndarray:
    """View (N, OH, OW, C, wh, ww) of the padded NHWC `x`'s windows."""
    top, bottom, left, right = pads
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    oh = _out_size(x.shape[1], top + bottom, window[0], strides[0])
    ow = _out_size(x.shape[2], left + right, window[1], strides[1])
    view = sliding_window_view(padded, window, axis=(1, 2))
    return view[:, :: strides[0], :: strides[1]][:, :oh, :ow]


def _check_output(
    attrs: Attrs, hw: tuple[int, int], pads: Pads, window: tuple[int, int], strides: Strides
) -> None:
    oh = _out_size(hw[0], pads[0] + pads[1], window[0], strides[0])
    ow = _out_size(hw[1], pads[2] + pads[3], window[1], strides[1])
    if oh < 1 or ow < 1:
        raise attrs.fail(
            f"the {window[0]}x{window[1]} window does not fit the padded "
            f"{hw[0] + pads[0] + pads[1]}x{hw[1] + pads[2] + pads[3]} input"
        )


def _filter_hwio(call: KernelCall, attrs: Attrs) -> np.ndarray:
    """The filter as HWIO (TF's HWCN), from the layout its desc names."""
    w = as_float(call.inputs[1])
    fmt = input_format(call, 1)
    if w.ndim != 4:
        raise attrs.fail(f"filter must be 4-D, got shape {w.shape}")
    attrs.note("filter_format", fmt or "(none)")
    if fmt == "HWCN":
        return w
    if fmt == "NCHW":  # OIHW
        return w.transpose(2, 3, 1, 0)
    if fmt == "NHWC":  # OHWI
        return w.transpose(1, 2, 3, 0)
    raise attrs.fail(f"filter layout {fmt or '(none)'} is not one of HWCN, NCHW, NHWC")


def _optional_input(call: KernelCall, index: int) -> np.ndarray | None:
    if index < len(call.inputs) and np.asarray(call.inputs[index]).size > 0:
        return as_float(call.inputs[index])
    return None


@register("Conv2D")
def conv2d(call: KernelCall, attrs: Attrs) -> Compute:
    """GE Conv2D (x, filter, bias?, offset_w?): strides, pads / padding, dilations, groups."""
    need_inputs(call, 2, 4)
    layout = activation_layout(call, attrs)
    x = _nhwc(as_float(call.inputs[0]), layout, attrs)
    strides = _spatial(attrs.ints("strides", 4), layout, "strides", attrs)
    dilations = _spatial(attrs.ints("dilations", 4, [1, 1, 1, 1]), layout, "dilations", attrs)
    groups = attrs.int_("groups", 1)
    w = _filter_hwio(call, attrs)
    kh, kw, cin_group, cout = w.shape
    channels = x.shape[3]
    if groups < 1 or cin_group * groups != channels or cout % groups:
        raise attrs.fail(
            f"filter {w.shape} (HWIO) with groups={groups} does not fit {channels} input channels"
        )
    window = ((kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1)
    hw = (x.shape[1], x.shape[2])
    pads = _resolve_pads(attrs, layout, hw, window, strides, allow_explicit=True)
    _check_output(attrs, hw, pads, window, strides)
    bias = _optional_input(call, 2)
    if bias is not None and bias.shape != (cout,):
        raise attrs.fail(f"bias must have shape ({cout},), got {bias.shape}")
    offset = _optional_input(call, 3)
    if offset is not None and np.any(offset != 0):
        raise attrs.fail("a non-zero offset_w (quantized conv) is not replayed")

    def compute() -> list[np.ndarray]:
        n = x.shape[0]
        win = _windows(x, pads, window, strides, 0.0)[..., :: dilations[0], :: dilations[1]]
        oh, ow = win.shape[1], win.shape[2]
        # (N, OH, OW, C, kh, kw) -> per group rows of (kh, kw, C/groups), like the HWIO filter:
        # C split and the axes moved on the window view, so the rows are copied out once
        cols = (
            win.reshape(n, oh, ow, groups, cin_group, kh, kw)
            .transpose(3, 0, 1, 2, 5, 6, 4)
            .reshape(groups, n * oh * ow, kh * kw * cin_group)
        )
        per_group = cout // groups
        filters = (
            w.reshape(kh, kw, cin_group, groups, per_group)
            .transpose(3, 0, 1, 2, 4)
            .reshape(groups, kh * kw * cin_group, per_group)
        )
        y = (cols @ filters).transpose(1, 0, 2).reshape(n, oh, ow, cout)
        if bias is not None:
            y = y + bias
        return [_from_nhwc(y, layout)]

    return compute


def _pool_setup(
    call: KernelCall, attrs: Attrs
) -> tuple[str, np.ndarray, tuple[int, int], Strides, Pads]:
    need_inputs(call, 1)
    layout = activation_layout(call, attrs)
    x = _nhwc(as_float(call.inputs[0]), layout, attrs)
    window = _spatial(attrs.ints("ksize", 4), layout, "ksize", attrs)
    strides = _spatial(attrs.ints("strides", 4), layout, "strides", attrs)
    hw = (x.shape[1], x.shape[2])
    pads = _resolve_pads(attrs, layout, hw, window, strides, allow_explicit=False)
    _check_output(attrs, hw, pads, window, strides)
    return layout, x, window, strides, pads


@register("MaxPool")
def max_pool(call: KernelCall, attrs: Attrs) -> Compute:
    """Max over each window; SAME pads never win (they are -inf)."""
    layout, x, window, strides, pads = _pool_setup(call, attrs)

    def compute() -> list[np.ndarray]:
        y = _windows(x, pads, window, strides, -math.inf).max(axis=(-2, -1))
        return [_from_nhwc(y, layout)]

    return compute


@register("AvgPool")
def avg_pool(call: KernelCall, attrs: Attrs) -> Compute:
    """Mean over each window; with SAME the divisor is the count of real (non-pad) elements,
    as TF's AvgPool does."""
    layout, x, window, strides, pads = _pool_setup(call, attrs)

    def compute() -> list[np.ndarray]:
        sums = _windows(x, pads, window, strides, 0.0).sum(axis=(-2, -1))
        ones = np.ones((1, x.shape[1], x.shape[2], 1))
        counts = _windows(ones, pads, window, strides, 0.0).sum(axis=(-2, -1))
        return [_from_nhwc(sums / counts, layout)]

    return compute
