"""The default replay goes on to the ops before the first fault its candidates prove (QA F4:
with a 23-ULP kernel error at block20 and a 5% wrong filter at block40 on one card under
float16 drift, the default named block40 and said "0 kernels wrong"; `--replay all` named
block20: the candidates, having proven block40, never looked before it).

The workspace: the 60-block float16 drift stack on ranks 0-1 x steps 0-1; rank 1 step 1
holds both faults. The kernel error loses too little to be a candidate; the wrong filter is
one, and its replay proves it."""

from __future__ import annotations

import json
import time

import pytest

from precision_shell.compare.diagnosis import replay_evidence
from precision_shell.demo.spec import LOCAL_ERROR, WRONG_CONSTANT, Fault
from tests.commands.shell_fixture import run_fail, run_ok
from tests.diagnosis.drift_cards import FAULTY, drift_layout, private_shell, replay_line

KERNEL_ERROR = "block20/conv2/Conv2Dblock20/relu2/Relu"
TWO_FAULTS = (
    Fault(LOCAL_ERROR, "block20/conv2/Conv2D", 0.004),
    Fault(WRONG_CONSTANT, "block40/conv2/Conv2D", 0.05),
)
CANDIDATES = 13  # the ops the candidates' pass replays on rank 1 step 1 (the estimate's + 10)
FIRST = "(the first fault the candidates proved)"


@pytest.fixture(scope="module")
def two_faults_pristine(tmp_path_factory):
    return drift_layout(tmp_path_factory, ranks=2, steps=2, faulty_at=("1", "1"), faults=TWO_FAULTS)


@pytest.fixture
def two_faults(two_faults_pristine, tmp_path):
    return private_shell(two_faults_pristine, tmp_path)


def _replayed_ops(monkeypatch: pytest.MonkeyPatch, stop_at: int = 0, pause_s: float = 0.0):  # noqa: ANN202
    """The ops replayed, in order (the list fills as the command runs); replay number
    `stop_at` raises KeyboardInterrupt, and every replay after the candidates' takes
    `pause_s` more."""
    real = replay_evidence.replay_op_in_workspace
    calls: list[str] = []

    def recorded(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[2])
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        if len(calls) > CANDIDATES:
            time.sleep(pause_s)
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_evidence, "replay_op_in_workspace", recorded)
    return calls


def test_the_default_replays_the_ops_before_a_proven_fault_and_names_the_first(
    two_faults, monkeypatch
):
    every = run_ok(two_faults, "ac -c --rank all --step 1 --replay all")
    assert (every.root_cause.cause.op, every.root_cause.lines.where) == (
        KERNEL_ERROR,
        "rank 1 step 1",
    )
    calls = _replayed_ops(monkeypatch)
    check = run_ok(two_faults, "ac -c --rank all --step 1")
    panel = check.root_cause
    # the earlier fault, as --replay all names it; the later one stays a finding
    assert (panel.cause.op, panel.lines.where) == (KERNEL_ERROR, "rank 1 step 1")
    assert (
        panel.cause.reason
        == "replay from the device's own inputs: own error 23 ULP: the kernel itself is wrong"
    )
    assert [c.op for c in check.diagnosis.causes[:2]] == [KERNEL_ERROR, FAULTY]
    done = check.diagnosis.replays
    assert (done.wrong, done.differing, done.before) == ([KERNEL_ERROR], [FAULTY], FAULTY)
    # after the candidates, only ops that run before block40
    graph = two_faults.context.workspace.run().dump_graph()
    fault_at = graph.get(FAULTY).position
    went_on = calls[CANDIDATES : CANDIDATES + done.earlier]
    assert len(went_on) == done.earlier > 60
    assert all(graph.get(op).position < fault_at for op in went_on)
    assert FAULTY in calls[:CANDIDATES] and KERNEL_ERROR in went_on
    # then the other card of the step: only its candidates that run before block20, the
    # first fault proven there (an earlier fault could only be among them), block20 itself
    # (does the kernel error hold there too? QA Q28 #1) and its own first cause (drift, or a
    # fault of its own? QA Q28 #2)
    (other,) = check.slice_replays.passes[1:]
    assert other.where == "rank 0 step 1" and not other.widened and other.before is None
    assert calls[CANDIDATES + done.earlier :] == list(other.reports)
    assert 0 < len(other.reports) < CANDIDATES
    kernel_at = graph.get(KERNEL_ERROR).position
    later = [op for op in other.reports if graph.get(op).position >= kernel_at]
    assert later[0] == KERNEL_ERROR and len(later) <= 2
    assert other.reports[KERNEL_ERROR].outputs[0].own.max_ulp <= 1  # exact on rank 0
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert (replay["before_fault"], replay["before_fault_ops"]) == (FAULTY, done.earlier)
    assert replay["before_fault_not_reached"] == 0 and replay["not_reached"] == 0
    assert replay["left_out"] == done.left_out > 0  # the ops after block40: --replay all's
    line = replay_line(check)
    assert line.startswith(
        "replay (candidates, then the ops before the first fault they proved) of 2 of 2 "
        f"rank/step slices (rank 1 step 1 proved a fault at {KERNEL_ERROR}: the candidates "
        "before it on the other cards of its step (with it and each card's "
        "first cause) replayed too; --replay all replays every op): "
        f"{CANDIDATES + done.earlier} ops replayed ({len(calls)} replays) in "
    )
    assert line.endswith(
        f" s, 1 kernel wrong (rank 1 step 1: {KERNEL_ERROR}), 1 op whose constants differ from "
        f"the benchmark's ({FAULTY} on rank 1 step 1); on rank 1 step 1, the {done.earlier} other "
        f"dumped ops before {FAULTY} {FIRST} replayed too, to find a fault before it; "
        f"{done.left_out + other.left_out} other dumped ops with a kernel not replayed on rank 1 "
        "step 1, rank 0 step 1 (past a proven fault the default replays candidates, and the ops "
        "before a fault they prove; --replay all replays them)"
    )


