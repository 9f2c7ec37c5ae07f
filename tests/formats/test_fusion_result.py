"""GE fusion_result.json: both real shapes, tolerance, broken files, the writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.fusion_result import (
    FusionPass,
    read_fusion_result,
    write_fusion_result,
)

# The shape current CANN documents (export_compile_stat), counts as strings.
CURRENT_SHAPE = """{
    "session_and_graph_id_0_0": {
        "graph_fusion": {
            "ConvBatchnormFusionPass": {
                "effect_times": "2",
                "match_times": "2"
            },
            "MatMulBiasAddFusionPass": {
                "effect_times": "0",
                "match_times": "4"
            }
        },
        "ub_fusion": {
            "TbeConvStridedwriteFusionPass": {
                "effect_times": "3",
                "match_times": "3",
                "repository_hit_times": "1"
            }
        }
    },
    "session_and_graph_id_1_1": {
        "graph_fusion": {
            "SoftmaxFusionPass": {
                "effect_times": "5",
                "match_times": "5"
            }
        }
    }
}
"""

# Older GE appended one object per graph, so the file is several documents in a row.
OLDER_SHAPE = """{
    "graph_fusion": {
        "ZConcatv2dFusionPass": {
            "effect_times": "1",
            "match_times": "1"
        }
    },
    "session_and_graph_id": "0_1",
    "ub_fusion": {
        "MatmulConfusiontransposeUbFusion": {
            "effect_times": "2",
            "match_times": "2"
        }
    }
}{
    "graphId": "0_2",
    "graph_fusion": {
        "PoolingFusionPass": {
            "effect_times": "0",
            "match_times": "1"
        }
    }
}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fusion_result.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_current_shape(tmp_path: Path) -> None:
    assert read_fusion_result(_write(tmp_path, CURRENT_SHAPE)) == [
        FusionPass("0_0", "graph_fusion", "ConvBatchnormFusionPass", 2, 2),
        FusionPass("0_0", "graph_fusion", "MatMulBiasAddFusionPass", 4, 0),
        FusionPass(
            "0_0",
            "ub_fusion",
            "TbeConvStridedwriteFusionPass",
            3,
            3,
            {"repository_hit_times": "1"},
        ),  # fmt: skip
        FusionPass("1_1", "graph_fusion", "SoftmaxFusionPass", 5, 5),
    ]


def test_older_concatenated_shape(tmp_path: Path) -> None:
    assert read_fusion_result(_write(tmp_path, OLDER_SHAPE)) == [
        FusionPass("0_1", "graph_fusion", "ZConcatv2dFusionPass", 1, 1),
        FusionPass("0_1", "ub_fusion", "MatmulConfusiontransposeUbFusion", 2, 2),
        FusionPass("0_2", "graph_fusion", "PoolingFusionPass", 1, 0),
    ]


def test_tolerates_missing_keys_numbers_and_extra_entries(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "version": "7.0",  # not a graph entry
            "session_and_graph_id_0_3": {
                "graph_fusion": {"A": {"match_times": 3}, "B": {}},
                "other_stats": {"C": {"match_times": "1"}},
            },
            "0_4": {"ub_fusion": {"D": {"effect_times": "1", "match_times": "1"}}},
        }
    )
    assert read_fusion_result(_write(tmp_path, text)) == [
        FusionPass("0_3", "graph_fusion", "A", 3, 0),
        FusionPass("0_3", "graph_fusion", "B", 0, 0),
        FusionPass("0_4", "ub_fusion", "D", 1, 1),
    ]


