"""The banner's workspace summary prints user text (paths, warnings) as typed."""

from __future__ import annotations

import io

from precision_shell.render.output import make_console
from precision_shell.render.summary import render_summary
from precision_shell.workspace.workspace import WorkspaceSummary


def test_brackets_in_the_root_and_warnings_are_not_markup():
    root = "/data/[bold]run[/bold] 1/precision_data"
    summary = WorkspaceSummary(root, [("debug_0", 1, 30, 16)], 29, 1, 4, 2)
    warnings = ["a/[/]b.txt: cannot read [red]", "c.pb: duplicate op name 'x[0]'"]
    buffer = io.StringIO()
    render_summary(make_console(False, width=200, file=buffer), summary, warnings)
    lines = buffer.getvalue().splitlines()
    assert lines[0] == f"Workspace {root}"
    assert [c.strip() for c in lines[3].split("│")] == ["debug_0", "1", "30", "16"]
    assert lines[-3] == (
        "benchmark tensors: 29   overflow files: 1   fusion passes: 4   warnings: 2"
    )
    assert lines[-2:] == [f"warning: {w}" for w in warnings]