def test_ctrl_c_before_the_fault_says_how_many_ops_it_left(two_faults, monkeypatch):
    calls = _replayed_ops(monkeypatch, stop_at=CANDIDATES + 5)
    outcome = run_fail(two_faults, "ac -c --rank all --step 1")
    assert outcome.interrupted
    done = outcome.result.diagnosis.replays
    assert done.before == FAULTY and len(calls) == CANDIDATES + 5
    assert done.earlier_left == done.earlier - 4 > 0  # the fifth was the one interrupted
    # the other card of the step is not begun, and the line says so
    line = replay_line(outcome.result)
    assert line.startswith(
        "replay (candidates, then the ops before the first fault they proved) of 1 of 2 "
        f"rank/step slices (rank 1 step 1 proved a fault at {KERNEL_ERROR}: the candidates "
        "before it on the other cards of its step (with it and each card's "
        "first cause) replayed too, but for the slices named below; "
        "--replay "
        "all replays every op): "
    )
    assert line.endswith(
        f"; on rank 1 step 1, {done.earlier_left} of the {done.earlier} other dumped ops before "
        f"{FAULTY} {FIRST} not reached (Ctrl-C): an earlier fault is not ruled out; 1 slice not "
        "begun (Ctrl-C): rank 0 step 1 (ac -c --rank R --step S replays one)"
    )


def test_a_budget_that_runs_out_before_the_fault_says_how_many_ops_it_left(two_faults, monkeypatch):
    _replayed_ops(monkeypatch, pause_s=0.05)
    check = run_ok(two_faults, "ac -c --rank all --step 1 --replay-budget 1")
    done = check.diagnosis.replays
    assert done.before == FAULTY and 0 < done.earlier_left < done.earlier
    assert replay_line(check).endswith(
        f"; on rank 1 step 1, {done.earlier_left} of the {done.earlier} other dumped ops before "
        f"{FAULTY} {FIRST} not reached (the 1 s budget ran out): an earlier fault is not ruled "
        "out; 1 slice not begun (the 1 s budget ran out): rank 0 step 1 (ac -c --rank R --step S "
        "replays one)"
    )
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["before_fault_not_reached"] == replay["not_reached"] == done.earlier_left


def test_going_on_from_a_slice_that_proves_nothing_says_where_it_looked_before_a_fault(
    two_faults,
):
    """Step 0 (drift alone) is diagnosed first; its replay proves nothing, so the default
    goes on to the other slices (step 1's two cards leave their median alike: rank order),
    rank 1 step 1's candidates prove the wrong filter, and its pass then replays the ops
    before it."""
    check = run_ok(two_faults, "ac -c --rank all --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (KERNEL_ERROR, "rank 1 step 1")
    done = check.slice_replays
    assert [(p.where, p.widened) for p in done.passes] == [
        ("rank 0 step 0", True),
        ("rank 0 step 1", True),
        ("rank 1 step 1", False),
        ("rank 1 step 0", True),
    ]
    looked = done.passes[2]
    assert (looked.before, looked.wrong) == (FAULTY, [KERNEL_ERROR])
    assert [p.where for p in done.passes if p.before is not None] == ["rank 1 step 1"]
    line = replay_line(check)
    assert line.startswith(
        "replay (candidates, then every op where they proved no fault, the ops before the first "
        "fault where they proved one) of 4 of 4 rank/step slices "
    )
    assert (
        f"; on rank 1 step 1, the {looked.earlier} other dumped ops before {FAULTY} {FIRST} "
        "replayed too, to find a fault before it"
    ) in line
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    (slice_json,) = [s for s in replay["slices"] if s["slice"] == "rank 1 step 1"]
    assert (slice_json["before_fault"], slice_json["before_fault_ops"]) == (FAULTY, looked.earlier)


def test_ctrl_c_among_the_candidates_after_they_proved_a_fault_says_an_earlier_one_may_be_left(
    two_faults, monkeypatch
):
    """QA: cut while the candidates ran, after they had proven block40's fault, the line said
    "N not reached", N counting ops after the fault too, and never that an earlier fault is
    not ruled out (the ops before it were never replayed)."""
    calls = _replayed_ops(monkeypatch, stop_at=4)
    outcome = run_fail(two_faults, "ac -c --rank 1 --step 1")
    assert outcome.interrupted and FAULTY in calls[:3]  # proven before the Ctrl-C
    done = outcome.result.diagnosis.replays
    assert done.before == FAULTY and done.earlier == done.earlier_left > 0
    graph = two_faults.context.workspace.run().dump_graph()
    assert done.earlier == sum(
        1
        for rec in graph.records()
        if rec.position < graph.get(FAULTY).position
        and rec.name not in calls[:3]
        and two_faults.context.workspace.dump_files(
            two_faults.context.workspace.run(), rec.name, "1", "1"
        )
    )
    line = replay_line(outcome.result)
    assert (
        f"; {done.earlier} of the {done.earlier} other dumped ops before {FAULTY} {FIRST} not "
        f"reached (Ctrl-C): an earlier fault is not ruled out; {done.left_out} other dumped ops "
        "with a kernel not replayed (--replay all replays them)"
    ) in line
    assert done.left_out > 0 and "not reached (Ctrl-C);" not in line  # no count mixing both
