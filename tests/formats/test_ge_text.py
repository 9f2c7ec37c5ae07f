"""The fast GE text parser, checked against protobuf's own `text_format.Parse` (the oracle)."""

from __future__ import annotations

import math

import pytest
from ge_fixtures import big_model, fusion_model
from google.protobuf import text_format

from precision_shell.errors import FormatError
from precision_shell.formats.ge import proto as ge_proto
from precision_shell.formats.ge.graph import (
    DataTypeName,
    model_from_message,
    model_to_text,
    parse_ge_text,
)
from precision_shell.formats.ge.text import _TextParser


def oracle(text: str):
    """What protobuf makes of `text`, converted to our model."""
    return model_from_message(text_format.Parse(text, ge_proto.ModelDef()))


def token_mode(text: str):
    """The token path alone on the whole text (the fast path's fallback)."""
    return _TextParser(text, "<t>", token_mode=True).parse()


def test_generated_fusion_model_matches_protobuf() -> None:
    text = model_to_text(fusion_model())
    expected = oracle(text)
    assert parse_ge_text(text) == expected
    assert token_mode(text) == expected
    assert expected == fusion_model()


def test_generated_big_model_matches_protobuf() -> None:
    text = model_to_text(big_model(150))
    expected = oracle(text)
    parsed = parse_ge_text(text)
    assert parsed == expected
    assert token_mode(text) == expected
    assert len(parsed.graphs[0].ops) == 150
    assert parsed.graphs[0].ops[5].l1_fusion_group == 1


def test_crlf_and_trailing_spaces_match_protobuf() -> None:
    text = model_to_text(fusion_model())
    odd = "\r\n".join(
        line + ("  " if index % 3 == 0 else "") for index, line in enumerate(text.split("\n"))
    )
    assert parse_ge_text(odd) == oracle(odd) == fusion_model()


ODD_INPUTS = {
    "one-line nested blocks": """graph { name: "g" op { name: "a" type: "MatMulV2"
        input_desc { dtype: DT_FLOAT16 shape { dim: 4 dim: 64 } layout: "ND" }
        attr { key: "k" value { list { s: "x" s: "y" val_type: VT_LIST_STRING } } } } }""",
    "comments": """# a GE dump
graph {  # the root graph
  name: "g"  # its name
  # a whole comment line
  op { name: "a#b" id: 7 }  # the '#' in the name is text
}
""",
    "angle brackets and colon before blocks": """graph < name: "g" op: <
  name: 'x' input_desc: { name: "d" } > >""",
    "list syntax": """graph { name: "g" input: ["a:0", "b:1"] op: [{ name: "p" }, < name: "q" >]
  op { name: "r" src_index: [] dst_index: [1, -2, 3]
    output_desc { shape { dim: [1, 2, -3] } }
    attr { key: "l" value { list { i: [4, 5] f: [0.5] } } } } }""",
    "escapes": r"""graph { op {
  name: "\345\215\267\347\247\257/conv"
  type: "tab\there \"quoted\" back\\slash \x41\x42 \101 \'"
  input: 'single "quotes" and \' escapes'
  attr { key: "bytes" value { bt: "\377\000\x7f" } }
  attr { key: "s" value { s: "\351\224\231" } } } }""",
    "adjacent strings": """graph { name: "ab" "cd" 'ef'
  op { name: "x"
    "y"
    type: "T" }
  op { attr { key: "l" value { list { s: "p" "q" s: "r" } } } } }""",
    "extra whitespace": """

graph\t{
\tname :   "g"

   op
   {
      name:"a"   id :3
   }
}
""",
    "numbers": """graph { op { id: -5 stream_id: 0x1F input_i: [017, 0, -0x10]
  attr { key: "f1" value { f: 1e-05 } } attr { key: "f2" value { f: -2.5E+3 } }
  attr { key: "f3" value { f: inf } } attr { key: "f4" value { f: -Infinity } }
  attr { key: "f5" value { f: 1.5f } } attr { key: "f6" value { f: 3 } }
  attr { key: "f7" value { f: 1e40 } } attr { key: "i" value { i: -9223372036854775808 } }
  attr { key: "dt" value { dt: 27 } } attr { key: "dts" value { list { dt: [0, 1, 999] } } }
} }""",
    "enums as numbers and bools": """graph { op {
  output_desc { dtype: 2 } output_desc { dtype: DT_BF16 } output_desc { dtype: 99 }
  has_out_attr: t is_input_const: [True, false, 1, f, 0]
  attr { key: "b" value { b: True } }
  attr { key: "l" value { list { val_type: 1 } } } } }""",
    "separators": """graph { name: "g"; input: "a:0", op { name: "x"; id: 1, };
  attr { key: "k"; value { i: 1; }; }, }""",
    "empty values": """graph { op {
  attr { key: "none" value { } } attr { key: "nolist" value { list { val_type: VT_LIST_STRING } } }
  attr { key: "novalue" } attr { value { i: 1 } } output_desc { } input_desc { shape { } } } }""",
    "fast-path blocks with odd values": """graph {
  op {
    attr {
      key: "octal"
      value {
        i: 010
      }
    }
    attr {
      key: "suffix"
      value {
        f: 2f
      }
    }
    attr {
      key: "mixed"
      value {
        list {
          i: 1
          s: "a"
          val_type: 2
        }
      }
    }
    attr {
      key: "descs"
      value {
        list {
          td: {
            name: "t"
          }
        }
      }
    }
    output_desc {
      shape {
        dim: 07
        dim: 2
      }
    }
  }
}
""",
}


