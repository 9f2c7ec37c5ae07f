"""The GE graph model, the runtime `ge.proto` schema, the protobuf writer and `load_ge_graph`."""

from __future__ import annotations

import pickle

import pytest
from ge_fixtures import fusion_model
from google.protobuf import text_format

from precision_shell.errors import FormatError
from precision_shell.formats.ge import proto as ge_proto
from precision_shell.formats.ge.graph import (
    DataTypeName,
    GraphDef,
    ModelDef,
    OpDef,
    TensorDesc,
    load_ge_graph,
    model_from_message,
    model_to_json,
    model_to_message,
    model_to_text,
    parse_ge_text,
)

# (message, field, number) from FORMATS.md section 3
FIELD_NUMBERS = [
    ("ModelDef", "name", 1), ("ModelDef", "version", 2), ("ModelDef", "custom_version", 3),
    ("ModelDef", "graph", 7), ("ModelDef", "attr", 11),
    ("GraphDef", "name", 1), ("GraphDef", "input", 4), ("GraphDef", "output", 5),
    ("GraphDef", "op", 6), ("GraphDef", "attr", 11),
    ("OpDef", "name", 1), ("OpDef", "type", 2), ("OpDef", "input", 5), ("OpDef", "attr", 10),
    ("OpDef", "has_out_attr", 20), ("OpDef", "id", 21), ("OpDef", "stream_id", 22),
    ("OpDef", "input_name", 23), ("OpDef", "src_name", 24), ("OpDef", "src_index", 25),
    ("OpDef", "dst_name", 26), ("OpDef", "dst_index", 27), ("OpDef", "input_i", 28),
    ("OpDef", "output_i", 29), ("OpDef", "workspace", 30), ("OpDef", "workspace_bytes", 31),
    ("OpDef", "is_input_const", 32), ("OpDef", "input_desc", 33), ("OpDef", "output_desc", 34),
    ("OpDef", "subgraph_name", 35),
    ("TensorDescriptor", "name", 1), ("TensorDescriptor", "dtype", 2),
    ("TensorDescriptor", "shape", 3), ("TensorDescriptor", "layout", 4),
    ("TensorDescriptor", "attr", 5), ("TensorDescriptor", "has_out_attr", 9),
    ("TensorDescriptor", "size", 10), ("TensorDescriptor", "weight_size", 11),
    ("TensorDescriptor", "reuse_input", 12), ("TensorDescriptor", "output_tensor", 13),
    ("TensorDescriptor", "device_type", 14), ("TensorDescriptor", "input_tensor", 15),
    ("TensorDescriptor", "real_dim_cnt", 16), ("TensorDescriptor", "reuse_input_index", 17),
    ("TensorDescriptor", "data_offset", 18), ("TensorDescriptor", "cmps_size", 19),
    ("TensorDescriptor", "cmps_tab", 20), ("TensorDescriptor", "cmps_tab_offset", 21),
    ("AttrDef", "list", 1), ("AttrDef", "s", 2), ("AttrDef", "i", 3), ("AttrDef", "f", 4),
    ("AttrDef", "b", 5), ("AttrDef", "bt", 7), ("AttrDef", "func", 10), ("AttrDef", "td", 11),
    ("AttrDef", "t", 12), ("AttrDef", "g", 13), ("AttrDef", "list_list_int", 14),
    ("AttrDef", "dt", 15), ("AttrDef", "list_list_float", 16),
    ("AttrDef.ListValue", "s", 2), ("AttrDef.ListValue", "i", 3), ("AttrDef.ListValue", "f", 4),
    ("AttrDef.ListValue", "b", 5), ("AttrDef.ListValue", "bt", 7),
    ("AttrDef.ListValue", "td", 8), ("AttrDef.ListValue", "t", 9),
    ("AttrDef.ListValue", "g", 10), ("AttrDef.ListValue", "na", 11),
    ("AttrDef.ListValue", "dt", 12), ("AttrDef.ListValue", "val_type", 20),
    ("AttrDef.ListListInt", "list_list_i", 1), ("AttrDef.ListListInt.ListInt", "list_i", 1),
    ("NamedAttrs", "name", 1), ("NamedAttrs", "attr", 2), ("ShapeDef", "dim", 1),
    ("TensorDef", "desc", 1), ("TensorDef", "data", 2),
]  # fmt: skip


