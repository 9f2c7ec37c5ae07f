"""Replay of one device op on the CPU in float64, and the kernel's own error.

`replay OP` recomputes a device op from the device's own inputs (as dumped) and the op's GE
attributes, so the difference between the device output and the recomputation is the error
the kernel itself added, separated from the error it inherited from its inputs.

- `kernels`: the registry of float64 replay kernels keyed by GE op type (`replay_op`).
- `chain`: replay of GE-fused ops member by member (`replay_fused`).
- `measure`: the own-error metrics, in ULPs of the device dtype (`own_error`).
"""

from __future__ import annotations
