"""Fuzz the `fusion_result.json` reader with mutated files of both real shapes and deep
nesting. Any input gives picklable passes or a one-line PrecisionError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fuzz_inputs import assert_picklable, budget, mutated_text, returns_or_names_error
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats.fusion_result import read_fusion_result

CURRENT_SHAPE = json.dumps(
    {
        "session_and_graph_id_0_0": {
            "graph_fusion": {"ConvBatchnormFusionPass": {"effect_times": "2", "match_times": "2"}},
            "ub_fusion": {
                "TbeConvStridedwriteFusionPass": {
                    "effect_times": "3",
                    "match_times": "3",
                    "repository_hit_times": "1",
                }
            },
        }
    },
    indent=4,
)
# Older GE: one document per graph, one after another.
OLDER_SHAPE = (
    '{"graph_fusion": {"A": {"effect_times": "1", "match_times": "2"}}, '
    '"session_and_graph_id": "0_1", "ub_fusion": {}}\n'
    '{"graphId": "0_2", "ub_fusion": {"B": {"effect_times": 0, "match_times": 1}}}\n'
)
SEEDS = [CURRENT_SHAPE, OLDER_SHAPE]


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fusion_fuzz") / "fusion_result.json"


def read(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    passes = returns_or_names_error(lambda: read_fusion_result(path))
    if passes is not None:
        assert_picklable(passes)
        for fusion_pass in passes:
            # Everything kept is text a UTF-8 terminal or file can take.
            f"{fusion_pass.graph_id}{fusion_pass.name}{fusion_pass.extra}".encode()
            assert 0 <= fusion_pass.effect_times < 2**63


def test_the_seeds_read(fuzz_file: Path) -> None:
    fuzz_file.write_text(CURRENT_SHAPE, encoding="utf-8")
    assert [p.name for p in read_fusion_result(fuzz_file)] == [
        "ConvBatchnormFusionPass",
        "TbeConvStridedwriteFusionPass",
    ]
    fuzz_file.write_text(OLDER_SHAPE, encoding="utf-8")
    assert [(p.graph_id, p.name) for p in read_fusion_result(fuzz_file)] == [
        ("0_1", "A"),
        ("0_2", "B"),
    ]


@budget(400)
@given(text=mutated_text(SEEDS))
def test_mutated_fusion_results(fuzz_file: Path, text: str) -> None:
    read(fuzz_file, text)


@budget(30)
@given(depth=st.one_of(st.integers(1, 100), st.sampled_from([999, 5000])), lists=st.booleans())
def test_deep_nesting(fuzz_file: Path, depth: int, lists: bool) -> None:
    opening, closing = ("[", "]") if lists else ('{"a": ', "}")
    counts = opening * depth + "1" + closing * depth
    read(fuzz_file, '{"session_and_graph_id_0_0": {"graph_fusion": {"P": {"x": ' + counts + "}}}}")
