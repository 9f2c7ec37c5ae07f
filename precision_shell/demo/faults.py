"""Fault rules: how each `Fault.kind` changes the demo network or its device run.

A rule hooks in at fixed points: the model itself (visible to the benchmark too), the device's
copy of an op's parameters, the network input the device is fed, and the device's output of the
op that holds the fault. A new kind is one more subclass registered in `FAULT_RULES`.
"""

from __future__ import annotations

import zlib

import numpy as np

from precision_shell.demo.spec import (
    CORRUPT_INPUT,
    FP16_OVERFLOW,
    LOCAL_ERROR,
    NAN_BIRTH,
    WRONG_CONSTANT,
    WRONG_LAYOUT,
    Fault,
)
from precision_shell.errors import PrecisionError

C0 = 16

# The parameter a "wrong constant" corrupts, per benchmark op type.
CONSTANT_PARAMETER: dict[str, str] = {
    "Conv2D": "filter",
    "FusedBatchNormV3": "scale",
    "MatMul": "weights",
    "BiasAdd": "bias",
    "Mul": "y",
}

# Main-path ops an fp16_overflow can scale, and the parameters that scale their output.
OVERFLOW_GAIN_PARAMETERS: dict[str, tuple[str, ...]] = {
    "FusedBatchNormV3": ("scale", "offset"),
    "MatMul": ("weights",),
}

