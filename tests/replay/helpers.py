"""Building KernelCalls in tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from precision_shell.replay.kernels import KernelCall, TensorInfo


def info(
    arr: np.ndarray | tuple[int, ...], fmt: str = "ND", dtype: str = "DT_FLOAT16"
) -> TensorInfo:
    shape = arr if isinstance(arr, tuple) else tuple(np.shape(arr))
    return TensorInfo(dtype, fmt, tuple(int(d) for d in shape))


def call(
    op_type: str,
    inputs: list[np.ndarray],
    out: list[tuple[int, ...]] | None = None,
    attrs: dict[str, Any] | None = None,
    fmts: list[str] | None = None,
    out_fmt: str = "ND",
    out_dtype: str = "DT_FLOAT16",
    name: str = "",
) -> KernelCall:
    fmts = fmts or ["ND"] * len(inputs)
    return KernelCall(
        op_type=op_type,
        attrs=attrs or {},
        inputs=inputs,
        input_info=[info(x, f) for x, f in zip(inputs, fmts, strict=True)],
        output_info=[info(shape, out_fmt, out_dtype) for shape in (out or [])],
        op_name=name,
    )
