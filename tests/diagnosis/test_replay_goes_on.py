"""The default `ac -c` over several (rank, step) compares goes on from the slice it diagnosed
first to the others when that one's replay proves no fault (QA: a 1% filter on rank 2 step 1
of a 4x3 workspace under float16 drift was called drift; only `--replay all` found it).

The workspace: the 60-block float16 drift stack on ranks 0-1 x steps 0-2; rank 1 step 1 has
a 1% wrong filter in block40/conv2, which no heuristic candidate covers."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from precision_shell.compare.diagnosis import replay_evidence
from precision_shell.compare.diagnosis.advisor import ACCUMULATED_DRIFT
from precision_shell.compare.diagnosis.replay_evidence import measured_fault, measured_text
from precision_shell.compare.diagnosis.root_cause import RootCause
from tests.commands.shell_fixture import run_fail, run_ok
from tests.diagnosis.drift_cards import (
    DRIFT_FIRST,
    FAULTY,
    drift_layout,
    private_shell,
    replay_line,
)


@pytest.fixture(scope="module")
def cards_pristine(tmp_path_factory):
    return drift_layout(tmp_path_factory, ranks=2, steps=3, faulty_at=("1", "1"))


@pytest.fixture
def cards(cards_pristine, tmp_path):
    return private_shell(cards_pristine, tmp_path)


def test_the_default_goes_on_until_a_step_with_a_proven_fault(cards):
    estimate = run_ok(cards, "ac -c --rank all --step all --replay none")
    assert (estimate.root_cause.cause.op, estimate.root_cause.lines.where) == (
        DRIFT_FIRST,
        "rank 0 step 0",
    )
    check = run_ok(cards, "ac -c --rank all --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (FAULTY, "rank 1 step 1")
    assert panel.lines.where_why == (
        "the replay proves its constants differ from the benchmark's; rank 0 step 0, the "
        "compare's first root cause (the first step, then the earliest op across its cards), has "
        "no fault its replay proves"
    )
    done = check.slice_replays
    # the first slice, then those leaving the other card of their step (step 1: the two
    # cards leave their median alike, rank order), then the rest; step 2 is after the
    # fault's step: it cannot go wrong first, left
    assert (done.mode, done.slices) == ("candidates", 6)
    assert [p.where for p in done.passes] == [
        "rank 0 step 0",
        "rank 0 step 1",
        "rank 1 step 1",
        "rank 1 step 0",
    ]
    assert all(p.widened for p in done.passes) and done.differing == [("rank 1 step 1", FAULTY)]
    assert done.left == ["rank 0 step 2", "rank 1 step 2"]
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["slices_mode"] == "candidates"
    assert replay["slices_left"] == ["rank 0 step 2", "rank 1 step 2"]
    assert [s["slice"] for s in replay["slices"]] == [p.where for p in done.passes]
    line = replay_line(check)
    ops = len(done.passes[0].reports)
    assert line.startswith(
        "replay (candidates, then every op where they proved no fault) of 4 of 6 rank/step "
        "slices (rank 0 step 0 proved no fault: the others by how far they leave their step's "
        f"other cards, but for steps after a measured fault): {ops} ops replayed ({4 * ops} replays) in "
    )
    assert (
        f"0 kernels wrong, 1 op whose constants differ from the benchmark's ({FAULTY} on rank 1 "
        "step 1)"
    ) in line
    assert line.endswith(
        "; 2 slices of later steps not replayed (rank 0 step 2, rank 1 step 2): a step before "
        "them has a measured fault (--replay all replays every one)"
    )


def test_drift_on_every_slice_replays_them_all_and_proves_nothing(cards):
    check = run_ok(cards, "ac -c --rank 0 --step all")
    assert (check.root_cause.cause.op, check.root_cause.lines.where) == (
        DRIFT_FIRST,
        "rank 0 step 0",
    )
    done = check.slice_replays
    assert [p.where for p in done.passes] == ["rank 0 step 0", "rank 0 step 1", "rank 0 step 2"]
    assert done.left == [] and done.wrong == [] and done.differing == []
    assert "slices of later steps" not in replay_line(check)


def test_ctrl_c_on_another_slice_leaves_the_rest_unreplayed(cards, monkeypatch):
    real = replay_evidence.replay_op_in_workspace
    calls: list[tuple[str, str]] = []

    def interrupted_on_the_other_card(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append((args[3], args[2]))  # (rank, op)
        if args[3] == "1" and sum(rank == "1" for rank, _ in calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_evidence, "replay_op_in_workspace", interrupted_on_the_other_card)
    outcome = run_fail(cards, "ac -c --rank all --step all")
    assert outcome.interrupted  # a script stops here
    done = outcome.result.slice_replays
    assert [(p.where, p.interrupted) for p in done.passes] == [
        ("rank 0 step 0", False),
        ("rank 0 step 1", False),
        ("rank 1 step 1", True),
    ]
    assert len(done.passes[2].reports) == 2 and done.passes[2].not_reached
    assert sum(rank == "1" for rank, _ in calls) == 3  # nothing replayed after the Ctrl-C
    # the slices after it are not begun, and no pass is made up for them
    assert (done.not_begun, done.not_begun_why) == (
        ["rank 1 step 0", "rank 0 step 2", "rank 1 step 2"],
        "Ctrl-C",
    )
    line = replay_line(outcome.result)
    assert line.startswith(
        "replay (candidates, then every op where they proved no fault) of 3 of 6 rank/step slices"
    )
    assert line.endswith(
        "; 3 slices not begun (Ctrl-C): rank 1 step 0, rank 0 step 2, rank 1 step 2 "
        "(ac -c --rank R --step S replays one)"
    )
    # drift is not all the advisor says: the replay did not finish
    (drift,) = [f for f in outcome.result.diagnosis.findings if f.detection == ACCUMULATED_DRIFT]
    assert drift.advice.endswith(
        "The replay, which finds faults drift hides, did not finish on rank 1 step 1, rank 1 "
        "step 0, rank 0 step 2 and 1 more (Ctrl-C): a fault there is not ruled out (ac -c "
        "again lets it finish)."
    )
    replay = json.loads(outcome.result.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert replay["interrupted"] is True and replay["slices_not_begun"] == done.not_begun


def test_a_budget_that_runs_out_says_which_slices_it_did_not_begin(cards):
    """QA: "of 8 of 8 slices ... 620 dumped ops not replayed where the candidates proved a
    fault", when 3 slices were replayed and none proved anything."""
    check = run_ok(cards, "ac -c --rank all --step all --replay-budget 0.3")
    done = check.slice_replays
    begun = len(done.passes)
    assert begun < 6 and len(done.not_begun) == 6 - begun
    assert done.not_begun_why == "the 0.3 s budget ran out"
    assert all(p.reports for p in done.passes)  # no pass for a slice not begun
    line = replay_line(check)
    assert f" of {begun} of 6 rank/step slices " in line
    assert "proved a fault" not in line
    assert f"; {6 - begun} slices not begun (the 0.3 s budget ran out): " in line
    (drift,) = [f for f in check.diagnosis.findings if f.detection == ACCUMULATED_DRIFT]
    assert drift.advice.endswith(
        "(the 0.3 s budget ran out): a fault there is not ruled out (ac -c --replay-budget S "
        "gives it more time)."
    )
    # the slice the budget cut counts every op it did not replay, those it would have gone
    # on to included
    cut = [p for p in done.passes if p.not_reached]
    if cut:
        left = sum(p.not_reached + p.left_out for p in cut)
        assert f"; {left} not reached (the 0.3 s budget ran out) on " in line