@pytest.mark.parametrize(("message", "field", "number"), FIELD_NUMBERS)
def test_schema_field_numbers(message: str, field: str, number: int) -> None:
    descriptor = ge_proto.POOL.FindMessageTypeByName(f"ge.proto.{message}")
    assert descriptor.fields_by_name[field].number == number


def test_schema_encodes_real_tags_and_enums() -> None:
    op = ge_proto.OpDef(id=3)
    assert op.SerializeToString() == b"\xa8\x01\x03"  # field 21, varint
    desc = ge_proto.TensorDescriptor(dtype=ge_proto.PROTO_DATA_TYPES["DT_FLOAT16"])
    assert desc.SerializeToString() == b"\x10\x02"
    assert ge_proto.PROTO_DATA_TYPES["DT_BF16"] == 27
    assert ge_proto.GE_DATA_TYPES["DT_FLOAT16"] == 1
    assert ge_proto.LIST_VALUE_TYPES["VT_LIST_STRING"] == 1


def test_schema_maps_print_as_key_value_blocks() -> None:
    op = ge_proto.OpDef(name="a")
    op.attr["k"].list.s.append(b"x")
    op.attr["k"].list.val_type = ge_proto.LIST_VALUE_TYPES["VT_LIST_STRING"]
    assert text_format.MessageToString(op, as_one_line=True) == (
        'name: "a" attr { key: "k" value { list { s: "x" val_type: VT_LIST_STRING } } }'
    )


def test_tensor_desc_origin_properties() -> None:
    model = fusion_model()
    output = model.graphs[0].ops[1].output_descs[0]
    assert output.origin_name == "dense/BiasAdd"
    assert output.origin_output_index == 0
    assert output.origin_format == "ND"
    assert output.origin_shape == (4, 32)
    empty = model.graphs[0].ops[1].output_descs[1]
    assert (empty.origin_name, empty.origin_output_index, empty.origin_shape) == (None,) * 3
    fallback = TensorDesc(attrs={"origin_format": "NCHW", "_datadump_origin_format": ""})
    assert fallback.origin_format == "NCHW"


def test_op_edges_and_fusion_properties() -> None:
    ops = fusion_model().graphs[0].ops
    matmul, relu = ops[1], ops[2]
    assert matmul.data_inputs == [("input_x", 0), ("weights", 0)]
    assert matmul.control_inputs == ["init_op"]
    assert relu.control_inputs == ["dense/MatMul"]
    assert matmul.original_op_names == ["dense/MatMul", "dense/BiasAdd"]
    assert relu.original_op_names == []
    assert ops[3].original_op_names is None
    assert matmul.pass_name == "MatMulBiasAddFusionPass,TbeCommonRules0FusionPass"
    assert relu.pass_name == "ReluPass"
    assert ops[3].pass_name is None
    assert matmul.kernel_name == "te_matmul_3f1a"
    assert OpDef(name="x", attrs={"_kernelname": "k"}).kernel_name == "k"
    assert matmul.l1_fusion_group == -7
    assert relu.l1_fusion_group is None
    assert matmul.is_multiop is False
    assert OpDef(attrs={"_datadump_is_multiop": True}).is_multiop is True


def test_model_graph_lookup_and_subgraph_link() -> None:
    model = fusion_model()
    while_op = model.graphs[0].ops[3]
    body = model.graph(while_op.subgraph_names[0])
    assert body is model.graphs[1]
    assert body.ops[0].attrs["_parent_node_index"] == 0
    assert model.graph("missing") is None


