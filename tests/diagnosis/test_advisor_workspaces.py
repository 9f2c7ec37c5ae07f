"""Each advisor rule on a demo workspace built to trigger it, and on one built not to."""

from __future__ import annotations

import shutil

import pytest

import precision_shell.commands  # noqa: F401  (registers the commands)
from precision_shell.compare.diagnosis.advisor import (
    ACCUMULATED_DRIFT,
    FP16_OVERFLOW,
    GLOBAL_CONSISTENCY,
    INPUT_INCONSISTENCY,
    SINGLE_POINT,
)
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec, Fault
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.diagnosis.cases import CASES, DEEP_BLOCKS, build_case

BY_NAME = {case.name: case for case in CASES}
HEALTHY = DemoSpec(size="tiny", faults=(), second_run=False)
# drift only: the deep stack with stronger branches, no fault anywhere
DRIFTING = DemoSpec(
    size="tiny", faults=(), second_run=False, blocks=DEEP_BLOCKS, branch_gain=6.0, fp32_head=True
)
# a wrong constant inside a residual branch: the shortcut dominates the sum, so the error
# stays in the branch (the block's output and everything after stay above 0.98)
MASKED = DemoSpec(
    size="tiny",
    blocks=16,
    second_run=False,
    faults=(Fault("wrong_constant", "block8/bn2/FusedBatchNormV3", 0.3),),
)
MASKED_OP = "block8/conv2/Conv2Dblock8/relu2/Relu"
DEEP_HEALTHY = DemoSpec(
    size="tiny", faults=(), second_run=False, blocks=DEEP_BLOCKS, branch_gain=4.0, fp32_head=True
)


def diagnose_workspace(root, command="ac -c"):  # noqa: ANN001, ANN201
    outcome = Dispatcher(ShellContext(root / "precision_data", Settings.load())).execute(command)
    assert outcome.result is not None, outcome.error
    return outcome.result.diagnosis


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    """detection types found, per workspace name."""
    found = {}
    for name in (
        "fp16_overflow-conv-bn2",
        "corrupt_input-channels",
        "wrong_constant-matmul",
        "local_error-conv-deep",
    ):
        root = tmp_path_factory.mktemp(name)
        build_case(BY_NAME[name], root)
        found[name] = diagnose_workspace(root).findings
        if name == "fp16_overflow-conv-bn2":  # by value alone: no Opdebug files
            shutil.rmtree(root / "precision_data" / "overflow")
            for mode in ("default", "none"):
                command = "ac -c" if mode == "default" else "ac -c --replay none"
                found[f"{name}-by-value-{mode}"] = diagnose_workspace(root, command).findings
    for name, spec in (
        ("healthy", HEALTHY),
        ("drifting", DRIFTING),
        ("deep-healthy", DEEP_HEALTHY),
        ("masked", MASKED),
    ):
        root = tmp_path_factory.mktemp(name)
        build_demo(root, spec)
        found[name] = diagnose_workspace(root).findings
        if name == "masked":
            found["masked-estimate"] = diagnose_workspace(root, "ac -c --replay none").findings
    return found


def kinds(found, name: str) -> list[str]:  # noqa: ANN001
    return [f.detection for f in found[name]]


def test_fp16_overflow_is_reported_at_the_overflowing_op_only_when_there_is_one(findings):
    overflow = [f for f in findings["fp16_overflow-conv-bn2"] if f.detection == FP16_OVERFLOW]
    assert overflow and overflow[0].op == BY_NAME["fp16_overflow-conv-bn2"].expected_device_op
    # by value (no Opdebug file): replayed, the exact values overflow, so the advice is the
    # remedy; not replayed, the kernel may have made the inf itself, and it says so
    by_value = {
        mode: [
            f
            for f in findings[f"fp16_overflow-conv-bn2-by-value-{mode}"]
            if f.detection == FP16_OVERFLOW
        ]
        for mode in ("default", "none")
    }
    (known,), (unknown,) = by_value["default"], by_value["none"]
    assert known.op == unknown.op == overflow[0].op
    assert known.evidence["replayed"] and "Not replayed" not in known.advice
    assert not unknown.evidence["replayed"]
    assert "Not replayed" in unknown.advice and "--replay all" in unknown.advice
    assert FP16_OVERFLOW not in kinds(findings, "wrong_constant-matmul")
    assert FP16_OVERFLOW not in kinds(findings, "healthy")


