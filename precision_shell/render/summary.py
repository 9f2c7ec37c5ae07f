"""Rendering of the workspace summary (banner and `scripts/demo` output)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from precision_shell.workspace.workspace import WorkspaceSummary


def render_summary(console: Console, summary: WorkspaceSummary, warnings: list[str]) -> None:
    table = Table(title=f"Workspace {summary.root}", show_edge=False)
    table.add_column("device run")
    table.add_column("graphs", justify="right")
    table.add_column("ops", justify="right")
    table.add_column("dump files", justify="right")
    for name, graphs, ops, files in summary.runs:
        table.add_row(name, str(graphs), str(ops), str(files))
    console.print(table)
    console.print(
        f"benchmark tensors: {summary.benchmark_tensors}   overflow files: {summary.overflow_files}"
        f"   fusion passes: {summary.fusion_passes}   warnings: {summary.warnings}"
    )
    for line in warnings[:20]:
        console.print(f"[yellow]warning:[/] {line}", markup=True, highlight=False)
    if len(warnings) > 20:
        console.print(f"[yellow]... and {len(warnings) - 20} more warnings[/]")
