"""`ac -c --replay all` on a compare of several ranks: every (rank, step) slice is replayed,
a kernel proven wrong on another card than the first with a root cause is shown, and a
replay of one slice (the default candidates, a budget or Ctrl-C) says which slices it left.

The workspace: two cards of the tiny demo with a wrong constant in conv2 (rank 0's root
cause, an exact kernel); rank 1 also has a kernel error (local_error) in conv1."""

from __future__ import annotations

import json
import shutil

import pytest

from precision_shell.compare.diagnosis.root_cause import OpEvidence, TensorQuality
from precision_shell.compare.diagnosis.slice_replays import divergence_order
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import LOCAL_ERROR, WRONG_CONSTANT, DemoSpec, Fault
from tests.commands.shell_fixture import CONV1, CONV2, open_shell, rendered, run_fail, run_ok
from tests.commands.test_second_dump_dir import _link_copy, _step_dir
from tests.diagnosis.test_replay_diagnosis import ctrl_c_on_the_third_replay

WRONG_WEIGHT = Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5)
KERNEL_ERROR = Fault(LOCAL_ERROR, "conv1/Conv2D", 0.004)


@pytest.fixture(scope="module")
def two_cards_pristine(tmp_path_factory):
    """rank 0: the wrong weight; rank 1: the same and a kernel error in conv1."""
    root = tmp_path_factory.mktemp("two_cards")
    build_demo(root, DemoSpec(size="tiny", faults=(WRONG_WEIGHT,), second_run=False))
    other = tmp_path_factory.mktemp("rank1")
    build_demo(other, DemoSpec(size="tiny", faults=(WRONG_WEIGHT, KERNEL_ERROR), second_run=False))
    step = _step_dir(root)
    device = step.parents[2]  # <ts>/0/<graph>/<model>/<step>
    _link_copy(_step_dir(other), device.parent / "1" / step.relative_to(device))
    return root


