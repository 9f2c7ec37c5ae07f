"""What GE graph dumps (text and atc JSON) may hold: integers in their field's range, at most
64 nested messages (so every model pickles), no lone surrogates, no 5,000-deep JSON."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.ge.graph import (
    GraphDef,
    ModelDef,
    load_ge_graph,
    model_to_text,
    parse_ge_json,
    parse_ge_text,
)
from precision_shell.formats.ge.model import MAX_NESTING_DEPTH

DIGITS_4301 = "1" * 4301
INT64_RANGE = "-9223372036854775808..9223372036854775807"


def shape_text(dim: str) -> str:
    return f"graph {{\n  op {{\n    input_desc {{\n      shape {{\n        dim: {dim}\n      }}\n    }}\n  }}\n}}\n"


def list_text(item: str) -> str:
    return (
        'graph {\n  attr {\n    key: "a"\n    value {\n      list {\n'
        f"        i: {item}\n      }}\n    }}\n  }}\n}}\n"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            shape_text(DIGITS_4301),
            f"line 5, column 14: integer '{'1' * 40}'... (4301 characters) for 'dim' is out "
            f"of range {INT64_RANGE}",
        ),
        (
            shape_text("9223372036854775808"),
            f"line 5, column 14: integer '9223372036854775808' for 'dim' is out of range "
            f"{INT64_RANGE}",
        ),
        (
            list_text(DIGITS_4301),
            f"line 6, column 12: integer '{'1' * 40}'... (4301 characters) for 'i' is out "
            f"of range {INT64_RANGE}",
        ),
        (
            list_text("-9223372036854775809"),
            f"line 6, column 12: integer '-9223372036854775809' for 'i' is out of range "
            f"{INT64_RANGE}",
        ),
        (
            "version: 4294967296\n",
            "line 1, column 10: integer '4294967296' for 'version' is out of range 0..4294967295",
        ),
        (
            "graph { op { id: [1, " + DIGITS_4301 + "] } }",
            f"line 1, column 22: integer '{'1' * 40}'... (4301 characters) for 'id' is out "
            f"of range {INT64_RANGE}",
        ),
    ],
    ids=["4301-digit dim", "int64 + 1 dim", "4301-digit list i", "int64 - 1", "uint32", "token"],
)
def test_text_integers_out_of_range_are_format_errors(text: str, problem: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_ge_text(text, "g.txt")
    assert str(err.value) == f"g.txt: {problem}"


def test_text_integers_at_the_range_edges_still_read() -> None:
    model = parse_ge_text(
        shape_text("-9223372036854775808").replace("dim: -9", "dim: 9223372036854775807\n  dim: -9")
    )
    assert model.graphs[0].ops[0].input_descs[0].shape == (2**63 - 1, -(2**63))
    model = parse_ge_text(list_text("9223372036854775807"))
    assert model.graphs[0].attrs["a"] == [2**63 - 1]


def nested_functions(depth: int) -> str:
    """An attribute holding a function whose attribute holds a function..., `depth` deep:
    3 messages (attr entry, value, func) per level, under `graph`."""
    return (
        "graph { " + 'attr { key: "a" value { func { name: "f" ' * depth + "}" * (3 * depth) + " }"
    )


def test_text_nesting_is_bounded_and_what_reads_pickles() -> None:
    deepest = (MAX_NESTING_DEPTH - 1) // 3  # 21 levels: 64 messages
    model = parse_ge_text(nested_functions(deepest))
    assert pickle.loads(pickle.dumps(model)) == model
    with pytest.raises(FormatError) as err:
        parse_ge_text(nested_functions(deepest + 1), "g.txt")
    assert str(err.value) == (
        "g.txt: line 1, column 875: blocks nested more than 64 deep; no GE graph nests so"
    )


def test_text_nesting_of_unknown_fields_is_bounded_too() -> None:
    text = "graph { " + "unknown { " * 5000 + "}" * 5000 + " }"
    with pytest.raises(FormatError) as err:
        parse_ge_text(text, "g.txt")
    assert "blocks nested more than 64 deep" in str(err.value)


def nested_json(depth: int) -> str:
    value: object = {"func": {"name": "f"}}
    for _ in range(depth - 1):
        value = {"func": {"name": "f", "attr": [{"key": "a", "value": value}]}}
    return json.dumps({"graph": [{"attr": [{"key": "a", "value": value}]}]})


def test_json_nesting_is_bounded_like_text() -> None:
    deepest = (MAX_NESTING_DEPTH - 1) // 3
    model = parse_ge_json(nested_json(deepest))
    assert model == parse_ge_text(nested_functions(deepest))
    assert pickle.loads(pickle.dumps(model)) == model
    with pytest.raises(FormatError) as err:
        parse_ge_json(nested_json(deepest + 1), "g.json")
    assert str(err.value).startswith("g.json: $.graph[0].attr[0].value.func.attr[0]")
    assert str(err.value).endswith(": messages nested more than 64 deep; no GE graph nests so")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"graph": ' + "[" * 5000 + "]" * 5000 + "}", "JSON nested 5001 levels deep; at most 193"),
        ('{"version": ' + DIGITS_4301 + "}", "a number has more than 4300 digits"),
        ('{"version": 4294967296}', "$.version: integer 4294967296 is out of range 0..4294967295"),
        ('{"graph": [{"op": [{"id": "' + DIGITS_4301 + '"}]}]}', "$.graph[0].op[0].id: expected"),
        (
            '{"graph": [{"op": [{"input_desc": [{"dtype": 1e400}]}]}]}',
            "$.graph[0].op[0].input_desc[0].dtype: expected a DataType name or number, got inf",
        ),
        (
            '{"graph": [{"op": [{"input_desc": [{"dtype": 2147483648}]}]}]}',
            "dtype: integer 2147483648 is out of range -2147483648..2147483647",
        ),
        (
            '{"graph": [{"attr": [{"key": "k", "value": {"f": ' + "9" * 400 + "}}]}]}",
            "$.graph[0].attr[0].value.f: expected a number, got 99999999",
        ),
    ],
    ids=["5000-deep", "4301 digits", "uint32", "4301-digit string", "inf enum", "enum", "float"],
)
def test_json_values_out_of_range_are_format_errors(text: str, problem: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_ge_json(text, "g.json")
    assert str(err.value).startswith("g.json: ")
    assert problem in str(err.value)


def test_json_huge_floats_are_infinite_like_protobuf_makes_them() -> None:
    model = parse_ge_json('{"graph": [{"attr": [{"key": "k", "value": {"f": 1e400}}]}]}')
    assert model.graphs[0].attrs["k"] == float("inf")


def test_json_lone_surrogates_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "ge_proto_00000001_Build.txt"
    path.write_text(
        '{"name": "m\\ud800", "graph": [{"name": "g\\udfff", "attr": [{"key": "k\\ud800",'
        ' "value": {"list": {"s": ["a\\ud83d\\ude00", "\\udc00b"]}}}]}]}',
        encoding="ascii",
    )
    model = load_ge_graph(path)
    assert model.name == "m\ufffd"
    assert model.graphs[0].name == "g\ufffd"
    assert model.graphs[0].attrs == {"k\ufffd": ["a\U0001f600", "\ufffdb"]}


def test_the_fast_path_bounds_nesting_too() -> None:
    """Text as protobuf prints it (one field a line) takes the block fast path."""

    def functions(depth: int) -> ModelDef:
        value: dict = {"name": "f", "attrs": {}}
        for _ in range(depth - 1):
            value = {"name": "f", "attrs": {"a": value}}
        return ModelDef(graphs=[GraphDef(name="g", attrs={"a": value})])

    deepest = (MAX_NESTING_DEPTH - 1) // 3
    assert parse_ge_text(model_to_text(functions(deepest))) == functions(deepest)
    text = model_to_text(functions(deepest + 1))
    with pytest.raises(FormatError) as err:
        parse_ge_text(text, "g.txt")
    line = text[: text.index("func {", text.index("func {") + 1)].count("\n")
    assert str(err.value).startswith("g.txt: line ")
    assert str(err.value).endswith(": blocks nested more than 64 deep; no GE graph nests so")
    assert line < int(str(err.value).split("line ")[1].split(",")[0])