def test_a_budget_spent_on_the_first_slice_says_the_others_were_not_begun(cards):
    """QA (a loaded machine): the budget ran out inside the first slice's replay, and nothing
    said the other five slices, outputs failing in them, were never replayed."""
    check = run_ok(cards, "ac -c --rank all --step all --replay-budget 0.000000001")
    done = check.slice_replays
    assert done is not None and len(done.passes) == 1 and done.passes[0].not_reached
    assert len(done.not_begun) == 5
    assert done.not_begun_why == "the 1e-09 s budget ran out"
    assert "; 5 slices not begun (the 1e-09 s budget ran out): " in replay_line(check)
    # it replayed nothing: not "proved no fault" (QA Q29 #8)
    if not done.passes[0].reports:
        assert f"({done.passes[0].where} replayed no op: the others " in replay_line(check)


def _cause(drop_db: float, replay=None) -> RootCause:  # noqa: ANN001
    return RootCause("op", "Conv2D", 1, 1, "why", drop_db, 60.0, -math.inf, 1.0, math.nan, replay)


def test_a_nan_birth_no_replay_cleared_is_a_measured_fault():
    """NaN/inf born from finite inputs is measured by the compare itself: with no replay (the
    op has no kernel, or none ran) it counts as a fault, so the default does not go on past
    it; a replay that ran and proves nothing clears it (the NaN was the benchmark's)."""
    born = _cause(math.inf)
    assert measured_fault(born)
    assert measured_text(born) == "NaN/inf is born there from finite inputs"
    assert not measured_fault(_cause(12.0))  # a loss, however large, is an estimate
    cleared = replace(born, replay=SimpleNamespace(own=None, constants_differ=False, overflow=0))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay_evidence, "proves_wrong", lambda out: False)
        assert not measured_fault(cleared) and measured_text(cleared) is None
