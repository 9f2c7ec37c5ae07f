"""vc / ac -c / vcs on pairs of MegEngine and SigmaStar dumps, through the dispatcher; the
rule flags (--max-err, --cos-min, --rmse-max) and what reads the rule they record."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.foreign.dumps import open_foreign
from precision_shell.foreign.pairing import BY_OP_SLOT, BY_VAR_ID, pair_dumps
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.formats.megengine_dump import (
    TextSpec,
    VarSpec,
    write_bin_io_dump,
    write_io_dump_text,
)
from precision_shell.formats.sigmastar_dump import SigmaSpec, write_sigmastar_dump
from precision_shell.report.data import gather_report
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, rendered, run_fail, run_ok
from tests.foreign.fixtures import (
    OPS,
    PLANTED,
    SCALE,
    SIGMA_BAD,
    SIGMA_LAYERS,
    ZERO,
    write_megengine,
    write_sigmastar_pair,
)
from tests.foreign.oracles import expected

REL = "MegEngineRelativeError"
AT_LEAST = "MegEngineRelativeErrorAtLeast"


@pytest.fixture
def shell(tmp_path: Path) -> Dispatcher:
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    return open_shell(tmp_path / "ws")


@pytest.fixture
def meg_pair(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    a, bad = write_megengine(tmp_path / "runA", planted=True)
    b, good = write_megengine(tmp_path / "runB")
    return a, b, bad, good


def _rows_by_op(result: ForeignCompareResult) -> dict[tuple[str, int], object]:
    table = read_result_csv(result.csv_path)
    return {(r.op_name, r.slot): r for r in table.rows}


def _check_metrics(row: object, left: np.ndarray, right: np.ndarray) -> None:
    want = expected(left, right)
    for column, value in want.items():
        got = row.metrics[column]  # type: ignore[attr-defined]
        assert math.isclose(got, value, rel_tol=1e-12, abs_tol=1e-15), (column, got, value)


def test_vc_alg_is_refused_on_megengine_dumps(shell: Dispatcher, meg_pair) -> None:
    """--alg picks msaccucmp's metrics; a MegEngine compare has its own, so it would ignore it."""
    a, b, _, _ = meg_pair
    refused = run_fail(shell, f"vc -lt {a} -rt {b} --alg cos")
    assert refused.error.endswith(
        "vc: --alg picks the metrics of a tensor compare; these are MegEngine or SigmaStar "
        "dumps, compared by their own tool's metrics (drop --alg)"
    )


def test_vc_megengine_rows_hold_the_metrics(shell: Dispatcher, meg_pair, tmp_path: Path) -> None:
    a, b, bad, good = meg_pair
    result = run_ok(shell, f"vc -lt {a} -rt {b}")
    assert isinstance(result, ForeignCompareResult)
    assert result.method == BY_VAR_ID
    assert result.csv_path.parent.parent == tmp_path / "ws/precision_data/temp/vector_compare"
    rows = _rows_by_op(result)
    assert len(rows) == len(OPS)
    for var_id, (op, slot) in OPS.items():
        row = rows[(op.name, slot)]
        _check_metrics(row, bad[var_id], good[var_id])
        assert row.device_dtype == ("Float16" if bad[var_id].dtype == np.float16 else "Float32")
    failing = {r.op_name for r in result.failing}
    assert failing == {PLANTED, "cast2", "reduce1"}
    summary = json.loads(result.summary_path.read_text())
    assert summary["mode"] == "megengine"
    # the bound of a var a text dump printed in part is judged by the same limit
    assert summary["thresholds"] == {REL: 1e-3, AT_LEAST: 1e-3}
    assert "diagnosis" not in summary
    text = rendered(result, 160)
    assert "MegEngine compare" in text and PLANTED in text


def test_ac_megengine_names_the_planted_op(shell: Dispatcher, meg_pair, tmp_path: Path) -> None:
    a, b, _, _ = meg_pair
    out = tmp_path / "out"
    result = run_ok(shell, f"ac -c -lt {a} -rt {b} -o {out}")
    assert isinstance(result, ForeignCompareResult)
    assert result.causes and result.causes[0].op == PLANTED
    assert len(result.causes) == 1  # cast2 and reduce1 inherit: their input fails
    summary = json.loads((out / "summary.json").read_text())
    cause = summary["diagnosis"]["root_causes"][0]
    assert cause["op"] == PLANTED and cause["evidence"] == "estimate"
    assert [i["status"] for i in cause["measures"]["inputs"]] == ["pass", "pass"]
    assert "root causes" in rendered(result, 160)


