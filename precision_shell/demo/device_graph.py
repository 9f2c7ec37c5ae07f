"""The GE view of the demo network: which benchmark ops GE fused into which device op, the
device layout of every tensor, and the ops GE inserted (Cast, TransData, folded constants).

Fusion follows what GE does to such a network: ConvBatchnormFusionPass folds each batch norm
into its conv's constants, UB fusion then merges the trailing Relu (and a residual Add) into the
conv kernel and names the result by concatenating the member names, MatMulBiasAddFusionPass
merges dense/MatMul + dense/BiasAdd into one MatMulV2. With a float32 head (mixed precision
keeping the global mean and the feature scale in float32) GE inserts a Cast to float32 in front
of the mean and a Cast back to float16 in front of the dense layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from precision_shell.demo.device_ops import (
    CONV_ADD_RELU_UB_PASS,
    CONV_BN_PASS,
    CONV_RELU_UB_PASS,
    ELTWISE_UB_PASS,
    GE_LOCAL,
    MATMUL_BIAS_PASS,
    REDUCE_MEAN_PASS,
    REDUCE_SUM_PASS,
    DeviceOp,
    DevicePlan,
    TensorPlan,
    fractal_nz,
    fractal_z,
    nc1hwc0,
    plain,
)
from precision_shell.demo.network import HEAD_SCALE, LONG_SCOPE, BenchOp, Network


class _Planner:
    """Walks the benchmark ops once, emitting device ops."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.shapes = net.output_shapes()
        self.consts: list[DeviceOp] = []
        self.compute: list[DeviceOp] = []
        # benchmark op -> (GE edge "op:0", tensor) holding its value on the device
        self.where: dict[str, tuple[str, TensorPlan]] = {}
        self.trans_count = 0

    def trans_name(self, op_type: str) -> str:
        """GE's name for an op it inserted."""
        name = f"trans_{op_type}_{self.trans_count}"
        self.trans_count += 1
        return name

    def add(self, op: DeviceOp, produces: str | None = None) -> None:
        self.compute.append(op)
        if produces is not None:
            self.where[produces] = (f"{op.name}:0", op.output_descs[0])

    def source(self, benchmark_op: str, desc_name: str) -> tuple[str, TensorPlan]:
        """The edge carrying `benchmark_op`'s value and its tensor as an input called so."""
        edge, desc = self.where[benchmark_op]
        return edge, replace(desc, name=desc_name)

    def cast(self, edge: str, desc: TensorPlan, dtype: str) -> tuple[str, TensorPlan]:
        """Insert a GE Cast of the tensor on `edge` to `dtype`; its output edge and tensor."""
        out = replace(desc, name="y", dtype=dtype, origin=None)
        op = DeviceOp(
            name=self.trans_name("Cast"),
            type="Cast",
            kind="cast",
            output_descs=(out,),
            inputs=(edge,),
            input_descs=(replace(desc, name="x", origin=None),),
            original_names=(),
        )
        self.add(op)
        return f"{op.name}:0", out

    def const(self, name: str, desc: TensorPlan, members: tuple[str, ...], role: str) -> str:
        """Add a GE constant holding the device copy of `role` for `members`; its edge."""
        output = replace(desc, name="y")
        self.consts.append(
            DeviceOp(
                name=name,
                type="Const",
                kind="const",
                output_descs=(output,),
                members=members,
                const_role=role,
                kernel_lib=GE_LOCAL,
                has_task=False,
            )
        )
        return f"{name}:0"

    def run(self, graph_name: str) -> DevicePlan:
        ops = self.net.ops
        position = 0
        while position < len(ops):
            position = self.step(ops, position)
        # GE numbers the feed first, then the constants, then ops in execution order.
        ordered = [self.compute[0], *self.consts, *self.compute[1:]]
        return DevicePlan(graph_name, tuple(replace(op, id=i) for i, op in enumerate(ordered)))

    def step(self, ops: Sequence[BenchOp], position: int) -> int:
        """Emit the device op(s) for the benchmark op at `position`; the next position."""
        op = ops[position]
        if op.type == "Placeholder":
            self.placeholder(op)
            return position + 1
        if op.type == "Conv2D":
            return self.conv_group(ops, position)
        if op.type == "MatMul":
            self.dense(op, ops[position + 1])
            return position + 2
        if op.type == "Reshape":
            self.flatten(op)
            return position + 1
        if op.name == HEAD_SCALE:
            self.head_scale(op)
            return position + 1
        if self.net.shape.long_name_op and op.name == f"{LONG_SCOPE}/half":
            self.chain((op, ops[position + 1]), "Muls", ub_pass=ELTWISE_UB_PASS)
            return position + 2
        device_type, graph_pass = CHAIN_TYPES[op.type]
        self.chain((op,), device_type, graph_pass=graph_pass)
        return position + 1

    def placeholder(self, op: BenchOp) -> None:
        shape = self.shapes[op.name]
        feed = plain("y", shape, op.name, "NHWC", "DT_FLOAT")
        data = DeviceOp(
            name=op.name,
            type="Data",
            kind="data",
            output_descs=(feed,),
            original_names=(op.name,),
            kernel_lib=GE_LOCAL,
            has_task=False,
        )
        self.add(data, op.name)
        # GE casts the float32 feed to float16 and lays it out for the cube unit.
        half = plain("y", shape, None, "NHWC")
        cast = DeviceOp(
            name=self.trans_name("Cast"),
            type="Cast",
            kind="cast",
            output_descs=(half,),
            inputs=(f"{op.name}:0",),
            input_descs=(replace(feed, name="x", origin=None),),
            original_names=(),
        )
        self.add(cast)
        trans = DeviceOp(
            name=self.trans_name("TransData"),
            type="TransData",
            kind="transdata",
            output_descs=(nc1hwc0("dst", shape, None),),
            inputs=(f"{cast.name}:0",),
            input_descs=(replace(half, name="src"),),
            original_names=(),
        )
        self.add(trans)
        self.where[op.name] = (f"{trans.name}:0", trans.output_descs[0])

    def conv_group(self, ops: Sequence[BenchOp], position: int) -> int:
        conv, bn = ops[position], ops[position + 1]
        members = [conv, bn]
        position += 2
        shortcut = None
        follower = ops[position] if position < len(ops) else None
        if follower is not None and follower.type == "AddV2" and bn.name in follower.inputs:
            shortcut = next(name for name in follower.inputs if name != bn.name)
            members.append(follower)
            position += 1
        follower = ops[position] if position < len(ops) else None
        relu = False
        if (
            follower is not None
            and follower.type == "Relu"
            and follower.inputs == (members[-1].name,)
        ):
            members.append(follower)
            position += 1
            relu = True
        names = tuple(member.name for member in members)
        hwcn = (3, 3, self.shapes[conv.inputs[0]][3], self.shapes[conv.name][3])
        x_edge, x_desc = self.source(conv.inputs[0], "x")
        bias = plain("bias", hwcn[3:], None)
        inputs = [
            x_edge,
            self.const(
                f"{conv.name}/folded_filter", fractal_z("filter", hwcn), names[:2], "filter"
            ),
            self.const(f"{conv.name}/folded_bias", bias, names[:2], "bias"),
        ]
        descs = [x_desc, fractal_z("filter", hwcn), bias]
        if shortcut is not None:
            edge, desc = self.source(shortcut, "x2")
            inputs.append(edge)
            descs.append(desc)
        last = members[-1].name
        op = DeviceOp(
            # BN is folded away first; UB fusion then names the kernel after what is left.
            name="".join(name for name in names if name != bn.name),
            type="Conv2D",
            kind="conv",
            output_descs=(nc1hwc0("y", self.shapes[last], last),),
            inputs=tuple(inputs),
            input_descs=tuple(descs),
            original_names=names,
            members=names,
            graph_passes=(CONV_BN_PASS,),
            ub_pass=CONV_ADD_RELU_UB_PASS if shortcut else CONV_RELU_UB_PASS if relu else None,
        )
        self.add(op, last)
        return position

    def chain(
        self,
        members: Sequence[BenchOp],
        device_type: str,
        graph_pass: str | None = None,
        ub_pass: str | None = None,
    ) -> None:
        first, last = members[0], members[-1]
        x_edge, x_desc = self.source(first.inputs[0], "x")
        if first.type == "Mean" and self.net.shape.fp32_head:
            # Mixed precision keeps the reduction in float32.
            x_edge, x_desc = self.cast(x_edge, x_desc, "DT_FLOAT")
            x_desc = replace(x_desc, name="x")
        shape = self.shapes[last.name]
        out = nc1hwc0("y", shape, last.name) if len(shape) == 4 else plain("y", shape, last.name)
        out = replace(out, dtype=x_desc.dtype)
        inputs: tuple[str, ...] = (x_edge,)
        if first.type == "Mean":
            # GE orders the side branch before the head with a control edge.
            inputs += ("l2_loss/Sum:-1",)
        names = tuple(member.name for member in members)
        op = DeviceOp(
            name="".join(names),
            type=device_type,
            kind="chain",
            output_descs=(out,),
            inputs=inputs,
            input_descs=(x_desc,),
            original_names=names,
            members=names,
            graph_passes=(graph_pass,) if graph_pass else (),
            ub_pass=ub_pass,
        )
        self.add(op, last.name)

    def head_scale(self, op: BenchOp) -> None:
        """The float32 per-channel feature scale: an element-wise Mul with a constant."""
        x_edge, x_desc = self.source(op.inputs[0], "x1")
        y = plain("x2", x_desc.origin_shape[-1:], None, dtype=x_desc.dtype)
        mul = DeviceOp(
            name=op.name,
            type="Mul",
            kind="chain",
            output_descs=(replace(x_desc, name="y", origin=op.name),),
            inputs=(x_edge, self.const(f"{op.name}/y", y, (op.name,), "y")),
            input_descs=(x_desc, y),
            original_names=(op.name,),
            members=(op.name,),
        )
        self.add(mul, op.name)

    def flatten(self, op: BenchOp) -> None:
        x_edge, x_desc = self.source(op.inputs[0], "src")
        # NC1HWC0 cannot be reshaped in place: GE puts the tensor back into NHWC first.
        nhwc = plain("dst", x_desc.origin_shape, None, "NHWC", x_desc.dtype)
        trans = DeviceOp(
            name=self.trans_name("TransData"),
            type="TransData",
            kind="transdata",
            output_descs=(nhwc,),
            inputs=(x_edge,),
            input_descs=(x_desc,),
            original_names=(),
        )
        self.add(trans)
        reshape = DeviceOp(
            name=op.name,
            type="Reshape",
            kind="reshape",
            output_descs=(plain("y", self.shapes[op.name], op.name, dtype=x_desc.dtype),),
            inputs=(f"{trans.name}:0",),
            input_descs=(replace(nhwc, name="x"),),
            original_names=(op.name,),
            members=(op.name,),
            kernel_lib=GE_LOCAL,
            has_task=False,  # a GE-local op: no kernel, no dump
        )
        self.add(reshape, op.name)

    def dense(self, matmul: BenchOp, bias_add: BenchOp) -> None:
        names = (matmul.name, bias_add.name)
        x_edge, x_desc = self.source(matmul.inputs[0], "x1")
        if x_desc.dtype != "DT_FLOAT16":
            # The cube unit multiplies float16: GE casts a float32 head back.
            x_edge, x_desc = self.cast(x_edge, x_desc, "DT_FLOAT16")
            x_desc = replace(x_desc, name="x1")
        matrix = (x_desc.origin_shape[1], self.net.shape.classes)
        bias = plain("bias", matrix[1:], None)
        op = DeviceOp(
            name=matmul.name,
            type="MatMulV2",
            kind="matmul",
            output_descs=(plain("y", self.shapes[bias_add.name], bias_add.name),),
            inputs=(
                x_edge,
                self.const(f"{matmul.name}/weights", fractal_nz("x2", matrix), names, "weights"),
                self.const(f"{bias_add.name}/bias", bias, names, "bias"),
            ),
            input_descs=(x_desc, fractal_nz("x2", matrix), bias),
            original_names=names,
            members=names,
            graph_passes=(MATMUL_BIAS_PASS,),
        )
        self.add(op, bias_add.name)


# Benchmark op type -> (device op type, graph fusion pass that made it) for one-op chains.
CHAIN_TYPES: dict[str, tuple[str, str | None]] = {
    "MaxPool": ("MaxPool", None),
    "Mul": ("Muls", None),
    "Square": ("Square", None),
    "Sum": ("ReduceSumD", REDUCE_SUM_PASS),
    "Mean": ("ReduceMeanD", REDUCE_MEAN_PASS),
    "Softmax": ("SoftmaxV2", None),
}


def plan_device_graph(net: Network, graph_name: str) -> DevicePlan:
    """The device graph GE would build for `net`."""
    return _Planner(net).run(graph_name)