@pytest.mark.parametrize("name", list(ODD_INPUTS))
def test_odd_inputs_match_protobuf(name: str) -> None:
    text = ODD_INPUTS[name]
    expected = oracle(text)
    assert parse_ge_text(text) == expected
    assert token_mode(text) == expected


def test_odd_input_values() -> None:
    ops = parse_ge_text(ODD_INPUTS["escapes"]).graphs[0].ops
    assert ops[0].name == "卷积/conv"
    assert ops[0].type == 'tab\there "quoted" back\\slash AB A \''
    assert ops[0].attrs["bytes"] == b"\xff\x00\x7f"
    numbers = parse_ge_text(ODD_INPUTS["numbers"]).graphs[0].ops[0]
    assert (numbers.id, numbers.stream_id) == (-5, 31)
    assert numbers.attrs["f3"] == math.inf and numbers.attrs["f4"] == -math.inf
    assert numbers.attrs["f7"] == math.inf  # beyond float32, as protobuf stores it
    assert numbers.attrs["dts"] == ["DT_FLOAT", "DT_FLOAT16", "999"]
    assert type(numbers.attrs["dt"]) is DataTypeName and numbers.attrs["dt"] == "DT_BF16"
    dtypes = [
        desc.dtype
        for desc in parse_ge_text(ODD_INPUTS["enums as numbers and bools"])
        .graphs[0]
        .ops[0]
        .output_descs
    ]
    assert dtypes == ["DT_FLOAT16", "DT_BF16", "99"]
    joined = parse_ge_text(ODD_INPUTS["adjacent strings"]).graphs[0]
    assert (joined.name, joined.ops[0].name, joined.ops[1].attrs["l"]) == (
        "abcdef",
        "xy",
        ["pq", "r"],
    )
    empty = parse_ge_text(ODD_INPUTS["empty values"]).graphs[0].ops[0].attrs
    assert empty == {"none": None, "nolist": [], "novalue": None, "": 1}


def test_nan_float_matches_protobuf() -> None:
    text = 'graph { op { attr { key: "n" value { f: nan } } attr { key: "m" value { f: -NaN } } } }'
    attrs = parse_ge_text(text).graphs[0].ops[0].attrs
    expected = oracle(text).graphs[0].ops[0].attrs
    assert math.isnan(attrs["n"]) and math.isnan(attrs["m"]) and math.isnan(expected["n"])


def test_string_continued_after_a_fast_line_restarts_in_token_mode() -> None:
    text = 'graph {\n  name: "a"\n  "b"\n  op {\n    name: "c"\n  }\n}\n'
    assert parse_ge_text(text) == oracle(text)
    assert parse_ge_text(text).graphs[0].name == "ab"


UNKNOWN = """graph {
  name: "g"
  future_field: 12
  future_block {
    nested { deeper: "x" list: [1, 2] }
    attr {
      key: "k"
      value {
        s: "v"
      }
    }
    shape {
      dim: 1
    }
  }
  op {
    name: "a"
    new_flag: true
    [some.extension] { x: 1 }
    output_desc {
      name: "y"
      device_hint: "NPU" "fast"
      attr {
        key: "_unknown_attr"
        value {
          s: "kept"
        }
      }
    }
    attr { key: "weird" value { future_member: 5 i: 4 } }
  }
}
"""
KNOWN = """graph {
  name: "g"
  op {
    name: "a"
    output_desc {
      name: "y"
      attr {
        key: "_unknown_attr"
        value {
          s: "kept"
        }
      }
    }
    attr { key: "weird" value { i: 4 } }
  }
}
"""


