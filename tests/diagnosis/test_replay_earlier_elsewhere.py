"""The default `ac -c` over several (rank, step) compares, when the slice it diagnosed first
proves a fault, replays the candidates of the other cards of that step that run before it,
and every candidate of the earlier steps: an earlier fault there is shown (QA Q6 #2: a 5%
filter at block25 on rank 0 was named "the earliest op across its cards" while rank 1 had a
kernel error at block10, failing no threshold, that only `--replay all` replayed; the same
with the kernel error one step earlier).

The workspaces: the 30-block float16 stack (drift fails no threshold there), the 5% filter
at block25 and the 0.004 kernel error at block10 on other slices."""

from __future__ import annotations

import json

import pytest

from precision_shell.demo.spec import LOCAL_ERROR, WRONG_CONSTANT, Fault
from tests.commands.shell_fixture import run_ok
from tests.diagnosis.drift_cards import drift_layout, private_shell, replay_line

FILTER = "block25/conv2/Conv2Dblock25/relu2/Relu"
KERNEL = "block10/conv2/Conv2Dblock10/relu2/Relu"
WRONG_FILTER = (Fault(WRONG_CONSTANT, "block25/conv2/Conv2D", 0.05),)
KERNEL_ERROR = (Fault(LOCAL_ERROR, "block10/conv2/Conv2D", 0.004),)
MOVED = "its kernel is proven wrong by the replay, and it goes wrong before {}'s proven fault at "


@pytest.fixture(scope="module")
def cards_pristine(tmp_path_factory):
    """4 cards at step 0: rank 0 the wrong filter, rank 1 the kernel error (QA's D1)."""
    faults = {("0", "0"): WRONG_FILTER, ("1", "0"): KERNEL_ERROR}
    return drift_layout(tmp_path_factory, ranks=4, steps=1, faults_at=faults, blocks=30)


@pytest.fixture(scope="module")
def steps_pristine(tmp_path_factory):
    """2 cards x 2 steps: the kernel error on rank 1 step 0, the filter on rank 0 step 1
    (QA's D5)."""
    faults = {("1", "0"): KERNEL_ERROR, ("0", "1"): WRONG_FILTER}
    return drift_layout(tmp_path_factory, ranks=2, steps=2, faults_at=faults, blocks=30)


def test_an_earlier_kernel_error_on_another_card_is_shown(cards_pristine, tmp_path):
    shell = private_shell(cards_pristine, tmp_path)
    check = run_ok(shell, "ac -c --rank all --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (KERNEL, "rank 1 step 0")
    assert panel.lines.where_why == MOVED.format("rank 0 step 0") + FILTER
    done = check.slice_replays
    assert (done.mode, done.fault, done.slices) == ("candidates_before_fault", FILTER, 4)
    assert [p.where for p in done.passes] == [
        "rank 0 step 0",
        "rank 1 step 0",
        "rank 2 step 0",
        "rank 3 step 0",
    ]
    assert done.wrong == [("rank 1 step 0", KERNEL)]
    assert done.differing == [("rank 0 step 0", FILTER)]
    # the other cards: their candidates before block25 only (never widened to every op);
    # rank 1's proven kernel error then has the ops before it replayed, as the first slice's
    graph = shell.context.workspace.run().dump_graph()
    filter_at = graph.get(FILTER).position
    for p in done.passes[1:]:
        assert not p.widened and p.reports
        # besides: block25 itself (shared?) and the card's own first cause (drift?)
        later = [op for op in p.reports if graph.get(op).position >= filter_at]
        assert later[:1] == [FILTER] and len(later) <= 2
    assert [(p.where, p.before) for p in done.passes if p.before] == [
        ("rank 0 step 0", FILTER),
        ("rank 1 step 0", KERNEL),
    ]
    line = replay_line(check)
    assert line.startswith(
        "replay (candidates, then the ops before the first fault they proved) of 4 of 4 "
        f"rank/step slices (rank 0 step 0 proved a fault at {FILTER}: the candidates before it "
        "on the other cards of its step (with it and each card's "
        "first cause) replayed too; --replay all replays every op): "
    )
    assert f", 1 kernel wrong (rank 1 step 0: {KERNEL}), 1 op whose constants differ" in line
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["slices_mode"] == "candidates_before_fault"
    assert replay["slices_before_fault"] == FILTER
    assert [s["slice"] for s in replay["slices"]] == [p.where for p in done.passes]
    assert (replay["slice"], replay["kernel_wrong"]) == ("rank 1 step 0", [KERNEL])
    # rank 0's own fault stays named beside it
    assert [n.split(":")[0] for n in panel.lines.card_notes] == ["rank 0"]
    assert FILTER in panel.lines.card_notes[0]


def test_an_earlier_step_is_replayed_and_its_kernel_error_shown(steps_pristine, tmp_path):
    shell = private_shell(steps_pristine, tmp_path)
    estimate = run_ok(shell, "ac -c --rank all --step all --replay none")
    # step 0 fails no threshold: the compare's first root cause is step 1's filter
    assert (estimate.root_cause.cause.op, estimate.root_cause.lines.where) == (
        FILTER,
        "rank 0 step 1",
    )
    check = run_ok(shell, "ac -c --rank all --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (KERNEL, "rank 1 step 0")
    assert panel.lines.where_why == MOVED.format("rank 0 step 1") + FILTER
    assert panel.lines.other_steps[0].startswith(f"rank 0 step 1: a fault of its own at {FILTER} ")
    done = check.slice_replays
    assert (done.mode, done.same_step, done.earlier_steps) == ("candidates_before_fault", 1, 2)
    assert [p.where for p in done.passes] == [
        "rank 0 step 1",
        "rank 1 step 1",
        "rank 1 step 0",
        "rank 0 step 0",
    ]
    graph = shell.context.workspace.run().dump_graph()
    filter_at = graph.get(FILTER).position
    by_where = {p.where: p for p in done.passes}
    # the other card of step 1: its candidates before block25; step 0's: every candidate
    later = [op for op in by_where["rank 1 step 1"].reports if graph.get(op).position >= filter_at]
    assert later[:1] == [FILTER] and len(later) <= 2  # block25 and its own first cause
    assert max(graph.get(op).position for op in by_where["rank 0 step 0"].reports) > filter_at
    assert by_where["rank 1 step 0"].wrong == [KERNEL]
    line = replay_line(check)
    assert line.startswith(
        "replay (candidates, then the ops before the first fault they proved) of 4 of 4 "
        f"rank/step slices (rank 0 step 1 proved a fault at {FILTER}: the candidates before it "
        "on the other cards of its step (with it and each card's "
        "first cause) and every candidate of the earlier steps replayed too; "
        "--replay all replays every op): "
    )
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert (replay["slices_mode"], replay["slices_left"]) == ("candidates_before_fault", [])
    assert replay["slice"] == "rank 1 step 0"
