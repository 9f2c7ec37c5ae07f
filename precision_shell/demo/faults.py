"""Fault rules: how each `Fault.kind` changes the demo network or its device run.

A rule hooks in at fixed points: the model itself (visible to the benchmark too), the device's
copy of an op's parameters, and the device's output of the op that holds the fault. New kinds
(wrong layout conversion, NaN birth, corrupted input...) are one more subclass registered in
`FAULT_RULES`.
"""

from __future__ import annotations

import numpy as np

from precision_shell.demo.spec import FP16_OVERFLOW, WRONG_CONSTANT, Fault
from precision_shell.errors import PrecisionError

# The parameter a "wrong constant" corrupts, per benchmark op type.
CONSTANT_PARAMETER: dict[str, str] = {
    "Conv2D": "filter",
    "FusedBatchNormV3": "scale",
    "MatMul": "weights",
    "BiasAdd": "bias",
    "Mul": "y",
}


class FaultRule:
    """The default rule changes nothing; subclasses override the hooks they need."""

    kind = ""
    # True when the defect is part of the model (the float32 benchmark shows it too).
    changes_benchmark = False
    # True when the second device run (debug_1) runs without this fault.
    fixed_in_second_run = True

    def check(self, op_type: str, fault: Fault) -> None:
        """Raise PrecisionError when this fault cannot hit an op of `op_type`."""

    def device_parameter(
        self, name: str, value: np.ndarray, op_type: str, fault: Fault
    ) -> np.ndarray:
        """The device's copy of parameter `name` of the faulty op."""
        return value

    def device_output(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        """The device op's output when it computes the faulty op (float16)."""
        return value


class WrongConstant(FaultRule):
    """A constant the device uses is mis-scaled per channel (cosine-visible, unlike a uniform
    scale): every other output channel times 1+magnitude, the rest times 1-magnitude."""

    kind = WRONG_CONSTANT

    def check(self, op_type: str, fault: Fault) -> None:
        if op_type not in CONSTANT_PARAMETER:
            known = ", ".join(sorted(CONSTANT_PARAMETER))
            raise PrecisionError(
                f"fault {fault.kind} cannot hit {fault.op} (type {op_type}); it needs one of {known}"
            )

    def device_parameter(
        self, name: str, value: np.ndarray, op_type: str, fault: Fault
    ) -> np.ndarray:
        if name != CONSTANT_PARAMETER[op_type]:
            return value
        if value.ndim == 0:
            return (value * np.float32(1.0 + fault.magnitude)).astype(np.float32)
        signs = np.where(np.arange(value.shape[-1]) % 2 == 0, 1.0, -1.0)
        return (value * (1.0 + fault.magnitude * signs)).astype(np.float32)


class Fp16Overflow(FaultRule):
    """The network's side-branch scale is set so the op's float32 peak is magnitude x 65504.

    The model itself is what overflows float16, so the benchmark shows the large value and the
    second device run keeps the overflow.
    """

    kind = FP16_OVERFLOW
    changes_benchmark = True
    fixed_in_second_run = False


FAULT_RULES: dict[str, FaultRule] = {rule.kind: rule for rule in (WrongConstant(), Fp16Overflow())}


def fault_rule(fault: Fault) -> FaultRule:
    """The rule for `fault.kind`; PrecisionError for an unknown kind."""
    rule = FAULT_RULES.get(fault.kind)
    if rule is None:
        known = ", ".join(sorted(FAULT_RULES))
        raise PrecisionError(f"unknown demo fault kind {fault.kind!r}; choose one of {known}")
    return rule
