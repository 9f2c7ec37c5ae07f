"""Normalisations in float64: SoftmaxV2 / LogSoftmaxV2, LayerNorm and inference batch norm.

Defaults come from the op definitions: GE's SoftmaxV2 / LogSoftmaxV2 `axes` {-1}; GE's
LayerNorm begin_norm_axis 0, begin_params_axis 0, epsilon 1e-7 (REG_OP(LayerNorm),
nn_norm_ops.h); GE's BatchNorm and TF's FusedBatchNorm* epsilon 0.0001, data_format "NHWC",
is_training *true* (REG_OP(BatchNorm), nn_batch_norm_ops.h; TF's op def) -- so a batch norm
whose node does not say is_training=False is a training-mode one and is not replayed; BNInfer's
epsilon is required (`.REQUIRED_ATTR(epsilon, Float)`). TF's Softmax / LogSoftmax have no
attributes and always work on the last axis, which is what the `axes` default gives.
"""

from __future__ import annotations

import numpy as np

from precision_shell.replay.kernels.registry import (
    Attrs,
    Compute,
    KernelCall,
    as_float,
    input_format,
    need_inputs,
    register,
)


def _axes(attrs: Attrs, values: list[int], ndim: int, name: str) -> tuple[int, ...]:
    if not values:
        raise attrs.fail(f"attribute '{name}' is empty")
    for axis in values:
        if not -ndim <= axis < ndim:
            raise attrs.fail(f"attribute '{name}' {values} is out of range for {ndim}-D x")
    return tuple(sorted({axis % ndim for axis in values}))


def _softmax(call: KernelCall, attrs: Attrs, log: bool) -> Compute:
    need_inputs(call, 1)
    x = as_float(call.inputs[0])
    axes = _axes(attrs, attrs.ints("axes", default=[-1]), x.ndim, "axes")

    def compute() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            shifted = x - x.max(axis=axes, keepdims=True)
            total = np.exp(shifted).sum(axis=axes, keepdims=True)
            y = shifted - np.log(total) if log else np.exp(shifted) / total
        return [y]

    return compute


@register("SoftmaxV2", "Softmax")
def softmax(call: KernelCall, attrs: Attrs) -> Compute:
    """exp(x - max) / sum(exp(x - max)) over `axes`."""
    return _softmax(call, attrs, log=False)


@register("LogSoftmaxV2", "LogSoftmax")
def log_softmax(call: KernelCall, attrs: Attrs) -> Compute:
    """(x - max) - log(sum(exp(x - max))) over `axes`."""
    return _softmax(call, attrs, log=True)


@register("LayerNorm")
def layer_norm(call: KernelCall, attrs: Attrs) -> Compute:
    """y = (x - mean) / sqrt(variance + epsilon) * gamma + beta over the axes from
    begin_norm_axis on; gamma and beta span the axes from begin_params_axis on. Outputs y,
    mean, variance (biased), as many as the graph lists; mean and variance keep the reduced
    axes as 1s, as GE's do."""
    need_inputs(call, 3)
    x = as_float(call.inputs[0])
    norm_axis = attrs.int_("begin_norm_axis", 0)
    params_axis = attrs.int_("begin_params_axis", 0)
    epsilon = attrs.float_("epsilon", 1e-7)
    for name, axis in (("begin_norm_axis", norm_axis), ("begin_params_axis", params_axis)):
        if not -x.ndim <= axis < x.ndim:
            raise attrs.fail(f"attribute '{name}' {axis} is out of range for {x.ndim}-D x")
    axes = tuple(range(norm_axis % x.ndim, x.ndim))
    params_shape = x.shape[params_axis % x.ndim :]
    gamma, beta = as_float(call.inputs[1]), as_float(call.inputs[2])
    for name, value in (("gamma", gamma), ("beta", beta)):
        if value.size != int(np.prod(params_shape)):
            raise attrs.fail(f"{name} {value.shape} does not match x's dims {params_shape}")
    gamma, beta = gamma.reshape(params_shape), beta.reshape(params_shape)
    count = max(len(call.output_info), 1)

    def compute() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            mean = x.mean(axis=axes, keepdims=True)
            variance = np.square(x - mean).mean(axis=axes, keepdims=True)
            y = (x - mean) / np.sqrt(variance + epsilon) * gamma + beta
        return [y, mean, variance][:count]

    return compute


def _channel_axis(attrs: Attrs, fmt: str, ndim: int) -> int:
    if fmt in ("NHWC", "NDHWC") or ndim == 2:
        return ndim - 1
    if fmt in ("NCHW", "NCDHW"):
        return 1
    raise attrs.fail(f"x's layout {fmt or '(none)'} does not say where the channels are")


def _batch_norm(call: KernelCall, attrs: Attrs, fmt: str, epsilon: float) -> Compute:
    x = as_float(call.inputs[0])
    axis = _channel_axis(attrs, fmt, x.ndim)
    channels = x.shape[axis]
    params = [as_float(value).reshape(-1) for value in call.inputs[1:5]]
    for name, value in zip(("scale", "offset", "mean", "variance"), params, strict=True):
        if value.size != channels:
            raise attrs.fail(f"{name} has {value.size} values, x has {channels} channels")
    scale, offset, mean, variance = params
    shape = [1] * x.ndim
    shape[axis] = channels
    count = max(len(call.output_info), 1)
    if count > 5:
        attrs.note("reserve_space_3", "not replayed (NaN)")

    def compute() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            factor = (scale / np.sqrt(variance + epsilon)).reshape(shape)
            y = (x - mean.reshape(shape)) * factor + offset.reshape(shape)
        # Inference passes the moving statistics through: batch_mean / reserve_space_1 are
        # the mean input, batch_variance / reserve_space_2 the variance input.
        extra = [mean, variance, mean, variance]
        outputs = [y, *extra[: count - 1]]
        for index in range(5, count):
            outputs.append(np.full(call.output_info[index].shape, np.nan))
        return outputs

    return compute


@register("BNInfer")
def bn_infer(call: KernelCall, attrs: Attrs) -> Compute:
    """GE's inference batch norm. It has no data_format attribute: the channel axis comes from
    x's layout in input_info."""
    need_inputs(call, 5)
    epsilon = attrs.float_("epsilon")
    return _batch_norm(call, attrs, input_format(call, 0), epsilon)


@register("BatchNorm", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def batch_norm(call: KernelCall, attrs: Attrs) -> Compute:
    """Inference batch norm with the moving mean / variance inputs; training mode (batch
    statistics computed by the kernel, running averages updated) is not replayed."""
    need_inputs(call, 5)
    fmt = attrs.str_("data_format", "NHWC", choices=("NHWC", "NCHW", "NDHWC", "NCDHW"))
    epsilon = attrs.float_("epsilon", 0.0001)
    if attrs.bool_("is_training", True):
        raise attrs.fail(
            "is_training is True (also the op definition's default when absent); "
            "training-mode batch norm is not replayed"
        )
    return _batch_norm(call, attrs, fmt, epsilon)
