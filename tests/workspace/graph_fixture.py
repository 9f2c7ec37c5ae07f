"""A hand-built GE model used by the index and matcher tests."""

from __future__ import annotations

from precision_shell.formats.ge.graph import GraphDef, ModelDef, OpDef, TensorDesc


def desc(origin: str | None = None, index: int = 0, layout: str = "ND", shape=(2, 3)) -> TensorDesc:
    attrs = {}
    if origin is not None:
        attrs = {
            "_datadump_origin_name": origin,
            "_datadump_origin_output_index": index,
            "_datadump_origin_format": "NHWC",
            "origin_shape": list(shape),
        }
    return TensorDesc(name="y", dtype="DT_FLOAT16", shape=tuple(shape), layout=layout, attrs=attrs)


def op(name, op_type, op_id, inputs=(), outputs=(), attrs=None) -> OpDef:
    return OpDef(
        name=name,
        type=op_type,
        id=op_id,
        inputs=list(inputs),
        input_descs=[desc() for _ in inputs if not _.endswith(":-1")],
        output_descs=list(outputs),
        attrs=dict(attrs or {}),
    )


def sample_model() -> ModelDef:
    """input -> Cast (GE) -> conv (fused conv+bn+relu) -> TransData (GE) -> dense -> softmax.

    The ops are listed out of id order on purpose; `init` is a control predecessor of dense.
    """
    ops = [
        op(
            "dense/MatMul",
            "MatMulV2",
            5,
            ["trans_TransData_4:0", "dense/kernel:0", "init:-1"],
            [desc("dense/BiasAdd")],
            {
                "_datadump_original_op_names": ["dense/MatMul", "dense/BiasAdd"],
                "pass_name": "MatMulBiasAddFusionPass",
                "dense/MatMul_kernelname": "te_matmul_k0",
            },
        ),
        op("input", "Data", 1, [], [desc("input")], {"_datadump_original_op_names": ["input"]}),
        op("cast_0", "Cast", 2, ["input:0"], [desc(None)], {"_datadump_original_op_names": []}),
        op(
            "conv1/Conv2D",
            "Conv2D",
            3,
            ["cast_0:0", "conv1/weights:0"],
            [desc("relu1/Relu", layout="NC1HWC0")],
            {
                "_datadump_original_op_names": [
                    "conv1/Conv2D",
                    "bn1/FusedBatchNormV3",
                    "relu1/Relu",
                ],
                "pass_name": "ConvBatchnormFusionPass",
                "conv1/Conv2D_kernelname": "te_conv2d_k0",
            },
        ),
        op(
            "trans_TransData_4",
            "TransData",
            4,
            ["conv1/Conv2D:0"],
            [desc(None)],
            {"_datadump_original_op_names": []},
        ),
        op(
            "softmax/Softmax",
            "SoftmaxV2",
            6,
            ["dense/MatMul:0"],
            [desc("softmax/Softmax")],
            {"_datadump_original_op_names": ["softmax/Softmax"]},
        ),
        op("init", "NoOp", 0),
        op("dense/kernel", "Const", 0, [], [desc("dense/kernel")]),
        op("conv1/weights", "Const", 0, [], [desc("conv1/weights")]),
    ]
    graph = GraphDef(name="ge_default_1_NPU_1", ops=ops)
    return ModelDef(name="sample", graphs=[graph])