def test_model_pickles() -> None:
    model = fusion_model()
    restored = pickle.loads(pickle.dumps(model))
    assert restored == model
    assert type(restored.graphs[0].ops[1].attrs["dst_type"]) is DataTypeName


def test_writer_prints_real_protobuf_text() -> None:
    text = model_to_text(fusion_model())
    assert '    attr {\n      key: "_datadump_original_op_names"\n      value {\n' in text
    assert '        list {\n          s: "dense/MatMul"\n          s: "dense/BiasAdd"\n' in text
    assert "          val_type: VT_LIST_STRING\n" in text
    assert '      key: "dst_type"\n      value {\n        dt: 1\n' in text  # ge::DT_FLOAT16
    assert "      dtype: DT_BF16\n" in text
    assert '      s: "\\345\\261\\202/\\345\\215\\267\\347\\247\\257"\n' in text  # octal escapes
    assert '      key: "epsilon"\n      value {\n        f: 1e-05\n' in text
    assert '      key: "empty_list"\n      value {\n        list {\n' in text
    assert '  subgraph_name: "loop/body"' in text
    assert '    name: "loop/body/\\350\\276\\223\\345\\205\\2450"\n' in text
    assert 'name: "model_\\303\\251"' in text
    parsed = text_format.Parse(text, ge_proto.ModelDef())
    assert parsed.graph[0].op[1].attr["big"].i == -(2**62)
    assert parsed.graph[0].op[1].input[3] == "init_op:-1"


def test_writer_and_parser_round_trip_every_value_kind() -> None:
    model = fusion_model()
    text = model_to_text(model)
    assert parse_ge_text(text) == model
    assert model_from_message(text_format.Parse(text, ge_proto.ModelDef())) == model
    attrs = parse_ge_text(text).graphs[0].ops[1].attrs
    assert type(attrs["dst_type"]) is DataTypeName
    assert attrs["dtypes"] == ["DT_FLOAT", "DT_INT64"]
    assert attrs["blob"] == b"\x00\xff\x10raw"
    assert attrs["const"]["data"] == b"\x01\x02\x03"
    assert attrs["func"] == {"name": "f", "attrs": {"k": 1, "s": "v"}}
    assert attrs["unset"] is None


def test_writer_rejects_values_it_cannot_write() -> None:
    model = ModelDef(graphs=[GraphDef(ops=[OpDef(attrs={"x": object()})])])
    with pytest.raises(ValueError, match="cannot write an attribute value of type object"):
        model_to_message(model)
    with pytest.raises(ValueError, match="unknown data type 'DT_NOPE'"):
        model_to_message(ModelDef(attrs={"d": TensorDesc(dtype="DT_NOPE")}))


def test_load_sniffs_text_and_json(tmp_path) -> None:
    model = fusion_model()
    text_file = tmp_path / "ge_proto_00001_Build.txt"
    text_file.write_bytes(b"\xef\xbb\xbf" + model_to_text(model).encode())
    assert load_ge_graph(text_file) == model
    json_file = tmp_path / "ge_proto_00001_Build.json"
    json_file.write_text(model_to_json(model), encoding="utf-8")
    loaded = load_ge_graph(str(json_file))
    assert loaded.graphs[0].ops[1].attrs["pass_name"] == model.graphs[0].ops[1].attrs["pass_name"]


def test_load_errors_name_the_file(tmp_path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(FormatError, match=r"nope\.txt: cannot read the file"):
        load_ge_graph(missing)
    bad = tmp_path / "ge_proto_00002_Build.txt"
    bad.write_text('graph {\n  name: "g"\n  op {\n    id: x1\n')
    with pytest.raises(FormatError) as caught:
        load_ge_graph(bad)
    assert str(caught.value) == (f"{bad}: line 4, column 9: expected an integer for 'id', got 'x1'")
