"""The demo network: a small residual CNN computed in numpy, TF-style names, NHWC.

Owns the benchmark ops (names, types, edges), their seeded weights, the float32 benchmark
forward pass (which also calibrates the batch-norm statistics, the side-branch scale and the
gain of an overflowing layer from the data, as training would have), and the device's float16
constants, input and fused-chain evaluation, with the fault rules applied to the device's copy
of the parameters, its input and its outputs. The numeric kernels themselves live in `kernels`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from precision_shell.demo.faults import OVERFLOW_GAIN_PARAMETERS, FaultRule, fault_rule
from precision_shell.demo.kernels import BN_EPSILON, run_kernel, to_device
from precision_shell.demo.spec import FP16_OVERFLOW, Fault, NetworkShape
from precision_shell.errors import PrecisionError

FP16_MAX = 65504.0
# With no overflow fault the side branch peaks at this fraction of the float16 maximum.
HEALTHY_SIDE_RATIO = 0.05
# The per-channel feature scale of the float32 head (DemoSpec.fp32_head).
HEAD_SCALE = "head/mul"
# Deep TF scopes are what make real fused-op names pass 255 characters.
LONG_SCOPE = (
    "training/regularization_losses/classifier_head_and_backbone_l2_regularizer/"
    "weight_decay_applied_to_conv_kernels_of_every_residual_unit_before_the_optimizer_step"
)


@dataclass(frozen=True)
class BenchOp:
    """One benchmark (TensorFlow) op; `inputs` are the ops whose output 0 it reads."""

    name: str
    type: str
    inputs: tuple[str, ...] = ()

    @property
    def tensor_name(self) -> str:
        """The TF name of output 0 ("dense/BiasAdd:0")."""
        return f"{self.name}:0"


def block_prefix(block: int) -> str:
    """Scope of residual block `block`: the first keeps the plain names conv2/bn2/..."""
    return "" if block == 0 else f"block{block}/"


def benchmark_ops(shape: NetworkShape) -> tuple[BenchOp, ...]:
    """The benchmark ops in execution order."""
    ops = [
        BenchOp("input", "Placeholder"),
        BenchOp("conv1/Conv2D", "Conv2D", ("input",)),
        BenchOp("bn1/FusedBatchNormV3", "FusedBatchNormV3", ("conv1/Conv2D",)),
        BenchOp("relu1/Relu", "Relu", ("bn1/FusedBatchNormV3",)),
        BenchOp("pool1/MaxPool", "MaxPool", ("relu1/Relu",)),
    ]
    previous = "pool1/MaxPool"
    for block in range(shape.blocks):
        p = block_prefix(block)
        ops += [
            BenchOp(f"{p}conv2/Conv2D", "Conv2D", (previous,)),
            BenchOp(f"{p}bn2/FusedBatchNormV3", "FusedBatchNormV3", (f"{p}conv2/Conv2D",)),
            BenchOp(f"{p}relu2/Relu", "Relu", (f"{p}bn2/FusedBatchNormV3",)),
            BenchOp(f"{p}conv3/Conv2D", "Conv2D", (f"{p}relu2/Relu",)),
            BenchOp(f"{p}bn3/FusedBatchNormV3", "FusedBatchNormV3", (f"{p}conv3/Conv2D",)),
            BenchOp(f"{p}res/add", "AddV2", (f"{p}bn3/FusedBatchNormV3", previous)),
            BenchOp(f"{p}relu3/Relu", "Relu", (f"{p}res/add",)),
        ]
        previous = f"{p}relu3/Relu"
    ops += side_branch_ops(shape, previous)
    ops.append(BenchOp("global_pool/Mean", "Mean", (previous,)))
    features = "global_pool/Mean"
    if shape.fp32_head:
        ops.append(BenchOp(HEAD_SCALE, "Mul", (features,)))
        features = HEAD_SCALE
    ops += [
        BenchOp("flatten/Reshape", "Reshape", (features,)),
        BenchOp("dense/MatMul", "MatMul", ("flatten/Reshape",)),
        BenchOp("dense/BiasAdd", "BiasAdd", ("dense/MatMul",)),
        BenchOp("softmax/Softmax", "Softmax", ("dense/BiasAdd",)),
    ]
    return tuple(ops)


def side_branch_ops(shape: NetworkShape, source: str) -> list[BenchOp]:
    """The loss-scaled L2 term of the features: a leaf chain nothing on the main path reads."""
    ops = [
        BenchOp("l2_loss/scaled", "Mul", (source,)),
        BenchOp("l2_loss/Square", "Square", ("l2_loss/scaled",)),
        BenchOp("l2_loss/Sum", "Sum", ("l2_loss/Square",)),
    ]
    if shape.long_name_op:
        ops += [
            BenchOp(f"{LONG_SCOPE}/half", "Mul", ("l2_loss/Sum",)),
            BenchOp(f"{LONG_SCOPE}/weight_decay", "Mul", (f"{LONG_SCOPE}/half",)),
        ]
    return ops


class Network:
    """The demo network: ops, weights, the benchmark pass and the device kernels."""

    def __init__(self, shape: NetworkShape, seed: int = 0, faults: Sequence[Fault] = ()) -> None:
        self.shape = shape
        self.seed = seed
        self.ops = benchmark_ops(shape)
        self.op_by_name = {op.name: op for op in self.ops}
        self.side_branch = tuple(op.name for op in side_branch_ops(shape, ""))
        self.faults = tuple(faults)
        self._rules: list[tuple[Fault, FaultRule]] = []
        for fault in self.faults:
            rule = fault_rule(fault)
            op = self.op_by_name.get(fault.op)
            if op is None:
                raise PrecisionError(
                    f"fault {fault.kind} names op {fault.op!r}, not in the demo network"
                )
            if (
                fault.kind == FP16_OVERFLOW
                and fault.op not in self.side_branch
                and op.type not in OVERFLOW_GAIN_PARAMETERS
            ):
                raise PrecisionError(
                    f"fault {fault.kind} must hit a side-branch op ({', '.join(self.side_branch)}) "
                    f"or a {' or '.join(OVERFLOW_GAIN_PARAMETERS)} op, not {fault.op!r}"
                )
            rule.check(op.type, fault)
            self._rules.append((fault, rule))
        # Main-path ops whose gain is calibrated to overflow float16 (model faults).
        self._overflow_gains = {
            fault.op: fault
            for fault in self.faults
            if fault.kind == FP16_OVERFLOW and fault.op not in self.side_branch
        }
        rng = np.random.default_rng([seed, 0])
        self.input_value = rng.standard_normal(
            (shape.batch, shape.spatial, shape.spatial, shape.in_channels)
        ).astype(np.float32)
        self.params: dict[str, dict[str, np.ndarray]] = {}
        self._init_params()
        self.calibrated = False

    def output_shapes(self) -> dict[str, tuple[int, ...]]:
        """The benchmark output shape of every op, without running the network."""
        s = self.shape
        shapes: dict[str, tuple[int, ...]] = {}
        for op in self.ops:
            x = (
                shapes[op.inputs[0]]
                if op.inputs
                else (s.batch, s.spatial, s.spatial, s.in_channels)
            )
            if op.type == "Conv2D":
                x = (*x[:3], s.channels)
            elif op.type == "MaxPool":
                x = (x[0], x[1] // 2, x[2] // 2, x[3])
            elif op.type == "Mean":
                x = (x[0], 1, 1, x[3])
            elif op.type == "Reshape":
                x = (x[0], x[1] * x[2] * x[3])
            elif op.type == "MatMul":
                x = (x[0], s.classes)
            elif op.type == "Sum":
                x = (x[0],)
            shapes[op.name] = x
        return shapes

    # --- weights ---------------------------------------------------------------------------

    def _init_params(self) -> None:
        channels = {"input": self.shape.in_channels}
        for index, op in enumerate(self.ops, start=1):
            rng = np.random.default_rng([self.seed, index])
            if not op.inputs:
                continue
            cin = channels[op.inputs[0]]
            channels[op.name] = self.shape.channels if op.type == "Conv2D" else cin
            if op.type == "Conv2D":
                cout = self.shape.channels
                std = np.sqrt(2.0 / (9 * cin))
                self.params[op.name] = {
                    "filter": _f32(rng.standard_normal((3, 3, cin, cout)) * std)
                }
            elif op.type == "FusedBatchNormV3":
                c = self.shape.channels
                # The last BN of a residual branch is small, and smaller the deeper the stack
                # (as SkipInit-style training leaves it): 144 blocks then keep activations
                # O(1) and do not amplify float16 rounding from block to block.
                residual_end = op.name.endswith("bn3/FusedBatchNormV3")
                depth_factor = min(1.0, 2.0 / np.sqrt(self.shape.blocks))
                if self.shape.branch_gain is not None:
                    # A stronger branch makes every block amplify what reaches it: drift.
                    depth_factor = self.shape.branch_gain
                low, high = (
                    (0.15 * depth_factor, 0.3 * depth_factor) if residual_end else (0.7, 1.3)
                )
                offset = (-0.05 * depth_factor, 0.1 * depth_factor) if residual_end else (0.0, 0.1)
                self.params[op.name] = {
                    "scale": _f32(rng.uniform(low, high, c)),
                    "offset": _f32(rng.normal(offset[0], offset[1], c)),
                    "mean_noise": _f32(rng.standard_normal(c)),
                    "variance_noise": _f32(rng.standard_normal(c)),
                }
            elif op.type == "MatMul":
                k = self.shape.channels
                self.params[op.name] = {
                    "weights": _f32(rng.standard_normal((k, self.shape.classes)) * 1.5 / np.sqrt(k))
                }
            elif op.type == "BiasAdd":
                self.params[op.name] = {"bias": _f32(rng.normal(0.0, 0.1, self.shape.classes))}
            elif op.name == HEAD_SCALE:
                self.params[op.name] = {"y": _f32(rng.uniform(0.5, 1.5, cin))}
            elif op.type == "Mul":
                # half / weight_decay of the long-named L2 term; the loss scale is calibrated.
                y = 0.5 if op.name.endswith("/half") else 1e-4
                self.params[op.name] = {"y": _f32(y)}

    def _calibrate_batch_norm(self, op: BenchOp, x: np.ndarray) -> None:
        params = self.params[op.name]
        mean = x.mean(axis=(0, 1, 2), dtype=np.float64)
        std = x.std(axis=(0, 1, 2), dtype=np.float64)
        # Moving statistics are close to, not equal to, this batch's, as after training.
        params["mean"] = _f32(mean + 0.05 * std * params["mean_noise"])
        params["variance"] = _f32(std**2 * np.exp(0.1 * params["variance_noise"]))

    def _calibrate_side_branch(self, x: np.ndarray) -> None:
        """Set the loss scale so the targeted side op peaks at ratio x 65504 in float32."""
        target, ratio = "l2_loss/Sum", HEALTHY_SIDE_RATIO
        for fault in self.faults:
            if fault.kind == FP16_OVERFLOW and fault.op in self.side_branch:
                target, ratio = fault.op, fault.magnitude
        chain = self.side_branch[: self.side_branch.index(target) + 1]

        def peak(scale: float) -> float:
            value = x.astype(np.float64)
            for name in chain:
                op = self.op_by_name[name]
                value = value * scale if name == chain[0] else _run_float64(op, value, self.params)
            return float(np.abs(value).max())

        # Every side op is a power of the scale, so two probes give its exponent.
        base = peak(1.0)
        exponent = round(np.log2(peak(2.0) / base))
        scale = (ratio * FP16_MAX / base) ** (1.0 / exponent)
        self.params["l2_loss/scaled"] = {"y": _f32(scale)}

    def _calibrate_overflow_gain(
        self, op: BenchOp, inputs: list[np.ndarray], out: np.ndarray
    ) -> np.ndarray:
        """Scale the op's parameters so its float32 peak is magnitude x 65504; its new output."""
        fault = self._overflow_gains[op.name]
        peak = float(out.max())
        if not peak > 0:
            raise PrecisionError(
                f"fault {fault.kind} at {op.name}: the output has no positive peak to scale"
            )
        gain = fault.magnitude * FP16_MAX / peak
        params = self.params[op.name]
        for name in OVERFLOW_GAIN_PARAMETERS[op.type]:
            params[name] = _f32(params[name] * gain)
        return run_kernel(op.type, inputs, params)

    # --- float32 benchmark -----------------------------------------------------------------

    def scalar_constants(self) -> dict[str, float]:
        """The scalar operand of each element-wise Mul by a scalar, by op name (calibrated
        once `benchmark` has run)."""
        return {
            op.name: float(self.params[op.name]["y"])
            for op in self.ops
            if op.type == "Mul" and np.ndim(self.params[op.name]["y"]) == 0
        }

    def benchmark(self) -> Iterator[tuple[BenchOp, np.ndarray]]:
        """(op, float32 output) in execution order; values are dropped after their last use."""
        last_use = {name: index for index, op in enumerate(self.ops) for name in op.inputs}
        values: dict[str, np.ndarray] = {}
        for index, op in enumerate(self.ops):
            inputs = [values[name] for name in op.inputs]
            if op.type == "Placeholder":
                out = self.input_value
            else:
                if op.type == "FusedBatchNormV3" and not self.calibrated:
                    self._calibrate_batch_norm(op, inputs[0])
                if op.name == self.side_branch[0] and not self.calibrated:
                    self._calibrate_side_branch(inputs[0])
                out = run_kernel(op.type, inputs, self.params.get(op.name, {}))
                if op.name in self._overflow_gains and not self.calibrated:
                    out = self._calibrate_overflow_gain(op, inputs, out)
            values[op.name] = out
            for name in op.inputs:
                if last_use[name] == index:
                    del values[name]
            yield op, out
        self.calibrated = True

    def calibrate(self) -> None:
        """Run the benchmark once (discarding outputs) so every parameter is set."""
        if not self.calibrated:
            for _ in self.benchmark():
                pass

    # --- float16 device --------------------------------------------------------------------

    def device_parameters(self, op_name: str, faulty: bool = True) -> dict[str, np.ndarray]:
        """The device's float32 copy of an op's parameters, with the faults of this run."""
        self.calibrate()
        params = dict(self.params.get(op_name, {}))
        op_type = self.op_by_name[op_name].type
        for fault, rule in self.active_faults(faulty):
            if fault.op == op_name:
                params = {
                    name: rule.device_parameter(name, value, op_type, fault)
                    for name, value in params.items()
                }
        return params

    def device_input(self, faulty: bool = True) -> np.ndarray:
        """The network input the device is fed (float32, NHWC), with the faults of this run."""
        value = self.input_value
        for fault, rule in self.active_faults(faulty):
            if fault.op == self.ops[0].name:
                value = rule.device_input(value, fault)
        return value

    def active_faults(self, faulty: bool) -> list[tuple[Fault, FaultRule]]:
        """The device-side faults of a run: all of them, or those a fix does not remove."""
        return [
            (fault, rule)
            for fault, rule in self._rules
            if not rule.changes_benchmark and (faulty or not rule.fixed_in_second_run)
        ]

    def folded_conv(self, conv: str, bn: str, faulty: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Filter (HWCN) and bias of `conv` with batch norm `bn` folded in, as float16
        (what GE's ConvBatchnormFusionPass leaves as the conv's constants)."""
        filters = self.device_parameters(conv, faulty)["filter"]
        norm = self.device_parameters(bn, faulty)
        factor = norm["scale"] / np.sqrt(norm["variance"] + np.float32(BN_EPSILON))
        return to_device(filters * factor), to_device(norm["offset"] - norm["mean"] * factor)

    def dense_constants(
        self, matmul: str, bias_add: str, faulty: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Weights and bias of the fused MatMulV2, as float16."""
        weights = self.device_parameters(matmul, faulty)["weights"]
        bias = self.device_parameters(bias_add, faulty)["bias"]
        return to_device(weights), to_device(bias)

    def device_output(self, members: Sequence[str], value: np.ndarray, faulty: bool) -> np.ndarray:
        """Apply the output hooks of faults inside a device op's members."""
        for fault, rule in self.active_faults(faulty):
            if fault.op in members:
                value = rule.device_output(value, fault)
        return value

    def device_chain(
        self,
        members: Sequence[str],
        inputs: Sequence[np.ndarray],
        faulty: bool,
        float32_out: bool = False,
    ) -> np.ndarray:
        """A fused chain of element-wise / pooling / reduction ops, computed in float32 and
        stored as float16 (or kept float32 where the device graph runs in float32)."""
        value: np.ndarray | None = None
        with np.errstate(over="ignore", invalid="ignore"):
            for name in members:
                op = self.op_by_name[name]
                args = [x.astype(np.float32) for x in inputs] if value is None else [value]
                params = self.device_parameters(name, faulty)
                value = run_kernel(op.type, args, params)
        assert value is not None, "a device chain has at least one member"
        stored = np.asarray(value, dtype=np.float32) if float32_out else to_device(value)
        return self.device_output(members, stored, faulty)


def _run_float64(
    op: BenchOp, x: np.ndarray, params: dict[str, dict[str, np.ndarray]]
) -> np.ndarray:
    if op.type == "Mul":
        return x * float(params[op.name]["y"])
    if op.type == "Square":
        return x * x
    return x.sum(axis=tuple(range(1, x.ndim)))


def _f32(value: np.ndarray | float) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)
