"""The diagnosis suite: demo workspaces with one injected fault each, and the device op a perfect
root-cause diagnosis must name first.

Every fault kind of `precision_shell.demo.faults` appears, on every op kind the demo network
has: a fused conv+bn+relu (`conv`), the dense MatMulV2 (`matmul`), an element-wise op
(`elementwise`: the float32 head's feature scale or a side-branch Square), a conv with the
residual add fused in (`fused`), an op fed by a GE-inserted Cast (`cast`: the first conv after
the input Cast, the dense layer or the mean after the float32 head's Casts), and the network
input (`input`). Sizes are "tiny" or "small" so each build takes a fraction of a second; the
`local_error` cases use a deep stack whose float16 drift alone brings the last conv near
cosine 0.99 (`branch_gain`), with the fault placed where the drift is still small.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import (
    CORRUPT_INPUT,
    FP16_OVERFLOW,
    LOCAL_ERROR,
    NAN_BIRTH,
    WRONG_CONSTANT,
    WRONG_LAYOUT,
    DemoManifest,
    DemoSpec,
    Fault,
)

OP_KINDS = ("conv", "matmul", "elementwise", "fused", "cast", "input")

# The deep stack of the local_error cases: 72 residual blocks whose branches amplify float16
# rounding (drift-only cosine of the last conv ~0.99), still a ~0.3 s build.
DEEP_BLOCKS = 72
DEEP_BRANCH_GAIN = 4.0

CONV1 = "conv1/Conv2Drelu1/Relu"
DENSE = "dense/MatMul"
HEAD_SCALE = "head/mul"
MEAN = "global_pool/Mean"
INPUT = "input"


@dataclass(frozen=True)
class DiagnosisCase:
    """One workspace of the suite: how to build it and the op a diagnosis must name first."""

    name: str
    spec: DemoSpec
    expected_device_op: str
    op_kind: str = ""  # one of OP_KINDS: what kind of op the fault sits in

    @property
    def fault(self) -> Fault:
        """The one injected fault."""
        return self.spec.faults[0]


def conv_op(block: int = 0) -> str:
    """The fused conv+bn+relu device op of a residual block's first conv."""
    p = _prefix(block)
    return f"{p}conv2/Conv2D{p}relu2/Relu"


def fused_residual_op(block: int = 0) -> str:
    """The device op of a block's second conv with bn, the residual add and relu fused in."""
    p = _prefix(block)
    return f"{p}conv3/Conv2D{p}res/add{p}relu3/Relu"


def _prefix(block: int) -> str:
    return "" if block == 0 else f"block{block}/"


def _spec(size: str, fault: Fault, seed: int = 0, **knobs: object) -> DemoSpec:
    return DemoSpec(size=size, seed=seed, faults=(fault,), second_run=False, **knobs)


def _deep(fault: Fault, seed: int) -> DemoSpec:
    return _spec(
        "tiny", fault, seed, blocks=DEEP_BLOCKS, branch_gain=DEEP_BRANCH_GAIN, fp32_head=True
    )


