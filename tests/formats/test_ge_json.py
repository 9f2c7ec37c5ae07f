"""The atc (`atc --mode=5`) JSON form of a GE dump: writer rules and reader."""

from __future__ import annotations

import copy
import json

import pytest
from ge_fixtures import EPSILON_F32, fusion_model

from precision_shell.errors import FormatError
from precision_shell.formats.ge.graph import DataTypeName, model_to_json, parse_ge_json

ATC_SAMPLE = r"""{
  "graph": [
    {
      "attr": [
        {
          "key": "_session_graph_id",
          "value": {
            "s": "0_1"
          }
        }
      ],
      "input": [
        "x:0"
      ],
      "name": "ge_default_20220926160231_NPU_61",
      "op": [
        {
          "attr": [
            {
              "key": "_datadump_original_op_names",
              "value": {
                "list": {
                  "s": [
                    "dense/MatMul",
                    "dense/BiasAdd"
                  ],
                  "val_type": "VT_LIST_STRING"
                }
              }
            },
            {
              "key": "alpha",
              "value": {
                "f": "0.5"
              }
            },
            {
              "key": "dst_type",
              "value": {
                "dt": 1
              }
            },
            {
              "key": "name_cn",
              "value": {
                "s": "\\345\\215\\267\\347\\247\\257\\n"
              }
            },
            {
              "key": "no_counterpart",
              "value": {
                "list": {
                  "val_type": "VT_LIST_STRING"
                }
              }
            }
          ],
          "dst_index": [
            0
          ],
          "dst_name": [
            "dense/Relu"
          ],
          "id": 3,
          "input": [
            "x:0",
            "init:-1"
          ],
          "input_desc": [
            {
              "dtype": "DT_FLOAT16",
              "layout": "ND",
              "shape": {
                "dim": [
                  4,
                  64
                ]
              }
            },
            null
          ],
          "name": "dense/MatMul",
          "output_desc": [
            {
              "attr": [
                {
                  "key": "_datadump_origin_name",
                  "value": {
                    "s": "dense/BiasAdd"
                  }
                },
                {
                  "key": "origin_shape",
                  "value": {
                    "list": {
                      "i": [
                        4,
                        32
                      ],
                      "val_type": "VT_LIST_INT"
                    }
                  }
                }
              ],
              "dtype": "DT_FLOAT16",
              "layout": "ND",
              "name": "y",
              "shape": {
                "dim": [
                  4,
                  32
                ]
              }
            }
          ],
          "type": "MatMulV2"
        }
      ]
    }
  ],
  "name": "model",
  "version": 2
}
"""


def test_atc_sample_is_read() -> None:
    model = parse_ge_json(ATC_SAMPLE)
    assert (model.name, model.version) == ("model", 2)
    graph = model.graphs[0]
    assert graph.attrs == {"_session_graph_id": "0_1"}
    op = graph.ops[0]
    assert (op.name, op.type, op.id) == ("dense/MatMul", "MatMulV2", 3)
    assert op.data_inputs == [("x", 0)] and op.control_inputs == ["init"]
    assert op.original_op_names == ["dense/MatMul", "dense/BiasAdd"]
    assert op.attrs["alpha"] == 0.5
    assert op.attrs["dst_type"] == "DT_FLOAT16" and type(op.attrs["dst_type"]) is DataTypeName
    assert op.attrs["name_cn"] == "卷积\n"
    assert op.attrs["no_counterpart"] == []
    assert [desc.shape for desc in op.input_descs] == [(4, 64), ()]
    assert op.input_descs[1].dtype == "DT_UNDEFINED"
    output = op.output_descs[0]
    assert (output.origin_name, output.origin_shape, output.dtype) == (
        "dense/BiasAdd",
        (4, 32),
        "DT_FLOAT16",
    )
    assert (op.dst_name, op.dst_index) == (["dense/Relu"], [0])


