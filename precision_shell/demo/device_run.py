"""The device run: executes a `DevicePlan` op by op in float16, streaming.

Values are kept in their benchmark layout (NHWC, ND, HWCN); the writer lays each tensor out in
its desc's device layout. A value is dropped once its last consumer ran, so a large network
never holds more than a few activations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from precision_shell.demo.device_ops import DeviceOp, DevicePlan
from precision_shell.demo.kernels import device_conv, device_matmul, to_device
from precision_shell.demo.network import Network
from precision_shell.errors import PrecisionError


@dataclass
class DeviceStep:
    """One executed op with its input and output values (benchmark layouts)."""

    op: DeviceOp
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


class _Constants:
    """The device constants of one run, computed once per fused group."""

    def __init__(self, net: Network, faulty: bool) -> None:
        self.net = net
        self.faulty = faulty
        self.cache: dict[tuple[str, ...], dict[str, np.ndarray]] = {}

    def value(self, op: DeviceOp) -> np.ndarray:
        group = self.cache.get(op.members)
        if group is None:
            first = op.members[0]
            first_type = self.net.op_by_name[first].type
            if first_type == "Conv2D":
                filters, bias = self.net.folded_conv(first, op.members[1], self.faulty)
                group = {"filter": filters, "bias": bias}
            elif first_type == "Mul":
                # The float32 head's feature scale stays float32.
                group = {"y": self.net.device_parameters(first, self.faulty)["y"]}
            else:
                second = op.members[1]
                weights, bias = self.net.dense_constants(first, second, self.faulty)
                group = {"weights": weights, "bias": bias}
            # a planted NaN constant is meant to be there; any other nonfinite is an overflow
            planted = any(
                fault.op in op.members and fault.variant == "nan"
                for fault, _ in self.net.active_faults(self.faulty)
            )
            for role, value in group.items():
                if not planted and not np.isfinite(value).all():
                    raise PrecisionError(
                        f"the device's {role} constant of {first} does not fit float16 "
                        "(a fault magnitude too large for this network?)"
                    )
            self.cache[op.members] = group
        return group[op.const_role]


def run_device(net: Network, plan: DevicePlan, faulty: bool = True) -> Iterator[DeviceStep]:
    """Every op of `plan` in execution order with its values; `faulty=False` is the run with
    the fixable faults removed (the second device run)."""
    net.calibrate()
    constants = _Constants(net, faulty)
    remaining: dict[tuple[str, int], int] = {}
    for op in plan.ops:
        for edge in op.data_inputs:
            remaining[edge] = remaining.get(edge, 0) + 1
    values: dict[tuple[str, int], np.ndarray] = {}
    for op in plan.ops:
        inputs = [values[edge] for edge in op.data_inputs]
        outputs = [_compute(net, op, inputs, constants, faulty)]
        for edge in op.data_inputs:
            remaining[edge] -= 1
            if remaining[edge] == 0:
                del values[edge]
        if remaining.get((op.name, 0)):
            values[(op.name, 0)] = outputs[0]
        yield DeviceStep(op, inputs, outputs)


def _compute(
    net: Network, op: DeviceOp, inputs: list[np.ndarray], constants: _Constants, faulty: bool
) -> np.ndarray:
    if op.kind == "data":
        return net.device_input(faulty)
    if op.kind == "const":
        return constants.value(op)
    if op.kind == "cast":
        if op.output_descs[0].dtype == "DT_FLOAT":
            return inputs[0].astype(np.float32)
        return to_device(inputs[0])
    if op.kind == "transdata":
        return inputs[0]
    if op.kind == "reshape":
        return inputs[0].reshape(op.output_descs[0].origin_shape)
    if op.kind == "conv":
        relu = net.op_by_name[op.members[-1]].type == "Relu"
        shortcut = inputs[3] if len(inputs) > 3 else None
        out = device_conv(inputs[0], inputs[1], inputs[2], shortcut, relu)
        return net.device_output(op.members, out, faulty)
    if op.kind == "matmul":
        return net.device_output(op.members, device_matmul(*inputs), faulty)
    if op.kind == "chain":
        float32_out = op.output_descs[0].dtype == "DT_FLOAT"
        return net.device_chain(op.members, inputs, faulty, float32_out)
    raise ValueError(f"device op {op.name} has unknown kind {op.kind}")
