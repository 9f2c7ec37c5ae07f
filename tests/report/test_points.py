"""Plot points read off a result CSV: which rows become points, their x, cosine and SQNR."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from precision_shell.compare.results.columns import load_result_columns
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.point_arrays import point_arrays
from precision_shell.report.points import op_cosines, output_points

COSINE_ONLY = ThresholdRule({"CosineSimilarity": 0.98})

HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)


def _row(
    index: int, op: str, tensor: str, cos: str, red: str, reason: str = "", max_abs: str = "0.1"
) -> str:
    return (
        f'{index},Conv2D,{op},DT_FLOAT16,NaN,{op},DT_FLOAT,{op}:{tensor},"[2,4]",'
        f'{cos},{max_abs},0.1,{red},0.0,"(0;1),(0;1)",0.1,0.1,0.1,0.1,{reason}'
    )


@pytest.fixture
def table(tmp_path: Path):
    lines = [
        HEADER,
        _row(3, "a", "input:0", "1.000000", "0.000000"),
        _row(3, "a", "output:0", "0.990000", "0.100000"),
        _row(3, "a", "output:1", "0.950000", "0.010000"),  # a's worst output
        _row(5, "b", "output:0", "nan", "inf"),  # NaN in the data
        _row(7, "c", "output:0", "NaN", "NaN", "benchmark c.0.*.npy not found"),
        _row(9, "d", "output:0", "NaN", "0.000000"),  # a benchmark of zeros: RED 0, diff
        _row(11, "e", "output:0", "1.000000", "0.000000", max_abs="0.000000"),  # identical
    ]
    path = tmp_path / "result_20260101000000.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_result_csv(path)


def test_one_point_per_output_with_a_cosine_or_a_distance(table) -> None:
    points = output_points(table.rows, COSINE_ONLY, root_cause="b")
    assert [(p.op, p.tensor) for p in points] == [
        ("a", "a:output:0"),
        ("a", "a:output:1"),
        ("b", "b:output:0"),
        ("d", "d:output:0"),
        ("e", "e:output:0"),
    ]
    assert [p.x for p in points] == [3, 3, 5, 9, 11]
    assert [p.line for p in points] == [3, 4, 5, 7, 8]
    a0, a1, b, d, e = points
    assert (a0.cosine, a0.fails) == (0.99, False)
    assert math.isclose(a0.sqnr_db, 20.0) and math.isclose(a1.sqnr_db, 40.0)
    assert (a1.cosine, a1.fails) == (0.95, True)
    assert b.cosine_nonfinite and b.sqnr_nonfinite and b.fails and b.root_cause
    assert (b.cosine_text, b.red_text) == ("nan", "inf")
    # an infinite distance (the device's inf against finite values) is all noise: -inf, as
    # summary.json's SQNR says (QA Q27: the page said nan)
    assert b.sqnr_db == -math.inf
    # RED 0 with values apart: the distance's guard for a benchmark of zeros, no signal at
    # all (QA Q27 #2: plotted at the top, as identical tensors are)
    assert d.cosine is None and d.sqnr_db == -math.inf and not d.fails
    assert e.sqnr_db == math.inf
    assert not any(p.root_cause for p in (a0, a1, d, e))
    # the arrays a big page plots say the same
    arrays = point_arrays(load_result_columns(table.path), COSINE_ONLY, None)
    assert arrays.sqnr.tolist()[-3:] == [-math.inf, -math.inf, math.inf]


def test_a_nan_distance_is_an_sqnr_of_nan_and_none_is_not_computed(tmp_path: Path) -> None:
    from precision_shell.report.plot_svg import point_title

    lines = [HEADER, _row(5, "b", "output:0", "nan", "nan"), _row(6, "c", "output:0", "0.5", "NaN")]
    path = tmp_path / "result_20260101000000.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    b, c = output_points(read_result_csv(path).rows, COSINE_ONLY, None)
    assert math.isnan(b.sqnr_db) and c.sqnr_db is None
    assert math.isnan(point_arrays(load_result_columns(path), COSINE_ONLY, None).sqnr[0])
    assert "SQNR nan dB" in point_title(b, 0.98)
    assert "SQNR not computed\n" in point_title(c, 0.98) + "\n"  # QA Q27 #7: not "... dB"
    assert "not computed dB" not in point_title(c, 0.98)


def test_x_is_the_op_ordinal_when_a_row_has_no_index(table, tmp_path: Path) -> None:
    text = table.path.read_text(encoding="utf-8").replace("\n9,", "\n,", 1)
    path = tmp_path / "no_index.csv"
    path.write_text(text, encoding="utf-8")
    points = output_points(read_result_csv(path).rows, COSINE_ONLY, None)
    assert [(p.op, p.x) for p in points] == [("a", 0), ("a", 0), ("b", 1), ("d", 3), ("e", 4)]


def test_op_cosines_keeps_each_ops_worst_output(table) -> None:
    ops = op_cosines(table.rows, COSINE_ONLY)
    assert [(o.op, o.x, o.fails) for o in ops] == [("a", 3, True), ("b", 5, True), ("e", 11, False)]
    assert ops[0].cosine == 0.95 and math.isnan(ops[1].cosine)


@pytest.mark.parametrize(
    ("cosine", "fails", "verdict"),
    [
        (0.95, True, "below threshold 0.98"),
        (0.980439, True, "fails the rule"),  # fails on the relative distance only (QA)
        (0.999, False, "pass"),
    ],
)
def test_a_point_title_says_below_threshold_only_when_its_cosine_is(cosine, fails, verdict):
    from precision_shell.report.plot_svg import point_title
    from precision_shell.report.points import PlotPoint

    point = PlotPoint(
        2, "conv1", "Conv2D", "conv1:output:0", 4, cosine, f"{cosine}", 30.0, "0.06", fails, False
    )
    assert point_title(point, 0.98).endswith("\n" + verdict)