@pytest.mark.parametrize("text", ["", "  \n", "{}"])
def test_empty_files_have_no_passes(tmp_path: Path, text: str) -> None:
    assert read_fusion_result(_write(tmp_path, text)) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{\n  "session_and_graph_id_0_0": {\n    "graph_fusion": {,\n',
            "broken JSON at line 3 column 22: Expecting property name",
        ),
        ('{"a": 1}\n{"b": ', "broken JSON at line 2 column 7"),
        ("[1, 2]", "JSON document 0 is not an object"),
        (
            '{"session_and_graph_id_0_0": {"graph_fusion": {"P": {"match_times": "many"}}}}',
            "graph 0_0 graph_fusion pass P: match_times 'many' is not a count",
        ),
        (
            '{"session_and_graph_id_0_0": {"ub_fusion": {"P": {"effect_times": -1}}}}',
            "graph 0_0 ub_fusion pass P: effect_times -1 is not a count",
        ),
        ('{"session_and_graph_id_0_0": {"graph_fusion": ["P"]}}', "graph_fusion is not an object"),
        (
            '{"session_and_graph_id_0_0": {"graph_fusion": {"P": 3}}}',
            "expected an object of counts",
        ),
    ],
)
def test_broken_files(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(FormatError) as error:
        read_fusion_result(path)
    assert str(error.value).startswith(f"{path}: ")
    assert problem in str(error.value)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "fusion_result.json"
    path.write_bytes(b'{"\xff": 1}')
    with pytest.raises(FormatError, match="not UTF-8 text"):
        read_fusion_result(path)


def test_write_round_trip_in_the_real_shape(tmp_path: Path) -> None:
    path = tmp_path / "fusion_result.json"
    passes = [
        FusionPass("ignored", "graph_fusion", "MatMulBiasAddFusionPass", 2, 1),
        FusionPass(
            "ignored", "ub_fusion", "TbeEltwiseFusionPass", 3, 3, {"repository_hit_times": 0}
        ),
    ]
    write_fusion_result(path, "0_1", passes)
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "session_and_graph_id_0_1": {
            "graph_fusion": {
                "MatMulBiasAddFusionPass": {"effect_times": "1", "match_times": "2"},
            },
            "ub_fusion": {
                "TbeEltwiseFusionPass": {
                    "effect_times": "3",
                    "match_times": "3",
                    "repository_hit_times": "0",
                },
            },
        }
    }
    assert read_fusion_result(path) == [
        FusionPass("0_1", "graph_fusion", "MatMulBiasAddFusionPass", 2, 1),
        FusionPass("0_1", "ub_fusion", "TbeEltwiseFusionPass", 3, 3, {"repository_hit_times": "0"}),
    ]


def test_write_keeps_other_graphs_and_replaces_its_own(tmp_path: Path) -> None:
    path = _write(tmp_path, CURRENT_SHAPE)
    write_fusion_result(path, "1_1", [FusionPass("1_1", "graph_fusion", "NewPass", 7, 6)])
    passes = read_fusion_result(path)
    assert [p for p in passes if p.graph_id == "1_1"] == [
        FusionPass("1_1", "graph_fusion", "NewPass", 7, 6)
    ]
    assert [p.name for p in passes if p.graph_id == "0_0"] == [
        "ConvBatchnormFusionPass",
        "MatMulBiasAddFusionPass",
        "TbeConvStridedwriteFusionPass",
    ]


def test_write_rejects_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fusion kind 'l1_fusion'"):
        write_fusion_result(tmp_path / "f.json", "0_0", [FusionPass("0_0", "l1_fusion", "X", 1, 1)])
    assert not (tmp_path / "f.json").exists()


def _counts(counts: str) -> str:
    return '{"session_and_graph_id_0_0": {"graph_fusion": {"P": ' + counts + "}}}"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            _counts('{"x": ' + "[" * 5000 + "]" * 5000 + "}"),
            "JSON nested 5004 levels deep; at most 64",
        ),
        (_counts('{"match_times": ' + "1" * 4301 + "}"), "a number has more than 4300 digits"),
        (
            _counts('{"match_times": "' + "1" * 4301 + '"}'),
            "pass P: match_times '" + "1" * 39 + "... is not a count",
        ),
        (_counts('{"match_times": 1e400}'), "pass P: match_times inf is not a count"),
        (_counts('{"effect_times": 9223372036854775808}'), "effect_times 9223372036854775808 is"),
    ],
    ids=["5000-deep", "4301 digits", "4301-digit string", "1e400", "past int64"],
)
def test_numbers_and_nesting_out_of_bounds_are_format_errors(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(FormatError) as error:
        read_fusion_result(path)
    assert str(error.value).startswith(f"{path}: ")
    assert problem in str(error.value)


def test_lone_surrogates_are_replaced_and_odd_extras_kept_as_text(tmp_path: Path) -> None:
    text = (
        '{"session_and_graph_id_0_\\ud800": {"ub_fusion": {"P\\udc00": '
        '{"match_times": "1", "hit\\ud800": "\\ud83d\\ude00\\udfff", "deep": {"a": [1]}}}}}'
    )
    passes = read_fusion_result(_write(tmp_path, text))
    assert passes == [
        FusionPass(
            "0_\ufffd",
            "ub_fusion",
            "P\ufffd",
            1,
            0,
            {"hit\ufffd": "\U0001f600\ufffd", "deep": '{"a":[1]}'},
        )
    ]