CASES: list[DiagnosisCase] = [
    # --- wrong constant: the device's copy of a constant is mis-scaled per channel
    DiagnosisCase(
        "wrong_constant-conv-bn2",
        _spec("tiny", Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.3)),
        conv_op(),
        "conv",
    ),
    DiagnosisCase(
        "wrong_constant-conv-block1-filter",
        _spec("small", Fault(WRONG_CONSTANT, "block1/conv2/Conv2D", 0.25), seed=1),
        conv_op(1),
        "conv",
    ),
    DiagnosisCase(
        "wrong_constant-cast-conv1",
        _spec("small", Fault(WRONG_CONSTANT, "conv1/Conv2D", 0.3), seed=2),
        CONV1,
        "cast",
    ),
    DiagnosisCase(
        "wrong_constant-fused-bn3",
        _spec("small", Fault(WRONG_CONSTANT, "bn3/FusedBatchNormV3", 0.9), seed=3),
        fused_residual_op(),
        "fused",
    ),
    DiagnosisCase(
        "wrong_constant-matmul",
        _spec("tiny", Fault(WRONG_CONSTANT, "dense/MatMul", 0.3), seed=4),
        DENSE,
        "matmul",
    ),
    DiagnosisCase(
        "wrong_constant-cast-matmul",
        _spec("small", Fault(WRONG_CONSTANT, "dense/MatMul", 0.3), seed=5, fp32_head=True),
        DENSE,
        "cast",
    ),
    DiagnosisCase(
        "wrong_constant-elementwise-head",
        _spec("tiny", Fault(WRONG_CONSTANT, HEAD_SCALE, 0.3), seed=6, fp32_head=True),
        HEAD_SCALE,
        "elementwise",
    ),
    # --- float16 overflow: the model peaks above 65504 at the op
    DiagnosisCase(
        "fp16_overflow-conv-bn2",
        _spec("tiny", Fault(FP16_OVERFLOW, "bn2/FusedBatchNormV3", 1.5), seed=7),
        conv_op(),
        "conv",
    ),
    DiagnosisCase(
        "fp16_overflow-cast-conv1",
        _spec("small", Fault(FP16_OVERFLOW, "bn1/FusedBatchNormV3", 2.0), seed=8),
        CONV1,
        "cast",
    ),
    DiagnosisCase(
        "fp16_overflow-fused-bn3",
        _spec("small", Fault(FP16_OVERFLOW, "block1/bn3/FusedBatchNormV3", 2.0), seed=9),
        fused_residual_op(1),
        "fused",
    ),
    DiagnosisCase(
        "fp16_overflow-cast-matmul",
        _spec("tiny", Fault(FP16_OVERFLOW, "dense/MatMul", 1.5), seed=10, fp32_head=True),
        DENSE,
        "cast",
    ),
    DiagnosisCase(
        "fp16_overflow-elementwise-square",
        _spec("tiny", Fault(FP16_OVERFLOW, "l2_loss/Square", 2.0), seed=11),
        "l2_loss/Square",
        "elementwise",
    ),
    # --- wrong layout conversion: right values in the wrong places
    DiagnosisCase(
        "wrong_layout-conv-hw",
        _spec("tiny", Fault(WRONG_LAYOUT, "relu2/Relu", variant="hw"), seed=12),
        conv_op(),
        "conv",
    ),
    DiagnosisCase(
        "wrong_layout-conv-c0",
        _spec("small", Fault(WRONG_LAYOUT, "block1/conv2/Conv2D", variant="c0"), seed=13),
        conv_op(1),
        "conv",
    ),
    DiagnosisCase(
        "wrong_layout-cast-conv1",
        _spec("small", Fault(WRONG_LAYOUT, "conv1/Conv2D", variant="hw"), seed=14),
        CONV1,
        "cast",
    ),
    DiagnosisCase(
        "wrong_layout-fused-res_add",
        _spec("tiny", Fault(WRONG_LAYOUT, "res/add", variant="hw"), seed=15),
        fused_residual_op(),
        "fused",
    ),
    DiagnosisCase(
        "wrong_layout-matmul",
        _spec("tiny", Fault(WRONG_LAYOUT, "dense/BiasAdd", variant="c0"), seed=16),
        DENSE,
        "matmul",
    ),
    DiagnosisCase(
        "wrong_layout-elementwise-head",
        _spec("small", Fault(WRONG_LAYOUT, HEAD_SCALE, variant="c0"), seed=17, fp32_head=True),
        HEAD_SCALE,
        "elementwise",
    ),
    DiagnosisCase(
        "wrong_layout-cast-mean",
        _spec("tiny", Fault(WRONG_LAYOUT, MEAN, variant="c0"), seed=18, fp32_head=True),
        MEAN,
        "cast",
    ),
    # --- NaN / inf born in the op from finite inputs
    DiagnosisCase(
        "nan_birth-conv",
        _spec("tiny", Fault(NAN_BIRTH, "bn2/FusedBatchNormV3", 3), seed=19),
        conv_op(),
        "conv",
    ),
    DiagnosisCase(
        "nan_birth-cast-conv1",
        _spec("small", Fault(NAN_BIRTH, "relu1/Relu", 2), seed=20),
        CONV1,
        "cast",
    ),
    DiagnosisCase(
        "nan_birth-fused-res_add",
        _spec("small", Fault(NAN_BIRTH, "block1/res/add", 4), seed=21),
        fused_residual_op(1),
        "fused",
    ),
    DiagnosisCase(
        "nan_birth-matmul",
        _spec("tiny", Fault(NAN_BIRTH, "dense/MatMul", 1), seed=22),
        DENSE,
        "matmul",
    ),
    DiagnosisCase(
        "nan_birth-elementwise-head",
        _spec("tiny", Fault(NAN_BIRTH, HEAD_SCALE, 2), seed=23, fp32_head=True),
        HEAD_SCALE,
        "elementwise",
    ),
    DiagnosisCase(
        "nan_birth-elementwise-square",
        _spec("small", Fault(NAN_BIRTH, "l2_loss/Square", 2), seed=24),
        "l2_loss/Square",
        "elementwise",
    ),
    # --- a small local error deep in a drifting network
    DiagnosisCase(
        "local_error-conv-deep",
        _deep(Fault(LOCAL_ERROR, "block20/bn2/FusedBatchNormV3", 0.03), seed=0),
        conv_op(20),
        "conv",
    ),
    DiagnosisCase(
        "local_error-fused-deep",
        _deep(Fault(LOCAL_ERROR, "block18/res/add", 0.04), seed=2),
        fused_residual_op(18),
        "fused",
    ),
    DiagnosisCase(
        "local_error-cast-conv1-deep",
        _deep(Fault(LOCAL_ERROR, "conv1/Conv2D", 0.03), seed=9),
        CONV1,
        "cast",
    ),
    DiagnosisCase(
        "local_error-conv-deep-filter",
        _deep(Fault(LOCAL_ERROR, "block16/conv2/Conv2D", 0.05), seed=11),
        conv_op(16),
        "conv",
    ),
    # --- the network input the device saw is not the benchmark's
    DiagnosisCase(
        "corrupt_input-channels",
        _spec("tiny", Fault(CORRUPT_INPUT, INPUT, variant="channels"), seed=25),
        INPUT,
        "input",
    ),
    DiagnosisCase(
        "corrupt_input-mean",
        _spec("small", Fault(CORRUPT_INPUT, INPUT, 0.5, variant="mean"), seed=26),
        INPUT,
        "input",
    ),
    DiagnosisCase(
        "corrupt_input-channels-fp32_head",
        _spec("small", Fault(CORRUPT_INPUT, INPUT, variant="channels"), seed=27, fp32_head=True),
        INPUT,
        "input",
    ),
]


def build_case(case: DiagnosisCase, root: Path) -> DemoManifest:
    """Build the case's workspace under `root` (ROOT/precision_data + ROOT/demo_manifest.json)."""
    return build_demo(Path(root), case.spec)
