"""`vc` through the real dispatcher on the tiny demo: the CSV row by row, summary.json, options."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.pipeline.execute import VectorCompareResult
from precision_shell.formats.npu_dump import read_dump_header, read_tensor_converted
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    DENSE,
    benchmark_path,
    dump_path,
    open_shell,
    rendered,
    run_fail,
    run_ok,
)
from tests.strict_json import strict_json

# FORMATS.md section 7, verbatim
HEADER = (
    "Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,"
    "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
    "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
    "MaxRelativeError,MeanRelativeError,CompareFailReason"
)
METRICS = HEADER.split(",")[9:19]
SUMMARY_KEYS = {
    "workspace",
    "created",
    "rows",
    "compared",
    "not_compared",
    "failing_outputs",
    "partial",
    "files_done",
    "files_total",
    "thresholds",
    "worst",
    "failing",
}


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows; `DataType` twice, so the cells are keyed by position-safe names."""
    with open(path, newline="", encoding="utf-8") as fh:
        lines = list(csv.reader(fh))
    header = lines[0]
    names = list(header)
    names[names.index("DataType", 4)] = "GroundTruthDataType"
    return header, [dict(zip(names, cells, strict=True)) for cells in lines[1:]]


@pytest.fixture(scope="module")
def vc_run(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    assert isinstance(result, VectorCompareResult)
    header, rows = read_csv(result.primary.csv_path)
    return root, manifest, shell, result, header, rows


def _row(rows, tensor_index) -> dict[str, str]:
    (row,) = [r for r in rows if r["TensorIndex"] == tensor_index]
    return row


def test_result_files_are_written_under_temp_vector_compare(vc_run):
    root, _, _, result, _, _ = vc_run
    base = root / "precision_data" / "temp" / "vector_compare"
    assert result.out_dir.parent == base and result.out_dir.name.isdigit()
    assert len(result.out_dir.name) == 14
    assert result.primary.csv_path == result.out_dir / f"result_{result.out_dir.name}.csv"
    assert result.summary_path == result.out_dir / "summary.json"


def test_header_is_msaccucmps_verbatim(vc_run):
    _, _, _, _, header, _ = vc_run
    assert ",".join(header) == HEADER


def test_rows_follow_the_dumped_ops_in_execution_order(vc_run):
    root, manifest, _, _, _, rows = vc_run
    dumped = [op for op in manifest.device_ops if op.dump_file]
    expected = []
    for index, op in enumerate(dumped):
        header = read_dump_header(str(dump_path(root, manifest, op.name)))
        for meta in (*header.inputs, *header.outputs):
            truth = ",".join(op.original_op_names) or "*"
            expected.append(
                (str(index), op.type, op.name, truth, f"{op.name}:{meta.kind}:{meta.index}")
            )
    got = [
        (r["Index"], r["OpType"], r["NPUDump"], r["GroundTruth"], r["TensorIndex"]) for r in rows
    ]
    assert got == expected


def test_every_row_is_compared_or_says_why_not(vc_run):
    _, _, _, _, _, rows = vc_run
    for row in rows:
        values = [row[m] for m in METRICS]
        if all(v == "NaN" for v in values):
            assert row["CompareFailReason"], row["TensorIndex"]
        else:
            assert row["CompareFailReason"] == "", row["TensorIndex"]
            assert row["DataType"].startswith("DT_") and row["GroundTruthDataType"] == "DT_FLOAT"
    # the folded constants have no benchmark of their own name
    weights = _row(rows, f"{CONV2}:input:1")
    assert weights["CompareFailReason"] == (
        "constant input: no benchmark conv2_Conv2D_folded_filter.0.*.npy (weights are not dumped)"
    )
    assert weights["Shape"] == "[3,3,8,8]"


def _metrics_of(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Our own float64 formulas (FORMATS.md section 6) on the flattened float32 values."""
    x = np.asarray(x, np.float32).astype(np.float64).ravel()
    y = np.asarray(y, np.float32).astype(np.float64).ravel()
    d = x - y
    return {
        "CosineSimilarity": float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))),
        "RelativeEuclideanDistance": float(np.sqrt((d**2).sum() / (y**2).sum())),
        "MeanAbsoluteError": float(np.abs(d).mean()),
        "RootMeanSquareError": float(np.sqrt((d**2).mean())),
    }


def _check_values(row, device: np.ndarray, bench: np.ndarray) -> None:
    assert row["Shape"] == "[" + ",".join(map(str, bench.shape)) + "]"
    assert device.shape == bench.shape
    want = _metrics_of(device, bench)
    for name, value in want.items():
        assert abs(float(row[name]) - value) <= 1.5e-6, (name, row[name], value)
    # max |x - y| is exact in float32, so its text is too
    max_abs = np.max(np.abs(device.astype(np.float32) - bench.astype(np.float32)))
    assert row["MaxAbsoluteError"] == f"{max_abs:.6f}"
    # six decimals, msaccucmp style
    assert all(len(row[m].split(".")[1]) == 6 for m in want)


@pytest.mark.parametrize(
    ("op", "origin"),
    [
        (CONV2, "relu2/Relu"),
        (CONV1, "relu1/Relu"),
        (DENSE, "dense/BiasAdd"),
        ("softmax/Softmax", "softmax/Softmax"),
    ],
)
def test_output_values_match_our_own_numpy_recomputation(vc_run, op, origin):
    root, manifest, _, _, _, rows = vc_run
    header = read_dump_header(str(dump_path(root, manifest, op)))
    device = read_tensor_converted(header, "output", 0)
    bench = np.load(benchmark_path(root, origin), allow_pickle=False)
    _check_values(_row(rows, f"{op}:output:0"), device, bench)


def test_input_values_are_converted_with_the_producers_layout(vc_run):
    root, manifest, _, _, _, rows = vc_run
    header = read_dump_header(str(dump_path(root, manifest, CONV1)))
    bench = np.load(benchmark_path(root, "input"), allow_pickle=False)
    # NC1HWC0 on the device, NHWC (the Data op's layout) in the benchmark
    device = read_tensor_converted(header, "input", 0, "NHWC", bench.shape)
    row = _row(rows, f"{CONV1}:input:0")
    assert row["DataType"] == "DT_FLOAT16"
    _check_values(row, device, bench)


def test_the_faulty_op_is_the_first_output_below_the_threshold(vc_run):
    _, manifest, _, result, _, rows = vc_run
    fault = manifest.faults[0]
    assert fault.kind == "wrong_constant"
    # the default rule: cosine < 0.98 or relative Euclidean distance > 0.05, or nan/inf
    failing = [
        r
        for r in rows
        if ":output:" in r["TensorIndex"]
        and (
            r["CosineSimilarity"] == "nan"
            or (r["CosineSimilarity"] != "NaN" and float(r["CosineSimilarity"]) < 0.98)
            or (
                r["RelativeEuclideanDistance"] not in ("NaN", "nan")
                and float(r["RelativeEuclideanDistance"]) > 0.05
            )
        )
    ]
    assert failing[0]["NPUDump"] == fault.device_op
    assert float(failing[0]["CosineSimilarity"]) < 0.95
    # the overflow fault propagates nan from l2_loss/Sum on
    assert manifest.faults[1].device_op in [r["NPUDump"] for r in failing[1:]]
    assert _row(rows, f"{manifest.faults[1].device_op}:output:0")["CosineSimilarity"] == "nan"
    assert [r.npu_dump for r in result.first_failing()] == [r["NPUDump"] for r in failing][:10]


def test_summary_json_has_the_issue_keys_and_the_right_counts(vc_run):
    root, _, _, result, _, rows = vc_run
    summary = strict_json(result.summary_path.read_text(encoding="utf-8"))
    assert set(summary) >= SUMMARY_KEYS
    not_compared = [r for r in rows if all(r[m] == "NaN" for m in METRICS)]
    assert summary["rows"] == len(rows) == 37
    # the demo's not-compared rows are all folded constants: counted apart from failures
    assert summary["not_compared"] == {
        "constant_inputs": len(not_compared),
        "failed": 0,
        "by_reason": {},
    }
    assert summary["compared"] == len(rows) - len(not_compared)
    assert summary["thresholds"] == {
        "cosine": 0.98,
        "max_relative_error": None,
        "relative_euclidean_distance": 0.05,
    }
    assert "diagnosis" not in summary  # vc alone diagnoses nothing
    assert summary["workspace"] == str(root / "precision_data")
    assert summary["partial"] is False
    assert summary["files_done"] == summary["files_total"] == result.primary.tasks
    worst = summary["worst"]
    # nan propagated from the data ranks worst, each non-finite measure spelled as computed
    # (null would mean "not computed"); then the lowest cosine
    assert {k: worst[0][k] for k in ("op", "cosine", "max_abs_error", "sqnr_db")} == {
        "op": "l2_loss/Sum",
        "cosine": "nan",
        "max_abs_error": "inf",
        "sqnr_db": "-inf",
    }
    assert "nonfinite" not in worst[0]
    conv2 = next(w for w in worst if w["op"] == CONV2)
    assert conv2["cosine"] == pytest.approx(
        float(_row(rows, f"{CONV2}:output:0")["CosineSimilarity"]), abs=1e-6
    )
    assert conv2["ground_truth"] == "conv2/Conv2D,bn2/FusedBatchNormV3,relu2/Relu"


def test_a_second_csv_compares_debug_0_with_debug_1(vc_run):
    _, manifest, _, result, _, rows = vc_run
    second = result.secondary
    assert second is not None and second.plan_mode == "device"
    assert (
        second.csv_path == result.out_dir / f"result_{result.out_dir.name}_debug_0_vs_debug_1.csv"
    )
    header, device_rows = read_csv(second.csv_path)
    assert ",".join(header) == HEADER
    assert [r["TensorIndex"] for r in device_rows] == [r["TensorIndex"] for r in rows]
    # the two runs differ by the constant fault only: conv1 agrees exactly
    conv1 = _row(device_rows, f"{CONV1}:output:0")
    assert (conv1["CosineSimilarity"], conv1["MaxAbsoluteError"]) == ("1.000000", "0.000000")
    assert conv1["GroundTruth"] == CONV1 and conv1["Shape"] == "[2,8,8,8]"
    summary = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert summary["device_compare"]["csv"] == str(second.csv_path)
    assert summary["device_compare"]["rows"] == len(device_rows)
    # its page names its own right side, and its own files not placed (QA Q29 #4: the page
    # said `tf/dump/`, the primary's)
    from precision_shell.compare.results.slice_results import benchmark_of, unmatched_text
    from precision_shell.compare.results.summary import read_summary

    record = read_summary(result.summary_path)
    assert record.device_compare is not None
    assert benchmark_of(record, second.csv_path) == summary["device_compare"]["right"]
    assert benchmark_of(record, result.primary.csv_path) == "tf/dump/"
    record.device_compare.skipped = ["Conv2D.ghost.5.1.1: no dump of ghost in debug_1"]
    assert unmatched_text(record, second.csv_path) == (
        "1 dump file was not matched to the graph: their ops have no rows here (e.g. "
        "Conv2D.ghost.5.1.1: no dump of ghost in debug_1)"
    )
    assert unmatched_text(record, result.primary.csv_path) is None


def test_overflow_column_only_with_the_flag(vc_run):
    root, manifest, shell, _, _, _ = vc_run
    result = run_ok(shell, "vc --overflow --max 3")
    header, rows = read_csv(result.primary.csv_path)
    want = HEADER.split(",")
    want.insert(want.index("Shape") + 1, "OverFlow")
    assert header == want
    # fp32 network input: not an fp16 tensor; the Cast output is fp16 and in range
    assert _row(rows, "trans_Cast_0:input:0")["OverFlow"] == "NaN"
    assert _row(rows, "trans_Cast_0:output:0")["OverFlow"] == "NO"
    assert {r["NPUDump"] for r in rows} == {"trans_Cast_0", "trans_TransData_1", CONV1}
    full = run_ok(shell, "vc --overflow")
    _, rows = read_csv(full.primary.csv_path)
    assert _row(rows, "l2_loss/Sum:output:0")["OverFlow"] == "YES"
    assert _row(rows, "l2_loss/Sum:input:0")["OverFlow"] == "NO"


def test_alg_limits_the_metrics_computed(vc_run):
    _, _, shell, _, _, rows = vc_run
    result = run_ok(shell, "vc --alg cos,mae --max 5")
    _, limited = read_csv(result.primary.csv_path)
    row = _row(limited, f"{CONV2}:output:0")
    assert row["CosineSimilarity"] == _row(rows, f"{CONV2}:output:0")["CosineSimilarity"]
    assert row["MaxAbsoluteError"] == _row(rows, f"{CONV2}:output:0")["MaxAbsoluteError"]
    assert [row[m] for m in METRICS[2:]] == ["NaN"] * 8


def test_alg_judges_by_the_limits_of_the_metrics_computed_only(vc_run):
    """QA: `vc --alg cos,mae` said "no output fails ... or RelativeEuclideanDistance > 0.05
    fails" and recorded that limit, over a column of NaN it never computed: an op failing only
    the distance was a false all-clear."""
    _, _, shell, _, _, _ = vc_run
    result = run_ok(shell, "vc --alg cos,mae")
    assert result.rule.describe() == "CosineSimilarity < 0.98 fails"
    summary = json.loads(result.summary_path.read_text())
    assert summary["thresholds"] == {"cosine": 0.98}
    assert summary["metrics"] == ["CosineSimilarity", "MaxAbsoluteError"]
    shown = run_ok(shell, "vcs")
    assert shown.rule.describe() == "CosineSimilarity < 0.98 fails"
    assert "RelativeEuclideanDistance" not in rendered(shown)
    refused = run_fail(shell, "vcs --metric red:0.05")
    assert refused.error.endswith(
        "vcs: this compare did not compute RelativeEuclideanDistance (vc --alg "
        "CosineSimilarity,MaxAbsoluteError); limit one of those, or run vc without --alg"
    )
    # no metric with a limit: nothing is judged, and the compare says so
    unjudged = run_ok(shell, "vc --alg mae")
    assert json.loads(unjudged.summary_path.read_text())["thresholds"] == {}
    text = rendered(unjudged)
    assert "not judged (no metric computed has a limit)" in text
    assert "no output judged: the thresholds limit none of the metrics computed " in text
    assert "no output fails" not in text
    assert "give --metric NAME:LIMIT" in run_fail(shell, "vcs").error
    # the report says so too, not "0 failing the thresholds" (QA Q23 #3)
    page = run_ok(shell, "report")
    assert not page.judged and "not judged (no metric computed has a limit)" in rendered(page)
    assert "failing the thresholds" not in rendered(page)
    assert "<dd>not judged (no metric computed has a limit)" in page.path.read_text()
    assert run_ok(shell, "vcs --metric mae:0.5").rule.describe() == "MaxAbsoluteError > 0.5 fails"
    # a full compare after it judges by every limit again, and says it computed every metric
    # (a summary without `metrics` is one from before them: judged by what its CSV holds)
    full = run_ok(shell, "vc")
    assert "RelativeEuclideanDistance" in full.rule.describe()
    assert json.loads(full.summary_path.read_text())["metrics"] == METRICS


def test_lt_rt_with_two_dump_dirs_compares_device_vs_device_without_a_graph(vc_run):
    _, manifest, shell, _, _, _ = vc_run
    left, right = manifest.dump_dirs
    result = run_ok(shell, f"vc -lt {left} -rt {right}")
    assert result.primary.plan_mode == "device" and result.secondary is None
    _, rows = read_csv(result.primary.csv_path)
    # without a graph ops are named as in their file names and ordered by dump time
    assert rows[0]["NPUDump"] == "trans_Cast_0"
    assert _row(rows, "conv1_Conv2Drelu1_Relu:output:0")["CosineSimilarity"] == "1.000000"


def test_lt_rt_with_a_benchmark_dir_uses_the_workspace_graph(vc_run, tmp_path):
    root, manifest, shell, _, _, rows = vc_run
    out = tmp_path / "out"
    result = run_ok(
        shell,
        f"vc -lt {manifest.dump_dirs[0]} -rt {root / 'precision_data' / 'tf' / 'dump'} -o {out}",
    )
    assert result.primary.plan_mode == "benchmark"
    assert result.primary.left == str(manifest.dump_dirs[0])
    assert result.out_dir == out  # -o DIR: the CSVs and summary.json go into DIR itself
    _, again = read_csv(result.primary.csv_path)
    assert [r["TensorIndex"] for r in again] == [r["TensorIndex"] for r in rows]
    assert _row(again, f"{CONV2}:output:0") == _row(rows, f"{CONV2}:output:0")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("vc -lt /tmp", "vc: give both -lt LEFT and -rt RIGHT, or neither"),
        ("vc --max 0", "vc: --max must be at least 1"),
        ("vc --alg cos,bogus", "vc: unknown metric 'bogus' in --alg"),
        ("vc -g nosuchgraph", "vc: no graph named 'nosuchgraph' in debug_0; graphs: "),
    ],
)
def test_bad_options_are_one_line_errors(vc_run, line, message):
    _, _, shell, _, _, _ = vc_run
    outcome = run_fail(shell, line)
    assert message in outcome.error


def test_missing_dirs_are_named(vc_run, tmp_path):
    _, _, shell, _, _, _ = vc_run
    outcome = run_fail(shell, f"vc -lt {tmp_path / 'a'} -rt {tmp_path}")
    assert outcome.error == f"{tmp_path / 'a'}: no such directory"
    (tmp_path / "f").write_text("a file")
    outcome = run_fail(shell, f"vc -lt {tmp_path / 'f'} -rt {tmp_path}")
    assert outcome.error == f"{tmp_path / 'f'}: not a directory"


def test_vc_on_a_workspace_with_a_corrupt_dump_and_a_missing_benchmark_goes_on(tiny_demo):
    root, manifest = tiny_demo
    conv1 = dump_path(root, manifest, CONV1)
    conv1.write_bytes(conv1.read_bytes()[:100])
    benchmark_path(root, "relu2/Relu").unlink()
    result = run_ok(open_shell(root), "vc")
    _, rows = read_csv(result.primary.csv_path)
    conv1_rows = [r for r in rows if r["NPUDump"] == CONV1]
    assert [r["TensorIndex"] for r in conv1_rows] == [
        f"{CONV1}:input:0",
        f"{CONV1}:input:1",
        f"{CONV1}:input:2",
        f"{CONV1}:output:0",
    ]
    for row in conv1_rows:
        assert row["CompareFailReason"].startswith(f"{conv1}: "), row
        assert all(row[m] == "NaN" for m in METRICS)
    conv2_out = _row(rows, f"{CONV2}:output:0")
    assert conv2_out["CompareFailReason"] == "benchmark relu2_Relu.0.*.npy not found"
    # everything else still compared
    softmax = _row(rows, "softmax/Softmax:output:0")
    assert softmax["CompareFailReason"] == "" and not math.isnan(float(softmax["CosineSimilarity"]))
    not_compared = sum(all(r[m] == "NaN" for m in METRICS) for r in rows)
    tally = result.primary.tally
    assert tally.failed + tally.constant_inputs == not_compared
    assert tally.failed == sum(
        all(r[m] == "NaN" for m in METRICS) and "constant input" not in r["CompareFailReason"]
        for r in rows
    )


def test_a_dump_dir_with_no_op_of_the_graph_is_an_error_not_an_empty_result(vc_run, tmp_path):
    root, manifest, shell, _, _, _ = vc_run
    ghost_dir = tmp_path / "dump"
    ghost_dir.mkdir()
    source = dump_path(root, manifest, CONV1)
    (ghost_dir / "Relu.ghost_op.99.1.1795329000199999").write_bytes(source.read_bytes())
    benchmark = root / "precision_data" / "tf" / "dump"
    outcome = run_fail(shell, f"vc -lt {ghost_dir} -rt {benchmark}")
    assert outcome.error.startswith(f"{ghost_dir}: no dump file belongs to an op of graph ")
    assert "e.g. Relu.ghost_op.99.1.1795329000199999: no op ghost_op in the graph" in outcome.error


def test_vcs_f_takes_a_result_by_its_name_and_c_says_what_else_judges(vc_run):
    """QA: `vcs -f result_<ts>.csv` (the name vc printed) was "no such file"; `vcs -c 0.5`
    kept the distance's limit without a word, where precision_tool's -c was the cosine alone."""
    _, _, shell, _, _, _ = vc_run
    result = run_ok(shell, "vc")
    csv_path = result.primary.csv_path
    assert run_ok(shell, f"vcs -f {csv_path.parent.name}").path == csv_path
    assert run_ok(shell, f"report -f {csv_path.parent.name}").path.is_file()  # report too
    # a CSV is named by the second its vc began: two vc in one second share the name
    same = list(csv_path.parents[1].glob(f"*/{csv_path.name}"))
    if len(same) == 1:
        assert run_ok(shell, f"vcs -f {csv_path.name}").path == csv_path
    else:
        refused = run_fail(shell, f"vcs -f {csv_path.name}")
        assert refused.error.startswith(
            f"vcs: {len(same)} results are named {csv_path.name} under {csv_path.parents[1]}: "
        )
    shown = run_ok(shell, f"vcs -f {csv_path} -c 0.5")
    assert shown.notes[-1] == (
        "-c sets the cosine limit; RelativeEuclideanDistance still judges too "
        "(--metric red:inf leaves the cosine alone)"
    )
    alone = run_ok(shell, f"vcs -f {csv_path} -c 0.5 --metric red:inf")
    assert not any(n.startswith("-c sets") for n in alone.notes)
    assert alone.rule.describe(alone.columns) == "CosineSimilarity < 0.5 fails"


def test_an_alg_compare_without_metrics_in_its_summary_is_judged_by_what_its_csv_holds(vc_run):
    """QA: a killed `vc --alg mae` (no summary) or a summary from before `metrics` was judged
    "no output fails ... CosineSimilarity < 0.98 or RelativeEuclideanDistance > 0.05" over
    columns of NaN it never computed."""
    _, _, shell, _, _, _ = vc_run
    result = run_ok(shell, "vc --alg cos,mae")
    summary = json.loads(result.summary_path.read_text())
    del summary["metrics"]
    summary["thresholds"] = {"cosine": 0.98, "relative_euclidean_distance": 0.05}  # an old one
    result.summary_path.write_text(json.dumps(summary))
    shown = run_ok(shell, f"vcs -f {result.out_dir}")
    assert shown.rule.describe() == "CosineSimilarity < 0.98 fails"
    result.summary_path.unlink()  # as a run killed before its summary leaves it
    assert run_ok(shell, f"vcs -f {result.out_dir}").rule.describe() == (
        "CosineSimilarity < 0.98 fails"
    )
    page = run_ok(shell, f"report -f {result.out_dir}").path.read_text()
    assert "CosineSimilarity &lt; 0.98 fails" in page
    assert "RelativeEuclideanDistance &gt; 0.05" not in page


@pytest.mark.parametrize(
    "thresholds",
    [
        {"cosine": float("nan"), "relative_euclidean_distance": 0.05},
        {"cosine": 2.0},
        {"relative_euclidean_distance": -1},
        {"cosine": "nan", "relative_euclidean_distance": "inf"},
        # QA Q24 #6: a vc run under lax thresholds (or a crafted 1e308); readers judge by the
        # settings' rule, one rule for vcs, report and ni
        {"cosine": 0.1, "relative_euclidean_distance": 1e308},
        {},
    ],
)
def test_a_summary_with_limits_vc_never_writes_is_judged_by_the_default_rule(vc_run, thresholds):
    """QA Q23 #2: a crafted summary.json limit (NaN, out of range, a string) made `report`
    say "0 failing the thresholds" over a compare with failing outputs."""
    _, _, shell, _, _, _ = vc_run
    result = run_ok(shell, "vc")
    failing = run_ok(shell, "report").failing_outputs
    assert failing > 0
    summary = json.loads(result.summary_path.read_text())
    summary["thresholds"] = thresholds
    result.summary_path.write_text(json.dumps(summary))
    page = run_ok(shell, "report")
    assert page.failing_outputs == failing and page.judged
    shown = run_ok(shell, "vcs")
    assert shown.rule.describe() == page_rule(page)
    assert 0 < shown.failing_total <= failing


def page_rule(page) -> str:  # noqa: ANN001
    text = page.path.read_text()
    return (
        "CosineSimilarity < 0.98 or RelativeEuclideanDistance > 0.05 fails"
        if ("CosineSimilarity &lt; 0.98 or RelativeEuclideanDistance &gt; 0.05 fails" in text)
        else "?"
    )
