"""Rendering of `reload`: the workspace counts and warnings after a full re-read."""

from __future__ import annotations

from rich.console import Console

from precision_shell.commands.system import WorkspaceReloaded
from precision_shell.render.output import renders
from precision_shell.render.summary import render_summary


@renders(WorkspaceReloaded)
def render_reloaded(console: Console, result: WorkspaceReloaded) -> None:
    console.print("reloaded: every file read again", markup=False, highlight=False)
    render_summary(console, result.summary, result.warnings)