@pytest.fixture
def two_cards(two_cards_pristine, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(two_cards_pristine, root, symlinks=True)
    return open_shell(root)


def test_replay_all_replays_every_card_and_shows_the_kernel_proven_wrong(two_cards):
    estimate = run_ok(two_cards, "ac -c --replay none")
    assert (estimate.root_cause.cause.op, estimate.root_cause.lines.where) == (
        CONV2,
        "rank 0 step 0",
    )
    # one root-cause panel (without a replay it was followed by an empty "nothing found" one)
    assert rendered(estimate).count("Root cause") == 1

    check = run_ok(two_cards, "ac -c --replay all")
    done = check.slice_replays
    assert [p.where for p in done.passes] == ["rank 0 step 0", "rank 1 step 0"]
    assert done.wrong == [("rank 1 step 0", CONV1)] and not done.unfinished
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (CONV1, "rank 1 step 0")
    # rank 0's wrong weight is proven too (its constants differ), but conv1 runs before conv2
    assert panel.lines.where_why == (
        "its kernel is proven wrong by the replay, and it goes wrong before rank 0 step 0's "
        f"proven fault at {CONV2}"
    )
    assert panel.next_commands[0] == f"ni {CONV1} -s 2 --rank 1 --step 0"
    # the other card is read by its replayed cause, with what the replay proves of it: the
    # wrong weight rank 1 has too (its second cause), not a fault of rank 0's own
    assert panel.lines.cards.startswith("rank 1 only: the other card matches the benchmark here")
    assert CONV2 in [c.op for c in check.diagnosis.causes]
    assert panel.lines.card_notes == [
        f"rank 0: matches the benchmark here and goes wrong first beyond it, at {CONV2} (index "
        "4), as this card does: the replay proves its constants differ from the benchmark's "
        "(ac -c --rank 0 --step 0)"
    ]
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    # still rank 0's own cause, a proven fault: its report names it
    (own,) = summary["other_cards"]
    assert (own["rank"], own["step"], own["op"]) == ("0", "0", CONV2)
    first = summary["root_causes"][0]
    assert (first["op"], first["rank"], first["step"]) == (CONV1, "1", "0")
    slices = summary["replay"]["slices"]
    assert [(s["slice"], s["kernel_wrong"], s["constants_differ"]) for s in slices] == [
        ("rank 0 step 0", [], [CONV2]),
        ("rank 1 step 0", [CONV1], [CONV2]),
    ]
    line = next(ln for ln in rendered(check, 400).splitlines() if ln.startswith("replay ("))
    per_slice = slices[0]["replayed"]
    assert line.startswith(
        f"replay (all) of 2 rank/step slices: {per_slice} ops replayed ({2 * per_slice} "
        "replays) in "
    ) and line.split(" s, ", 1)[1].startswith(
        f"1 kernel wrong (rank 1 step 0: {CONV1}), 1 op whose constants differ from the "
        f"benchmark's ({CONV2} on rank 0 step 0, rank 1 step 0);"
    )


def test_the_other_cards_are_read_by_their_replayed_cause(two_cards_pristine, tmp_path):
    """rank 2 is rank 1 again: its estimate names conv2 (as rank 0's), its replay the kernel
    of conv1, so it fails at the shown cause with rank 1 and has no root cause elsewhere."""
    root = tmp_path / "ws"
    shutil.copytree(two_cards_pristine, root, symlinks=True)
    step = _step_dir(root)
    device = step.parents[2]
    _link_copy(
        device.parent / "1" / step.relative_to(device),
        device.parent / "2" / step.relative_to(device),
    )
    shell = open_shell(root)
    estimate = run_ok(shell, "ac -c --replay none")
    # the estimate alone: ranks 1 and 2 are read by their first fault before conv2, conv1's
    # loss of its own (QA Q13: their estimate's first was named, whatever ran before)
    assert estimate.root_cause.cause.op == CONV2
    assert [n.split(": ")[0:2] for n in estimate.root_cause.lines.card_notes] == [
        ["rank 1", f"first goes wrong at {CONV1} (index 2)"],
        ["rank 2", f"first goes wrong at {CONV1} (index 2)"],
    ]
    panel = run_ok(shell, "ac -c --replay all").root_cause
    assert (panel.cause.op, panel.lines.where) == (CONV1, "rank 1 step 0")
    assert panel.lines.cards == (
        "ranks 1, 2 fail here; rank 0 matches the benchmark: suspect those cards or their input data"
    )
    assert [n.split(":")[0] for n in panel.lines.card_notes] == ["rank 0"]


def test_the_default_goes_on_to_the_other_card_before_a_proven_fault(two_cards):
    """Rank 0's candidates prove conv2's constants differ (conv1 and pool1 before it are
    replayed too); rank 1's candidates before conv2 then prove its conv1 kernel wrong, as
    --replay all does (before, the default replayed rank 0 only and named conv2)."""
    check = run_ok(two_cards, "ac -c")
    assert (check.root_cause.cause.op, check.root_cause.lines.where) == (CONV1, "rank 1 step 0")
    done = check.slice_replays
    assert [(p.where, p.before) for p in done.passes] == [
        ("rank 0 step 0", CONV2),
        ("rank 1 step 0", CONV1),
    ]
    # the candidates before rank 0's fault, that fault's op (does it hold on rank 1 too?) and
    # rank 1's own first cause
    graph = two_cards.context.workspace.run().dump_graph()
    at = graph.get(CONV2).position
    later = [op for op in done.passes[1].reports if graph.get(op).position >= at]
    assert later[:1] == [CONV2] and len(later) <= 2
    assert done.passes[1].differing == [CONV2]  # rank 1 has the same wrong weight: proven
    line = next(ln for ln in rendered(check, 400).splitlines() if ln.startswith("replay ("))
    assert line.startswith(
        "replay (candidates, then the ops before the first fault they proved) of 2 of 2 rank/step "
        f"slices (rank 0 step 0 proved a fault at {CONV2}: the candidates before it on the other "
        "cards of its step (with it and each card's "
        "first cause) replayed too; --replay all replays every op): "
    )
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert summary["replay"]["slice"] == "rank 1 step 0"
    assert [s["slice"] for s in summary["replay"]["slices"]] == ["rank 0 step 0", "rank 1 step 0"]
    one = run_ok(two_cards, "ac -c --replay all --rank 1")  # one slice compared: as before
    assert one.slice_replays is None and one.diagnosis.replays.where is None
    assert one.diagnosis.causes[0].op == CONV1


def test_the_budget_names_the_cards_it_left(two_cards):
    check = run_ok(two_cards, "ac -c --replay all --replay-budget 0.0001")
    assert check.root_cause.lines.where == "rank 0 step 0"
    line = next(ln for ln in rendered(check, 400).splitlines() if ln.startswith("replay ("))
    assert "0 kernels wrong among them" in line
    assert line.endswith(
        "not reached (the 0.0001 s budget ran out) on rank 0 step 0, rank 1 step 0: "
        "ac -c --replay all --rank R --step S replays one slice"
    )


def test_ctrl_c_ends_every_card_s_pass(two_cards, monkeypatch):
    calls = ctrl_c_on_the_third_replay(monkeypatch)
    outcome = run_fail(two_cards, "ac -c --replay all")
    assert outcome.interrupted
    done = outcome.result.slice_replays
    assert len(calls) == 3  # nothing replayed after the Ctrl-C
    assert [(len(p.reports), p.interrupted) for p in done.passes] == [(2, True), (0, True)]
    assert all(p.not_reached for p in done.passes)


def _evidence(qualities: dict[str, float]) -> dict[str, OpEvidence]:
    found = {}
    for n, (name, sqnr) in enumerate(qualities.items()):
        ev = OpEvidence(name, "Op", n, n)
        ev.outputs[0] = TensorQuality(1.0, sqnr, False)
        found[name] = ev
    return found


def test_the_card_that_leaves_the_others_is_replayed_first():
    alike = {"a": 60.0, "b": 40.0, "c": 30.0}
    apart = {"a": 60.0, "b": 34.0, "c": 29.0}  # 6 dB below the others at b
    slices = [
        ("0", _evidence(alike)),
        ("0", _evidence(alike)),
        ("0", _evidence(apart)),
        ("10", _evidence(apart)),  # alone at its step: nothing to leave
        ("0", _evidence(alike | {"c": 28.5})),
    ]
    assert divergence_order(slices) == [2, 4, 0, 1, 3]
