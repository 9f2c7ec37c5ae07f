"""`ac -c` with replay on built workspaces: a small kernel error under heavy float16 drift.

The deep stack of the diagnosis suite (72 residual blocks whose branches amplify float16
rounding to a last-conv cosine near 0.99) with a local error of 0.3-0.5% rms in one op: too
small to stand out of the drift, so the estimate names a healthy op downstream; the replay of
every op measures each kernel's own error from the device's own inputs and names it.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.diagnosis import replay_evidence
from precision_shell.compare.diagnosis.advisor import FP16_OVERFLOW
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import LOCAL_ERROR, NAN_BIRTH, WRONG_CONSTANT, DemoSpec, Fault
from precision_shell.replay.session import WRONG_ULP
from tests.commands.shell_fixture import DENSE, open_shell, rendered, run_fail, run_ok
from tests.diagnosis.cases import DEEP_BLOCKS, DEEP_BRANCH_GAIN, conv_op, fused_residual_op

HIDDEN = [
    # (fault, seed, the device op it lands in)
    (Fault(LOCAL_ERROR, "block30/bn2/FusedBatchNormV3", 0.005), 3, conv_op(30)),
    (Fault(LOCAL_ERROR, "block45/res/add", 0.003), 5, fused_residual_op(45)),
]


def _deep(root: Path, fault: Fault, seed: int) -> Path:
    spec = DemoSpec(
        size="tiny",
        seed=seed,
        faults=(fault,),
        second_run=False,
        blocks=DEEP_BLOCKS,
        branch_gain=DEEP_BRANCH_GAIN,
        fp32_head=True,
    )
    build_demo(root, spec)
    return root / "precision_data"


@pytest.mark.parametrize(("fault", "seed", "expected"), HIDDEN, ids=["conv", "fused_residual"])
def test_replay_all_names_a_kernel_error_hidden_under_drift(tmp_path, fault, seed, expected):
    shell = open_shell(_deep(tmp_path, fault, seed))
    estimate = run_ok(shell, "ac -c --replay none").diagnosis
    assert estimate.replays is None
    assert not estimate.causes or estimate.causes[0].op != expected  # hidden from the estimate

    check = run_ok(shell, "ac -c --replay all")
    diagnosis = check.diagnosis
    assert diagnosis.causes[0].op == expected
    done = diagnosis.replays
    assert done.wrong == [expected] and done.not_reached == 0
    own = {op: max(out.own.max_ulp for out in r.outputs) for op, r in done.reports.items()}
    healthy = np.array([u for op, u in own.items() if op != expected])
    assert len(healthy) > 150  # every dumped conv, pool, add... of the 72 blocks
    # the kernel's own error stands >= 10x above every healthy op's
    assert own[expected] >= 10 * healthy.max()
    # healthy float16 kernels: within 1 ULP but for a near-zero element or two, where the
    # float32 accumulation's cancellation shows (measured max 1.35 ULP at |x| ~ 1e-4)
    assert (healthy <= 1.0).mean() >= 0.99 and healthy.max() <= WRONG_ULP

    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    first = summary["root_causes"][0]
    assert first["op"] == expected and first["evidence"] == "replay"
    assert first["own_error"]["max_ulp"] == pytest.approx(own[expected])
    assert first["replay"]["verdict"].endswith("the kernel itself is wrong")
    assert summary["replay"]["mode"] == "all" and summary["replay"]["kernel_wrong"] == [expected]


@pytest.fixture(scope="module")
def deep_shell(tmp_path_factory):
    fault, seed, expected = HIDDEN[0]
    return open_shell(_deep(tmp_path_factory.mktemp("deep"), fault, seed)), expected


def test_default_candidates_replay_the_estimates_picks_and_the_biggest_own_drops(deep_shell):
    shell, expected = deep_shell
    diagnosis = run_ok(shell, "ac -c").diagnosis
    done = diagnosis.replays
    assert done.mode == "candidates"
    named = len(run_ok(shell, "ac -c --replay none").diagnosis.causes)
    # the candidates proved the kernel wrong: the pass went on to the ops before it only
    assert done.before == expected and done.earlier_left == 0
    candidates = len(done.reports) + len(done.refused) - done.earlier
    assert candidates <= named + replay_evidence.EXTRA_CANDIDATES
    assert diagnosis.causes[0].op == expected


def test_the_budget_stops_the_pass_and_says_what_it_left(deep_shell):
    shell, _ = deep_shell
    check = run_ok(shell, "ac -c --replay all --replay-budget 0.0001")
    done = check.diagnosis.replays
    assert done.not_reached > 100 and len(done.reports) <= 2
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert summary["replay"]["not_reached"] == done.not_reached
    causes = summary["root_causes"]
    unreplayed = [c for c in causes if c["evidence"] == "estimate"]
    assert unreplayed and all(
        c["replay_skipped"] == "not reached: the 0.0001 s replay budget ran out"
        for c in unreplayed
        if "replay_skipped" in c
    )


def ctrl_c_on_the_third_replay(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replays go on as usual but the third raises KeyboardInterrupt; the ops asked for, in
    order (the list fills as the command runs)."""
    real = replay_evidence.replay_op_in_workspace
    calls: list[str] = []

    def interrupted_on_the_third(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[2])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_evidence, "replay_op_in_workspace", interrupted_on_the_third)
    return calls


