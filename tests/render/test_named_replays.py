"""The other cards named with a fault of their own are replayed by themselves after the slice
passes: the replay lines count them and no longer call them "not replayed" (QA Q21 #4)."""

from __future__ import annotations

from precision_shell.compare.diagnosis.replay_evidence import ReplayPass
from precision_shell.compare.diagnosis.slice_replays import CANDIDATES_BEFORE_FAULT, SliceReplays
from precision_shell.render.replay_lines import named_replays_line, slice_replays_line


def test_a_slice_replayed_by_itself_is_not_left_nor_not_begun() -> None:
    first = ReplayPass("candidates", 10.0, where="rank 0 step 0")
    done = SliceReplays(
        10.0,
        [first],
        mode=CANDIDATES_BEFORE_FAULT,
        slices=4,
        fault="a",
        left=["rank 1 step 1", "rank 0 step 1"],
        not_begun=["rank 1 step 0"],
        not_begun_why="the 10 s replay budget ran out",
    )
    assert "rank 1 step 1" in slice_replays_line(done)
    done.replayed_by_themselves(["rank 1 step 1", "rank 1 step 0"])
    assert (done.left, done.not_begun) == (["rank 0 step 1"], [])
    line = slice_replays_line(done)
    assert "1 slice of later steps not replayed (rank 0 step 1)" in line
    assert "rank 1 step 1" not in line and "not begun" not in line


def test_the_named_replays_line_says_what_each_card_s_own_replay_found() -> None:
    proven = ReplayPass("candidates", 10.0, where="rank 2 step 10", elapsed_s=0.25)
    proven.unreached = ["x", "y"]
    line = named_replays_line([proven])
    assert line == (
        "replayed by themselves too, as ac -c --rank R --step S replays one (a fault of their "
        "own is named above): rank 2 step 10: 0 ops in 0.25 s, 0 kernels wrong, 2 not reached "
        "(the 10 s budget ran out)"
    )
