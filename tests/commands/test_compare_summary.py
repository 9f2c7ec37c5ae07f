"""`vcs` through the dispatcher: our CSV and msaccucmp's (old and current headers), thresholds."""

from __future__ import annotations

import math

import pytest

from precision_shell.commands.compare_summary import CompareSummary
from precision_shell.compare.results.schema import read_result_csv
from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok

OLD_HEADER = (
    "Index,LeftOp,RightOp,TensorIndex,CosineSimilarity,MaxAbsoluteError,"
    "AccumulatedRelativeError,RelativeEuclideanDistance,KullbackLeiblerDivergence,"
    "StandardDeviation,CompareFailReason"
)
NEW_HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)


def _old_csv(path):
    # rows deliberately out of execution order; the old format has no OpType
    lines = [
        OLD_HEADER,
        '3,d/Relu,d/Relu,d/Relu:output:0,0.500000,2.000000,1.0,0.5,0.1,"(0.1;0.2),(0.1;0.2)",',
        '1,b/Conv,"b/Conv,b/BN",b/Conv:input:0,0.999000,0.010000,1.0,0.5,0.1,"(0.1;0.2),(0.1;0.2)",',
        '1,b/Conv,"b/Conv,b/BN",b/Conv:output:0,0.900000,0.500000,1.0,0.5,0.1,"(0.1;0.2),(0.1;0.2)",',
        '0,a/Data,a/Data,a/Data:output:0,1.000000,0.000000,0.0,0.0,0.0,"(0.1;0.2),(0.1;0.2)",',
        "2,c/Add,*,c/Add:output:0,NaN,NaN,NaN,NaN,NaN,NaN,no benchmark",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _new_csv(path):
    def row(index, op_type, npu, truth, tensor, cos, mae, reason=""):
        metrics = [
            cos,
            mae,
            "1.0",
            "0.1",
            "0.1",
            '"(0.1;0.2),(0.1;0.2)"',
            "0.1",
            "0.1",
            "1.0",
            "0.1",
        ]
        return ",".join(
            [str(index), op_type, npu, "float16", "NaN", truth, "float32", tensor, "[2]", "NO"]
            + metrics
            + [reason]
        )

    lines = [
        NEW_HEADER,
        row(0, "Conv2D", "conv", "conv", "conv:output:0", "0.999999", "0.000100"),
        # one benchmark op split over two device ops: NPUDump names both
        row(1, "MatMul", '"mm_a,mm_b"', "mm", "mm_a:input:0", "0.999000", "0.001000"),
        row(1, "MatMul", '"mm_a,mm_b"', "mm", "mm_a:output:0", "0.970000", "0.200000"),
        row(1, "MatMul", '"mm_a,mm_b"', "mm", "mm_b:output:0", "0.999000", "0.050000"),
        row(2, "Sum", "sum", "sum", "sum:output:0", "nan", "inf"),
        row(3, "Mul", "zero", "zero", "zero:output:0", "NaN", "0.000000", "all zero"),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demo(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    return root, manifest, open_shell(root)


def cosine_only(shell) -> None:  # noqa: ANN001
    """These hand-made files test vcs's reading and cosine logic: no distance limit."""
    shell.context.settings.override("thresholds.relative_euclidean_distance", math.inf)


def test_vcs_reads_the_newest_vc_result_by_default(demo):
    _, manifest, shell = demo
    vc = run_ok(shell, "vc")
    result = run_ok(shell, "vcs")
    assert isinstance(result, CompareSummary)
    assert result.path == vc.primary.csv_path
    assert result.compared_ops == len([o for o in manifest.device_ops if o.dump_file])
    ops = [v.op for v in result.ops]
    long_op = manifest.long_name_op
    # the default rule: cosine < 0.98, or relative Euclidean distance > 0.05, or nan
    assert ops[0] == CONV2 and {"l2_loss/Sum", long_op} <= set(ops)
    assert [v.index for v in result.ops] == sorted(v.index for v in result.ops)
    conv2 = result.ops[0]
    assert [r.tensor_index for r in conv2.inputs] == [f"{CONV2}:input:{k}" for k in range(3)]
    assert [r.tensor_index for r in conv2.outputs] == [f"{CONV2}:output:0"]
    cos = conv2.outputs[0].texts["CosineSimilarity"]
    red = conv2.outputs[0].texts["RelativeEuclideanDistance"]
    assert conv2.failing == [
        f"output 0: CosineSimilarity {cos} < 0.98",
        f"output 0: RelativeEuclideanDistance {red} > 0.05",
    ]
    l2 = next(v for v in result.ops if v.op == "l2_loss/Sum")
    assert l2.failing == [
        "output 0: CosineSimilarity nan < 0.98",
        "output 0: RelativeEuclideanDistance inf > 0.05",
    ]
    assert result.shown_metrics == [
        "CosineSimilarity",
        "RelativeEuclideanDistance",
        "MaxAbsoluteError",
    ]


def test_old_leftop_rightop_header_is_read_by_name_in_execution_order(demo, tmp_path):
    _, _, shell = demo
    cosine_only(shell)
    path = _old_csv(tmp_path / "old.csv")
    table = read_result_csv(path)
    assert [r.npu_dump for r in table.rows] == ["d/Relu", "b/Conv", "b/Conv", "a/Data", "c/Add"]
    assert table.rows[1].ground_truth == "b/Conv,b/BN"
    assert table.metric_columns == [
        "CosineSimilarity",
        "MaxAbsoluteError",
        "AccumulatedRelativeError",
        "RelativeEuclideanDistance",
        "KullbackLeiblerDivergence",
        "StandardDeviation",
    ]
    result = run_ok(shell, f"vcs -f {path}")
    assert [(v.index, v.op) for v in result.ops] == [(1, "b/Conv"), (3, "d/Relu")]
    assert result.ops[0].ground_truth == "b/Conv,b/BN"
    assert [r.slot for r in result.ops[0].inputs] == [0]
    assert result.ops[0].failing == ["output 0: CosineSimilarity 0.900000 < 0.98"]
    # "NaN" = not computed: c/Add does not fail
    assert result.compared_ops == 4 and result.failing_total == 2


def test_current_header_with_two_datatype_columns_is_read_by_name(demo, tmp_path):
    _, _, shell = demo
    cosine_only(shell)
    path = _new_csv(tmp_path / "new.csv")
    table = read_result_csv(path)
    assert table.rows[1].npu_dump == "mm_a,mm_b" and table.rows[1].op_name == "mm_a"
    assert table.rows[0].shape == "[2]" and table.rows[0].op_type == "Conv2D"
    assert table.rows[0].metrics["CosineSimilarity"] == pytest.approx(0.999999)
    assert "DataType" not in table.metric_columns and "OverFlow" not in table.metric_columns
    result = run_ok(shell, f"vcs -f {path}")
    # mm_a and mm_b are reported apart although NPUDump names both; lower-case nan fails,
    # "NaN" (not computed) does not
    assert [v.op for v in result.ops] == ["mm_a", "sum"]
    assert result.ops[0].failing == ["output 0: CosineSimilarity 0.970000 < 0.98"]
    assert [r.tensor_index for r in result.ops[0].inputs] == ["mm_a:input:0"]
    assert result.ops[1].failing == ["output 0: CosineSimilarity nan < 0.98"]
    assert result.compared_ops == 5


def test_cosine_limit_and_extra_metrics(demo, tmp_path):
    _, _, shell = demo
    cosine_only(shell)
    path = _new_csv(tmp_path / "new.csv")
    strict = run_ok(shell, f"vcs -f {path} -c 0.9999")
    assert [v.op for v in strict.ops] == ["mm_a", "mm_b", "sum"]
    loose = run_ok(shell, f"vcs -f {path} -c 0.5")
    assert [v.op for v in loose.ops] == ["sum"]
    with_mae = run_ok(shell, f"vcs -f {path} -c 0.5 --metric MaxAbsoluteError:0.04")
    assert [v.op for v in with_mae.ops] == ["mm_a", "mm_b", "sum"]
    assert with_mae.ops[1].failing == ["output 0: MaxAbsoluteError 0.050000 > 0.04"]
    assert with_mae.ops[2].failing == [
        "output 0: CosineSimilarity nan < 0.5",
        "output 0: MaxAbsoluteError inf > 0.04",
    ]
    # names are matched case-insensitively and shown first
    lower = run_ok(shell, f"vcs -f {path} --metric maxabsoluteerror:0.3")
    assert lower.shown_metrics[:2] == ["CosineSimilarity", "MaxAbsoluteError"]


def test_limit_shows_the_first_failing_ops_only(demo, tmp_path):
    _, _, shell = demo
    cosine_only(shell)
    path = _new_csv(tmp_path / "new.csv")
    one = run_ok(shell, f"vcs -f {path} -c 0.9999 -l 1")
    assert [v.op for v in one.ops] == ["mm_a"] and one.failing_total == 3
    everything = run_ok(shell, f"vcs -f {path} -c 0.9999 -l 0")
    assert len(everything.ops) == 3


def test_a_dir_argument_takes_its_newest_result(demo, tmp_path):
    _, _, shell = demo
    sub = tmp_path / "20240101000000"
    sub.mkdir()
    _old_csv(sub / "result_20240101000000.csv")
    result = run_ok(shell, f"vcs -f {tmp_path}")
    assert result.path == sub / "result_20240101000000.csv"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--metric MaxAbsoluteError", "vcs: --metric wants NAME:THRESHOLD, got 'MaxAbsoluteError'"),
        ("--metric Bogus:1", "vcs: unknown metric 'Bogus'; this file has CosineSimilarity"),
        (
            "--metric MaxAbsoluteError:x",
            "vcs: threshold of 'MaxAbsoluteError' is not a number: 'x'",
        ),
        ("-l -1", "vcs: -l must not be negative"),
    ],
)
def test_bad_options_are_one_line_errors(demo, tmp_path, args, message):
    _, _, shell = demo
    path = _new_csv(tmp_path / "new.csv")
    assert run_fail(shell, f"vcs -f {path} {args}").error.startswith(message)


def test_files_that_are_not_results_are_named(demo, tmp_path):
    _, _, shell = demo
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n", encoding="utf-8")
    assert run_fail(shell, f"vcs -f {other}").error == (
        f"{other}: not a compare result (header needs NPUDump or LeftOp, and TensorIndex)"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        run_fail(shell, f"vcs -f {empty}").error == f"{empty}: no result_*.csv here; run vc first"
    )
    assert run_fail(shell, f"vcs -f {tmp_path / 'nope'}").error == (
        f"{tmp_path / 'nope'}: no such file or directory"
    )


def test_a_vc_result_dir_gives_its_primary_csv_not_the_device_vs_device_one(demo):
    _, _, shell = demo
    vc = run_ok(shell, "vc")
    assert vc.secondary is not None and vc.secondary.csv_path.parent == vc.out_dir
    result = run_ok(shell, f"vcs -f {vc.out_dir}")
    assert result.path == vc.primary.csv_path