def test_unknown_fields_are_skipped_and_unknown_attrs_kept() -> None:
    parsed = parse_ge_text(UNKNOWN)
    assert parsed == oracle(KNOWN)
    assert token_mode(UNKNOWN) == parsed
    op = parsed.graphs[0].ops[0]
    assert op.output_descs[0].attrs == {"_unknown_attr": "kept"}
    assert op.attrs == {"weird": 4}


ERRORS = [
    (
        "extra closing brace",
        'graph {\n  name: "g"\n}\n}\n',
        "line 4, column 1: unexpected '}': no block is open",
    ),
    (
        "missing closing brace",
        'graph {\n  op {\n    name: "a"\n  }\n',
        "line 5, column 1: unexpected end of file: 'graph' opened at line 1 is not closed (expected '}')",
    ),
    (
        "mismatched closer",
        "graph {\n  op <\n    id: 1\n  }\n}\n",
        "line 4, column 3: expected '>' to close 'op' opened at line 2, got '}'",
    ),
    (
        "bad int",
        "graph {\n  op {\n    id: abc\n  }\n}\n",
        "line 3, column 9: expected an integer for 'id', got 'abc'",
    ),
    (
        "float for int",
        "graph { op { id: 1.5 } }",
        "line 1, column 18: expected an integer for 'id', got '1.5'",
    ),
    (
        "bad int in an attr block",
        'graph {\n  attr {\n    key: "k"\n    value {\n      i: 2x\n    }\n  }\n}\n',
        "line 5, column 10: expected an integer for 'i', got '2x'",
    ),
    ("garbage line", "graph {\n  %%% nonsense\n}\n", "line 2, column 3: unexpected character '%'"),
    (
        "string for number",
        'graph { op { id: "3" } }',
        "line 1, column 18: expected an integer for 'id', got '\"3\"'",
    ),
    (
        "number for string",
        "graph {\n  name: 5\n}\n",
        "line 2, column 9: expected a string for 'name', got '5'",
    ),
    (
        "missing colon",
        'graph {\n  name "g"\n}\n',
        "line 2, column 8: expected ':' or '{' after 'name', got '\"g\"'",
    ),
    ("unterminated string", 'graph {\n  name: "g\n}\n', "line 2, column 9: unterminated string"),
    (
        "value block for scalar",
        "graph { op { id { } } }",
        "line 1, column 17: 'id' takes a value, not a '{' block",
    ),
    (
        "scalar for message",
        "graph { op: 5 }",
        "line 1, column 13: expected '{' to open 'op', got '5'",
    ),
    (
        "bad bool",
        "graph { op { has_out_attr: yes } }",
        "line 1, column 28: expected true or false for 'has_out_attr', got 'yes'",
    ),
    (
        "unclosed list",
        'graph { input: ["a", "b"\n',
        "line 2, column 1: unexpected end of file: expected ']' for 'input'",
    ),
    (
        "value missing at end",
        "graph { op { name:",
        "line 1, column 19: unexpected end of file: expected a value for 'name'",
    ),
    ("stray string", '"lonely"\n', "line 1, column 1: expected a field name, got '\"lonely\"'"),
    (
        "bad escape",
        'graph {\n  name: "ab\\x"\n}\n',
        "line 2, column 9: bad escape in the string for 'name'",
    ),
    (
        "bad escape in a continued string",
        'graph { name: "a" "\\x" }',
        "line 1, column 19: bad escape in the string for 'name'",
    ),
]


@pytest.mark.parametrize(("name", "text", "message"), ERRORS, ids=[error[0] for error in ERRORS])
def test_errors_name_file_line_and_column(name: str, text: str, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        parse_ge_text(text, "ge_proto_00001_Build.txt")
    assert str(caught.value) == f"ge_proto_00001_Build.txt: {message}"
    with pytest.raises(text_format.ParseError):
        text_format.Parse(text, ge_proto.ModelDef())  # protobuf rejects it too


def test_gc_state_is_restored() -> None:
    import gc

    assert gc.isenabled()
    parse_ge_text('graph { name: "g" }')
    assert gc.isenabled()
    with pytest.raises(FormatError):
        parse_ge_text("graph {")
    assert gc.isenabled()
