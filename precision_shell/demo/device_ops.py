"""The device graph's data model: device ops, their tensors' device layouts, the fusion passes.

Plain frozen dataclasses filled by `device_graph` and read by the device run, the file writer
and the `ModelDef` writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

C0 = 16
SESSION_GRAPH_ID = "0_1"
AICORE = "AIcoreEngine"
GE_LOCAL = "DNN_VM_GE_LOCAL_OP_STORE"

CONV_BN_PASS = "ConvBatchnormFusionPass"
CONV_RELU_UB_PASS = "AutomaticUbFusion"
CONV_ADD_RELU_UB_PASS = "TbeConvDoubleInFusionPass"
MATMUL_BIAS_PASS = "MatMulBiasAddFusionPass"
REDUCE_MEAN_PASS = "AReduceMeanFusionPass"
REDUCE_SUM_PASS = "AReduceSumFusionPass"
ELTWISE_UB_PASS = "TbeEltwiseFusionPass"


@dataclass(frozen=True)
class TensorPlan:
    """One input or output tensor of a device op: device layout and its benchmark origin."""

    name: str
    dtype: str  # GE data type name: "DT_FLOAT16"
    layout: str  # device layout: "NC1HWC0", "FRACTAL_Z", "ND"...
    shape: tuple[int, ...]  # device shape
    origin_format: str
    origin_shape: tuple[int, ...]
    origin: str | None = None  # benchmark op whose output 0 this is; None: no benchmark


@dataclass(frozen=True)
class DeviceOp:
    """One op of the device graph. `kind` says how the device run computes it."""

    name: str
    type: str
    kind: str  # data | const | cast | transdata | reshape | conv | matmul | chain
    output_descs: tuple[TensorPlan, ...]
    inputs: tuple[str, ...] = ()  # GE edges "src:idx"; control edges "src:-1" come last
    input_descs: tuple[TensorPlan, ...] = ()
    original_names: tuple[str, ...] | None = None  # None: attr absent; (): GE-inserted
    members: tuple[str, ...] = ()  # benchmark ops it computes (consts: those they serve)
    const_role: str = ""  # consts: filter | bias | weights
    graph_passes: tuple[str, ...] = ()
    ub_pass: str | None = None
    kernel_lib: str = AICORE
    has_task: bool = True  # executed as a task, hence dumped
    id: int = 0

    @property
    def data_inputs(self) -> list[tuple[str, int]]:
        """(source op, output index) of each data input."""
        edges = [edge.rpartition(":") for edge in self.inputs]
        return [(source, int(index)) for source, _, index in edges if index != "-1"]


@dataclass(frozen=True)
class DevicePlan:
    """The device graph of a demo network, ops in execution order (ids ascending)."""

    graph_name: str
    ops: tuple[DeviceOp, ...]

    @cached_property
    def _by_name(self) -> dict[str, DeviceOp]:
        return {op.name: op for op in self.ops}

    def op(self, name: str) -> DeviceOp:
        """The op called `name` (KeyError when absent)."""
        return self._by_name[name]

    def device_op_of(self, benchmark_op: str) -> DeviceOp | None:
        """The executed device op whose original names include `benchmark_op`."""
        for op in self.ops:
            if op.kind != "const" and op.original_names and benchmark_op in op.original_names:
                return op
        return None


def _blocks(size: int) -> int:
    return -(-size // C0)


def nc1hwc0(name: str, nhwc: tuple[int, ...], origin: str | None) -> TensorPlan:
    """A float16 activation in NC1HWC0 whose benchmark layout is NHWC."""
    n, h, w, c = nhwc
    return TensorPlan(
        name, "DT_FLOAT16", "NC1HWC0", (n, _blocks(c), h, w, C0), "NHWC", nhwc, origin
    )


def plain(
    name: str,
    shape: tuple[int, ...],
    origin: str | None,
    layout: str = "ND",
    dtype: str = "DT_FLOAT16",
) -> TensorPlan:
    """A tensor stored in its benchmark layout."""
    return TensorPlan(name, dtype, layout, shape, layout, shape, origin)


def fractal_z(name: str, hwcn: tuple[int, ...]) -> TensorPlan:
    """A conv filter in FRACTAL_Z (GE-folded, so no benchmark counterpart)."""
    h, w, cin, cout = hwcn
    return TensorPlan(
        name, "DT_FLOAT16", "FRACTAL_Z", (_blocks(cin) * h * w, _blocks(cout), 16, C0), "HWCN", hwcn
    )


def fractal_nz(name: str, matrix: tuple[int, int]) -> TensorPlan:
    """A matrix in FRACTAL_NZ."""
    rows, cols = matrix
    return TensorPlan(
        name, "DT_FLOAT16", "FRACTAL_NZ", (_blocks(cols), _blocks(rows), 16, C0), "ND", matrix
    )
