"""`replay OP` through the real dispatcher on tiny demo workspaces built in tmp dirs.

The demo's device kernels take float16 inputs, compute in float32 and round once to float16,
so a healthy op's own error (device vs float64 replay from the same inputs) is within 1 ULP;
a `local_error` fault multiplies the output by 1 + 0.05 * noise, far beyond rounding.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from precision_shell.commands.replay import JsonText
from precision_shell.commands.system import CommandHelp
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import FP16_OVERFLOW, LOCAL_ERROR, NAN_BIRTH, DemoSpec, Fault
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import Renderer
from precision_shell.replay.kernels import registry
from precision_shell.replay.session import ReplayReport
from tests.commands.shell_fixture import CONV2, CONV3, DENSE, open_shell, run_fail, run_ok

ERROR_KEYS = {
    "cosine",
    "max_abs_error",
    "relative_euclidean_distance",
    "max_ulp",
    "elements",
    "left_out",
}
EXACT = "this op is exact for float16; its deviation comes from its inputs"
WRONG = "the kernel itself is wrong"
# The two Muls of the demo: its GE graph has no `value` on them (the writer only sees the
# plan, not the calibrated scale), and the long-named one fuses two Mul members.
LONG_MULS = "weight_decay_applied_to_conv_kernels"


def _build(root: Path, *faults: Fault) -> tuple[Path, list]:
    manifest = build_demo(root, DemoSpec(size="tiny", faults=faults, second_run=False))
    dumped = [op for op in manifest.device_ops if op.dump_file]
    return root, dumped


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("replay_healthy"))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    return _build(
        tmp_path_factory.mktemp("replay_faulty"), Fault(LOCAL_ERROR, "conv2/Conv2D", 0.05)
    )


def _printed(result: object) -> str:
    """What the shell prints for `result` (plain, wide enough that nothing wraps)."""
    out = io.StringIO()
    console = Console(file=out, width=240, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return out.getvalue()


def _own_ulps(root: Path, ops: list) -> dict[str, float]:
    """Own max ULP of output 0 of every dumped op that replays; the others left out."""
    shell = open_shell(root)
    ulps = {}
    for op in ops:
        outcome = shell.execute(f"replay {op.name}")
        if outcome.ok:
            ulps[op.name] = outcome.result.outputs[0].own.max_ulp
    return ulps


def test_json_of_a_healthy_fused_conv(healthy):
    root, _ = healthy
    result = run_ok(open_shell(root), f"replay {CONV2} --json")
    assert isinstance(result, JsonText)
    text = _printed(result)
    assert text.count("\n") == 1, "one JSON object on one line"
    data = json.loads(text, parse_constant=pytest.fail)
    assert {"op", "type", "outputs"} <= set(data)
    assert (data["op"], data["type"]) == (CONV2, "Conv2D")
    (out,) = data["outputs"]
    assert out["slot"] == 0
    assert set(out["own"]) == ERROR_KEYS and set(out["inherited"]) == ERROR_KEYS
    assert out["own"]["max_ulp"] <= 1.0
    assert out["own"]["cosine"] > 0.9999
    # nothing left out of the cosine and distance: every element is finite on both sides
    assert out["own"]["elements"] == 2 * 4 * 4 * 8
    assert out["own"]["left_out"] == {
        "device_only": 0,
        "replay_only": 0,
        "both_different": 0,
        "both_same": 0,
    }
    assert EXACT in out["verdict"]
    members = data["attrs"]
    assert members["conv2/Conv2D (Conv2D)"]["pads"] == [1, 1, 1, 1]
    assert members["bn2/FusedBatchNormV3 (FusedBatchNormV3)"].startswith("skipped: folded")


def test_every_healthy_op_is_within_one_ulp_and_the_fused_muls_is_refused(healthy):
    root, dumped = healthy
    ulps = _own_ulps(root, dumped)
    types = {op.name: op.type for op in dumped}
    assert {types[name] for name in ulps} == {
        "Cast",
        "TransData",
        "Conv2D",
        "MaxPool",
        "Muls",
        "Square",
        "ReduceSumD",
        "ReduceMeanD",
        "MatMulV2",
        "SoftmaxV2",
    }
    assert max(ulps.values()) <= 1.0, ulps
    assert "l2_loss/scaled" in ulps  # GE's Muls keeps its scalar as `value`
    refused = sorted(set(types) - set(ulps))
    assert [types[name] for name in refused] == ["Muls"]
    (long_name,) = refused
    assert LONG_MULS in long_name
    # the fused node keeps its first member's `value`; the second Mul's is lost
    error = run_fail(open_shell(root), f"replay {long_name}").error
    assert error.startswith(f"fused op {long_name}: original op ") and "(Mul)" in error


def test_local_error_conv_owns_10x_the_error_of_every_healthy_op(faulty):
    root, dumped = faulty
    ulps = _own_ulps(root, dumped)
    bad = ulps.pop(CONV2)
    assert bad >= 10 * max(ulps.values()), (bad, ulps)
    report = run_ok(open_shell(root), f"replay {CONV2}")
    assert isinstance(report, ReplayReport)
    (out,) = report.outputs
    assert out.verdict == f"own error {bad:.0f} ULP: {WRONG}"
    # the inputs are healthy: the replay matches the benchmark, the device does not
    assert out.inherited is not None and out.total is not None
    assert out.inherited.relative_euclidean_distance < 0.01 < out.total.relative_euclidean_distance


def test_rich_output_holds_the_verdict_sentence(healthy, faulty):
    healthy_text = _printed(run_ok(open_shell(healthy[0]), f"replay {CONV3}"))
    assert f"replay {CONV3} (Conv2D)" in healthy_text
    assert EXACT in healthy_text
    assert "fused: Conv2D -> FusedBatchNormV3 -> AddV2 -> Relu" in healthy_text
    for row in ("own (device vs replay)", "inherited (replay vs benchmark)", "total"):
        assert row in healthy_text
    faulty_text = _printed(run_ok(open_shell(faulty[0]), f"replay {CONV2}"))
    assert WRONG in faulty_text


def test_an_op_type_without_a_kernel_is_one_line_naming_it(healthy, monkeypatch):
    shell = open_shell(healthy[0])
    assert registry.has_kernel("SoftmaxV2")
    monkeypatch.delitem(registry._KERNELS, "SoftmaxV2")
    monkeypatch.delitem(registry._KERNELS, "Relu")
    assert run_fail(shell, "replay softmax/Softmax").error == (
        "no replay kernel for op type SoftmaxV2"
    )
    assert run_fail(shell, f"replay {CONV2}").error == (
        f"fused op {CONV2}: original op relu2/Relu (Relu) has no replay kernel"
    )


def test_rank_and_step_on_a_single_rank_workspace(healthy):
    shell = open_shell(healthy[0])
    default = run_ok(shell, f"replay {DENSE} --json")
    assert run_ok(shell, f"replay {DENSE} --rank 0 --step 0 --json") == default
    assert run_ok(shell, f"replay {DENSE} --rank 0 --json") == default
    assert '"rank": null, "step": null' in default.text  # one dump dir: no slice to name
    assert run_fail(shell, f"replay {DENSE} --rank 3").error == "debug_0: no rank 3; ranks: 0"
    assert run_fail(shell, f"replay {DENSE} --step 9").error == (
        "debug_0: no rank dumped step 9; steps: 0"
    )


def test_names_that_cannot_be_replayed(healthy):
    shell = open_shell(healthy[0])
    assert run_fail(shell, "replay no/such/op").error == (
        "op 'no/such/op' is not in the graph of debug_0"
    )
    assert run_fail(shell, "replay flatten/Reshape").error == (
        "op 'flatten/Reshape' (debug_0) has no dump file"
    )
    assert "usage: replay" in run_fail(shell, "replay").error
    # an original TF name fused into one device op names that op
    assert run_ok(shell, "replay relu2/Relu").op == CONV2
    # as does one of its dump files, by name (ni's lookup)
    dump_name = run_ok(shell, f"replay {DENSE}").dump_file
    by_file = run_ok(shell, f"replay {dump_name}")
    assert (by_file.op, by_file.dump_file) == (DENSE, dump_name)


def test_nan_birth_is_wrong_and_the_json_stays_valid(tmp_path):
    root, _ = _build(tmp_path / "nan", Fault(NAN_BIRTH, "conv2/Conv2D", 2))
    text = _printed(run_ok(open_shell(root), f"replay {CONV2} --json"))
    data = json.loads(text, parse_constant=pytest.fail)
    (out,) = data["outputs"]
    assert out["own"]["max_ulp"] == "inf" and out["total"]["max_ulp"] == "inf"
    assert out["verdict"] == f"own error inf ULP: {WRONG}"


def test_measures_over_the_finite_elements_say_so_in_the_panel_and_the_json(tmp_path):
    """A NaN and an inf born in conv2's output (256 elements): cosine and rel. Euclidean of
    own and total are over the 254 elements finite on both sides, marked, and a line says what
    was left out and that vc's CSV (every element) has nan/inf for the same pair."""
    root, _ = _build(tmp_path / "nan", Fault(NAN_BIRTH, "conv2/Conv2D", 2))
    shell = open_shell(root)
    report = run_ok(shell, f"replay {CONV2}")
    (out,) = report.outputs
    assert (out.total.elements, out.total.nonfinite_first, out.total.left_out) == (256, 2, 2)
    assert math.isfinite(out.total.cosine)  # over the finite elements: still informative
    lines = [" ".join(line.strip().strip("│").split()) for line in _printed(report).splitlines()]
    total = next(line for line in lines if line.startswith("total (device vs benchmark)"))
    assert total == (
        f"total (device vs benchmark) │ {fmt_num(out.total.cosine, 9)}* │ inf │ "
        f"{fmt_num(out.total.relative_euclidean_distance)}* │ inf"
    )
    inherited = next(line for line in lines if line.startswith("inherited (replay vs"))
    assert "*" not in inherited  # the replay and the benchmark are finite everywhere
    assert [line for line in lines if line.startswith("* ")] == [
        "* own: cosine and rel. Euclidean over the 254 of 256 elements finite on both sides; "
        "left out: 2 NaN/inf on the device only",
        "* total: cosine and rel. Euclidean over the 254 of 256 elements finite on both sides; "
        "left out: 2 NaN/inf on the device only (vc's CSV takes every element: nan/inf there)",
    ]
    (data,) = json.loads(_printed(run_ok(shell, f"replay {CONV2} --json")))["outputs"]
    assert (data["total"]["elements"], data["total"]["left_out"]) == (
        256,
        {"device_only": 2, "benchmark_only": 0, "both_different": 0, "both_same": 0},
    )
    assert data["inherited"]["left_out"] == dict.fromkeys(
        ("replay_only", "benchmark_only", "both_different", "both_same"), 0
    )
    # the CSV's cells for the same pair, which take every element
    csv_path = run_ok(shell, "vc").primary.csv_path
    with open(csv_path, newline="") as fh:
        rows = list(csv.reader(fh))
    (row,) = [r for r in rows[1:] if f"{CONV2}:output:0" in r]
    head = rows[0]
    assert row[head.index("CosineSimilarity")] == "nan"


