"""GE graph models built by code for the ge_graph / ge_text / ge_json tests and the benchmark."""

from __future__ import annotations

import random

from precision_shell.formats.ge.model import DataTypeName, GraphDef, ModelDef, OpDef, TensorDesc
from precision_shell.formats.ge.text import to_float32

# 1e-05 as a float32 `f` attribute holds it (and as text_format prints it back: "1e-05")
EPSILON_F32 = to_float32(1e-05)


def desc(
    name: str,
    dtype: str,
    shape: tuple[int, ...],
    layout: str,
    origin: str | None = None,
    origin_index: int | None = None,
    origin_format: str | None = None,
    origin_shape: list[int] | None = None,
) -> TensorDesc:
    attrs: dict = {}
    if origin is not None:
        attrs["_datadump_origin_name"] = origin
    if origin_index is not None:
        attrs["_datadump_origin_output_index"] = origin_index
    if origin_format is not None:
        attrs["_datadump_origin_format"] = origin_format
    if origin_shape is not None:
        attrs["origin_shape"] = origin_shape
        attrs["origin_format"] = "NCHW"
    return TensorDesc(name, dtype, shape, layout, attrs)


def fusion_model() -> ModelDef:
    """A small model with the attributes the matcher reads and every attribute value kind."""
    data = OpDef(
        name="input_x",
        type="Data",
        id=0,
        output_descs=[desc("y", "DT_FLOAT16", (4, 64), "ND", "input_x", 0, "ND", [4, 64])],
        attrs={"_datadump_original_op_names": ["input_x"], "index": 0},
        dst_name=["dense/MatMul"],
        dst_index=[0],
    )
    matmul = OpDef(
        name="dense/MatMul",
        type="MatMulV2",
        id=3,
        inputs=["input_x:0", "weights:0", "", "init_op:-1"],
        input_descs=[
            desc("x1", "DT_FLOAT16", (4, 64), "ND"),
            desc("x2", "DT_FLOAT16", (4, 4, 16, 16), "FRACTAL_NZ", origin_shape=[64, 32]),
        ],
        output_descs=[
            desc("y", "DT_FLOAT16", (4, 32), "ND", "dense/BiasAdd", 0, "ND", [4, 32]),
            TensorDesc("y1", "DT_BF16", (-1, 3), "NC1HWC0", {"_datadump_origin_name": ""}),
        ],
        attrs={
            "_datadump_original_op_names": ["dense/MatMul", "dense/BiasAdd"],
            "_datadump_is_multiop": False,
            "_L1_fusion_sub_graph_no": -7,
            "pass_name": ["MatMulBiasAddFusionPass", "TbeCommonRules0FusionPass"],
            "dense/MatMul_kernelname": "te_matmul_3f1a",
            "_kernelname": "fallback_kernel",
            "_ge_attr_op_kernel_lib_name": "AIcoreEngine",
            "alpha": 0.5,
            "epsilon": EPSILON_F32,
            "big": -(2**62),
            "dst_type": DataTypeName("DT_FLOAT16"),
            "dtypes": [DataTypeName("DT_FLOAT"), DataTypeName("DT_INT64")],
            "flags": [True, False],
            "scales": [0.25, -1.5],
            "pads": [0, -1, 2],
            "blob": b"\x00\xff\x10raw",
            "blobs": [b"\x01\x02", b""],
            "name_cn": "层/卷积",
            "empty_list": [],
            "nested": [[1, 2], [], [-3]],
            "nested_f": [[0.5], [1.25, 2.0]],
            "tensor_desc": desc("td", "DT_INT32", (2,), "ND"),
            "const": {"desc": desc("c", "DT_INT8", (3,), "ND"), "data": b"\x01\x02\x03"},
            "func": {"name": "f", "attrs": {"k": 1, "s": "v"}},
            "descs": [desc("a", "DT_FLOAT", (1,), "ND"), desc("b", "DT_FLOAT", (), "")],
            "unset": None,
        },
        stream_id=1,
        src_name=["input_x", "weights"],
        src_index=[0, 0],
    )
    relu = OpDef(
        name="dense/Relu",
        type="Relu",
        id=4,
        inputs=["dense/MatMul:0", "dense/MatMul:-1"],
        input_descs=[desc("x", "DT_FLOAT16", (4, 32), "ND")],
        output_descs=[desc("y", "DT_FLOAT16", (4, 32), "ND", "dense/Relu", 0)],
        attrs={"_datadump_original_op_names": [], "pass_name": "ReluPass"},
    )
    while_op = OpDef(
        name="loop/While",
        type="While",
        id=5,
        inputs=["dense/Relu:0"],
        input_descs=[desc("x", "DT_FLOAT16", (4, 32), "ND")],
        output_descs=[desc("y", "DT_FLOAT16", (4, 32), "ND")],
        subgraph_names=["loop/body"],
    )
    root = GraphDef(
        name="ge_default_20220926160231_NPU_61",
        ops=[data, matmul, relu, while_op],
        inputs=["input_x:0"],
        outputs=["loop/While:0"],
        attrs={"_session_graph_id": "0_1"},
    )
    body_data = OpDef(
        name="loop/body/输入0",
        type="Data",
        id=0,
        output_descs=[desc("y", "DT_FLOAT16", (4, 32), "ND")],
        attrs={"_parent_node_index": 0},
    )
    body = GraphDef(name="loop/body", ops=[body_data], attrs={"g": GraphDef(name="inner")})
    return ModelDef(name="model_é", version=2, graphs=[root, body], attrs={"soc": "Ascend910"})