def test_writer_follows_atc_rules() -> None:
    document = json.loads(model_to_json(fusion_model()))
    assert list(document) == sorted(document)
    graph = document["graph"][0]
    assert "output" not in graph  # atc's black list
    assert graph["input"] == ["input_x:0"]
    matmul = graph["op"][1]
    keys = [entry["key"] for entry in matmul["attr"]]
    assert keys == sorted(keys)
    attrs = {entry["key"]: entry.get("value") for entry in matmul["attr"]}
    assert attrs["epsilon"] == {"f": "1e-05"}  # a singular float as "%g" text
    assert attrs["alpha"] == {"f": "0.5"}
    assert attrs["scales"] == {"list": {"f": [0.25, -1.5], "val_type": "VT_LIST_FLOAT"}}
    assert attrs["name_cn"] == {"s": "\\345\\261\\202/\\345\\215\\267\\347\\247\\257"}
    assert attrs["pass_name"]["list"]["s"] == [
        "MatMulBiasAddFusionPass",
        "TbeCommonRules0FusionPass",
    ]
    assert attrs["dst_type"] == {"dt": 1}
    assert attrs["big"] == {"i": -(2**62)}
    assert attrs["blob"] == {}  # bt is black-listed
    assert attrs["blobs"] == {"list": {"val_type": "VT_LIST_BYTES"}}
    assert attrs["const"] == {
        "t": {"desc": {"dtype": "DT_INT8", "layout": "ND", "name": "c", "shape": {"dim": [3]}}}
    }
    assert attrs["nested"]["list_list_int"]["list_list_i"] == [
        {"list_i": [1, 2]},
        None,
        {"list_i": [-3]},
    ]
    assert attrs["empty_list"] == {"list": {"val_type": "VT_LIST_STRING"}}
    assert attrs["unset"] is None
    assert matmul["output_desc"][1]["dtype"] == "DT_BF16"
    assert matmul["id"] == 3 and matmul["stream_id"] == 1


def test_writer_and_reader_round_trip_what_atc_keeps() -> None:
    model = fusion_model()
    expected = copy.deepcopy(model)
    expected.graphs[0].outputs = []
    attrs = expected.graphs[0].ops[1].attrs
    attrs.update({"blob": None, "blobs": []})
    attrs["const"]["data"] = b""
    parsed = parse_ge_json(model_to_json(model))
    assert parsed == expected
    assert parsed.graphs[0].ops[1].attrs["epsilon"] == EPSILON_F32


def test_reader_takes_objects_camel_case_and_numbers_as_strings() -> None:
    document = {
        "graph": [
            {
                "name": "g",
                "futureField": {"x": 1},
                "op": [
                    {
                        "name": "a",
                        "id": "12",
                        "streamId": 2,
                        "attr": {"k": {"i": "7"}, "t": {"b": "true"}},
                        "outputDesc": [{"dtype": 2}, {"dtype": "DT_FROM_THE_FUTURE"}],
                        "dstIndex": ["1", 2.0],
                    }
                ],
            }
        ]
    }
    op = parse_ge_json(json.dumps(document)).graphs[0].ops[0]
    assert (op.id, op.stream_id, op.dst_index) == (12, 2, [1, 2])
    assert op.attrs == {"k": 7, "t": True}
    assert [desc.dtype for desc in op.output_descs] == ["DT_FLOAT16", "DT_UNDEFINED"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "graph": [,]\n}', "line 2, column 13: Expecting value"),
        ("[1, 2]", "expected a JSON object (a GE ModelDef) at the top level"),
        (
            '{"graph": [{"op": [{"id": "abc"}]}]}',
            "$.graph[0].op[0].id: expected an integer, got 'abc'",
        ),
        ('{"graph": [{"op": [{"id": 1.5}]}]}', "$.graph[0].op[0].id: expected an integer, got 1.5"),
        ('{"graph": [{"attr": 5}]}', "$.graph[0].attr: expected a list of {key, value} entries"),
        ('{"graph": [{"name": 5}]}', "$.graph[0].name: expected a string, got 5"),
        ('{"graph": [3]}', "$.graph[0]: expected an object, got int"),
        (
            '{"graph": [{"op": [{"attr": [{"key": "k", "value": {"b": "maybe"}}]}]}]}',
            "$.graph[0].op[0].attr[0].value.b: expected true or false, got 'maybe'",
        ),
    ],
)
def test_reader_errors_name_file_and_place(text: str, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        parse_ge_json(text, "graph.json")
    assert str(caught.value) == f"graph.json: {message}"
