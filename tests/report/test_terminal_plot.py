"""`vcs --plot`: the per-op cosine curve in the terminal, its threshold row and root caret."""

from __future__ import annotations

import math

from rich.console import Console

import precision_shell.render.views  # noqa: F401  (registers the views)
from precision_shell.render.output import Renderer
from precision_shell.render.terminal_plot import GUTTER, cosine_plot_lines
from precision_shell.report.points import OpCosine
from tests.commands.shell_fixture import CONV2, open_shell, run_ok

POINTS = [
    OpCosine(0, "first", 1.0, False),
    OpCosine(5, "bad", 0.904, True),
    OpCosine(8, "broken", math.nan, True),
    OpCosine(10, "last", 0.99, False),
]


def test_points_threshold_and_root_caret_sit_where_the_scale_puts_them() -> None:
    # width 51 -> 41 columns (x 0..10: 4 columns per Index); domain [0.88, 1.0] (step 0.02;
    # 0.904 is too close to 0.90 for a bottom edge); 16 rows: row = (1 - cos) / 0.12 * 15
    lines = [t.plain for t in cosine_plot_lines(POINTS, 0.976, "broken", width=51, height=16)]
    start = GUTTER + 1
    assert len(lines) == 16 + 1 + 3  # value rows, nan/inf row, axis, Index labels, caret
    assert lines[0] == "  1.0000 │●" + " " * 40
    assert lines[0][start + 0] == "●"  # x 0, cosine 1.0
    assert lines[12][start + 20] == "●"  # x 5, cosine 0.904: row 12.0
    assert lines[12].count("●") == 1
    assert lines[1][start + 40] == "●"  # x 10, cosine 0.99: row 1.25 -> 1
    assert lines[3].startswith("  0.9760 │") and set(lines[3][start:]) == {"┄"}  # row 3.0
    assert lines[15].startswith("  0.8800 │")
    assert lines[16] == " nan/inf │" + " " * 32 + "✖" + " " * 8  # x 8 -> column 32
    assert lines[17] == " " * GUTTER + "└" + "─" * 41
    assert lines[18] == " " * start + "0" + " " * 38 + "10"
    assert lines[19] == " " * (start + 32 - len("root cause: broken [8]") - 1) + (
        "root cause: broken [8] ▲"
    )


def test_the_caret_label_goes_right_when_there_is_room() -> None:
    lines = [t.plain for t in cosine_plot_lines(POINTS, 0.98, "bad", width=80)]
    assert lines[-1] == " " * (GUTTER + 1 + 35) + "▲ root cause: bad [5]"  # 70 cols: x5 -> 35


def test_vcs_plot_on_the_demo(tiny_demo_shared) -> None:
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    run_ok(shell, "ac -c")
    summary = run_ok(shell, "vcs --plot -l 1")
    assert summary.root_cause == CONV2  # the first fault to run; the overflow follows
    failing = [(o.x, o.op) for o in summary.plot if o.fails]
    # the default rule also fails outputs whose relative Euclidean distance passes 0.05
    assert failing[0] == (4, CONV2) and (8, "l2_loss/Sum") in failing
    assert (9, summary.plot[9].op) in failing  # the demo's long-named Muls after the overflow
    assert [x for x, _ in failing] == sorted(x for x, _ in failing)
    assert len(summary.plot) == 14 and summary.plot[4].cosine == 0.892658
    console = Console(record=True, width=80, color_system=None, highlight=False)
    Renderer(console, console).result(summary)
    text = console.export_text()
    assert "worst output cosine per op (x: Index), threshold 0.98" in text
    # x 4 of 0..13 on 70 columns -> column 21: the label on the right of the caret
    assert "\n" + " " * (10 + 21) + f"▲ root cause: {CONV2} [4]\n" in text
    plain = run_ok(shell, "vcs -l 1")
    assert plain.plot is None and plain.root_cause == CONV2 and plain.diagnosed