def test_an_opdebug_overflow_the_replay_pins_on_the_kernel_is_not_advised_as_range(tmp_path):
    """An inf born in a float16 kernel from finite inputs: the device's Opdebug file reports an
    overflow, but the replay's exact values stay in range, so "keep it in float32" would hide
    the kernel's fault (QA Q24 #10). Without a replay the range advice stands."""
    op = "conv2/Conv2D"
    spec = DemoSpec(size="tiny", faults=(Fault("nan_birth", op, 3.0),), second_run=False)
    build_demo(tmp_path, spec)
    advice = {}
    for mode in ("all", "none"):
        found = diagnose_workspace(tmp_path, f"ac -c --replay {mode}").findings
        (opdebug,) = [
            f
            for f in found
            if f.detection == FP16_OVERFLOW and f.evidence.get("source") == "Opdebug"
        ]
        advice[mode] = opdebug
    assert advice["all"].evidence["kernel_made"] is True
    assert "the kernel made the inf/NaN itself" in advice["all"].advice
    assert "report the kernel" in advice["all"].advice
    assert advice["none"].evidence["kernel_made"] is False
    assert advice["none"].advice.startswith("The device reported an overflow in this op")
    assert "keep this op in float32" in advice["none"].advice


def test_input_inconsistency_on_a_corrupted_input_only(findings):
    (inp,) = [f for f in findings["corrupt_input-channels"] if f.detection == INPUT_INCONSISTENCY]
    assert inp.op == "input" and inp.evidence["input_cosine"] < 0.98
    for other in ("wrong_constant-matmul", "healthy", "fp16_overflow-conv-bn2"):
        assert INPUT_INCONSISTENCY not in kinds(findings, other)


def test_global_consistency_on_a_healthy_network_only(findings):
    assert kinds(findings, "healthy") == [GLOBAL_CONSISTENCY]
    # the deep float16 stack ends at cosine 0.981 but relative Euclidean distance 0.19: the
    # default rule (distance <= 0.05) calls that drift, which is what it is
    assert kinds(findings, "deep-healthy") == [ACCUMULATED_DRIFT]
    assert GLOBAL_CONSISTENCY not in kinds(findings, "wrong_constant-matmul")


def test_accumulated_drift_on_a_drifting_network_not_on_a_local_fault(findings):
    assert ACCUMULATED_DRIFT in kinds(findings, "drifting")
    drift = next(f for f in findings["drifting"] if f.detection == ACCUMULATED_DRIFT)
    assert drift.evidence["sqnr_end_db"] < drift.evidence["sqnr_start_db"]
    assert ACCUMULATED_DRIFT not in kinds(findings, "local_error-conv-deep")
    assert ACCUMULATED_DRIFT not in kinds(findings, "wrong_constant-matmul")


def test_single_point_deviation_when_the_error_stays_in_its_branch(findings):
    """The estimate calls the masked wrong constant a single-point deviation; its replay
    proves the constants differ, and then it is no benign optimisation."""
    assert SINGLE_POINT not in kinds(findings, "masked")
    (single,) = [f for f in findings["masked-estimate"] if f.detection == SINGLE_POINT]
    assert single.op == MASKED_OP and single.evidence["output_cosine"] < 0.98
    assert single.evidence["downstream_checked"] > 10
    for propagating in ("wrong_constant-matmul", "fp16_overflow-conv-bn2", "drifting"):
        assert SINGLE_POINT not in kinds(findings, propagating)
