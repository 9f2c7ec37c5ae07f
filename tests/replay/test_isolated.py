"""The replay from the benchmark's data inputs and the device's constants (replay/isolated).

Healthy ops of the demo, fed the benchmark's own inputs, match the benchmark within about one
float16 unit roundoff (their constants are float16 copies of the benchmark's); a wrong
constant leaves the op off by its own size however deep the drift around it.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from precision_shell.compare.diagnosis.advisor import ACCUMULATED_DRIFT
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import WRONG_CONSTANT, DemoSpec, Fault
from precision_shell.render.output import Renderer
from precision_shell.replay.isolated import (
    BenchmarkInputs,
    allowed_distance,
    benchmark_inputs,
    constants_differ,
    rounded_constants,
)
from precision_shell.replay.measure import OwnError
from precision_shell.replay.session import ReplayReport
from tests.commands.shell_fixture import CONV1, CONV2, open_shell, rendered, run_ok

FAULTY_DEEP = "block50/conv2/Conv2Dblock50/relu2/Relu"


def _deep(root, *faults: Fault, blocks: int = 60):
    """A 60-block float16 net whose drift alone crosses the thresholds from block ~40 on
    (`blocks` fewer: drift alone fails none)."""
    spec = DemoSpec(
        size="tiny", blocks=blocks, branch_gain=6, fp32_head=True, faults=faults, second_run=False
    )
    build_demo(root, spec)
    return root


@pytest.fixture(scope="module")
def wrong_constant(tmp_path_factory):
    """The tiny demo with only its wrong constant (conv2's folded filter scaled)."""
    root = tmp_path_factory.mktemp("isolated_wc")
    build_demo(
        root,
        DemoSpec(
            size="tiny", faults=(Fault(WRONG_CONSTANT, "conv2/Conv2D", 0.1),), second_run=False
        ),
    )
    return root


def _printed(result: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=240, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return out.getvalue()


def test_the_rule_is_four_unit_roundoffs_or_four_times_the_constants_rounding():
    float16 = 2.0**-11
    assert allowed_distance("DT_FLOAT16") == pytest.approx(4 * float16)
    assert allowed_distance("DT_FLOAT") == pytest.approx(1e-5)  # the floor
    # constants whose rounding moves the output by 0.01 (float16 subnormals) widen it
    assert allowed_distance("DT_FLOAT16", 0.01) == pytest.approx(0.04)
    assert allowed_distance("DT_FLOAT16", 1e-5) == pytest.approx(4 * float16)
    base = allowed_distance("DT_FLOAT16")
    assert not constants_differ(OwnError(1.0, 0.0, base * 0.99, 0.0), base)
    assert constants_differ(OwnError(1.0, 0.0, base * 1.01, 0.0), base)
    assert not constants_differ(None, base)
    assert constants_differ(OwnError(float("nan"), np.inf, float("nan"), np.inf), base)


def test_rounded_constants_move_only_the_constants_by_half_their_ulp():
    fed = BenchmarkInputs(
        [np.full((2, 3), 0.1), np.array([1.0, 2.0**-20, 1000.0])], replaced=1, constants=(1,)
    )
    moved = rounded_constants(fed, ["DT_FLOAT16", "DT_FLOAT16"])
    assert moved is not None and moved[0] is fed.inputs[0]
    # float16 half-ULPs: at 1: 2^-11; a subnormal: 2^-25; at 1000 (512..1024): 2^-2
    assert np.abs(moved[1] - fed.inputs[1]).tolist() == [2.0**-11, 2.0**-25, 0.25]
    assert rounded_constants(BenchmarkInputs([np.zeros(2)], 1), ["DT_FLOAT16"]) is None


def test_a_wrong_constant_is_off_from_the_benchmarks_inputs_and_a_healthy_conv_is_not(
    wrong_constant,
):
    shell = open_shell(wrong_constant)
    bad = run_ok(shell, f"replay {CONV2}")
    good = run_ok(shell, f"replay {CONV1}")
    assert isinstance(bad, ReplayReport) and isinstance(good, ReplayReport)
    (out,) = bad.outputs
    assert out.isolated is not None and out.constants_differ
    # the filter is scaled by 1 + 0.1 * noise: the conv is off by about that much
    assert 0.02 < out.isolated.relative_euclidean_distance < 0.2
    assert "from the benchmark's own inputs its output is still" in out.verdict
    assert "its deviation comes from its inputs" not in out.verdict
    (fine,) = good.outputs
    assert fine.isolated is not None and not fine.constants_differ
    assert fine.isolated.relative_euclidean_distance < allowed_distance(fine.dtype) / 2
    assert fine.allowed == allowed_distance(fine.dtype)  # no sensitivity replay: within base
    assert out.allowed >= allowed_distance(out.dtype)
    assert "its deviation comes from its inputs" in fine.verdict
    text = _printed(bad)
    assert "isolated (benchmark inputs vs benchmark)" in text
    data = json.loads(_printed(run_ok(shell, f"replay {CONV2} --json")))
    assert data["outputs"][0]["constants_differ"] is True
    assert data["outputs"][0]["isolated"]["relative_euclidean_distance"] == pytest.approx(
        out.isolated.relative_euclidean_distance
    )


def test_a_nan_constant_differs_though_the_finite_elements_match(tmp_path):
    """One element of conv2's folded filter is NaN on the device: from the benchmark's own
    inputs the op gives NaN in every output of that filter (2 x 4 x 4 of 256) and matches the
    benchmark on the rest. Its distance, over the finite elements, is within rounding; the
    NaN alone makes the constants differ, and the reason says so."""
    root = tmp_path / "nan_constant"
    build_demo(
        root,
        DemoSpec(
            size="tiny",
            faults=(Fault(WRONG_CONSTANT, "conv2/Conv2D", 1, variant="nan"),),
            second_run=False,
        ),
    )
    shell = open_shell(root)
    (out,) = run_ok(shell, f"replay {CONV2}").outputs
    isolated = out.isolated
    assert isolated is not None
    assert isolated.relative_euclidean_distance < allowed_distance(out.dtype)
    assert (isolated.elements, isolated.nonfinite_first, isolated.nonfinite_second) == (256, 32, 0)
    assert out.constants_differ
    assert out.verdict.split("; ", 1)[1] == (
        "from the benchmark's own inputs its output holds 32 NaN/inf where the benchmark's is finite: "
        "what the device gives it besides data differs from the benchmark's: its constant "
        "inputs (weights, bias, scale) or its attributes"
    )
    (data,) = json.loads(_printed(run_ok(shell, f"replay {CONV2} --json")))["outputs"]
    assert data["constants_differ"] is True
    assert data["isolated"]["left_out"] == {
        "isolated_replay_only": 32,
        "benchmark_only": 0,
        "both_different": 0,
        "both_same": 0,
    }
    assert (
        "* isolated: cosine and rel. Euclidean over the 224 of 256 elements finite on both "
        "sides; left out: 32 NaN/inf on the isolated replay only"
        in _printed(run_ok(shell, f"replay {CONV2}"))
    )


def test_a_one_sided_nan_or_inf_makes_constants_differ_whatever_the_distance():
    base = allowed_distance("DT_FLOAT16")
    close = OwnError(1.0, np.inf, base / 10, np.inf, elements=4)
    assert not constants_differ(close, base)
    assert constants_differ(OwnError(1.0, np.inf, base / 10, np.inf, 4, nonfinite_first=1), base)
    assert constants_differ(OwnError(1.0, np.inf, base / 10, np.inf, 4, nonfinite_second=1), base)
    assert constants_differ(OwnError(1.0, np.inf, base / 10, np.inf, 4, nonfinite_differ=1), base)
    # the same NaN on both sides is no difference
    assert not constants_differ(OwnError(1.0, 0.0, base / 10, 0.0, 4, nonfinite_same=1), base)


def test_constants_keep_the_devices_values_and_a_missing_benchmark_says_which_input(
    wrong_constant, tmp_path
):
    root = tmp_path / "ws"
    shutil.copytree(wrong_constant, root, symlinks=True)
    shell = open_shell(root)
    ws = shell.context.workspace
    graph = ws.runs[0].dump_graph()
    rec = graph.get(CONV2)
    producer = rec.data_inputs[0][0]
    inputs = [np.zeros((2, 4, 4, 8)), np.zeros((3, 3, 8, 8)), np.zeros(8)]
    fed = benchmark_inputs(ws, graph, rec, inputs)
    assert fed.inputs is not None and fed.replaced == 1
    assert fed.inputs[1] is inputs[1] and fed.inputs[2] is inputs[2]  # the folded constants
    assert np.array_equal(
        fed.inputs[0], np.load(ws.input_benchmark(graph, rec, 0).path).reshape(2, 4, 4, 8)
    )
    # the same elements in another shape are another layout: refused, never reshaped
    nchw = [np.zeros((2, 8, 4, 4)), *inputs[1:]]
    refused = benchmark_inputs(ws, graph, rec, nchw)
    assert refused.inputs is None
    assert (
        refused.note == f"input 0 ({producer}): benchmark shape (2, 4, 4, 8), device (2, 8, 4, 4)"
    )
    Path(ws.input_benchmark(graph, rec, 0).path).unlink()
    fed = benchmark_inputs(ws, graph, rec, inputs)
    assert fed.inputs is None
    assert fed.note is not None and fed.note.startswith(f"input 0 ({producer}): ")
    assert "cannot read" in fed.note


def test_a_wrong_weight_under_deep_drift_is_the_root_cause(tmp_path):
    """QA: a x1.1 filter at block50 of a deep float16 net loses 8.4 dB, less than drift alone
    makes an op lose (10 dB rule); the heuristic alone blames drift. The replay from the
    benchmark's inputs proves it."""
    shell = open_shell(_deep(tmp_path, Fault(WRONG_CONSTANT, "block50/conv2/Conv2D", 0.1)))
    estimate = run_ok(shell, "ac -c --replay none")
    assert estimate.root_cause.cause.op != FAULTY_DEEP
    check = run_ok(shell, "ac -c")
    assert check.root_cause.cause.op == FAULTY_DEEP
    assert check.root_cause.cause.reason.startswith(
        "replay: from the benchmark's own inputs its output is still"
    )
    assert ACCUMULATED_DRIFT not in [f.detection for f in check.diagnosis.findings]
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert summary["replay"]["constants_differ"] == [FAULTY_DEEP]
    assert summary["root_causes"][0]["replay"]["constants_differ"] is True


def test_deep_drift_alone_proves_no_constant_wrong(tmp_path):
    shell = open_shell(_deep(tmp_path))
    check = run_ok(shell, "ac -c --replay all")
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["replayed"] > 100
    assert replay["constants_differ"] == [] and replay["kernel_wrong"] == []
    assert ACCUMULATED_DRIFT in [f.detection for f in check.diagnosis.findings]


def test_candidates_that_prove_nothing_go_on_to_every_op(tmp_path):
    """QA: a 1% filter under deep float16 drift is no candidate (it loses too little); the
    default replay went no further and the advisor blamed drift. Now the candidates' pass,
    proving nothing while outputs fail, goes on to every op within the budget."""
    faulty = "block40/conv2/Conv2Dblock40/relu2/Relu"
    shell = open_shell(_deep(tmp_path, Fault(WRONG_CONSTANT, "block40/conv2/Conv2D", 0.01)))
    narrow = run_ok(shell, "ac -c --replay none")
    assert narrow.root_cause.cause.op != faulty
    check = run_ok(shell, "ac -c")
    assert check.root_cause.cause.op == faulty
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert (replay["mode"], replay["widened"], replay["left_out"]) == ("candidates", True, 0)
    assert replay["replayed"] > 100 and replay["constants_differ"] == [faulty]
    line = next(ln for ln in rendered(check, 400).splitlines() if ln.startswith("replay ("))
    assert line.startswith("replay (candidates, then every op: the candidates proved no fault): ")
    # no drift advice beside the proven fault, and the Advisor panel does not say "nothing found"
    assert check.diagnosis.findings == []
    assert "no finding beyond the root cause below" in rendered(check, 400)


def test_candidates_that_prove_a_fault_say_how_many_ops_they_left(wrong_constant):
    check = run_ok(open_shell(wrong_constant), "ac -c")
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["widened"] is False and replay["constants_differ"] == [CONV2]
    left = replay["left_out"]
    assert left > 0 and replay["replayed"] + left <= 14  # the tiny demo dumps 14 ops
    line = next(ln for ln in rendered(check, 400).splitlines() if ln.startswith("replay ("))
    assert line.endswith(
        f"; {left} other dumped ops with a kernel not replayed (--replay all replays them)"
    )