_SCOPES = ["resnet_model", "bert", "encoder", "layer_%d", "attention", "ffn", "block_%d"]
_TYPES = ["Conv2D", "MatMulV2", "Add", "Relu", "TransData", "Cast", "BatchMatMul", "Mul"]
_LAYOUTS = ["NC1HWC0", "FRACTAL_NZ", "ND", "NCHW", "FRACTAL_Z"]


def _op_name(rng: random.Random, index: int) -> str:
    parts = [part % rng.randrange(24) if "%" in part else part for part in rng.sample(_SCOPES, 4)]
    return "/".join(parts) + f"/{rng.choice(_TYPES)}_{index}"


def big_model(n_ops: int, seed: int = 7) -> ModelDef:
    """A realistic-looking fused graph of `n_ops` ops (~2 kB of text per op)."""
    rng = random.Random(seed)
    names = [_op_name(rng, index) for index in range(n_ops)]
    ops = []
    for index, name in enumerate(names):
        shape = (rng.choice([1, 8, 32]), rng.randrange(1, 64), 7, 7, 16)
        sources = [names[rng.randrange(index)] for _ in range(2)] if index else []
        inputs = [f"{source}:{rng.randrange(2)}" for source in sources]
        originals = [f"{name}_orig{k}" for k in range(rng.randrange(0, 3))]
        outputs = [
            desc(
                f"y{k}",
                "DT_FLOAT16",
                shape,
                rng.choice(_LAYOUTS),
                originals[0] if originals else None,
                k,
                "NCHW",
                [shape[0], shape[1] * 16, 7, 7],
            )
            for k in range(rng.randrange(1, 3))
        ]
        input_descs = [
            desc(f"x{k}", "DT_FLOAT16", shape, rng.choice(_LAYOUTS), origin_format="NCHW")
            for k in range(len(inputs))
        ]
        attrs = {
            "_datadump_original_op_names": originals,
            "_datadump_is_multiop": False,
            "pass_name": "TbeConvBiasAddFusionPass",
            f"{name}_kernelname": f"te_fused_{index:06d}_{rng.getrandbits(32):08x}",
            "_ge_attr_op_kernel_lib_name": "AIcoreEngine",
            "_fusion_scope": rng.randrange(1000),
            "strides": [1, 1, 2, 2],
            "dilations": [1, 1, 1, 1],
            "epsilon": EPSILON_F32,
            "data_format": "NCHW",
        }
        if index % 5 == 0:
            attrs["_L1_fusion_sub_graph_no"] = index // 5
        ops.append(
            OpDef(
                name=name,
                type=rng.choice(_TYPES),
                id=index,
                inputs=inputs + ([f"{names[index - 1]}:-1"] if index % 9 == 1 else []),
                input_descs=input_descs,
                output_descs=outputs,
                attrs=attrs,
                stream_id=index % 3,
                src_name=sources,
                src_index=[0] * len(sources),
            )
        )
    graph = GraphDef(name="ge_default_bench", ops=ops, attrs={"_session_graph_id": "0_1"})
    return ModelDef(name="bench", graphs=[graph])
