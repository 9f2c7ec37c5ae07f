"""Fuzz the GE graph readers, protobuf text and atc JSON, through `load_ge_graph` (the reader
the workspace index calls): mutated valid dumps, edge tokens, deep nesting. Any input gives a
picklable model (the index cache pickles it) or a one-line PrecisionError."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from fuzz_inputs import assert_picklable, budget, mutated_text, returns_or_names_error
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats.ge.graph import load_ge_graph, model_to_json, model_to_text
from tests.formats.ge_fixtures import big_model, fusion_model

# Odd but valid spellings, so mutations also reach the token path.
TOKEN_PATH_TEXT = """graph { name: "g" op < name: 'a' type: "Add" id: 0x10
  input: ["x:0", "y:-1"] attr { key: "i" value { i: -017 } }  # a comment
  attr { key: "l" value { list { i: [1, 2] f: [1e400, -inf] s: "a" "b" } } }
  output_desc { dtype: DT_FLOAT16 shape { dim: [4, 1] } unknown_field { x: 1 } } > }
"""


@cache
def text_seeds() -> list[str]:
    return [model_to_text(fusion_model()), model_to_text(big_model(3)), TOKEN_PATH_TEXT]


@cache
def json_seeds() -> list[str]:
    return [model_to_json(fusion_model()), model_to_json(big_model(3))]


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ge_fuzz") / "ge_proto_00000001_Build.txt"


def load(path: Path, text: str) -> None:
    # Lone surrogates reach the file as the bytes a careless writer would leave.
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    model = returns_or_names_error(lambda: load_ge_graph(path))
    if model is not None:
        assert_picklable(model)


def test_the_seeds_read(fuzz_file: Path) -> None:
    for seed in text_seeds() + json_seeds():
        fuzz_file.write_text(seed, encoding="utf-8")
        assert load_ge_graph(fuzz_file).graphs


@budget(250)
@given(data=st.data())
def test_mutated_text_dumps(fuzz_file: Path, data: st.DataObject) -> None:
    load(fuzz_file, data.draw(mutated_text(text_seeds())))


@budget(250)
@given(data=st.data())
def test_mutated_json_dumps(fuzz_file: Path, data: st.DataObject) -> None:
    load(fuzz_file, data.draw(mutated_text(json_seeds())))


# Nesting: an attribute holding a function whose attribute holds a function... (the shape that
# broke the index cache's pickling), and bare nested lists and blocks.
def nested_text(depth: int) -> str:
    opening = 'attr { key: "a" value { func { name: "f" ' * depth
    return "graph { " + opening + "}" * (3 * depth) + " }\n"


def nested_json(depth: int) -> str:
    value: object = {"func": {"name": "f"}}
    for _ in range(depth):
        value = {"func": {"name": "f", "attr": [{"key": "a", "value": value}]}}
    return json.dumps({"graph": [{"attr": [{"key": "a", "value": value}]}]})


@budget(40)
@given(
    depth=st.one_of(st.integers(1, 40), st.integers(40, 400), st.sampled_from([5000])),
    kind=st.sampled_from(["text", "json", "json lists", "text blocks"]),
)
def test_deep_nesting(fuzz_file: Path, depth: int, kind: str) -> None:
    if kind == "text":
        text = nested_text(depth)
    elif kind == "json":
        text = nested_json(min(depth, 300))  # json.dumps itself recurses
    elif kind == "json lists":
        text = '{"graph": ' + "[" * depth + "]" * depth + "}"
    else:
        text = "graph { " + "unknown { " * depth + "}" * depth + " }"
    load(fuzz_file, text)