def test_ctrl_c_ends_the_pass_with_what_it_has(deep_shell, monkeypatch):
    shell, _ = deep_shell
    calls = ctrl_c_on_the_third_replay(monkeypatch)
    outcome = run_fail(shell, "ac -c --replay all")
    # the diagnosis as it stood is shown, and the command (a script) stops as Ctrl-C asks
    assert outcome.interrupted and outcome.error == (
        "ac: replay interrupted (Ctrl-C): the diagnosis above rests on the replays done"
    )
    done = outcome.result.diagnosis.replays
    assert done.interrupted and len(done.reports) == 2
    assert done.unreached[0] == calls[2]  # the op interrupted counts as not reached
    assert done.skipped(calls[2]) == "not reached: Ctrl-C"
    summary = json.loads(outcome.result.compare.summary_path.read_text())["diagnosis"]
    assert summary["replay"]["interrupted"] is True


@pytest.mark.parametrize("budget", ["0", "-1", "nan", "inf", "x"])
def test_a_bad_budget_is_a_one_line_error(deep_shell, budget):
    shell, _ = deep_shell
    outcome = run_fail(shell, f"ac -c --replay-budget {budget}")
    assert "--replay-budget" in (outcome.error or "")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (MemoryError(), "replay failed: its float64 tensors do not fit in memory"),
        (
            FileNotFoundError(2, "No such file or directory"),
            "replay failed: No such file or directory",
        ),
        (ValueError("shapes (3,4) and (5,6) not aligned"), "replay failed: ValueError: shapes"),
    ],
)
def test_a_replay_that_fails_loses_that_op_not_the_diagnosis(
    deep_shell, monkeypatch, error, reason
):
    shell, expected = deep_shell

    def failing(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise error

    monkeypatch.setattr(replay_evidence, "replay_op_in_workspace", failing)
    check = run_ok(shell, "ac -c")
    done = check.diagnosis.replays
    assert not done.reports and done.refused
    assert all(text.startswith(reason) for text in done.refused.values())
    # the estimate stands, each cause saying why it has no replay
    assert all(
        c.replay is None and (c.replay_skipped or "").startswith(reason)
        for c in check.diagnosis.causes
    )


def _drifting(root: Path, faults: tuple[Fault, ...]) -> Path:
    """The deep drift stack of the QA report (drift alone fails first at block44/conv2)."""
    spec = DemoSpec(
        size="tiny", blocks=60, branch_gain=6, fp32_head=True, faults=faults, second_run=False
    )
    build_demo(root, spec)
    return root / "precision_data"


def test_a_wrong_constant_under_drift_is_read_as_its_constants_and_drift_as_inherited(tmp_path):
    """block50/conv2's weights x1.3 under float16 drift: its data input is at rel euclid
    0.063 (24.1 dB) but the replay from it is at 0.444 (7.0 dB); from the benchmark's own
    inputs it is still off by about 0.4: its constants are named; block44 (drift only)
    inherits, and matches the benchmark from the benchmark's inputs."""
    fault = Fault(WRONG_CONSTANT, "block50/conv2/Conv2D", 0.3)
    check = run_ok(open_shell(_drifting(tmp_path / "d1", (fault,))), "ac -c")
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    verdicts = {c["op"]: c["replay"]["verdict"] for c in summary["root_causes"]}
    faulty, drifting = conv_op(50), conv_op(44)
    assert check.diagnosis.causes[0].op == faulty
    # fed the benchmark's own inputs, the faulty conv is still off by its weights' x1.3
    assert "but from the benchmark's own inputs its output is still 0.4" in verdicts[faulty]
    assert verdicts[faulty].endswith("its constant inputs (weights, bias, scale) or its attributes")
    assert (
        "its deviation is inherited from its inputs (inputs 26.8 dB, its exact output 24.9 dB); "
        "from the benchmark's own inputs it matches the benchmark within rounding ("
    ) in verdicts[drifting]
    assert "replay says   " + verdicts[faulty][:60] in rendered(check)


def test_a_nan_the_kernel_makes_is_no_float16_overflow(tmp_path):
    """NaN/inf born in dense/MatMul from small exact values, no Opdebug file: the compare's
    overflow flag is set, but the replay proves the kernel wrong with no exact value beyond
    float16, so the advisor does not call it an overflow (it does without the replay, from
    the flag alone)."""
    build_demo(
        tmp_path,
        DemoSpec(size="tiny", faults=(Fault(NAN_BIRTH, "dense/MatMul", 3),), second_run=False),
    )
    shutil.rmtree(tmp_path / "precision_data" / "overflow")  # the device reported nothing
    shell = open_shell(tmp_path / "precision_data")
    estimate = run_ok(shell, "ac -c --replay none").diagnosis
    assert [(f.detection, f.op) for f in estimate.findings] == [(FP16_OVERFLOW, DENSE)]
    replayed = run_ok(shell, "ac -c").diagnosis
    cause = replayed.causes[0]
    assert cause.op == DENSE and cause.replay is not None and cause.replay.overflow == 0
    assert cause.replay.own.max_ulp == math.inf
    assert not [f for f in replayed.findings if f.detection == FP16_OVERFLOW]