@pytest.mark.parametrize("offset", [1, 2, 100])
def test_runs_numbered_differently_pair_by_op_and_slot(
    shell: Dispatcher, tmp_path: Path, offset: int
) -> None:
    """Ids shifted by 1 or 2 (most shared ids name other vars) or renumbered (none shared)."""
    a, bad = write_megengine(tmp_path / "runA", planted=True)
    b, good = write_megengine(tmp_path / "runB", renumber={i: i + offset for i in OPS})
    assert pair_dumps(open_foreign(a), open_foreign(b)).method == BY_OP_SLOT
    result = run_ok(shell, f"ac -c -lt {a} -rt {b}")
    assert result.method == BY_OP_SLOT
    rows = _rows_by_op(result)
    assert all(r.compared for r in rows.values())
    assert {(r.npu_dump, r.ground_truth) for r in rows.values()} == {
        (f"var{i} {op.name}:{slot}", f"var{i + offset} {op.name}:{slot}")
        for i, (op, slot) in OPS.items()
    }
    for i in OPS:
        _check_metrics(rows[(OPS[i][0].name, OPS[i][1])], bad[i], good[i])
    assert result.causes[0].op == PLANTED
    assert result.summary.diagnosis.root_cause == PLANTED
    shared = len(OPS) - offset
    if offset < len(OPS):  # the ids both hold all name other vars: said on the terminal
        line = (
            f"{shared} of {shared} shared var ids name different vars in the two runs "
            f"({', '.join(str(i) for i in range(1 + offset, 7 + offset))}, ...): the runs "
            "number vars differently, every var paired by op name + slot"
        )
        assert result.notes == [line]
        assert line in rendered(result, 400)
    else:
        assert result.notes == []


def test_a_few_swapped_var_ids_pair_by_op_and_slot_and_say_so(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """Two builds that exchange the ids of split1's two outputs (6, 7): the other ids pair by
    id, the exchanged two by op name + slot, never var 6 with var 6. Identical values: nothing
    fails; with the planted run, mul1 alone is the root."""
    swap = {**{i: i for i in OPS}, 6: 7, 7: 6}
    clean, values = write_megengine(tmp_path / "clean")
    b, _ = write_megengine(tmp_path / "swapped", renumber=swap)
    line = (
        "2 of 10 shared var ids name different vars in the two runs (6, 7): "
        "those vars paired by op name + slot instead (2 paired, 0 unpaired)"
    )
    result = run_ok(shell, f"ac -c -lt {clean} -rt {b}")
    assert [(r.npu_dump, r.ground_truth) for r in result.rows][5:7] == [
        ("var6 split1:0", "var7 split1:0"),
        ("var7 split1:1", "var6 split1:1"),
    ]
    assert result.method == BY_VAR_ID and result.notes == [line]
    assert line in rendered(result, 400)
    assert all(r.compared and r.metrics["MaxAbsoluteError"] == 0.0 for r in result.rows)
    assert result.failing == [] and result.causes == []
    a, bad = write_megengine(tmp_path / "planted", planted=True)
    result = run_ok(shell, f"ac -c -lt {a} -rt {b}")
    rows = _rows_by_op(result)
    _check_metrics(rows[("split1", 0)], bad[6], values[6])
    _check_metrics(rows[("split1", 1)], bad[7], values[7])
    assert {r.op_name for r in result.failing} == {PLANTED, "cast2", "reduce1"}
    assert [c.op for c in result.causes] == [PLANTED]


def test_inputs_judged_from_inp_dumps_when_not_dumped(tmp_path: Path) -> None:
    """The producers of mul1's inputs are gone from both dirs: their -inp dumps decide."""
    from precision_shell.foreign.run import run_foreign_compare

    a, _ = write_megengine(tmp_path / "runA", planted=True)
    b, _ = write_megengine(tmp_path / "runB")
    for root in (a, b):
        (root / "000006").unlink()
        (root / "000007").unlink()
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(a), str(b), diagnose=True)
    assert result.causes is not None and result.causes[0].op == PLANTED
    inputs = result.causes[0].evidence["inputs"]
    assert [(i["status"], i.get("from")) for i in inputs] == [("pass", "-inp dump")] * 2


def test_sigmastar_fixed_vs_float(shell: Dispatcher, tmp_path: Path) -> None:
    fixed, real_path, q, real = write_sigmastar_pair(tmp_path)
    result = run_ok(shell, f"ac -c -lt {fixed} -rt {real_path}")
    assert isinstance(result, ForeignCompareResult)
    assert result.family == "sigmastar"
    rows = _rows_by_op(result)
    assert [name for name, _ in rows] == list(SIGMA_LAYERS)  # no input, no constant
    for name in SIGMA_LAYERS:
        dequantized = SCALE * (q[name].astype(np.float64) - ZERO)
        _check_metrics(rows[(name, 0)], dequantized, real[name])
    assert result.causes is not None and result.causes[0].op == SIGMA_BAD
    assert {r.op_name for r in result.failing} == {SIGMA_BAD, "fc1", "softmax"}
    summary = json.loads(result.summary_path.read_text())
    assert summary["mode"] == "sigmastar"
    assert summary["diagnosis"]["root_causes"][0]["op"] == SIGMA_BAD
    assert summary["thresholds"] == {"cosine": 0.99, "SigmaStarRMSE": 0.1}


