"""Float64 replay kernels keyed by GE op type; see `registry` for how a kernel is called.

One module per concern: `conv_pool`, `matmul`, `eltwise`, `norm`, `reduce`, `shape_ops`.
They register themselves when `registry` first needs them.
"""

from __future__ import annotations

from precision_shell.replay.kernels.registry import (
    KernelCall,
    ReplayUnsupported,
    TensorInfo,
    describe_attrs,
    has_kernel,
    kernel_types,
    replay_op,
)

__all__ = [
    "KernelCall",
    "ReplayUnsupported",
    "TensorInfo",
    "describe_attrs",
    "has_kernel",
    "kernel_types",
    "replay_op",
]
