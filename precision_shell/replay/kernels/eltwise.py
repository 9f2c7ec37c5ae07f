"""Element-wise kernels in float64: binary ops with numpy broadcasting, BiasAdd, Muls / Adds,
activations and unary math. IEEE special values propagate as numpy computes them (x / 0 is
inf, log of a negative is NaN) without warnings: a replay reports them, it does not fail."""

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

Unary = Callable[[np.ndarray], np.ndarray]
Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _quiet(fn: Callable[[], np.ndarray]) -> Compute:
    def compute() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [np.asarray(fn(), dtype=np.float64)]

    return compute


_BINARY: dict[str, Binary] = {
    "Add": np.add,
    "AddV2": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "RealDiv": np.divide,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
}


@register(*_BINARY)
def binary(call: KernelCall, attrs: Attrs) -> Compute:
    """x1 (op) x2 with numpy (= TF) broadcasting."""
    need_inputs(call, 2)
    a, b = as_float(call.inputs[0]), as_float(call.inputs[1])
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise attrs.fail(f"shapes {a.shape} and {b.shape} do not broadcast") from None
    op = _BINARY[call.op_type]
    return _quiet(lambda: op(a, b))


@register("BiasAdd")
def bias_add(call: KernelCall, attrs: Attrs) -> Compute:
    """x + bias along the channel axis: the last one for NHWC / NDHWC, axis 1 for NCHW /
    NCDHW. data_format defaults to NHWC in both GE's and TF's BiasAdd definitions."""
    need_inputs(call, 2)
    fmt = attrs.str_("data_format", "NHWC", choices=("NHWC", "NCHW", "NDHWC", "NCDHW"))
    x, bias = as_float(call.inputs[0]), as_float(call.inputs[1]).reshape(-1)
    axis = 1 if fmt.startswith("NC") and x.ndim >= 2 else x.ndim - 1
    if x.ndim < 1 or x.shape[axis] != bias.size:
        raise attrs.fail(
            f"bias of {bias.size} values does not match axis {axis} of x {x.shape} ({fmt})"
        )
    shape = [1] * x.ndim
    shape[axis] = bias.size
    return _quiet(lambda: x + bias.reshape(shape))


@register("Muls")
def muls(call: KernelCall, attrs: Attrs) -> Compute:
    """x * value (GE: `value` is a required attribute)."""
    need_inputs(call, 1)
    value = attrs.float_("value")
    x = as_float(call.inputs[0])
    return _quiet(lambda: x * value)


@register("Adds")
def adds(call: KernelCall, attrs: Attrs) -> Compute:
    """x + value (GE: `value` is a required attribute)."""
    need_inputs(call, 1)
    value = attrs.float_("value")
    x = as_float(call.inputs[0])
    return _quiet(lambda: x + value)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) without overflow for large |x|."""
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """Ascend's Gelu is the tanh approximation, written as a sigmoid:
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = x / (1 + exp(-sqrt(8/pi) (x + 0.044715 x^3)))."""
    inner = np.sqrt(8.0 / np.pi) * (x + 0.044715 * x**3)
    return x * sigmoid(inner)


_UNARY: dict[str, Unary] = {
    "Relu": lambda x: np.maximum(x, 0.0),  # NaN stays NaN
    "Relu6": lambda x: np.clip(x, 0.0, 6.0),
    "Sigmoid": sigmoid,
    "Tanh": np.tanh,
    "Gelu": gelu_tanh,
    "Square": np.square,
    "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
    "Exp": np.exp,
    "Log": np.log,
}


@register(*_UNARY)
def unary(call: KernelCall, attrs: Attrs) -> Compute:
    """An attribute-free element-wise function of x."""
    need_inputs(call, 1)
    x = as_float(call.inputs[0])
    fn = _UNARY[call.op_type]
    return _quiet(lambda: fn(x))


@register("LeakyRelu")
def leaky_relu(call: KernelCall, attrs: Attrs) -> Compute:
    """x if x > 0 else slope * x.

    The slope is GE's `negative_slope` or TF's `alpha`. With neither on the node the default is
    GE's: REG_OP(LeakyRelu) declares `.ATTR(negative_slope, Float, 0.0)` (nonlinear_fuc_ops.h),
    and the device ran GE's op with GE's default. TF's op def defaults alpha to 0.2, which is
    why a LeakyRelu *member* of a fused op (a TF op whose attrs GE dropped) is not replayed."""
    need_inputs(call, 1)
    slope = attrs.float_(("negative_slope", "alpha"), 0.0)
    x = as_float(call.inputs[0])
    return _quiet(lambda: np.where(x > 0, x, slope * x))


@register("Swish")
def swish(call: KernelCall, attrs: Attrs) -> Compute:
    """x * sigmoid(scale * x); GE's Swish declares `.ATTR(scale, Float, 1.0)`."""
    need_inputs(call, 1)
    scale = attrs.float_("scale", 1.0)
    x = as_float(call.inputs[0])
    return _quiet(lambda: x * sigmoid(scale * x))