def test_sigmastar_float_run_given_as_left_is_swapped_to_the_benchmark(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """The float run is the reference (SigmaStarRMSE divides by it) whichever side it is
    given on; the swap is said in one line."""
    fixed, real_path, q, real = write_sigmastar_pair(tmp_path)
    result = run_ok(shell, f"ac -c -lt {real_path} -rt {fixed}")
    line = (
        "-lt onnx_NHWC_outtensor_dump.bin is the framework's run (caffe / onnx / tflite), "
        "-rt sigma_outtensor_dump.bin the quantized run (isFloat: 0): swapped, the more "
        "original run is the benchmark (right)"
    )
    assert (result.left, result.right) == (str(fixed), str(real_path))
    rows = _rows_by_op(result)
    for name in SIGMA_LAYERS:
        dequantized = SCALE * (q[name].astype(np.float64) - ZERO)
        _check_metrics(rows[(name, 0)], dequantized, real[name])
    assert result.notes == [line] and line in rendered(result, 400)
    assert result.causes is not None and result.causes[0].op == SIGMA_BAD
    summary = json.loads(result.summary_path.read_text())
    assert (summary["left"], summary["right"]) == (str(fixed), str(real_path))


def test_sigmastar_two_float_runs_stay_as_given(shell: Dispatcher, tmp_path: Path) -> None:
    a, b = np.float32([1, 2, 3, 4]), np.float32([1, 2, 3, 5])
    write_sigmastar_dump(tmp_path / "l.bin", [SigmaSpec("x", a)])
    write_sigmastar_dump(tmp_path / "r.bin", [SigmaSpec("x", b)])
    result = run_ok(shell, f"vc -lt {tmp_path / 'l.bin'} -rt {tmp_path / 'r.bin'}")
    assert (result.left, result.right, result.notes) == (
        str(tmp_path / "l.bin"),
        str(tmp_path / "r.bin"),
        [],
    )
    assert result.rows[0].metrics["SigmaStarRMSE"] == 1 / 11  # sum|a-b| / sum|b|: b is right


def test_a_sigmastar_layer_not_compared_before_the_first_failing_one_is_said(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """QA Q26 #8: a layer whose scale printed as 0 is refused (not compared); the failing
    layer after it was "the first failing layer (1 layers before it pass)", as if nothing
    before it were unknown."""
    rng = np.random.default_rng(8)
    real = [rng.uniform(-2, 2, size=(1, 8)).astype(np.float32) for _ in range(3)]
    q = [np.round(r / 0.001).astype(np.int16) for r in real]
    q[2] = q[2] + 600  # the third layer fails
    scales = [0.001, 0.0, 0.001]  # the second's scale printed as 0: refused
    names = ["conv1", "relu1", "pool1"]
    fixed = [
        SigmaSpec(n, v, dtype="SGS_S16", scale=sc, op_index=k)
        for k, (n, v, sc) in enumerate(zip(names, q, scales, strict=True))
    ]
    write_sigmastar_dump(tmp_path / "q.bin", fixed, is_float=False)
    floats = [SigmaSpec(n, r, op_index=k) for k, (n, r) in enumerate(zip(names, real, strict=True))]
    write_sigmastar_dump(tmp_path / "f.bin", floats)
    result = run_ok(shell, f"ac -c -lt {tmp_path / 'q.bin'} -rt {tmp_path / 'f.bin'}")
    rows = {r.op_name: r for r in result.rows}
    assert not rows["relu1"].compared and "scale printed as 0" in rows["relu1"].reason
    assert result.causes is not None and result.causes[0].op == "pool1"
    assert result.causes[0].reason == (
        "the first failing layer in layer order (1 layers before it pass; 1 not compared "
        "(relu1): a fault there would come first)"
    )


def test_sigmastar_metrics_are_those_of_a_float64_dequantization(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """int16, scale 0.0005, zero point -5: scale * (q - z) in float64, not rounded to float32
    first (that moved MaxAbsoluteError's 6th-7th digit)."""
    rng = np.random.default_rng(5)
    real = rng.uniform(-4, 4, size=(1, 3, 5, 8)).astype(np.float32)
    q = np.clip(np.round(real / 0.0005) - 5, -32768, 32767).astype(np.int16)
    q.flat[::7] += 3  # a few values off by more than the rounding
    spec = SigmaSpec("conv1", q, dtype="SGS_S16", scale=0.0005, zero_point=-5)
    write_sigmastar_dump(tmp_path / "q.bin", [spec], is_float=False)
    write_sigmastar_dump(tmp_path / "f.bin", [SigmaSpec("conv1", real)])
    result = run_ok(shell, f"vc -lt {tmp_path / 'q.bin'} -rt {tmp_path / 'f.bin'}")
    exact = 0.0005 * (q.astype(np.float64) + 5)
    (row,) = result.rows
    assert row.metrics["MaxAbsoluteError"] == float(np.max(np.abs(exact - real)))
    _check_metrics(row, exact, real)


def test_sigmastar_out0_multi_output_pairs_by_name(shell: Dispatcher, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x, y, z = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    left = [
        SigmaSpec("split_a", x, slot=0, op_label="SPLIT"),
        SigmaSpec("split_b", y, slot=1, op_label="SPLIT"),
        SigmaSpec("dup", x, slot=0),
        SigmaSpec("dup", z + 1, slot=1),
    ]
    # the reference writer prints `//out 0` for every output, and writes them in another order
    right = [
        SigmaSpec("split_b", y, slot=0),
        SigmaSpec("split_a", x, slot=0),
        SigmaSpec("dup", z, slot=1),
        SigmaSpec("dup", x, slot=0),
    ]
    write_sigmastar_dump(tmp_path / "l.bin", left)
    write_sigmastar_dump(tmp_path / "r.bin", right, trailer="none")
    result = run_ok(shell, f"vc -lt {tmp_path / 'l.bin'} -rt {tmp_path / 'r.bin'}")
    rows = {(r.op_name, r.slot): r for r in result.rows}
    assert rows[("split_b", 1)].metrics["MaxAbsoluteError"] == 0.0
    assert rows[("split_a", 0)].metrics["MaxAbsoluteError"] == 0.0
    assert rows[("dup", 0)].metrics["MaxAbsoluteError"] == 0.0  # the slot breaks the tie
    assert math.isclose(rows[("dup", 1)].metrics["MaxAbsoluteError"], 1.0, rel_tol=1e-6)


def test_unpaired_and_mismatched_shapes_are_rows_not_compared(tmp_path: Path) -> None:
    from precision_shell.foreign.run import run_foreign_compare

    a = np.arange(6, dtype=np.float32)
    write_sigmastar_dump(
        tmp_path / "l.bin",
        [SigmaSpec("flat", a.reshape(2, 3)), SigmaSpec("only_left", a), SigmaSpec("count", a)],
    )
    write_sigmastar_dump(
        tmp_path / "r.bin",
        [SigmaSpec("flat", a.reshape(3, 2)), SigmaSpec("count", a[:4]), SigmaSpec("only_right", a)],
    )
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(tmp_path / "l.bin"), str(tmp_path / "r.bin"))
    rows = {r.op_name: r for r in read_result_csv(result.csv_path).rows}
    assert rows["flat"].compared and rows["flat"].metrics["CosineSimilarity"] == 1.0
    assert "compared flat" in rows["flat"].reason
    assert not rows["only_left"].compared and "no tensor of this name" in rows["only_left"].reason
    assert not rows["only_right"].compared and "left dump" in rows["only_right"].reason
    # SigmaStar's compareAccuracy fails buffers of different sizes: so does the row (QA Q29
    # #10), compared on the leading values
    assert rows["count"].compared and rows["count"].reason == (
        "size mismatch (SigmaStar's compareAccuracy fails it; element counts differ): [6] has "
        "6, [4] has 4; the leading 4 values compared"
    )
    assert result.summary.primary.failed == 2
    assert "count" in [r.op_name for r in result.failing]


def test_vcs_reads_the_foreign_csv(shell: Dispatcher, meg_pair) -> None:
    a, b, _, _ = meg_pair
    result = run_ok(shell, f"vc -lt {a} -rt {b}")
    table = read_result_csv(result.csv_path)
    assert "MegEngineRelativeError" in table.metric_columns
    assert "SigmaStarRMSE" in table.metric_columns
    # vcs judges a MegEngine compare by the rule its summary recorded, MegEngine's own
    # (max relative error > 1e-3): the planted op fails, as vc said
    plain = run_ok(shell, f"vcs -f {result.csv_path}")
    assert plain.rule.to_json() == result.summary.rule.to_json()
    assert (
        PLANTED in rendered(plain, 160)
        and plain.failing_total == result.summary.primary.failing_outputs
    )
    # a column of the file by its own name is a --metric too; -c adds a cosine limit
    loose = run_ok(shell, f"vcs -f {result.csv_path} --metric MegEngineRelativeError:1e9")
    assert loose.failing_total == 0
    summary = run_ok(shell, f"vcs -f {result.csv_path} -c 0.99999")
    text = rendered(summary, 160)
    assert PLANTED in text and "reduce1" not in text.split(PLANTED, 1)[0]


def test_io_dump_text_pairs_with_a_bin_dir(shell: Dispatcher, tmp_path: Path) -> None:
    """A --io-dump text file opens too; a var the text cuts off is judged on what both
    sides show (the binary side in full): here nothing proves a difference, so not judged."""
    a, values = write_megengine(tmp_path / "runA")
    specs = [
        TextSpec(
            id=var_id,
            values=values[var_id],
            op_name=op.name,
            op_type=op.type,
            op_id=var_id,
            name=f"{op.name}:{slot}",
            deps=tuple((k, i) for k, i in enumerate(op.inputs)),
        )
        for var_id, (op, slot) in OPS.items()
    ]
    write_io_dump_text(tmp_path / "io.txt", specs)
    dump = open_foreign(tmp_path / "io.txt")
    assert dump.family == "megengine" and dump.tensors[2].inputs == ("1", "2")
    result = run_ok(shell, f"vc -lt {tmp_path / 'io.txt'} -rt {a}")
    rows = {r.op_name: r for r in result.rows}
    assert rows["reduce1"].compared  # two values: all printed
    assert not rows["fc1"].compared
    assert rows["fc1"].reason.startswith("the dumps show left 5 of 16, right all 16 values; ")
    assert rows["fc1"].reason.endswith("partial values, not judged")


def test_text_outputs_of_one_op_pair_with_their_binary_slots(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """The text does not print slots; an op's outputs come in slot order (rising var ids of
    one `opr<N>`), so the Split's second output pairs with the binary var of slot 1."""
    data = np.arange(4, dtype=np.float32).reshape(2, 2)  # 5 values or fewer: printed in full
    halves = (data[:, :1].copy(), data[:, 1:].copy())
    write_bin_io_dump(
        tmp_path / "bin",
        [VarSpec(1, data, "data", "Host2DeviceCopy")]
        + [VarSpec(2 + k, h, "sp", "Split", f"sp:{k}", slot=k) for k, h in enumerate(halves)],
    )
    texts = [TextSpec(1, data, "data", "Host2DeviceCopy", 1, "data")]
    texts += [
        TextSpec(2 + k, h, "sp", "Split", 2, f"sp:{k}", ((0, 1),)) for k, h in enumerate(halves)
    ]
    write_io_dump_text(tmp_path / "io.txt", texts)
    assert [t.slot for t in open_foreign(tmp_path / "io.txt").tensors] == [0, 0, 1]
    result = run_ok(shell, f"vc -lt {tmp_path / 'io.txt'} -rt {tmp_path / 'bin'}")
    got = [(r.npu_dump, r.ground_truth, r.tensor_index, r.compared) for r in result.rows]
    assert got == [
        ("data", "data", "data:output:0", True),
        ("var2 sp:0", "var2 sp:0", "sp:output:0", True),
        ("var3 sp:1", "var3 sp:1", "sp:output:1", True),
    ]
    assert not result.failing


def test_errors_are_one_line(shell: Dispatcher, meg_pair, tmp_path: Path) -> None:
    a, _, _, _ = meg_pair
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    out = run_fail(shell, f"vc -lt {a} -rt {other}")
    assert str(other) in (out.error or "")
    out = run_fail(shell, f"ac -c -lt {other} -rt {a}")
    assert str(other) in (out.error or "") and "SigmaStar" in (out.error or "")
    fixed, _, _, _ = write_sigmastar_pair(tmp_path)
    out = run_fail(shell, f"vc -lt {a} -rt {fixed}")
    assert "one kind" in (out.error or "")
    out = run_fail(shell, f"ac -c -lt {a}")
    assert "-rt" in (out.error or "")


# ---------------------------------------------------------------------------- rule flags


def test_max_err_moves_megengines_limit_and_every_reader_judges_by_it(
    shell: Dispatcher, meg_pair, tmp_path: Path
) -> None:
    a, b, bad, good = meg_pair
    planted, inherited = expected(bad[8], good[8])[REL], expected(bad[10], good[10])[REL]
    assert inherited < 0.06 < planted < 0.1  # reduce1's error sits between 0.01 and 0.06
    cases = {
        "0.01": {PLANTED, "cast2", "reduce1"},
        "0.06": {PLANTED, "cast2"},  # reduce1 passes with this limit, failed with the other
        "0.1": set(),
    }
    for limit, failing in cases.items():
        out = tmp_path / f"vc_{limit}"
        result = run_ok(shell, f"vc -lt {a} -rt {b} --max-err {limit} -o {out}")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["thresholds"] == {REL: float(limit), AT_LEAST: float(limit)}
        assert summary["failing_outputs"] == len(failing)
        assert {f["op"] for f in summary["failing"]} == failing
        assert {r.op_name for r in result.failing} == failing
        assert f"{REL} > {limit}" in rendered(result, 160)
        # vcs and the report read the recorded rule back
        vcs = run_ok(shell, f"vcs -f {out}")
        assert vcs.rule.to_json() == summary["thresholds"] and vcs.failing_total == len(failing)
        data = gather_report(result.csv_path, ThresholdRule.default())
        assert data.rule.to_json() == summary["thresholds"]
        assert data.failing_points == len(failing)
        assert data.error_panel is not None and data.error_panel.limit == float(limit)
    # ac -c judges (and finds the root cause) by the limit it is given
    out = tmp_path / "ac_0.06"
    check = run_ok(shell, f"ac -c -lt {a} -rt {b} --max-err 0.06 -o {out}")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["thresholds"] == {REL: 0.06, AT_LEAST: 0.06}
    assert summary["failing_outputs"] == 2
    assert [c["op"] for c in summary["diagnosis"]["root_causes"]] == [PLANTED]
    assert {r.op_name for r in check.failing} == {PLANTED, "cast2"}
    loose = run_ok(shell, f"ac -c -lt {a} -rt {b} --max-err 0.1 -o {tmp_path / 'ac_0.1'}")
    assert loose.causes == [] and loose.summary.rule.to_json() == {REL: 0.1, AT_LEAST: 0.1}


def test_cos_min_and_rmse_max_move_sigmastars_limits(shell: Dispatcher, tmp_path: Path) -> None:
    fixed, real_path, _, _ = write_sigmastar_pair(tmp_path)
    out = tmp_path / "rmse"
    result = run_ok(shell, f"vc -lt {fixed} -rt {real_path} --rmse-max 5 -o {out}")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["thresholds"] == {"cosine": 0.99, "SigmaStarRMSE": 5.0}
    # the flipped layers' RMSE (about 2) passes now; their cosine (about -1) still fails
    crossed = [str(c) for r in result.failing for c in result.rule.crossings(r)]
    assert {r.op_name for r in result.failing} == {SIGMA_BAD, "fc1", "softmax"}
    assert crossed and all(c.startswith("CosineSimilarity ") for c in crossed)
    out = tmp_path / "both"
    result = run_ok(shell, f"vc -lt {fixed} -rt {real_path} --cos-min -1 --rmse-max 5 -o {out}")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["thresholds"] == {"cosine": -1.0, "SigmaStarRMSE": 5.0}
    assert summary["failing_outputs"] == 0 and result.failing == []
    assert run_ok(shell, f"vcs -f {out}").failing_total == 0
    strict = run_ok(shell, f"vc -lt {fixed} -rt {real_path} --cos-min 0.999999 -o {tmp_path / 's'}")
    assert len(strict.failing) == len(SIGMA_LAYERS)  # the int8 layers too: quantization error


def test_rule_flags_of_the_wrong_family_or_compare_are_one_line_usage_errors(
    shell: Dispatcher, meg_pair, tmp_path: Path
) -> None:
    a, b, _, _ = meg_pair
    fixed, real_path, _, _ = write_sigmastar_pair(tmp_path)
    err = run_fail(shell, f"vc -lt {a} -rt {b} --cos-min 0.9").error or ""
    assert err.startswith("vc: --cos-min ") and "SigmaStar" in err and "MegEngine dumps" in err
    err = run_fail(shell, f"ac -c -lt {a} -rt {b} --rmse-max 0.2").error or ""
    assert err.startswith("ac: --rmse-max ") and "MegEngine dumps" in err
    err = run_fail(shell, f"vc -lt {fixed} -rt {real_path} --max-err 0.1").error or ""
    assert err.startswith("vc: --max-err ") and "SigmaStar dumps" in err
    assert "--cos-min / --rmse-max" in err
    # an Ascend compare is judged by the [thresholds] settings
    for line in ("vc --max-err 0.1", "ac -c --cos-min 0.9", "vc --resume --rmse-max 1"):
        err = run_fail(shell, line).error or ""
        flag = line.split()[-2]
        assert err.startswith(f"{line.split()[0]}: {flag} is for a compare of two ")
        assert "[thresholds]" in err
    # limits out of range
    err = run_fail(shell, f"vc -lt {a} -rt {b} --max-err -1").error or ""
    assert err.startswith("vc: --max-err: ") and "out of range" in err
    err = run_fail(shell, f"vc -lt {a} -rt {b} --max-err nan").error or ""
    assert "finite" in err
    err = run_fail(shell, f"vc -lt {fixed} -rt {real_path} --cos-min 1.5").error or ""
    assert err.startswith("vc: --cos-min: ") and "out of range" in err
    # nothing was written by a refused compare
    assert not (tmp_path / "ws" / "precision_data" / "temp" / "vector_compare").exists()


def test_a_megengine_var_of_another_shape_fails_as_its_compare_says(tmp_path: Path) -> None:
    """QA Q25 #3: MegEngine's compare_binary_iodump fails a `shape mismatch` whatever the
    values; a device Reshape giving (3, 2) for (2, 3), same values, passed "compared flat"
    and its consumer was named the root."""
    from precision_shell.foreign.run import run_foreign_compare
    from precision_shell.formats.megengine_dump import VarSpec, var_info_of, write_bin_io_dump

    x = np.arange(6, dtype=np.float32) / 7
    sources = var_info_of(1, x, "x", "Host2DeviceCopy")
    for run, shape in (("dev", (3, 2)), ("ref", (2, 3))):
        write_bin_io_dump(
            tmp_path / run,
            [
                VarSpec(1, x, "x", "Host2DeviceCopy"),
                VarSpec(2, x.reshape(shape), "reshape", "Reshape", inputs=(sources,)),
            ],
        )
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(
        tmp_path / "ws", str(tmp_path / "dev"), str(tmp_path / "ref"), diagnose=True
    )
    rows = {r.op_name: r for r in read_result_csv(result.csv_path).rows}
    assert rows["reshape"].metrics["MegEngineRelativeError"] == 0.0  # the values are equal
    assert rows["reshape"].reason == (
        "shape mismatch (MegEngine's compare fails it; values compared flat): [3,2] vs [2,3]"
    )
    assert [r.op_name for r in result.failing] == ["reshape"]
    assert result.causes is not None and result.causes[0].op == "reshape"
    assert "fails by" in rendered(result, 300)


def test_a_megengine_var_of_another_element_count_fails_and_is_the_root(tmp_path: Path) -> None:
    """QA Q26 #4: compare_binary_iodump fails two vars whose element counts differ (`shape
    mismatch`); a device Subtensor keeping 6 of 8 values was "not compared", its consumer too,
    and the Reduce after them was named the root. The row compares the leading values."""
    from precision_shell.foreign.run import run_foreign_compare
    from precision_shell.formats.megengine_dump import VarSpec, var_info_of, write_bin_io_dump

    x = np.arange(1, 9, dtype=np.float32)
    for run, kept in (("dev", 6), ("ref", 8)):
        sub = x[:kept].copy()
        mul = (sub * 2).astype(np.float32)
        red = np.array([mul.sum()], np.float32)
        write_bin_io_dump(
            tmp_path / run,
            [
                VarSpec(1, x, "data", "Host2DeviceCopy"),
                VarSpec(2, sub, "sub", "Subtensor", inputs=(var_info_of(1, x, "data", "H"),)),
                VarSpec(3, mul, "mul", "Elemwise", inputs=(var_info_of(2, sub, "sub", "S"),)),
                VarSpec(4, red, "red", "Reduce", inputs=(var_info_of(3, mul, "mul", "E"),)),
            ],
        )
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(
        tmp_path / "ws", str(tmp_path / "dev"), str(tmp_path / "ref"), diagnose=True
    )
    rows = {r.op_name: r for r in read_result_csv(result.csv_path).rows}
    assert rows["sub"].compared and rows["sub"].metrics["MegEngineRelativeError"] == 0.0
    assert rows["sub"].reason == (
        "shape mismatch (MegEngine's compare fails it; element counts differ): [6] has 6, "
        "[8] has 8; the leading 6 values compared"
    )
    assert [r.op_name for r in result.failing] == ["sub", "mul", "red"]
    assert result.summary.primary.failing_outputs == 3
    assert result.causes is not None and [c.op for c in result.causes] == ["sub"]
    # SigmaStar's compareAccuracy fails buffers of different sizes too (QA Q29 #10)
    a = np.arange(6, dtype=np.float32)
    write_sigmastar_dump(tmp_path / "l.bin", [SigmaSpec("count", a)])
    write_sigmastar_dump(tmp_path / "r.bin", [SigmaSpec("count", a[:4])])
    other = run_foreign_compare(tmp_path / "ws", str(tmp_path / "l.bin"), str(tmp_path / "r.bin"))
    (row,) = read_result_csv(other.csv_path).rows
    assert row.compared and row.reason.startswith("size mismatch (SigmaStar's compareAccuracy")
    assert [r.op_name for r in other.failing] == ["count"]


def test_text_vars_printed_in_full_of_other_counts_fail_and_an_empty_one_is_not_compared(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """QA Q29 #2: a text var printed in full (3 values against 4) crashed the rounding check
    (`operands could not be broadcast`); QA Q29 #1: an empty device var against 8 values was
    "not compared" in vc's count and the root cause, but failing in vcs."""
    from precision_shell.formats.megengine_dump import (
        TextSpec,
        VarSpec,
        var_info_of,
        write_bin_io_dump,
        write_io_dump_text,
    )

    x = np.arange(1, 13, dtype=np.float32)
    empty = np.zeros(0, np.float32)
    source = (var_info_of(1, x, "data", "H"),)
    write_bin_io_dump(
        tmp_path / "e",
        [VarSpec(1, x, "data", "Host2DeviceCopy"), VarSpec(2, empty, "sub", "S", inputs=source)],
    )
    cases = {"a.txt": [1, 2, 3], "b.txt": [1, 2, 3, 4]}
    for name, values in cases.items():
        specs = [
            TextSpec(1, x, "data", "Host2DeviceCopy", 1),
            TextSpec(2, np.float32(values), "sub", "Subtensor", 2, deps=((0, 1),)),
        ]
        write_io_dump_text(tmp_path / name, specs)
    result = run_ok(shell, f"vc -lt {tmp_path / 'a.txt'} -rt {tmp_path / 'b.txt'}")
    sub = next(r for r in result.rows if r.op_name == "sub")
    assert sub.reason == (
        "shape mismatch (MegEngine's compare fails it; element counts differ): [3] has 3, "
        "[4] has 4; the leading 3 printed values compared"
    )
    assert [r.op_name for r in result.failing] == ["sub"]
    result = run_ok(shell, f"vc -lt {tmp_path / 'e'} -rt {tmp_path / 'b.txt'}")
    sub = next(r for r in result.rows if r.op_name == "sub")
    assert not sub.compared and sub.reason == (
        "element counts differ: [0] has 0, [4] has 4 (MegEngine's compare fails it); no values "
        "to compare"
    )
    assert result.failing == []
    assert run_ok(shell, f"vcs -f {result.csv_path}").failing_total == 0  # as vc counted


def test_a_compare_where_nothing_was_judged_gives_no_all_clear(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """QA Q29 #3: two texts whose var differs only past the 5 values printed (same
    statistics): every row "not judged", and `ac -c` said "root cause: nothing fails" in
    green; the page "none: no op degrades the signal on its own"."""
    from precision_shell.formats.megengine_dump import TextSpec, write_io_dump_text

    x = np.arange(1, 13, dtype=np.float32)
    good = (x * 2).astype(np.float32)
    bad = good.copy()
    bad[5:] = bad[5:][::-1]
    for name, values in (("dev.txt", bad), ("ref.txt", good)):
        specs = [
            TextSpec(1, x, "data", "Host2DeviceCopy", 1),
            TextSpec(2, values, "mul", "Elemwise", 2, deps=((0, 1),)),
        ]
        write_io_dump_text(tmp_path / name, specs)
    result = run_ok(shell, f"ac -c -lt {tmp_path / 'dev.txt'} -rt {tmp_path / 'ref.txt'}")
    assert not any(r.compared for r in result.rows) and result.causes == []
    text = " ".join(rendered(result, 300).split())
    assert "root cause: nothing judged: no tensor could be compared (vcs -f " in text
    assert "nothing fails" not in text
    page = run_ok(shell, f"report -f {result.csv_path}").path.read_text(encoding="utf-8")
    assert "none: nothing judged: no tensor could be compared (vcs lists why)" in page


def test_a_foreign_compare_that_fails_leaves_nothing_to_read_back(
    shell: Dispatcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA Q29 #2: the crashed compare left a one-row CSV and no summary.json, and the next
    `vcs` read it as the current result under the Ascend rule. It has no journal to say it
    was cut short, so what it wrote goes."""
    from precision_shell.foreign import run as foreign_run

    a = np.arange(6, dtype=np.float32)
    write_sigmastar_dump(tmp_path / "l.bin", [SigmaSpec("x", a), SigmaSpec("y", a)])
    write_sigmastar_dump(tmp_path / "r.bin", [SigmaSpec("x", a), SigmaSpec("y", a)])
    real = foreign_run._row
    calls = []

    def second_fails(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return real(*args, **kwargs)

    monkeypatch.setattr(foreign_run, "_row", second_fails)
    out = shell.execute(f"vc -lt {tmp_path / 'l.bin'} -rt {tmp_path / 'r.bin'}")
    assert not out.ok and "boom" in (out.error or "")
    base = tmp_path / "ws" / "precision_data" / "temp" / "vector_compare"
    assert not base.exists() or not any(base.iterdir())
    # a -o DIR the user gave stays, empty
    given = tmp_path / "given"
    calls.clear()
    assert not shell.execute(f"vc -lt {tmp_path / 'l.bin'} -rt {tmp_path / 'r.bin'} -o {given}").ok
    assert given.is_dir() and not any(given.iterdir())


def test_a_megengine_text_var_printed_in_part_of_another_shape_fails(tmp_path: Path) -> None:
    """QA Q26 #5: a var an `--io-dump` text printed in part, same count and values, another
    shape, was "not judged" (nothing printed crosses the limit); the shape fails it."""
    from precision_shell.foreign.run import run_foreign_compare
    from precision_shell.formats.megengine_dump import TextSpec, write_io_dump_text

    values = np.arange(12, dtype=np.float32)
    for name, shape in (("a.txt", (3, 4)), ("b.txt", (4, 3))):
        spec = TextSpec(1, values.reshape(shape), "x", "Host2DeviceCopy", 1, "x:0")
        write_io_dump_text(tmp_path / name, [spec])
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    (row,) = read_result_csv(result.csv_path).rows
    assert row.compared and row.metrics["MegEngineRelativeErrorAtLeast"] == 0.0
    assert row.reason.startswith(
        "shape mismatch (MegEngine's compare fails it; values compared flat): [3,4] vs [4,3]; "
        "the dumps show left 5 of 12, right 5 of 12 values; "
    )
    assert [r.op_name for r in result.failing] == ["x"]


@pytest.mark.parametrize(
    ("left", "right", "verdict"),
    [
        ([1.0014, 2, 3], [0.99996, 2, 3], "not judged"),  # printed 1.001 / 1: 0.000999
        ([1.0, 2, 3], [1.0, 2, 3], "passes"),  # within any rounding: proven
        ([1.01, 2, 3], [1.0, 2, 3], "fails"),  # 0.01, far past the limit: proven
    ],
)
def test_a_text_var_printed_in_full_is_judged_only_where_rounding_cannot_change_it(
    tmp_path: Path, left: list[float], right: list[float], verdict: str
) -> None:
    """QA Q25 #4: an `--io-dump` text prints values as %.4g; a var printed in full was judged
    on the rounded values, and 1.0014 vs 0.99996 (true error 1.44e-3, failing) passed."""
    from precision_shell.foreign.run import run_foreign_compare
    from precision_shell.formats.megengine_dump import (
        TextSpec,
        write_io_dump_text,
    )

    for name, values in (("a.txt", left), ("b.txt", right)):
        spec = TextSpec(1, np.float32(values), "x", "Host2DeviceCopy", 1, "x:0")
        write_io_dump_text(tmp_path / name, [spec])
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    (row,) = read_result_csv(result.csv_path).rows
    if verdict == "not judged":
        assert not row.compared and result.failing == []
        assert row.reason.startswith("values printed as %.4g: MegEngineRelativeError 0 to ")
        assert row.reason.endswith("across the limit: rounded values, not judged")
    else:
        assert row.compared and bool(result.failing) == (verdict == "fails")
