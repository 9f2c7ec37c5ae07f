"""The banner's line per run saying its ranks and steps."""

from __future__ import annotations

import io

from precision_shell.render.output import make_console
from precision_shell.render.summary import rank_step_line, render_summary
from precision_shell.workspace.workspace import WorkspaceSummary


def test_same_steps_on_every_rank_is_one_product():
    steps = {str(r): ["0", "5", "10"] for r in range(8)}
    assert rank_step_line("debug_0", steps) == "debug_0: 8 ranks (0-7) x 3 steps (0, 5, 10)"
    assert rank_step_line("debug_1", {"0": ["0"]}) == "debug_1: 1 rank (0) x 1 step (0)"


def test_gaps_in_ranks_and_long_step_lists_are_shortened():
    steps = {r: [str(s) for s in range(20)] for r in ("0", "1", "2", "5", "x")}
    assert rank_step_line("debug_0", steps) == (
        "debug_0: 5 ranks (0-2, 5, x) x 20 steps (0, 1, 2, 3, ..., 19)"
    )


def test_ranks_with_different_steps_are_grouped_by_their_steps():
    steps = {"0": ["0", "5"], "1": ["0"], "2": ["0", "5"], "3": ["0", "5"]}
    assert rank_step_line("debug_0", steps) == (
        "debug_0: 4 ranks (0-3), steps differ: ranks 0, 2-3 x 2 steps (0, 5); rank 1 x 1 step (0)"
    )


def test_the_banner_prints_the_line_under_the_run_table():
    summary = WorkspaceSummary(
        "/ws", [("debug_0", 1, 30, 240)], 29, 1, 4, 0, {"debug_0": {"0": ["0"], "1": ["0"]}}
    )
    buffer = io.StringIO()
    render_summary(make_console(False, width=200, file=buffer), summary, [])
    lines = buffer.getvalue().splitlines()
    assert lines[-2:] == [
        "debug_0: 2 ranks (0-1) x 1 step (0)",
        "benchmark tensors: 29   overflow files: 1   fusion passes: 4   warnings: 0",
    ]