# Benchmark op types the device never computes in a kernel of its own: the feed (Data) and the
# GE-local Reshape; faults of the device op's output cannot sit there.
NO_KERNEL_TYPES = frozenset({"Placeholder", "Reshape"})


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
        """The device op's output when it computes the faulty op (its device dtype)."""
        return value

    def device_input(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        """The network input the device is fed (float32, NHWC)."""
        return value


class WrongConstant(FaultRule):
    """A constant the device uses is mis-scaled per channel (cosine-visible, unlike a uniform
    scale): every other output channel times 1+magnitude, the rest times 1-magnitude. Variant
    "nan": instead a few of its elements (`nan_count`) are NaN and +inf (a weights file that
    was damaged, or an uninitialised buffer)."""

    kind = WRONG_CONSTANT

    def check(self, op_type: str, fault: Fault) -> None:
        _check_variant(fault, ("", "nan"))
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
        if fault.variant == "nan":
            return spoiled(value, fault)
        if value.ndim == 0:
            return (value * np.float32(1.0 + fault.magnitude)).astype(np.float32)
        signs = np.where(np.arange(value.shape[-1]) % 2 == 0, 1.0, -1.0)
        return (value * (1.0 + fault.magnitude * signs)).astype(np.float32)


class Fp16Overflow(FaultRule):
    """The model is scaled so the op's float32 peak is magnitude x 65504.

    A side-branch op gets there through the branch's loss scale; a batch norm or a MatMul on
    the main path through its own parameters (`OVERFLOW_GAIN_PARAMETERS`), as a layer whose
    large gain the next batch norm undoes in float32 would. The model itself is what overflows
    float16, so the benchmark shows the large value and the second device run keeps the
    overflow. The network checks which ops qualify (it knows the side branch).
    """

    kind = FP16_OVERFLOW
    changes_benchmark = True
    fixed_in_second_run = False

    def check(self, op_type: str, fault: Fault) -> None:
        _check_variant(fault, ("",))
        _check_positive(fault)


class WrongLayout(FaultRule):
    """The device op's output is written through a wrong layout conversion: every value is
    right, but in the wrong place (H and W swapped, or channels reversed within C0 blocks)."""

    kind = WRONG_LAYOUT
    variants = ("", "hw", "c0")

    def check(self, op_type: str, fault: Fault) -> None:
        _check_kernel_op(op_type, fault)
        _check_variant(fault, self.variants)

    def device_output(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        variant = fault.variant
        square = value.ndim == 4 and value.shape[1] == value.shape[2]
        if not variant:
            variant = "hw" if square and value.shape[1] > 1 else "c0"
        if variant == "hw":
            if not square:
                raise PrecisionError(
                    f"fault {fault.kind} (hw) needs a square NHWC output at {fault.op}, "
                    f"not shape {value.shape}"
                )
            return np.ascontiguousarray(value.swapaxes(1, 2))
        return np.ascontiguousarray(value[..., c0_block_reversal(value.shape[-1])])


def c0_block_reversal(channels: int) -> np.ndarray:
    """Channel permutation that reverses the order inside each C0 block (the last block holds
    only the real channels, so no padding is pulled in)."""
    index = np.arange(channels)
    start = index // C0 * C0
    end = np.minimum(start + C0, channels)
    return start + end - 1 - index


class LocalError(FaultRule):
    """The device op's output carries a small relative error (rms `magnitude`), as a kernel
    with a slightly wrong approximation would: the op is still close to its benchmark, but it
    degrades the signal by itself."""

    kind = LOCAL_ERROR

    def check(self, op_type: str, fault: Fault) -> None:
        _check_kernel_op(op_type, fault)
        _check_variant(fault, ("",))
        _check_positive(fault)

    def device_output(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(fault.op.encode()))
        noise = rng.standard_normal(value.shape).astype(np.float32)
        with np.errstate(over="ignore"):
            return (value.astype(np.float32) * (1 + np.float32(fault.magnitude) * noise)).astype(
                value.dtype
            )


class NanBirth(FaultRule):
    """A few elements (`nan_count`) of the device op's output become NaN and +inf (alternately,
    spread evenly over the tensor), as a division or log of a value that is zero only in
    float16 gives."""

    kind = NAN_BIRTH

    def check(self, op_type: str, fault: Fault) -> None:
        _check_kernel_op(op_type, fault)
        _check_variant(fault, ("",))

    def device_output(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        return spoiled(value, fault)


def spoiled(value: np.ndarray, fault: Fault) -> np.ndarray:
    """`value` with `nan_count(fault)` elements NaN and +inf (alternately, spread evenly)."""
    count = min(nan_count(fault), value.size)
    positions = np.linspace(0, value.size - 1, count + 2)[1:-1].astype(np.int64)
    out = value.copy().reshape(-1)
    out[positions] = np.where(np.arange(count) % 2 == 0, np.nan, np.inf)
    return out.reshape(value.shape)


def nan_count(fault: Fault) -> int:
    """How many elements a nan_birth fault spoils: round(magnitude), at least one."""
    return max(1, round(fault.magnitude))


class CorruptInput(FaultRule):
    """The network input the device was fed is not the benchmark's: colour channels in the
    other order, the mean not subtracted, or a few elements (`nan_count`) NaN and +inf."""

    kind = CORRUPT_INPUT
    variants = ("", "channels", "mean", "nan")

    def check(self, op_type: str, fault: Fault) -> None:
        if op_type != "Placeholder":
            raise PrecisionError(
                f"fault {fault.kind} hits the network input, not {fault.op} (type {op_type})"
            )
        _check_variant(fault, self.variants)

    def device_input(self, value: np.ndarray, fault: Fault) -> np.ndarray:
        if fault.variant == "mean":
            return (value + np.float32(fault.magnitude)).astype(np.float32)
        if fault.variant == "nan":
            return spoiled(value, fault)
        return np.ascontiguousarray(value[..., ::-1])


def _check_kernel_op(op_type: str, fault: Fault) -> None:
    if op_type in NO_KERNEL_TYPES:
        raise PrecisionError(
            f"fault {fault.kind} cannot hit {fault.op} (type {op_type}): the device runs no "
            "kernel for it"
        )


def _check_positive(fault: Fault) -> None:
    if not fault.magnitude > 0:
        raise PrecisionError(
            f"fault {fault.kind} needs a positive magnitude, got {fault.magnitude}"
        )


def _check_variant(fault: Fault, variants: tuple[str, ...]) -> None:
    if fault.variant in variants:
        return
    if variants == ("",):
        raise PrecisionError(f"fault {fault.kind} takes no variant, got {fault.variant!r}")
    known = ", ".join(repr(v) for v in variants if v)
    raise PrecisionError(
        f"fault {fault.kind} has no variant {fault.variant!r}; choose one of {known}"
    )


FAULT_RULES: dict[str, FaultRule] = {
    rule.kind: rule
    for rule in (
        WrongConstant(),
        Fp16Overflow(),
        WrongLayout(),
        LocalError(),
        NanBirth(),
        CorruptInput(),
    )
}


def fault_rule(fault: Fault) -> FaultRule:
    """The rule for `fault.kind`; PrecisionError for an unknown kind."""
    rule = FAULT_RULES.get(fault.kind)
    if rule is None:
        known = ", ".join(sorted(FAULT_RULES))
        raise PrecisionError(f"unknown demo fault kind {fault.kind!r}; choose one of {known}")
    return rule