def test_a_correct_overflow_is_not_the_kernels_error(tmp_path):
    """fp16_overflow of l2_loss/Sum: the exact sum exceeds 65504, so the device's inf is the
    correct float16 rounding: exact, with the overflow counted; the total error is inf."""
    root, _ = _build(tmp_path / "overflow", Fault(FP16_OVERFLOW, "l2_loss/Sum", 4.0))
    report = run_ok(open_shell(root), "replay l2_loss/Sum")
    (out,) = report.outputs
    assert out.overflow > 0 and out.own.max_ulp <= 1.0
    assert EXACT in out.verdict
    assert out.total is not None and out.total.max_ulp == float("inf")
    assert f"{out.overflow} element(s) overflow float16" in _printed(report)


def test_help_replay_shows_the_usage(healthy):
    result = run_ok(open_shell(healthy[0]), "help replay")
    assert isinstance(result, CommandHelp) and result.name == "replay"
    assert result.usage == "replay OP [--rank R] [--step S] [--json]"
    printed = _printed(result)
    assert "usage: replay OP [--rank R] [--step S] [--json]" in printed
    assert "--json" in printed and "the kernel itself is" in printed


def test_small_fp32_head_demo_no_healthy_op_is_called_wrong(tmp_path):
    """In the small demo a few conv outputs sit near zero where the float32 accumulation of
    terms ~20 in size is off by ~1e-6, i.e. up to ~12 float16 ULPs there (the device is still
    float16(float32 conv) exactly): max ULP alone would cry wolf, the distance check does not.
    The float32 head covers float32 outputs (Cast to float32, ReduceMeanD, Mul)."""
    spec = DemoSpec(size="small", faults=(), second_run=False, fp32_head=True)
    manifest = build_demo(tmp_path, spec)
    shell = open_shell(tmp_path)
    dtypes = set()
    for op in manifest.device_ops:
        outcome = shell.execute(f"replay {op.name}") if op.dump_file else None
        if outcome is None or not outcome.ok:
            continue
        (out,) = outcome.result.outputs
        dtypes.add((op.type, out.dtype))
        assert WRONG not in out.verdict, (op.name, out.own)
        assert out.own.relative_euclidean_distance < 2**-11, (op.name, out.own)
    assert {("Mul", "DT_FLOAT"), ("ReduceMeanD", "DT_FLOAT"), ("Cast", "DT_FLOAT")} <= dtypes
