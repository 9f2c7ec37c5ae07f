"""The numpy kernels of the demo network: float32 benchmark ops and the float16 device kernels.

Device arithmetic follows an AI Core: inputs and constants are float16, the kernel computes in
float32 and the result is rounded to float16, so healthy ops drift by float16 rounding only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

BN_EPSILON = 1e-3


def conv2d_same(x: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """Stride-1 SAME convolution of NHWC `x` with HWCN `filters`, by im2col + one matmul."""
    kh, kw, cin, cout = filters.shape
    n, h, w, _ = x.shape
    padded = np.pad(x, ((0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2), (0, 0)))
    windows = sliding_window_view(padded, (kh, kw), axis=(1, 2))  # N, H, W, C, kh, kw
    columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, kh * kw * cin)
    return (columns @ filters.reshape(kh * kw * cin, cout)).reshape(n, h, w, cout)


def batch_norm(x: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    """Inference-mode batch norm with the moving statistics."""
    factor = params["scale"] / np.sqrt(params["variance"] + np.float32(BN_EPSILON))
    return (x - params["mean"]) * factor + params["offset"]


def max_pool_2x2(x: np.ndarray) -> np.ndarray:
    """2x2 max pooling, stride 2, VALID."""
    n, h, w, c = x.shape
    return x[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the row max for stability."""
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


Kernel = Callable[[Sequence[np.ndarray], dict[str, np.ndarray]], np.ndarray]

KERNELS: dict[str, Kernel] = {
    "Conv2D": lambda x, p: conv2d_same(x[0], p["filter"]),
    "FusedBatchNormV3": lambda x, p: batch_norm(x[0], p),
    "Relu": lambda x, p: np.maximum(x[0], 0),
    "MaxPool": lambda x, p: max_pool_2x2(x[0]),
    "AddV2": lambda x, p: x[0] + x[1],
    "Mean": lambda x, p: x[0].mean(axis=(1, 2), keepdims=True),
    "Reshape": lambda x, p: x[0].reshape(x[0].shape[0], -1),
    "MatMul": lambda x, p: x[0] @ p["weights"],
    "BiasAdd": lambda x, p: x[0] + p["bias"],
    "Softmax": lambda x, p: softmax(x[0]),
    "Mul": lambda x, p: x[0] * p["y"],
    "Square": lambda x, p: x[0] * x[0],
    "Sum": lambda x, p: x[0].sum(axis=tuple(range(1, x[0].ndim))),
}


def run_kernel(
    op_type: str, inputs: Sequence[np.ndarray], params: dict[str, np.ndarray]
) -> np.ndarray:
    """One benchmark op of `op_type` on float32 inputs, in float32."""
    kernel = KERNELS.get(op_type)
    if kernel is None:
        raise ValueError(f"no kernel for op type {op_type}")
    return np.asarray(kernel(inputs, params), dtype=np.float32)


def to_device(value: np.ndarray) -> np.ndarray:
    """Round to float16, as the device stores tensors (inf where the value does not fit)."""
    with np.errstate(over="ignore"):
        return np.asarray(value, dtype=np.float32).astype(np.float16)


def device_conv(
    x16: np.ndarray,
    filter16: np.ndarray,
    bias16: np.ndarray,
    shortcut16: np.ndarray | None,
    relu: bool,
) -> np.ndarray:
    """The fused Conv2D kernel: conv + bias (+ shortcut) (+ relu) in float32, float16 out.

    NaN/inf inputs (a fault upstream) propagate silently, as on the device."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = conv2d_same(x16.astype(np.float32), filter16.astype(np.float32)) + bias16.astype(
            np.float32
        )
        if shortcut16 is not None:
            out = out + shortcut16.astype(np.float32)
        if relu:
            out = np.maximum(out, 0)
    return to_device(out)


def device_matmul(x16: np.ndarray, weights16: np.ndarray, bias16: np.ndarray) -> np.ndarray:
    """The fused MatMulV2 kernel (matmul + bias) in float32, float16 out."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = x16.astype(np.float32) @ weights16.astype(np.float32) + bias16.astype(np.float32)
    return to_device(out)
